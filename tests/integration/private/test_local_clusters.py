"""The session fixtures are real Kafka clusters: racks, records, and a broker that crashes and comes back."""

from __future__ import annotations

import dataclasses
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest
from confluent_kafka import KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka_util import create_topic, produce, read_all

from geokafka.artifacts import jars
from geokafka.control.connection import ClusterConnection
from geokafka.infra import kafka_class_archive, storage_format
from geokafka.infra.broker_security import broker_auth
from geokafka.infra.local_cluster import (
    LocalClusterSpec,
    kill_node,
    listening_ports,
    running_nodes,
    server_properties,
    start_cluster,
    start_node,
    stop_cluster,
)

pytestmark = pytest.mark.integration

T = TypeVar("T")


def wait_for(what: str, probe: Callable[[], T | None], timeout_s: float, every_s: float = 0.5) -> T:
    """Poll ``probe`` until it returns something truthy; fail naming ``what`` after the deadline."""
    deadline = time.monotonic() + timeout_s
    last: T | None = None
    while time.monotonic() < deadline:
        try:
            last = probe()
        except Exception:  # noqa: BLE001 - a cluster in transition may refuse a call; poll again
            last = None
        if last:
            return last
        time.sleep(every_s)
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def broker_racks(admin: AdminClient) -> dict[int, str | None]:
    described = admin.describe_cluster(request_timeout=5).result(timeout=10)
    return {node.id: node.rack for node in described.nodes}


def partition_state(admin: AdminClient, topic: str) -> dict[int, tuple[int, list[int]]]:
    """partition -> (leader, sorted ISR), as the cluster's metadata says now."""
    md = admin.list_topics(topic, timeout=5).topics[topic]
    return {p: (m.leader, sorted(m.isrs)) for p, m in md.partitions.items()}


def test_east_has_three_brokers_on_distinct_racks(east: ClusterConnection) -> None:
    racks = broker_racks(AdminClient(east.librdkafka()))
    assert racks == {1: "east-a", 2: "east-b", 3: "east-c"}


@pytest.mark.parametrize("cluster", ["east", "west", "south"])
def test_every_cluster_stores_and_serves_records(
    request: pytest.FixtureRequest, unique: Callable[[str], str], cluster: str
) -> None:
    conn: ClusterConnection = request.getfixturevalue(cluster)
    topic = unique(f"serve-{cluster}")
    create_topic(conn, topic, partitions=2, rf=3 if cluster == "east" else 1)
    produce(conn, topic, [{"key": f"k{i}".encode(), "value": f"v{i}".encode(), "partition": i % 2} for i in range(10)])
    records = read_all(conn, topic)
    assert sorted(r.value for r in records) == sorted(f"v{i}".encode() for i in range(10))
    assert {r.partition for r in records} == {0, 1}


def test_every_node_maps_kafkas_class_archive(local_clusters: dict[str, LocalClusterSpec]) -> None:
    archive = kafka_class_archive.archive_path()
    for spec in local_clusters.values():
        for node_id, pid in running_nodes(spec).items():
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            assert f"-XX:SharedArchiveFile={archive}".encode() in cmdline, f"{spec.name} node {node_id}"
    # -Xshare:on refuses to start when the archive does not fit this JDK and classpath (auto falls back quietly)
    proc = subprocess.run(
        ["java", "-Xshare:on", f"-XX:SharedArchiveFile={archive}", "-Xlog:class+load=info",
         "-cp", jars.kafka_classpath(), "kafka.Kafka", "--version"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert proc.stdout.count("source: shared objects file (top)") > 1000  # Kafka's own classes, from the archive


def test_nodes_of_one_kind_start_from_the_checkpoint_kafkas_tool_wrote(
    local_clusters: dict[str, LocalClusterSpec],
) -> None:
    """The running nodes: each has its own identity, and of each kind of node at most one ran the tool (the first
    of its kind in a start, when no checkpoint was kept yet); the rest got a copy of the kept one."""
    by_kind: dict[str, list[bytes]] = {}
    directory_ids = []
    for spec in local_clusters.values():
        cluster_id = (spec.home / "cluster.id").read_text().strip()
        auth = broker_auth(spec.security, spec.home, spec.name)
        for node in spec.nodes:
            data = spec.node_dir(node.node_id) / "data"
            meta = dict(line.split("=", 1) for line in (data / storage_format.META).read_text().splitlines()
                        if not line.startswith("#"))
            assert (meta["node.id"], meta["cluster.id"], meta["version"]) == (str(node.node_id), cluster_id, "1")
            directory_ids.append(meta["directory.id"])
            key = storage_format.template_key(jars.KAFKA_VERSION, server_properties(spec, node, auth))
            by_kind.setdefault(key, []).append((data / storage_format.CHECKPOINT).read_bytes())
    assert len(set(directory_ids)) == len(directory_ids)
    assert len(by_kind) == 2  # east's three nodes; west and south, alike
    for key, checkpoints in by_kind.items():
        kept = storage_format.template_path(key).read_bytes()
        assert sum(c != kept for c in checkpoints) <= 1, key


def test_a_killed_broker_leaves_the_metadata_and_rejoins_after_restart(
    local_clusters: dict[str, LocalClusterSpec], east: ClusterConnection, unique: Callable[[str], str]
) -> None:
    spec = local_clusters["east"]
    victim = 2
    survivor_port = spec.node(1).broker_port
    # Clients of this test bootstrap from a survivor only, so none keeps dialling the dead port.
    survivor = dataclasses.replace(east, bootstrap=f"127.0.0.1:{survivor_port}")
    admin = AdminClient(survivor.librdkafka())
    topic = unique("kill-9")
    create_topic(east, topic, partitions=3, rf=3)
    wait_for("a full ISR on every partition", lambda: all(
        isr == [1, 2, 3] for _, isr in partition_state(admin, topic).values()
    ), 30)
    old_pid = running_nodes(spec)[victim]

    assert kill_node(spec, victim)  # SIGKILL: a crash, no controlled shutdown
    try:
        assert victim not in running_nodes(spec)
        wait_for("the killed JVM to exit", lambda: not _alive(old_pid), 15)  # a JVM takes a moment to die
        # The controller fences the silent broker (broker.session.timeout.ms, 9 s by default):
        # it leaves the cluster metadata and every ISR, and loses its leaderships.
        wait_for("broker 2 to leave the metadata", lambda: sorted(broker_racks(admin)) == [1, 3], 60)

        def without_victim() -> dict[int, tuple[int, list[int]]] | None:
            state = partition_state(admin, topic)
            return state if all(victim not in isr and leader != victim for leader, isr in state.values()) else None

        state = wait_for("ISRs without broker 2", without_victim, 30)
        assert all(leader in (1, 3) and isr == [1, 3] for leader, isr in state.values()), state
        # The two survivors keep serving writes and reads.
        produce(survivor, topic, [{"key": b"during", "value": b"the outage", "partition": 0}])
    finally:
        start_node(spec, victim)
        port = spec.node(victim).broker_port
        # Nothing dials the port before it listens (see wait_until_ready on TCP self-connects).
        wait_for("broker 2 to listen again", lambda: port in (listening_ports() or {port}), 120, 0.2)
        wait_for("broker 2 back in the metadata", lambda: broker_racks(admin).get(victim) == "east-b", 60)
        wait_for("broker 2 back in every ISR", lambda: all(
            isr == [1, 2, 3] for _, isr in partition_state(admin, topic).values()
        ), 60)

    new_pid = running_nodes(spec)[victim]
    assert new_pid != old_pid
    assert broker_racks(admin) == {1: "east-a", 2: "east-b", 3: "east-c"}
    assert [(r.key, r.value) for r in read_all(east, topic) if r.partition == 0] == [(b"during", b"the outage")]


def test_a_restarted_cluster_is_up_once_its_leaders_serve_every_partition(
    local_clusters: dict[str, LocalClusterSpec], south: ClusterConnection, unique: Callable[[str], str]
) -> None:
    """`start_cluster` (what `geokafka up` runs) returns once every partition is served, not as soon as the broker
    is in the metadata: the partitions of a restarted broker are refused (UNKNOWN_LEADER_EPOCH) for a moment
    after it is listed there (300 are enough for that moment to outlast the return, when it came at the listing)."""
    spec = local_clusters["south"]
    topic = unique("restarted")
    create_topic(south, topic, partitions=300, rf=1)
    stop_cluster(spec)
    start_cluster(spec, timeout_s=120)
    admin = AdminClient(south.librdkafka())
    topics = admin.list_topics(timeout=10).topics
    request = {TopicPartition(name, p): OffsetSpec.latest() for name, described in topics.items()
               for p in described.partitions}
    assert len(request) >= 300, sorted(topics)
    refused = []
    for tp, answer in admin.list_offsets(request, request_timeout=1).items():  # one try each: no time to wait
        try:
            answer.result(timeout=5)
        except KafkaException as exc:
            refused.append(f"{tp.topic}/{tp.partition}: {exc.args[0].name()}")
    assert refused == [], refused[:5]


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
