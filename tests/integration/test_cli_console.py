"""The installed `geokafka` console command, run as a subprocess: broken topologies end in one line and exit 2.

No broker is needed; these run the real entry point (`.venv/bin/geokafka`) exactly as a user does.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from pipeline_util import GEOKAFKA

pytestmark = pytest.mark.integration


VALID = """\
clusters:
  east:
    bootstrap: 127.0.0.1:44092
    local: {brokers: 3, racks: [a, b, c]}
  west:
    bootstrap: 127.0.0.1:45092
    local: {brokers: 1}
flows:
  east-to-west:
    source: east
    target: west
"""

# (id, file text, what stderr must start with after "TopologyError: <file>")
BROKEN = [
    ("typo-in-key", VALID.replace("racks:", "rakcs:"), ":4: clusters.east.local.rakcs: unknown key"),
    ("duplicate-port", VALID.replace(":45092", ":44093"),
     ":7: clusters.west.local: port 44093 is also used by cluster 'east'"),
    ("flow-to-unknown-cluster", VALID.replace("target: west", "target: north"),
     ":11: flows.east-to-west.target: unknown cluster 'north'"),
    ("invalid-yaml", VALID.replace("racks: [a, b, c]}", "racks: [a, b, c}"), ":4: invalid YAML: "),
]


def geokafka(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GEOKAFKA), *args], capture_output=True, text=True, timeout=60, check=False, cwd=cwd)


def test_the_console_command_is_installed() -> None:
    assert GEOKAFKA.is_file(), f"{GEOKAFKA} missing: install the project into the venv (./run does)"


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in BROKEN], ids=[i for i, _, _ in BROKEN])
def test_broken_topology(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(text, encoding="utf-8")
    result = geokafka("-f", str(path), "validate")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"TopologyError: {path}{expected}"), lines[0]
    assert "Traceback" not in result.stderr


def test_broken_topology_fails_every_command_that_reads_it(tmp_path: Path) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(BROKEN[0][1], encoding="utf-8")
    for command in (["up"], ["down"], ["--json", "validate"]):
        result = geokafka("-f", str(path), *command, cwd=tmp_path)
        assert result.returncode == 2, command
        assert result.stderr.startswith(f"TopologyError: {path}:4: clusters.east.local.rakcs: unknown key"), command
    assert not (tmp_path / ".geokafka").exists()  # `up` prepared nothing (the default state_dir)


def test_valid_topology_as_json(tmp_path: Path) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(VALID, encoding="utf-8")
    result = geokafka("-f", str(path), "--json", "validate")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["flows"] == {"east-to-west": "east -> west"}


def test_missing_topology_file(tmp_path: Path) -> None:
    result = geokafka("-f", str(tmp_path / "absent.yaml"), "validate")
    assert result.returncode == 2
    assert result.stderr == f"TopologyError: {tmp_path / 'absent.yaml'}: topology file not found\n"
