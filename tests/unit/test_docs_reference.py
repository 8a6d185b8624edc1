"""The docs' reference pages are generated from the code (docs/hooks/): they follow it and refuse holes."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType

import click
import pytest
from pydantic import BaseModel, ConfigDict, Field

REPO = Path(__file__).resolve().parents[2]
HOOKS = REPO / "docs" / "hooks"


def _load(name: str) -> ModuleType:
    if name in sys.modules:
        return sys.modules[name]
    sys.path.insert(0, str(HOOKS))
    spec = importlib.util.spec_from_file_location(name, HOOKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


reference = _load("reference")
reference_pages = _load("reference_pages")


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    return reference_pages.pages()


def _all_commands(group: click.Command, path: str = "geokafka") -> list[tuple[str, click.Command]]:
    out = [(path, group)]
    if isinstance(group, click.Group):
        for name, sub in group.commands.items():
            out += _all_commands(sub, f"{path} {name}")
    return out


def test_every_generated_page_is_in_the_nav(pages: dict[str, str]) -> None:
    nav = (REPO / "mkdocs.yml").read_text(encoding="utf-8")
    for path in pages:
        assert f": {path}\n" in nav, f"{path} is generated but not in mkdocs.yml's nav"
        assert not (REPO / "docs" / path).exists(), f"docs/{path} is generated: a written copy would shadow it"


def test_every_command_and_option_of_the_cli_is_on_the_cli_page(pages: dict[str, str]) -> None:
    from geokafka.cli.main import cli

    page = pages["reference/cli.md"]
    for path, command in _all_commands(cli):
        section = page.split(f"## `{path}`\n", 1)
        assert len(section) == 2, f"no section for {path}"
        body = section[1].split("\n## ", 1)[0]
        for param in command.params:
            if isinstance(param, click.Option):
                for name in param.opts:
                    assert f"`{name}`" in body, f"{path}: option {name} is not on the page"
            else:
                assert f"`{param.human_readable_name}`" in body, f"{path}: argument {param.name} is not on the page"


def test_adding_a_cli_option_changes_the_page() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    @click.option("--timeout", default=5.0, type=click.FloatRange(min=0.1), help="seconds to wait")
    def wait(timeout: float) -> None:
        """Wait for something."""

    before = reference.cli_page(tool, "tool")
    wait.params.append(click.Option(["--dry-run"], is_flag=True, help="change nothing (see <flow>)"))
    after = reference.cli_page(tool, "tool")
    assert before != after
    assert "| `--dry-run` | flag | off | change nothing (see &lt;flow&gt;) |" in after  # not an HTML tag
    assert "| `--timeout` | `FLOAT RANGE` (x>=0.1) | `5.0` | seconds to wait |" in after


def test_an_option_or_command_without_help_fails_the_build() -> None:
    @click.group()
    def tool() -> None:
        """A tool."""

    @tool.command()
    @click.option("--quiet", is_flag=True)
    def run(quiet: bool) -> None:
        """Run."""

    with pytest.raises(reference.UndocumentedError, match=r"tool run: option --quiet has no help text"):
        reference.cli_page(tool, "tool")

    @click.command()
    def bare() -> None:
        pass

    tool.add_command(bare)
    run.params.clear()
    with pytest.raises(reference.UndocumentedError, match=r"command 'tool bare' has no help text"):
        reference.cli_page(tool, "tool")


def test_every_topology_key_is_on_the_topology_page_with_its_default(pages: dict[str, str]) -> None:
    from geokafka.topology import schema

    page = pages["reference/topology.md"]
    for model in reference._models(schema.Topology):
        section = page.split(f"\n## {model.__name__}\n", 1)
        assert len(section) == 2, f"no section for {model.__name__}"
        body = section[1].split("\n## ", 1)[0]
        for key, info in model.model_fields.items():
            row = next((line for line in body.splitlines() if line.startswith(f"| `{key}` |")), None)
            assert row is not None, f"{model.__name__}.{key} is not on the page"
            assert info.description is not None and reference._cell(info.description) in row
    assert "| `commit_interval_ms` | integer (>= 10, <= 600,000) | `100` |" in page
    assert "| `rename` | `prefix` \\| `identity` | `prefix` |" in page


class _Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")
    size: int = Field(3, ge=1, description="how many")


class _Root(BaseModel):
    model_config = ConfigDict(extra="forbid")
    inner: _Inner = Field(default_factory=_Inner, description="the inner block")


def test_adding_a_topology_key_changes_the_page_and_one_without_a_description_fails() -> None:
    before = reference.topology_page(_Root)
    assert "| `size` | integer (>= 1) | `3` | how many |" in before

    class Grown(_Inner):
        colour: str = Field("red", description="its colour")

    class GrownRoot(_Root):
        inner: Grown = Field(default_factory=Grown, description="the inner block")

    after = reference.topology_page(GrownRoot)
    assert "| `colour` | string | `red` | its colour |" in after

    class Undocumented(_Inner):
        colour: str = "red"

    class BadRoot(_Root):
        inner: Undocumented = Field(default_factory=Undocumented, description="the inner block")

    with pytest.raises(reference.UndocumentedError, match=r"Undocumented\.colour has no description"):
        reference.topology_page(BadRoot)


def test_every_metric_of_the_exposition_is_on_the_metrics_page(pages: dict[str, str]) -> None:
    from geokafka.monitoring.metrics import render_metrics

    page = pages["reference/metrics.md"]
    exposition = render_metrics(reference_pages.full_report())
    families = reference.metric_families(exposition)
    assert len(families) >= 17
    for name, _kind, _help, samples, _labels in families:
        for sample in samples:
            assert f"`{sample}`" in page, f"{sample} ({name}) is not on the metrics page"


def test_the_fixture_report_exposes_every_family_metrics_py_defines() -> None:
    """The metrics page reads the exposition of a fixture report: that fixture must light up every
    family the module creates, or a new metric would be missing from the page."""
    from geokafka.monitoring import metrics
    from geokafka.monitoring.metrics import render_metrics

    source = Path(metrics.__file__).read_text(encoding="utf-8")
    defined = set(re.findall(r'MetricFamily\(\s*"(geokafka_[a-z_]+)"', source))
    exposed = {name for name, *_ in reference.metric_families(render_metrics(reference_pages.full_report()))}
    assert defined and defined <= exposed, defined - exposed


def test_the_operations_page_explains_every_metric() -> None:
    from geokafka.monitoring.metrics import render_metrics

    page = (REPO / "docs" / "operations" / "metrics.md").read_text(encoding="utf-8")
    for _name, _kind, _help, samples, _labels in reference.metric_families(render_metrics(reference_pages.full_report())):
        for sample in samples:
            assert f"| `{sample}` |" in page, f"docs/operations/metrics.md does not say what {sample} means"


def test_every_error_class_is_on_the_exit_codes_page(pages: dict[str, str]) -> None:
    from geokafka import errors

    page = pages["reference/exit-codes.md"]
    for name in dir(errors):
        cls = getattr(errors, name)
        if isinstance(cls, type) and issubclass(cls, errors.GeokafkaError):
            assert re.search(rf"`{name}` \| {cls.exit_code} \|", page), name


def test_the_status_page_covers_every_state() -> None:
    from geokafka.control.flow_states import FlowState, HeadlineState
    from geokafka.monitoring.metrics import STATES

    page = (REPO / "docs" / "operations" / "status.md").read_text(encoding="utf-8")
    for state in {*STATES, *HeadlineState, *FlowState}:
        assert f"| `{state}` |" in page, f"docs/operations/status.md has no row for {state}"
