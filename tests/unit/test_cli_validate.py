"""`geokafka validate`, `up` and `down` in-process (click's CliRunner): errors are one line and an exit code.

Nothing here starts a broker: every `up` below fails before launching anything.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from geokafka.cli.main import cli

VALID = """\
clusters:
  east:
    bootstrap: 127.0.0.1:44092
    local: {brokers: 3, racks: [a, b, c]}
  west:
    bootstrap: 127.0.0.1:45092
    local: {brokers: 1}
  cloud:
    bootstrap: kafka.example.com:9092
flows:
  east-to-west: {source: east, target: west}
pipeline:
  state_dir: STATE
"""

# (id, file text, the one line expected on stderr after "TopologyError: <file>")
BROKEN = [
    ("typo-in-key", VALID.replace("local: {brokers: 1}", "locl: {brokers: 1}"), ":7: clusters.west.locl: unknown key"),
    (
        "duplicate-port",
        VALID.replace("127.0.0.1:45092", "127.0.0.1:44094"),
        ":7: clusters.west.local: port 44094 is also used by cluster 'east'",
    ),
    (
        "flow-to-unknown-cluster",
        VALID.replace("target: west", "target: wets"),
        ":11: flows.east-to-west.target: unknown cluster 'wets'",
    ),
    ("invalid-yaml", VALID.replace("{brokers: 1}", "{brokers: 1"), ":8: invalid YAML: "),
]


def run(*args: str, env: dict[str, str] | None = None) -> Result:
    return CliRunner(env=env).invoke(cli, list(args))


@pytest.fixture
def topology_file(tmp_path: Path) -> Path:
    path = tmp_path / "geokafka.yaml"
    path.write_text(VALID.replace("STATE", str(tmp_path / "state")), encoding="utf-8")
    return path


def test_valid_file(topology_file: Path) -> None:
    result = run("-f", str(topology_file), "validate")
    assert result.exit_code == 0, result.output
    # rich wraps long lines at the console width: compare words, not line breaks
    assert result.stdout.split() == f"{topology_file}: valid (3 clusters, 1 flows)".split()
    assert result.stderr == ""


def test_valid_file_as_json(topology_file: Path) -> None:
    result = run("-f", str(topology_file), "--json", "validate")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {
        "file": str(topology_file),
        "valid": True,
        "problems": [],
        "clusters": ["cloud", "east", "west"],
        "flows": {"east-to-west": "east -> west"},
        "stretch": None,
    }


def test_file_from_the_environment(topology_file: Path) -> None:
    result = run("validate", env={"GEOKAFKA_FILE": str(topology_file)})
    assert result.exit_code == 0, result.output
    assert "valid (3 clusters" in result.stdout


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in BROKEN], ids=[i for i, _, _ in BROKEN])
def test_broken_file_is_one_line_and_exit_code_2(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "broken.yaml"
    path.write_text(text, encoding="utf-8")
    result = run("-f", str(path), "validate")
    assert result.exit_code == 2
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(f"TopologyError: {path}{expected}"), lines[0]
    assert "Traceback" not in result.output
    assert isinstance(result.exception, SystemExit)  # a clean exit, not an escaped exception


def test_missing_file(tmp_path: Path) -> None:
    result = run("-f", str(tmp_path / "nope.yaml"), "validate")
    assert result.exit_code == 2
    assert result.stderr == f"TopologyError: {tmp_path / 'nope.yaml'}: topology file not found\n"


def test_help_does_not_read_the_topology(tmp_path: Path) -> None:
    result = run("-f", str(tmp_path / "nope.yaml"), "up", "--help")
    assert result.exit_code == 0
    assert "Start the topology's local clusters" in result.stdout


@pytest.mark.parametrize(("name", "says"), [
    ("nope", "TopologyError: unknown cluster 'nope' (known: cloud, east, west)"),
    ("cloud", "TopologyError: cluster 'cloud' has no local: block"),
])
def test_up_and_down_refuse_names_that_are_not_local_clusters(topology_file: Path, name: str, says: str) -> None:
    for command in ("up", "down"):
        result = run("-f", str(topology_file), command, name)
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(says), result.stderr
    assert not (topology_file.parent / "state").exists()  # nothing was prepared, let alone started


def test_down_when_nothing_runs(topology_file: Path) -> None:
    result = run("-f", str(topology_file), "--json", "down")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout) == {"east": 0, "west": 0}


# Files that `plan` or `up` refused while `validate` said "valid": validate now runs the same checks.
PLAN_AND_UP_REFUSE = VALID + """\
stretch:
  dcs:
    dc1: {brokers: 2, controllers: 1}
    dc2: {brokers: 1, controllers: 1}
  topics:
    orders: {replication_factor: 4, min_insync_replicas: 2}
    payments: {replication_factor: 3, min_insync_replicas: 4}
"""


def test_validate_reports_every_problem_plan_and_up_would_meet(tmp_path: Path) -> None:
    path = tmp_path / "geokafka.yaml"
    text = PLAN_AND_UP_REFUSE.replace("local: {brokers: 1}", "local: {brokers: 1, port: 45500}")
    path.write_text(text.replace("STATE", str(tmp_path / "state")), encoding="utf-8")
    result = run("-f", str(path), "validate")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"TopologyError: {path}:7: clusters.west.local.port: bootstrap port 45092 is not a port of the local brokers "
        "(45500): clients would never reach the brokers `geokafka up` starts",
        f"TopologyError: {path}:19: stretch.topics.orders: replication_factor 4 exceeds the 3 brokers that hold "
        "synchronous replicas",
        f"TopologyError: {path}:20: stretch.topics.payments: min_insync_replicas 4 exceeds replication_factor 3: "
        "no acks=all write could ever succeed",
    ]
    # the commands themselves refuse the same file, with the first problem
    for command in (["plan"], ["up", "west"]):
        refused = run("-f", str(path), *command)
        assert refused.exit_code == 2, refused.output
        assert refused.stderr.startswith(f"TopologyError: {path}:7: clusters.west.local.port: "), refused.stderr
        assert refused.stderr.rstrip().endswith("(and 2 more)")
    assert not (tmp_path / "state").exists()


def test_validate_json_lists_every_problem_with_where_and_what(tmp_path: Path) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(VALID.replace("bootstrap: 127.0.0.1:44092", "bootstrapp: 127.0.0.1:44092")
                    .replace("local: {brokers: 1}", "local: {brokrs: 1}"), encoding="utf-8")
    result = run("-f", str(path), "--json", "validate")
    assert result.exit_code == 2
    report = json.loads(result.stdout)
    assert report["valid"] is False and report["file"] == str(path)
    assert report["problems"] == [
        {"where": f"{path}:3", "key": "clusters.east.bootstrapp", "what": "unknown key (did you mean 'bootstrap'?)"},
        {"where": f"{path}:7", "key": "clusters.west.local.brokrs", "what": "unknown key (did you mean 'brokers'?)"},
        {"where": f"{path}:2", "key": "clusters.east.bootstrap", "what": "required key is missing"},
    ]
    assert len(result.stderr.splitlines()) == 3  # the same problems for people, one line each


def test_validate_json_of_an_unreadable_file(tmp_path: Path) -> None:
    result = run("-f", str(tmp_path / "nope.yaml"), "--json", "validate")
    assert result.exit_code == 2
    assert json.loads(result.stdout)["problems"] == [
        {"where": str(tmp_path / "nope.yaml"), "key": "", "what": "topology file not found"}]


def test_without_f_the_file_is_geokafka_yaml_in_the_current_directory(tmp_path: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEOKAFKA_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    result = run("validate")
    assert result.exit_code == 2
    assert result.stderr == (f"TopologyError: {tmp_path / 'geokafka.yaml'}: no topology file here: without -f FILE "
                             "(or GEOKAFKA_FILE) geokafka reads geokafka.yaml in the current directory\n")
    (tmp_path / "geokafka.yaml").write_text(VALID.replace("STATE", str(tmp_path / "state")), encoding="utf-8")
    result = run("validate")
    assert result.exit_code == 0, result.output
    assert result.stdout.split() == "geokafka.yaml: valid (3 clusters, 1 flows)".split()


def test_a_relative_f_is_read_from_the_current_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "t.yaml").write_text(VALID.replace("STATE", str(tmp_path / "state")), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert run("-f", "sites/t.yaml", "validate").exit_code == 0
    missing = run("-f", "sites/nope.yaml", "validate")
    assert missing.exit_code == 2
    assert missing.stderr == (f"TopologyError: sites/nope.yaml: topology file not found (looked for "
                              f"{tmp_path / 'sites' / 'nope.yaml'})\n")


def test_plan_presets_still_need_no_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GEOKAFKA_FILE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert run("plan", "--layout", "3dc").exit_code == 0


def test_the_site_guard_refuses_to_run_unless_the_topology_opts_in(topology_file: Path) -> None:
    result = run("-f", str(topology_file), "guard", "--sites")
    assert result.exit_code != 0
    assert result.stderr.strip().count("\n") == 0, result.stderr
    assert "failover.automatic is not true" in result.stderr and "--dry-run" in result.stderr
    assert "Traceback" not in result.output


def test_an_automatic_failover_without_an_rpo_limit_is_a_broken_topology(topology_file: Path) -> None:
    topology_file.write_text(topology_file.read_text() + "failover: {automatic: true}\n", encoding="utf-8")
    result = run("-f", str(topology_file), "validate")
    assert result.exit_code != 0
    assert "failover" in result.stderr and "max_rpo_records" in result.stderr, result.stderr


def test_the_site_guard_names_a_site_that_sources_no_flow(topology_file: Path) -> None:
    result = run("-f", str(topology_file), "guard", "--sites", "--site", "west", "--dry-run", "--duration", "1")
    assert result.exit_code != 0
    assert "--site west: no flow has west as its source" in result.stderr
    assert run("-f", str(topology_file), "guard", "--site", "east").exit_code == 2  # --site needs --sites
