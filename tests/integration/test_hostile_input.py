"""Hostile input, end to end: the real CLI in a subprocess against the session test clusters.

Every case asserts one line on stderr naming the problem, the error class's exit code, no
traceback anywhere, and (where data is involved) that nothing was written. Broken topology
files are covered one by one in tests/unit/test_topology_errors.py; the cases here that start
from a broken file check the CLI path on top (exit code, one line, nothing touched).
A record larger than the target's max.message.bytes: tests/integration/test_pipeline_failures.py.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import ConsumerGroupTopicPartitions
from confluent_kafka.admin import AdminClient
from kafka_util import closed_port, create_topic, produce

from geokafka.control.connection import ClusterConnection

pytestmark = [pytest.mark.integration, pytest.mark.slow]

ROOT = Path(__file__).resolve().parents[2]
SECRET_VALUE = "s3cr3t-never-printed"


@dataclass
class Env:
    """What a case may refer to: clusters, a closed port, tmp_path, unique names."""

    east: ClusterConnection
    west: ClusterConnection
    tmp: Path
    closed: int
    tag: str
    state_dir: Path

    def admin(self, conn: ClusterConnection) -> AdminClient:
        return AdminClient(conn.librdkafka())

    def topics(self, conn: ClusterConnection) -> set[str]:
        return set(self.admin(conn).list_topics(timeout=10).topics)

    def committed(self, conn: ClusterConnection, group: str) -> list[Any]:
        """The group's committed offsets (none for a group that does not exist)."""
        admin = self.admin(conn)  # held until the answer: a client collected mid-request never answers
        fut = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group]
        return [tp for tp in fut.result(timeout=10).topic_partitions if tp.offset >= 0]


@dataclass(frozen=True)
class Case:
    id: str
    topology: str  # format() with east, west, closed, tmp, tag, state_dir
    args: list[str]
    exit_code: int
    says: list[str]  # fragments of the one stderr line (format()ted too)
    error: str = ""  # class name the line starts with ("" when click itself reports)
    setup: Callable[[Env], None] | None = None
    nothing_written: Callable[[Env], None] | None = None
    env: dict[str, str] = field(default_factory=dict)
    max_seconds: float = 60.0  # what it should take at most on a quiet machine (sets the hang guard)
    raw_file: bytes | None = None  # write these bytes instead of the topology
    file_is_dir: bool = False
    spark: bool = False  # a JVM: stderr has its warnings before our line


BASE = """\
clusters:
  east: {{bootstrap: "{east}"}}
  west: {{bootstrap: "{west}"}}
pipeline: {{master: "local[1]", state_dir: "{state_dir}", trigger_ms: 100, topic_refresh_s: 5}}
"""


def flows(text: str) -> str:
    return BASE + "flows:\n" + text


UNRESOLVABLE = "no-such-host.invalid:9092"


def unreachable(which: str, how: str) -> str:
    """The base topology with one cluster unreachable: unresolvable host or a closed port."""
    address = UNRESOLVABLE if how == "dns" else "127.0.0.1:{closed}"
    east = address if which == "east" else "{east}"
    west = address if which == "west" else "{west}"
    return f"""\
clusters:
  east: {{{{bootstrap: "{east}"}}}}
  west: {{{{bootstrap: "{west}"}}}}
pipeline: {{{{master: "local[1]", state_dir: "{{state_dir}}", trigger_ms: 100}}}}
flows:
  f-{{tag}}: {{{{source: east, target: west, topics: ["hx-{{tag}}"], groups: [".*"],
             sync: [configs, partitions, group-offsets]}}}}
"""


def no_remote_topic(env: Env) -> None:
    assert f"east.hx-{env.tag}" not in env.topics(env.west)


def topic_on_east(env: Env) -> None:
    create_topic(env.east, f"hx-{env.tag}", partitions=2)
    produce(env.east, f"hx-{env.tag}", [{"key": b"k", "value": b"v", "partition": 0}])


def no_group_commit(env: Env) -> None:
    assert env.committed(env.east, f"g-{env.tag}") == []
    assert env.committed(env.west, f"g-{env.tag}") == []


def mismatch_setup(env: Env) -> None:
    create_topic(env.east, f"hx-{env.tag}", partitions=3)
    create_topic(env.west, f"east.hx-{env.tag}", partitions=1)
    produce(env.east, f"hx-{env.tag}", [{"value": b"v", "partition": p} for p in range(3)])


def mismatch_untouched(env: Env) -> None:
    md = env.admin(env.west).list_topics(f"east.hx-{env.tag}", timeout=10).topics[f"east.hx-{env.tag}"]
    assert len(md.partitions) == 1
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer(env.west.librdkafka(**{"group.id": "hx-reader"}))
    try:
        assert c.get_watermark_offsets(TopicPartition(f"east.hx-{env.tag}", 0), timeout=10)[1] == 0
    finally:
        c.close()


def failed_over_once(env: Env) -> None:
    from geokafka.control.admin import ClusterAdmin
    from geokafka.control.state_store import ensure_state_topic

    # a target that never ran a mirror has no state topic yet: failover then reports a
    # write time-out as unreachable (reported, not fixed here: control/failover.py)
    ensure_state_topic(ClusterAdmin(env.west))
    run_cli(env.tmp / "geokafka.yaml", ["failover", f"f-{env.tag}"], expect=0)


def real_ca(env: Env) -> None:
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=hx-ca",
         "-keyout", str(env.tmp / "ca.key"), "-out", str(env.tmp / "ca.pem")],
        check=True, capture_output=True, timeout=60,
    )


def garbage_ca(env: Env) -> None:
    (env.tmp / "ca.pem").write_text("-----BEGIN CERTIFICATE-----\nnot base64\n-----END CERTIFICATE-----\n")


SIMPLE_FLOW = flows('  f-{tag}: {{source: east, target: west, topics: ["hx-{tag}"], groups: [".*"],'
                    ' sync: [configs, partitions, group-offsets]}}\n')
SASL = """\
clusters:
  east: {{bootstrap: "{east}", security: {{protocol: SASL_PLAINTEXT, sasl_mechanism: PLAIN, username: u,
         password: {{env: HX_PASSWORD}}}}}}
  west: {{bootstrap: "{west}"}}
pipeline: {{master: "local[1]", state_dir: "{state_dir}"}}
flows:
  f-{tag}: {{source: east, target: west, topics: ["hx-{tag}"]}}
"""
SSL = """\
clusters:
  east: {{bootstrap: "{east}", security: {{protocol: SSL, ca_file: "{tmp}/ca.pem"}}}}
  west: {{bootstrap: "{west}"}}
pipeline: {{master: "local[1]", state_dir: "{state_dir}"}}
flows:
  f-{tag}: {{source: east, target: west, topics: ["hx-{tag}"]}}
"""
SECRET_FILE = SASL.replace("{{env: HX_PASSWORD}}", '{{file: "{tmp}/no-such-secret"}}')
RESET = ["reset-offsets", "--cluster", "east", "--group", "g-{tag}", "--topic", "hx-{tag}",
         "--to-datetime", "2024-01-01T00:00:00", "--timeout", "3"]

CASES = [
    # -- the topology file itself, through the CLI ------------------------------------------
    Case("yaml-unclosed-flow-mapping", "clusters: {{east: {{bootstrap: x:1}}\n", ["validate"], 2,
         ["geokafka.yaml:", "invalid YAML"], "TopologyError"),
    Case("yaml-unterminated-quote", 'clusters:\n  east: {{bootstrap: "127.0.0.1:1}}\n', ["mirror", "--duration", "1"], 2,
         ["invalid YAML"], "TopologyError"),
    Case("yaml-anchor-undefined", "clusters: *nowhere\n", ["failover", "f"], 2, ["invalid YAML", "nowhere"],
         "TopologyError"),
    Case("wrong-type-sync-interval", flows('  f: {{source: east, target: west, sync_interval_s: soon}}\n'),
         ["offsets", "translate", "f", "-g", "g"], 2, ["flows.f.sync_interval_s", "number"], "TopologyError"),
    Case("wrong-type-trigger", BASE.replace("trigger_ms: 100", "trigger_ms: fast"), ["mirror", "--duration", "1"], 2,
         ["pipeline.trigger_ms"], "TopologyError"),
    Case("wrong-type-sync-kind", flows('  f: {{source: east, target: west, sync: [everything]}}\n'),
         ["check", "f"], 2, ["flows.f.sync.0"], "TopologyError"),
    Case("regex-does-not-compile-mirror", flows('  f-{tag}: {{source: east, target: west, topics: ["(hx"]}}\n'),
         ["mirror", "--duration", "1"], 2, ["flows.f-{tag}.topics", "does not compile"], "TopologyError",
         nothing_written=no_remote_topic),
    Case("group-regex-does-not-compile-translate", flows('  f: {{source: east, target: west, groups: ["*g"]}}\n'),
         ["offsets", "translate", "f", "-g", "g"], 2, ["flows.f.groups", "does not compile"], "TopologyError"),
    Case("unknown-cluster-in-flow-failover", flows('  f: {{source: east, target: north}}\n'), ["failover", "f"], 2,
         ["flows.f.target", "unknown cluster 'north'"], "TopologyError"),
    Case("flow-to-itself-mirror", flows('  f: {{source: east, target: east}}\n'), ["mirror", "--duration", "1"], 2,
         ["flows.f", "both 'east'"], "TopologyError"),
    Case("topology-is-a-directory", "", ["mirror", "--duration", "1"], 2, ["geokafka.yaml", "cannot read"],
         "TopologyError", file_is_dir=True),
    Case("topology-not-utf8", "", ["failover", "f"], 2, ["geokafka.yaml:2", "not UTF-8"], "TopologyError",
         raw_file=b"clusters:\n  caf\xe9: {bootstrap: 'h:1'}\n"),
    Case("topology-binary-garbage", "", ["validate"], 2, ["geokafka.yaml"], "TopologyError",
         raw_file=bytes(range(256)) * 4),
    # -- unknown names ---------------------------------------------------------------------
    Case("unknown-flow-mirror", SIMPLE_FLOW, ["mirror", "nope", "--duration", "1"], 2, ["unknown flow 'nope'", "f-{tag}"],
         "TopologyError"),
    Case("unknown-flow-translate", SIMPLE_FLOW, ["offsets", "translate", "nope", "-g", "g"], 2, ["unknown flow 'nope'"],
         "TopologyError"),
    Case("unknown-flow-failover", SIMPLE_FLOW, ["failover", "nope"], 2, ["unknown flow 'nope'"], "TopologyError"),
    Case("unknown-flow-promote", SIMPLE_FLOW, ["promote", "nope"], 2, ["unknown flow 'nope'"], "TopologyError"),
    Case("unknown-flow-failback", SIMPLE_FLOW, ["failback", "nope"], 2, ["unknown flow 'nope'"], "TopologyError"),
    Case("unknown-flow-check", SIMPLE_FLOW, ["check", "nope"], 2, ["unknown flow 'nope'"], "TopologyError"),
    Case("unknown-cluster-reset", SIMPLE_FLOW, [*RESET[:2], "north", *RESET[3:]], 2, ["unknown cluster 'north'"],
         "TopologyError"),
    Case("up-cluster-without-local", SIMPLE_FLOW, ["up", "east"], 2, ["cluster 'east' has no local: block"],
         "TopologyError"),
    Case("plan-without-stretch", SIMPLE_FLOW, ["plan"], 2, ["no stretch: block"], "TopologyError"),
    Case("drill-without-stretch", SIMPLE_FLOW, ["drill", "stretch"], 2, ["no stretch: block"], "TopologyError"),
    # -- clusters that do not answer -------------------------------------------------------
    Case("translate-source-unresolvable", unreachable("east", "dns"),
         ["offsets", "translate", "f-{tag}", "-g", "g-{tag}", "--timeout", "3"], 4,
         # the target is asked first for the checkpoint: the source is then just unreachable
         ["east", UNRESOLVABLE], "ClusterUnreachableError", nothing_written=no_group_commit, max_seconds=40),
    Case("translate-target-port-closed", unreachable("west", "port"),
         ["offsets", "translate", "f-{tag}", "-g", "g-{tag}", "--timeout", "3"], 4,
         ["cluster west", "127.0.0.1:{closed}"], "ClusterUnreachableError", nothing_written=no_group_commit),
    Case("failover-target-unresolvable", unreachable("west", "dns"), ["failover", "f-{tag}"], 4,
         ["cluster west", UNRESOLVABLE], "ClusterUnreachableError", max_seconds=40),
    Case("failover-target-port-closed", unreachable("west", "port"), ["failover", "f-{tag}"], 4,
         ["cluster west", "127.0.0.1:{closed}"], "ClusterUnreachableError", max_seconds=40),
    Case("reset-unresolvable", unreachable("east", "dns"), RESET, 4, ["cluster east", UNRESOLVABLE],
         "ClusterUnreachableError"),
    Case("reset-port-closed", unreachable("east", "port"), RESET, 4, ["cluster east", "127.0.0.1:{closed}"],
         "ClusterUnreachableError"),
    Case("promote-source-unreachable", unreachable("east", "port"), ["promote", "f-{tag}", "--timeout", "5"], 4,
         ["promote needs the source east reachable"], "ClusterUnreachableError", max_seconds=40),
    Case("check-source-unresolvable", unreachable("east", "dns"), ["check", "f-{tag}", "--timeout", "3"], 4,
         ["cluster east", UNRESOLVABLE], "ClusterUnreachableError"),
    Case("mirror-source-unresolvable", unreachable("east", "dns"), ["mirror", "--duration", "20"], 4,
         ["cluster east", UNRESOLVABLE], "ClusterUnreachableError", nothing_written=no_remote_topic,
         max_seconds=110, spark=True),
    Case("mirror-target-port-closed", unreachable("west", "port"), ["mirror", "--duration", "20"], 4,
         ["cluster west", "127.0.0.1:{closed}"], "ClusterUnreachableError", max_seconds=110, spark=True),
    # -- secrets and security --------------------------------------------------------------
    Case("password-env-not-set", SASL, ["offsets", "translate", "f-{tag}", "-g", "g"], 9,
         ["clusters.east.security.password", "HX_PASSWORD is not set"], "AuthError"),
    Case("secret-file-missing", SECRET_FILE, ["failover", "f-{tag}"], 9,
         ["clusters.east.security.password", "no-such-secret"], "AuthError"),
    # the broker answers the SASL handshake on its PLAINTEXT listener with an error: a refusal
    Case("sasl-against-plaintext-broker", SASL, ["check", "f-{tag}", "--timeout", "5"], 9,
         ["cluster east", "refused"], "AuthError", env={"HX_PASSWORD": SECRET_VALUE}, max_seconds=30),
    Case("ssl-against-plaintext-broker", SSL, ["reset-offsets", *RESET[1:]], 4, ["cluster east"], "ClusterUnreachableError",
         setup=real_ca, max_seconds=30),
    Case("ssl-ca-file-missing", SSL, ["reset-offsets", *RESET[1:]], 9,
         ["cluster east", "security.ca_file", "ca.pem", "not a readable file"], "AuthError"),
    Case("ssl-ca-file-not-pem", SSL, ["check", "f-{tag}"], 9, ["cluster east", "client settings rejected", "ssl"],
         "AuthError", setup=garbage_ca),
    # -- data-level refusals ---------------------------------------------------------------
    Case("reset-missing-topic", SIMPLE_FLOW, RESET, 6, ["hx-{tag}", "cluster east", "does not exist"],
         "MissingTopicError", nothing_written=no_group_commit),
    Case("reset-malformed-datetime", SIMPLE_FLOW, [*RESET[:-3], "yesterday-ish", *RESET[-2:]], 2,
         ["--to-datetime", "yesterday-ish", "not an ISO 8601 datetime"], "Error"),
    Case("translate-group-without-offsets", SIMPLE_FLOW, ["offsets", "translate", "f-{tag}", "-g", "g-{tag}"], 10,
         ["g-{tag}"], "NoCommittedOffsetsError", setup=topic_on_east, nothing_written=no_group_commit),
    Case("failover-twice", SIMPLE_FLOW, ["failover", "f-{tag}"], 10, ["f-{tag}", "already failed over"],
         "AlreadyFailedOverError", setup=failed_over_once),
    Case("failback-not-failed-over", SIMPLE_FLOW, ["failback", "f-{tag}"], 10, ["f-{tag}", "is not failed over"],
         "NotFailedOverError"),
    Case("mirror-target-has-fewer-partitions",
         flows('  f-{tag}: {{source: east, target: west, topics: ["hx-{tag}"], sync: [configs]}}\n'),
         ["mirror", "--duration", "40"], 12, ["hx-{tag}", "east.hx-{tag}"], "PartitionMismatchError",
         setup=mismatch_setup, nothing_written=mismatch_untouched, max_seconds=120, spark=True),
]


@dataclass(frozen=True)
class FileCase:
    """A topology file hostile by its size or shape: refused before any cluster is asked (no brokers needed)."""

    id: str
    write: Callable[[Path], None]
    says: str  # how the one stderr line goes on after "TopologyError: <file>"
    args: tuple[str, ...] = ("validate",)


def _padded_50_mb(path: Path) -> None:
    line = b"# padding padding padding padding padding padding padding padding\n"
    with path.open("wb") as out:
        out.write(b"clusters:\n  a: {bootstrap: 'h:9092'}\n")
        out.write(line * (50 * 1024 * 1024 // len(line)))


FILE_CASES = [
    FileCase("file-50-mb", _padded_50_mb, ": 52,428,787 bytes is more than a topology file may have (1 MiB)",
             ("mirror", "--duration", "1")),
    FileCase("file-nested-50000-deep", lambda p: p.write_text("clusters: " + "[" * 50_000),
             ":1: nested more than 64 levels deep (a topology needs fewer than 10)", ("failover", "f")),
    FileCase("file-50001-values",
             lambda p: p.write_text("flows: {f: {topics: [" + ",".join(["t"] * 50_001) + "]}}\n"),
             ":1: more than 50,000 values (a topology has hundreds)"),
    FileCase("file-stretch-plan-too-large",
             lambda p: p.write_text("stretch:\n  dcs: {a: {brokers: 30, controllers: 3}, b: {brokers: 30}}\n"
                                    "  topics: {partitions: 10000}\n"),
             ":1: stretch: a plan would judge 65 failures x 10,000 partitions = 650,000 outcomes", ("plan",)),
]
FILE_CASE_CPU_S = 5.0
"""A guard on the work a refusal does: the CLI's CPU time, a Python start-up plus milliseconds of checking (0.4-0.7 s
here). CPU time, not wall time: the suite runs at load 20-50 (a refusal took 11.6 s of wall time in a clean-clone run)."""


@pytest.mark.parametrize("case", FILE_CASES, ids=[c.id for c in FILE_CASES])
def test_hostile_topology_file(tmp_path: Path, case: FileCase) -> None:
    """The real CLI refuses the file in one line with exit code 2, no traceback, in about a Python start-up."""
    file = tmp_path / "geokafka.yaml"
    case.write(file)
    proc, cpu_s = run_cli_measured(file, list(case.args), tmp_path, timeout=60)
    assert "Traceback" not in proc.stdout + proc.stderr
    assert proc.returncode == 2, (proc.returncode, proc.stderr[-2000:])
    assert len(proc.stderr.splitlines()) == 1, proc.stderr
    assert proc.stderr.startswith(f"TopologyError: {file}{case.says}"), proc.stderr
    assert cpu_s < FILE_CASE_CPU_S, cpu_s


def _cli_env(extra: dict[str, str] | None) -> dict[str, str]:
    """This process's environment without the secrets and debug switch the cases set themselves, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in ("HX_PASSWORD", "GEOKAFKA_DEBUG")}
    env.update(extra or {})
    return env


def run_cli_measured(file: Path, args: list[str], tmp: Path, timeout: float) -> tuple[subprocess.CompletedProcess[str], float]:
    """The CLI run as :func:`run_cli` does, and the CPU seconds it (and what it waited for) used: from its own
    ``wait4``; a pytest worker's RUSAGE_CHILDREN also counts whatever else it reaped meanwhile (17 s once)."""
    import threading

    env = _cli_env(None)
    out_path, err_path = tmp / "cli.out", tmp / "cli.err"
    with out_path.open("wb") as out, err_path.open("wb") as err:
        child = subprocess.Popen([sys.executable, "-m", "geokafka", "-f", str(file), *args],
                                 stdout=out, stderr=err, cwd=ROOT, env=env)
    guard = threading.Timer(timeout, child.kill)  # a hang guard
    guard.start()
    try:
        _, status, usage = os.wait4(child.pid, 0)
    finally:
        guard.cancel()
    child.returncode = os.waitstatus_to_exitcode(status)
    proc = subprocess.CompletedProcess(child.args, child.returncode, out_path.read_text(errors="replace"),
                                       err_path.read_text(errors="replace"))
    return proc, usage.ru_utime + usage.ru_stime


def run_cli(file: Path, args: list[str], expect: int | None = None, env: dict[str, str] | None = None,
            timeout: float = 150.0) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [sys.executable, "-m", "geokafka", "-f", str(file), *args],
        capture_output=True, text=True, errors="replace", timeout=timeout, cwd=ROOT, env=_cli_env(env),
    )
    if expect is not None:
        assert proc.returncode == expect, (proc.returncode, proc.stdout[-2000:], proc.stderr[-2000:])
    return proc


@pytest.fixture
def hx_env(tmp_path: Path, east: ClusterConnection, west: ClusterConnection) -> Env:
    return _env(tmp_path, east, west)


def _env(tmp: Path, east: ClusterConnection, west: ClusterConnection) -> Env:
    return Env(east, west, tmp, closed_port(), uuid.uuid4().hex[:8], tmp / "state")


def _fmt(text: str, env: Env) -> str:
    return text.format(east=env.east.bootstrap, west=env.west.bootstrap, closed=env.closed, tmp=env.tmp,
                       tag=env.tag, state_dir=env.state_dir)


@dataclass
class Outcome:
    """What one case's CLI run did."""

    env: Env
    proc: subprocess.CompletedProcess[str] | None = None
    failure: BaseException | None = None


# Most cases wait on a time-out (an unreachable cluster, a refused login), so they run side by
# side; each has its own files, names and state directory.
PARALLEL = 6


def _run_case(case: Case, env: Env) -> Outcome:
    outcome = Outcome(env)
    try:
        env.tmp.mkdir(parents=True, exist_ok=True)
        file = env.tmp / "geokafka.yaml"
        if case.file_is_dir:
            file.mkdir()
        elif case.raw_file is not None:
            file.write_bytes(case.raw_file)
        else:
            file.write_text(_fmt(case.topology, env), encoding="utf-8")
        if case.setup is not None:
            case.setup(env)
        # a hang guard, not a speed target: generous, because the cases share two cores
        outcome.proc = run_cli(file, [_fmt(a, env) for a in case.args], env=case.env,
                               timeout=max(150.0, 3 * case.max_seconds))
    except BaseException as exc:  # noqa: BLE001 - reported by the case's own test
        outcome.failure = exc
    return outcome


@pytest.fixture(scope="module")
def outcomes(tmp_path_factory: pytest.TempPathFactory, east: ClusterConnection,
             west: ClusterConnection) -> dict[str, Outcome]:
    """Every case run once through the real CLI, several at a time (longest first)."""
    root = tmp_path_factory.mktemp("hostile")
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        futures = {c.id: pool.submit(_run_case, c, _env(root / c.id, east, west))
                   for c in sorted(CASES, key=lambda c: -c.max_seconds)}
        return {cid: f.result() for cid, f in futures.items()}


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_hostile_input(outcomes: dict[str, Outcome], case: Case) -> None:
    outcome = outcomes[case.id]
    if outcome.failure is not None:
        raise outcome.failure
    proc, env = outcome.proc, outcome.env
    assert proc is not None
    out = proc.stdout + proc.stderr
    assert "Traceback" not in out, out[-3000:]
    assert SECRET_VALUE not in out
    assert proc.returncode == case.exit_code, (proc.returncode, out[-2000:])
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert lines, "nothing on stderr"
    line = lines[-1]
    if not case.spark and case.error != "Error":
        assert len(lines) == 1, proc.stderr
    assert not any(line.startswith("%") for line in lines), "librdkafka log lines leaked to stderr"
    if case.error:
        assert line.startswith(f"{case.error}: "), line
    for fragment in case.says:
        assert _fmt(fragment, env) in line, line
    if case.nothing_written is not None:
        case.nothing_written(env)


def test_check_on_an_open_cluster_says_ok_and_leaves_nothing_behind(hx_env: Env) -> None:
    """`geokafka check`: on the PLAINTEXT test clusters (east: no authorizer; west: one, with the
    test clients as super user) every permission is OK."""
    import json

    topic_on_east(hx_env)
    file = hx_env.tmp / "geokafka.yaml"
    file.write_text(_fmt(SIMPLE_FLOW, hx_env), encoding="utf-8")
    before = hx_env.topics(hx_env.west)
    proc = run_cli(file, ["--json", "check", f"f-{hx_env.tag}"], expect=0)
    report = json.loads(proc.stdout)
    assert report["ok"] is True, [c for c in report["checks"] if c["status"] != "OK"]
    checks = {c["check"] for c in report["checks"]}
    assert checks >= {f"source.topic.read:hx-{hx_env.tag}", "target.txn.write", "target.state.write"}
    # the groups selected now (".*": whatever groups earlier tests left on east), or "*" when there are none
    assert any(c.startswith("target.group.read:") for c in checks), checks
    leftover = {t for t in hx_env.topics(hx_env.west) - before if "geokafka-check" in t}
    assert not leftover
    assert f"east.hx-{hx_env.tag}" not in hx_env.topics(hx_env.west)
