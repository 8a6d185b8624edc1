"""Every repository path the docs name in backticks exists, and the README stays a short entry point."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from geokafka.topology import parse_topology

REPO = Path(__file__).resolve().parents[2]
DOCS = sorted([REPO / "README.md", REPO / "CHANGELOG.md", REPO / "tests" / "README.md",
               *(REPO / "docs").rglob("*.md")])
GEOKAFKA_PACKAGES = {p.name for p in (REPO / "geokafka").iterdir() if p.is_dir() and (p / "__init__.py").exists()}


def _tracked_top_level() -> set[str]:
    listed = subprocess.run(["git", "ls-files"], cwd=REPO, capture_output=True, text=True, check=True).stdout
    return {line.split("/", 1)[0] for line in listed.splitlines()}


def repo_paths(text: str, top_level: set[str]) -> list[str]:
    """Backticked spans that name a repository path: they start with a tracked top-level entry
    (``geokafka/...``, ``docs/...``, ``run``) or with a package of geokafka (``pipeline/query.py``)."""
    found = []
    for span in re.findall(r"`([^`\s]+)`", text):
        candidate = span.rstrip(".,:;)")
        head = candidate.split("/", 1)[0]
        if "/" in candidate and head in GEOKAFKA_PACKAGES | {"bench"} and head not in top_level:
            found.append(f"geokafka/{candidate}")
        elif head in top_level and ("/" in candidate or candidate in top_level) and not candidate.startswith("geokafka-"):
            found.append(candidate)
    return found


def _exists(path: str) -> bool:
    if any(ch in path for ch in "*?["):
        return any(REPO.glob(path))
    return (REPO / path).exists()


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: str(p.relative_to(REPO)))
def test_every_repository_path_named_in_backticks_exists(doc: Path) -> None:
    missing = [p for p in repo_paths(doc.read_text(encoding="utf-8"), _tracked_top_level()) if not _exists(p)]
    assert missing == [], f"{doc.relative_to(REPO)} names paths that do not exist: {missing}"


def test_the_path_finder_finds_paths_and_leaves_other_code_alone() -> None:
    top = {"geokafka", "docs", "jvm", "run", "tests"}
    text = ("`geokafka/control/naming.py`, `pipeline/failures.py`, `jvm/`, `run`, `docs/bench/2026-11-23*.json`, "
            "`geokafka mirror`, `gk.src`, `geokafka-source`, `~/.cache/geokafka/jars`, `reports/`, `x/y`")
    assert repo_paths(text, top) == ["geokafka/control/naming.py", "geokafka/pipeline/failures.py", "jvm/", "run",
                                     "docs/bench/2026-11-23*.json"]
    assert not _exists("geokafka/infra/poms/kafka.pom.xml")  # the stale path the README named


README = (REPO / "README.md").read_text(encoding="utf-8")


def test_the_readme_is_short_and_opens_with_the_two_commands() -> None:
    lines = README.splitlines()
    assert len(lines) <= 210, f"README.md has {len(lines)} lines; details belong in docs/"
    first_block = README.split("```bash\n", 1)[1].split("```", 1)[0].splitlines()
    assert [line.split("#")[0].strip() for line in first_block] == ["./run demo", "./run tests"]


def test_the_readme_quick_start_topology_is_valid() -> None:
    quick = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    example = re.search(r"```yaml\n(.*?)```", quick, re.DOTALL)
    assert example is not None
    topology = parse_topology("\n".join(line.removeprefix("    ") for line in example.group(1).splitlines()),
                              "README.md")
    flow = topology.flow("nyc-to-atl")
    assert (flow.source, flow.target, flow.topics) == ("nyc", "atl", ["orders"])
    assert all(cluster.local is not None for cluster in topology.clusters.values())
    for command in ("geokafka check nyc-to-atl", "geokafka mirror", "geokafka status", "geokafka dashboard"):
        assert command in quick


YAML_BLOCK = re.compile(r"^( *)```yaml\n(.*?)^\1```", re.DOTALL | re.MULTILINE)
TOP_KEYS = ("clusters:", "flows:", "pipeline:", "stretch:")


def _whole_topologies() -> list[tuple[str, str]]:
    out = []
    for doc in DOCS:
        for indent, body in YAML_BLOCK.findall(doc.read_text(encoding="utf-8")):
            text = "\n".join(line.removeprefix(indent) for line in body.splitlines())
            first = next((line for line in text.splitlines() if line.strip() and not line.startswith("#")), "")
            if first.startswith(TOP_KEYS) and "clusters:" in text or first.startswith("stretch:"):
                out.append((f"{doc.relative_to(REPO)}: {first}", text))
    return out


@pytest.mark.parametrize(("where", "text"), _whole_topologies(), ids=[w for w, _ in _whole_topologies()])
def test_every_whole_topology_in_the_docs_is_valid(where: str, text: str) -> None:
    parse_topology(text, where)
