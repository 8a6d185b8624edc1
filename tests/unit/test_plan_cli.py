"""`geokafka plan` in-process and as a subprocess (no broker is started)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from geokafka.cli.main import cli

TOPOLOGY = """
clusters:
  nyc: {bootstrap: "127.0.0.1:19092"}
stretch:
  dcs:
    dc1: {brokers: 2, controllers: 1}
    dc2: {brokers: 2, controllers: 1}
    dc3: {controllers: 1}
  topics: {partitions: 6, replication_factor: 4, min_insync_replicas: 3, acks: all}
"""


@pytest.fixture
def topology(tmp_path: Path) -> Path:
    path = tmp_path / "geokafka.yaml"
    path.write_text(TOPOLOGY)
    return path


def test_plan_json_of_the_topology(topology: Path) -> None:
    result = CliRunner().invoke(cli, ["-f", str(topology), "plan", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    by_dc = {v["failure"]["name"]: v for v in data["verdicts"]["dc"]}
    assert by_dc["dc3"]["rpo_zero"] and by_dc["dc3"]["rto_zero"] and by_dc["dc3"]["writes"] == "uninterrupted"
    assert by_dc["dc1"]["quorum"]["survives"] and by_dc["dc1"]["rpo_zero"] and not by_dc["dc1"]["rto_zero"]
    assert data["quorum"] == {"voters": {"dc1": [101], "dc2": [102], "dc3": [103]}, "size": 3, "majority": 2,
                              "tolerated_voter_failures": 1}
    assert data["reassignment"]["version"] == 1


def test_global_json_flag_works_too(topology: Path) -> None:
    result = CliRunner().invoke(cli, ["-f", str(topology), "--json", "plan", "--layout", "3dc"])
    assert json.loads(result.output)["layout"] == "3dc"


def test_plan_table(topology: Path) -> None:
    result = CliRunner(env={"COLUMNS": "220"}).invoke(cli, ["-f", str(topology), "plan"])
    assert result.exit_code == 0, result.output
    for text in ("rack-aware assignment", "verdicts: one failure at a time", "any one broker",
                 "Lower min.insync.replicas of default from 3 to 2", "client.rack"):
        assert text in result.output


def test_presets_need_no_topology_file(tmp_path: Path) -> None:
    missing = tmp_path / "absent.yaml"
    for layout in ("1dc", "2dc", "2.5dc", "3dc"):
        result = CliRunner().invoke(cli, ["-f", str(missing), "plan", "--layout", layout])
        assert result.exit_code == 0, result.output


def test_assignment_file(topology: Path, tmp_path: Path) -> None:
    out = tmp_path / "plan" / "reassign.json"
    result = CliRunner().invoke(cli, ["-f", str(topology), "plan", "--assignment", str(out)])
    assert result.exit_code == 0, result.output
    doc = json.loads(out.read_text())
    assert len(doc["partitions"]) == 6 and doc["partitions"][0]["topic"] == "default"


def test_no_stretch_block_is_a_topology_error(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text('clusters:\n  nyc: {bootstrap: "127.0.0.1:19092"}\n')
    result = CliRunner().invoke(cli, ["-f", str(path), "plan"])
    assert result.exit_code == 2
    assert "TopologyError: the topology file has no stretch: block" in result.output


def test_unplaceable_topic_is_a_topology_error(tmp_path: Path) -> None:
    path = tmp_path / "t.yaml"
    path.write_text(TOPOLOGY.replace("replication_factor: 4", "replication_factor: 5"))
    result = CliRunner().invoke(cli, ["-f", str(path), "plan"])
    assert result.exit_code == 2
    assert "replication_factor 5 exceeds the 4 brokers" in result.output


def test_subprocess_json(topology: Path) -> None:
    script = Path(sys.executable).with_name("geokafka")
    proc = subprocess.run([str(script), "-f", str(topology), "plan", "--json", "--layout", "2dc"],
                          capture_output=True, text=True, check=False, timeout=60)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    dc1 = data["verdicts"]["dc"][0]
    assert dc1["quorum"]["survives"] is False and dc1["steps"]


def test_drill_with_an_unknown_dc_fails_before_starting_anything(topology: Path, tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["-f", str(topology), "drill", "stretch", "--layout", "3dc", "--dc", "dc9",
                                      "--out", str(tmp_path / "reports")])
    assert result.exit_code == 2
    assert "TopologyError: unknown DC 'dc9' (known: dc1, dc2, dc3)" in result.output
    assert not (tmp_path / "reports").exists()


def test_drill_help_says_wan_latency_is_not_emulated() -> None:
    result = CliRunner().invoke(cli, ["drill", "stretch", "--help"])
    assert result.exit_code == 0
    assert "NOT emulated" in result.output and "--recover" in result.output
