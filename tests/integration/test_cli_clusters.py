"""`geokafka up` / `geokafka down` through the real console command, against the brokers they start.

The module starts its own topology (a 3-broker cluster on racks a/b/c and a 1-broker
cluster) once, under pytest's tmp_path, and stops it at the end. Its ports, 27500-27899, lie
below the kernel's ephemeral range (32768-60999), where any outgoing connection on the
machine may hold a port as its source port and keep a broker from binding it; and they end
in none of X092-X094/X192-X194, the ports of the session fixtures at any round
GEOKAFKA_TEST_PORT_BASE.
"""

from __future__ import annotations

import gc
import json
import re
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient
from kafka_util import create_topic, produce, read_all
from pipeline_util import GEOKAFKA

from geokafka.control.connection import ClusterConnection, connection
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import LocalClusterSpec, ports_of, running_nodes
from geokafka.topology import load_topology

pytestmark = pytest.mark.integration

KCAT = "/usr/bin/kcat"
BIG = 27592  # brokers 27592-27594, controllers 27692-27694
SMALL = 27792  # broker 27792, controller 27892

TOPOLOGY = """\
clusters:
  big:
    bootstrap: 127.0.0.1:{BIG}
    local: {{brokers: 3, racks: [rack-a, rack-b, rack-c], heap_mb: 320}}
  small:
    bootstrap: 127.0.0.1:{SMALL}
    local: {{brokers: 1, heap_mb: 320}}
pipeline:
  state_dir: {state}
"""


def geokafka(topology_file: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    """Run the installed console command, as a user would."""
    return subprocess.run(
        [str(GEOKAFKA), "-f", str(topology_file), *args],
        capture_output=True, text=True, timeout=timeout, cwd=topology_file.parent, check=False,
    )


def pid_is_alive(pid: int) -> bool:
    """True while ``pid`` is a live process (a zombie is dead: it only waits to be reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def recorded_pids(spec: LocalClusterSpec) -> dict[int, int]:
    """node id -> PID written in the node's ``kafka.pid``."""
    pids = {}
    for node in spec.nodes:
        pid_file = spec.node_dir(node.node_id) / "kafka.pid"
        if pid_file.exists():
            pids[node.node_id] = int(pid_file.read_text().split()[0])
    return pids


def bind_succeeds(port: int) -> bool:
    """True if a server could listen on ``port`` now (SO_REUSEADDR, as Kafka binds)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind(("127.0.0.1", port))
            sock.listen(1)
        except OSError:
            return False
    return True


def wait_for_leaders(conn: ClusterConnection, topic: str, timeout_s: float = 60) -> None:
    """Every partition of ``topic`` has a leader (after a restart the election can lag a moment)."""
    admin = AdminClient(conn.librdkafka())
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=10).topics.get(topic)
        if md is not None and md.error is None and md.partitions and all(
            p.leader >= 0 for p in md.partitions.values()
        ):
            return
        time.sleep(0.2)
    raise AssertionError(f"{topic}: partitions without a leader after {timeout_s:.0f}s")


@dataclass(frozen=True)
class UpCluster:
    """The module's topology after `geokafka up`."""

    file: Path
    up_output: list[dict]
    specs: dict[str, LocalClusterSpec]
    big: ClusterConnection


def assert_all_stopped(specs: list[LocalClusterSpec], pids: dict[str, dict[int, int]]) -> None:
    for spec in specs:
        alive = {node: pid for node, pid in pids[spec.name].items() if pid_is_alive(pid)}
        assert not alive, f"{spec.name}: still running after down: {alive}"
        assert running_nodes(spec) == {}
        assert not list(spec.home.glob("node-*/kafka.pid"))
        taken = [port for port in ports_of(spec) if not bind_succeeds(port)]
        assert not taken, f"{spec.name}: ports still taken after down: {taken}"


@pytest.fixture(scope="module")
def up_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[UpCluster]:
    home = tmp_path_factory.mktemp("cli-clusters")
    file = home / "geokafka.yaml"
    file.write_text(TOPOLOGY.format(BIG=BIG, SMALL=SMALL, state=home / "state"), encoding="utf-8")
    topology = load_topology(file)
    specs = {spec.name: spec for spec in local_cluster_specs(topology)}
    try:
        result = geokafka(file, "--json", "up", "--timeout", "180")
        assert result.returncode == 0, result.stderr
        yield UpCluster(file, json.loads(result.stdout), specs, connection(topology, "big"))
    finally:
        gc.collect()  # no client of this process may keep reconnecting to the ports being freed
        pids = {name: recorded_pids(spec) for name, spec in specs.items()}
        result = geokafka(file, "down")
        assert result.returncode == 0, result.stderr
        assert_all_stopped(list(specs.values()), pids)


def test_up_when_a_port_is_taken_starts_nothing(tmp_path: Path) -> None:
    # Runs before the module's clusters start (file order) and uses ports of its own.
    file = tmp_path / "geokafka.yaml"
    a, b = 27542, 27742  # controllers 27642, 27842
    file.write_text(
        "clusters:\n"
        f"  a: {{bootstrap: '127.0.0.1:{a}', local: {{brokers: 1, heap_mb: 320}}}}\n"
        f"  b: {{bootstrap: '127.0.0.1:{b}', local: {{brokers: 1, heap_mb: 320}}}}\n"
        f"pipeline: {{state_dir: {tmp_path / 'state'}}}\n",
        encoding="utf-8",
    )
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as squatter:
        squatter.bind(("127.0.0.1", b + 100))  # controller port of b
        squatter.listen(1)
        result = geokafka(file, "up", timeout=60)
    assert result.returncode == 3, result.stdout + result.stderr
    assert result.stderr.splitlines() == [
        f"EnvironmentError: cluster b: port {b + 100} (node 1) is already in use by another process"
    ]
    assert "Traceback" not in result.stdout + result.stderr
    specs = local_cluster_specs(load_topology(file))
    for spec in specs:  # not even cluster a, whose ports were free, was started
        assert running_nodes(spec) == {}
    assert not (tmp_path / "state").exists()  # the ports are checked before anything is prepared
    assert all(bind_succeeds(port) for spec in specs for port in ports_of(spec))


def test_up_reports_every_broker_with_its_rack(up_cluster: UpCluster) -> None:
    assert up_cluster.up_output == [
        {
            "cluster": "big",
            "brokers": 3,
            "racks": ["rack-a", "rack-b", "rack-c"],
            "bootstrap": f"127.0.0.1:{BIG},127.0.0.1:{BIG + 1},127.0.0.1:{BIG + 2}",
        },
        {"cluster": "small", "brokers": 1, "racks": ["-"], "bootstrap": f"127.0.0.1:{SMALL}"},
    ]


def test_metadata_lists_three_brokers_on_distinct_racks(up_cluster: UpCluster) -> None:
    admin = AdminClient(up_cluster.big.librdkafka())
    described = admin.describe_cluster(request_timeout=10).result(timeout=15)
    nodes = sorted((node.id, node.host, node.port, node.rack) for node in described.nodes)
    assert nodes == [
        (1, "127.0.0.1", BIG, "rack-a"),
        (2, "127.0.0.1", BIG + 1, "rack-b"),
        (3, "127.0.0.1", BIG + 2, "rack-c"),
    ]
    assert described.controller is not None and described.controller.id in {1, 2, 3}


def test_kcat_lists_three_brokers(up_cluster: UpCluster) -> None:
    # Debian's kcat prints no racks: check the broker ids and addresses it does print.
    result = subprocess.run(
        [KCAT, "-L", "-b", f"127.0.0.1:{BIG}", "-m", "15"], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 0, result.stderr
    assert re.search(r"^ 3 brokers:$", result.stdout, re.MULTILINE), result.stdout
    brokers = re.findall(r"^  broker (\d+) at ([\d.]+):(\d+)", result.stdout, re.MULTILINE)
    assert sorted(brokers) == [(str(i + 1), "127.0.0.1", str(BIG + i)) for i in range(3)]


def test_up_again_changes_nothing(up_cluster: UpCluster) -> None:
    before = {name: recorded_pids(spec) for name, spec in up_cluster.specs.items()}
    result = geokafka(up_cluster.file, "--json", "up", timeout=60)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == up_cluster.up_output
    assert {name: recorded_pids(spec) for name, spec in up_cluster.specs.items()} == before


def test_a_produced_record_is_consumed_back(up_cluster: UpCluster, unique: Callable[[str], str]) -> None:
    topic = unique("cli-roundtrip")
    create_topic(up_cluster.big, topic, partitions=3, rf=3)
    produce(up_cluster.big, topic, [{"key": b"k", "value": b"hello", "partition": 2, "headers": [("h", b"v")]}])
    records = read_all(up_cluster.big, topic)
    assert [(r.partition, r.offset, r.key, r.value, r.headers) for r in records] == [
        (2, 0, b"k", b"hello", (("h", b"v"),))
    ]


def test_down_stops_every_process_and_up_brings_the_data_back(
    up_cluster: UpCluster, unique: Callable[[str], str]
) -> None:
    topic = unique("cli-restart")
    create_topic(up_cluster.big, topic, partitions=1, rf=3)
    produce(up_cluster.big, topic, [{"key": b"survives", "value": b"a restart"}])
    small_topic = unique("cli-restart-small")
    small = connection(load_topology(up_cluster.file), "small")
    create_topic(small, small_topic, partitions=1, rf=1)
    produce(small, small_topic, [{"value": b"single broker too"}])

    pids = {name: recorded_pids(spec) for name, spec in up_cluster.specs.items()}
    assert [len(p) for p in pids.values()] == [3, 1]
    assert all(pid_is_alive(pid) for p in pids.values() for pid in p.values())
    gc.collect()
    down = geokafka(up_cluster.file, "--json", "down", timeout=120)
    assert down.returncode == 0, down.stderr
    assert json.loads(down.stdout) == {"big": 3, "small": 1}
    assert_all_stopped(list(up_cluster.specs.values()), pids)

    up = geokafka(up_cluster.file, "--json", "up", "--timeout", "180")
    assert up.returncode == 0, up.stderr
    assert json.loads(up.stdout) == up_cluster.up_output
    new_pids = {name: recorded_pids(spec) for name, spec in up_cluster.specs.items()}
    assert all(set(new_pids[name].values()).isdisjoint(pids[name].values()) for name in pids)
    wait_for_leaders(up_cluster.big, topic)
    wait_for_leaders(small, small_topic)
    assert [(r.key, r.value) for r in read_all(up_cluster.big, topic)] == [(b"survives", b"a restart")]
    assert [r.value for r in read_all(small, small_topic)] == [b"single broker too"]


def test_down_of_one_cluster_leaves_the_other_running(up_cluster: UpCluster) -> None:
    result = geokafka(up_cluster.file, "--json", "down", "small", timeout=120)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"small": 1}
    assert running_nodes(up_cluster.specs["small"]) == {}
    assert sorted(running_nodes(up_cluster.specs["big"])) == [1, 2, 3]
