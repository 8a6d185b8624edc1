"""The stretch: block of docs/howto/stretched-cluster.md: a valid stretch-only topology that names every key."""

from __future__ import annotations

import re
from pathlib import Path

from geokafka.planning import plan_stretch
from geokafka.topology import parse_topology
from geokafka.topology.schema import Stretch, StretchDC, StretchGuard, StretchTopic

PAGE = Path(__file__).resolve().parents[2] / "docs" / "howto" / "stretched-cluster.md"


def stretch_section() -> tuple[str, str]:
    """(the section's text, its first YAML example)."""
    text = PAGE.read_text(encoding="utf-8")
    section = text.split("## The `stretch:` block", 1)[1].split("\n## ", 1)[0]
    example = re.search(r"```yaml\n(.*?)```", section, re.DOTALL)
    assert example is not None, "the stretch: section has no yaml example"
    return section, example.group(1)


def test_the_docs_example_is_a_valid_stretch_only_topology() -> None:
    _, example = stretch_section()
    topology = parse_topology(example, PAGE.name)
    assert topology.clusters == {} and topology.flows == {}
    assert topology.stretch is not None
    assert list(topology.stretch.dcs) == ["dc1", "dc2", "dc3"]
    assert set(topology.stretch.topics) == {"orders", "audit"}
    plan = plan_stretch(topology.stretch)
    assert [v.failure.name for v in plan.dc_verdicts] == ["dc1", "dc2", "dc3"]


def test_the_docs_section_names_every_key_of_the_block() -> None:
    section, example = stretch_section()
    for model in (Stretch, StretchDC, StretchTopic, StretchGuard):
        for key in model.model_fields:
            assert re.search(rf"\b{key}:", example), f"{model.__name__}.{key} is not in the docs' stretch: example"
    assert "-1" in section  # acks: -1 is documented as all


def test_validate_and_plan_take_a_stretch_only_file(tmp_path: Path) -> None:
    import json

    from click.testing import CliRunner

    from geokafka.cli.main import cli

    path = tmp_path / "stretch.yaml"
    path.write_text(stretch_section()[1], encoding="utf-8")
    validated = CliRunner().invoke(cli, ["-f", str(path), "validate"])
    assert validated.exit_code == 0, validated.output
    assert "valid (0 clusters, 0 flows, a stretched cluster over 3 DCs)" in " ".join(validated.stdout.split())
    planned = CliRunner().invoke(cli, ["-f", str(path), "plan", "--json"])
    assert planned.exit_code == 0, planned.output
    assert set(json.loads(planned.stdout)["topics"]) == {"orders", "audit"}
