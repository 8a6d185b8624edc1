"""Exact offset translation and group sync against real clusters (east = source, west = target).

The target topic is written here the way the pipeline writes it: per-partition order, in
transactions (one of them aborted and retried), every record stamped with ``gk.src`` and
interleaved with local writes and with records of another origin (identity fan-in).
"""

from __future__ import annotations

import socket
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, KafkaError, Producer, TopicPartition
from kafka_util import Rec, commit_retrying, create_topic, read_all
from pipeline_util import state_store, wait_state_readable

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.offsets import TargetIndex, sync_group_offsets, translate_group
from geokafka.control.provenance import ORIGIN_HEADER, SOURCE_HEADER, SourcePosition, source_position
from geokafka.control.state_records import Progress
from geokafka.control.state_store import ensure_state_topic
from geokafka.errors import ClusterUnreachableError
from geokafka.topology.schema import Cluster, Flow, Topology

pytestmark = pytest.mark.integration

PARTITIONS = 3


def with_flow(base: Topology, name: str, **spec: object) -> Topology:
    return base.model_copy(update={"flows": {name: Flow(**spec)}})  # type: ignore[arg-type]


def produce_source(conn: ClusterConnection, topic: str) -> None:
    """Per partition: 3 committed transactions of 5 records and an aborted one (offset gaps)."""
    producer = Producer(conn.librdkafka(**{"transactional.id": f"src-{topic}", "linger.ms": 5}))
    producer.init_transactions(30)
    for txn in range(4):
        producer.begin_transaction()
        for p in range(PARTITIONS):
            for k in range(5):
                producer.produce(topic, key=f"k{k}".encode(), value=f"t{txn}-p{p}-{k}".encode(), partition=p)
        if txn == 2:
            producer.flush(30)
            producer.abort_transaction(30)
        else:
            producer.commit_transaction(30)


class SyntheticPipeline:
    """Writes source records to the target as the pipeline does, with other writers in between."""

    def __init__(self, source: ClusterConnection, target: ClusterConnection, src_topic: str, tgt_topic: str) -> None:
        self.source_name, self.src_topic, self.tgt_topic = source.name, src_topic, tgt_topic
        self.records = read_all(source, src_topic)
        self.done = {p: 0 for p in range(PARTITIONS)}  # records of each partition written so far
        self.producer = Producer(target.librdkafka(**{"transactional.id": f"pipe-{tgt_topic}", "linger.ms": 5}))
        self.producer.init_transactions(30)
        self.local = Producer(target.librdkafka(**{"linger.ms": 5}))
        self.south_next = 0

    def of(self, p: int) -> list[Rec]:
        return [r for r in self.records if r.partition == p]

    def run(self, limit: dict[int, int] | None = None) -> None:
        """Replicate each partition up to ``limit[p]`` records in total (all by default)."""
        for p in range(PARTITIONS):
            todo = self.of(p)[self.done[p]:(limit or {}).get(p)]
            for start in range(0, len(todo), 4):
                chunk = todo[start:start + 4]
                self._interleave(p)
                if start == 4:
                    self._transaction(p, chunk, abort=True)  # a failed attempt of the pipeline, retried
                self._transaction(p, chunk, abort=False)
            self.done[p] += len(todo)

    def _interleave(self, p: int) -> None:
        self.local.produce(self.tgt_topic, value=b"written on the target", partition=p)
        south = SourcePosition("south", self.src_topic, p, self.south_next)
        self.local.produce(self.tgt_topic, value=b"from south", partition=p,
                           headers=[(SOURCE_HEADER, south.encode()), (ORIGIN_HEADER, b"south")])
        self.south_next += 2
        self.local.flush(30)

    def _transaction(self, p: int, chunk: list[Rec], *, abort: bool) -> None:
        self.producer.begin_transaction()
        for r in chunk:
            src = SourcePosition(self.source_name, self.src_topic, p, r.offset)
            self.producer.produce(self.tgt_topic, key=r.key, value=r.value, partition=p, timestamp=r.timestamp,
                                  headers=[(SOURCE_HEADER, src.encode()), (ORIGIN_HEADER, b"east")])
        if abort:
            self.producer.flush(30)
            self.producer.abort_transaction(30)
        else:
            self.producer.commit_transaction(30)


def consume_and_commit(conn: ClusterConnection, topic: str, group: str, counts: dict[int, int]) -> dict[int, int]:
    """A real consumer of ``group`` reads ``counts[p]`` records of each partition and commits; returns offsets."""
    consumer = Consumer(conn.librdkafka(**{
        "group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed",
        "auto.offset.reset": "earliest",
    }))
    consumer.assign([TopicPartition(topic, p, 0) for p in counts])
    last = {p: -1 for p in counts}
    seen = {p: 0 for p in counts}
    deadline = time.monotonic() + 30
    while any(seen[p] < n for p, n in counts.items()) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error() or seen[msg.partition()] >= counts[msg.partition()]:
            continue
        seen[msg.partition()] += 1
        last[msg.partition()] = msg.offset()
    committed = {p: last[p] + 1 for p in counts}
    commit_retrying(consumer, [TopicPartition(topic, p, o) for p, o in committed.items()])
    consumer.close()
    assert seen == counts
    return committed


def resume_on(conn: ClusterConnection, topic: str, group: str, from_cluster: str) -> dict[int, list[int]]:
    """Consume ``topic`` from ``group``'s committed offsets to the end; source offsets of ``from_cluster``'s records."""
    consumer = Consumer(conn.librdkafka(**{
        "group.id": group, "enable.auto.commit": False, "isolation.level": "read_committed",
        "enable.partition.eof": True, "auto.offset.reset": "latest",
    }))
    consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
    got: dict[int, list[int]] = {p: [] for p in range(PARTITIONS)}
    at_end: set[int] = set()
    deadline = time.monotonic() + 30
    while len(at_end) < PARTITIONS and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            assert msg.error().code() == KafkaError._PARTITION_EOF
            at_end.add(msg.partition())
            continue
        src = source_position(msg.headers())
        if src is not None and src.cluster == from_cluster:
            got[msg.partition()].append(src.offset)
    consumer.close()
    assert len(at_end) == PARTITIONS
    return got


def target_committed(conn: ClusterConnection, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
        return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}
    finally:
        consumer.close()


@pytest.fixture
def replicated(east: ClusterConnection, west: ClusterConnection, unique: Callable[[str], str]) -> SyntheticPipeline:
    topic = unique("orders")
    create_topic(east, topic, PARTITIONS)
    create_topic(west, topic, PARTITIONS)  # identity naming: same name on the target
    produce_source(east, topic)
    return SyntheticPipeline(east, west, topic, topic)


def test_group_resumes_on_target_exactly_after_what_it_read(
    replicated: SyntheticPipeline, east: ClusterConnection, west: ClusterConnection,
    base_topology: Topology, unique: Callable[[str], str],
) -> None:
    pipe, topic, group = replicated, replicated.src_topic, unique("billing")
    topology = with_flow(base_topology, "f", source="east", target="west", topics=[topic], rename="identity",
                         groups=["billing-.*"])
    pipe.run(limit={2: 3})  # partition 2 is behind: only its first 3 records are on the target
    # p0 stops on a commit marker (offset gap), p1 read nothing, p2 read past what was replicated
    committed = consume_and_commit(east, topic, group, {0: 5, 1: 0, 2: 10})
    assert committed == {0: 5, 1: 0, 2: 11}

    index = TargetIndex(west)
    try:
        first = sync_group_offsets(topology, "f", index=index)
        mine = {a.partition: a for a in first.by_group(group)}
        assert {p: a.action for p, a in mine.items()} == {0: "commit", 1: "commit", 2: "commit"}
        assert {p: a.caught_up for p, a in mine.items()} == {0: True, 1: True, 2: False}
        assert target_committed(west, topic, group) == {p: a.target_offset for p, a in mine.items()}
        assert translate_group(topology, "f", group).partitions[0].target_offset == mine[0].target_offset

        got = resume_on(west, topic, group, "east")
        expected = {p: [r.offset for r in pipe.of(p) if r.offset >= committed[p]] for p in range(PARTITIONS)}
        assert got[0] == expected[0] and got[1] == expected[1]  # 0 missing, 0 duplicated
        assert got[2] == []  # nothing at or after 11 replicated yet, and nothing before it re-read

        pipe.run()  # replication catches up; the same index only reads what was appended
        second = sync_group_offsets(topology, "f", index=index)
        again = {a.partition: a for a in second.by_group(group)}
        assert {p: a.action for p, a in again.items()} == {0: "unchanged", 1: "unchanged", 2: "commit"}
        assert again[2].caught_up and again[2].previous_offset == mine[2].target_offset
        assert again[2].target_offset > mine[2].target_offset
    finally:
        index.close()
    got = resume_on(west, topic, group, "east")
    expected = {p: [r.offset for r in pipe.of(p) if r.offset >= committed[p]] for p in range(PARTITIONS)}
    assert got == expected
    assert expected[2] == [18, 19, 20, 21, 22]  # 11 is a marker, 12-16 aborted, 17 a marker


def test_pipeline_progress_makes_a_group_at_the_source_end_caught_up(
    replicated: SyntheticPipeline, east: ClusterConnection, west: ClusterConnection,
    base_topology: Topology, unique: Callable[[str], str],
) -> None:
    pipe, topic, group, flow = replicated, replicated.src_topic, unique("billing"), unique("flow")
    topology = with_flow(base_topology, flow, source="east", target="west", topics=[topic], rename="identity")
    pipe.run()
    committed = consume_and_commit(east, topic, group, {0: 15})
    assert committed == {0: 23}  # read everything; 23 is the last commit marker
    assert pipe.of(0)[-1].offset == 22
    before = translate_group(topology, flow, group).partitions[0]
    assert not before.caught_up  # no record >= 23 on the target: the data alone cannot tell
    assert before.target_offset is not None and before.matched_source_offset is None

    admin = ClusterAdmin(west)
    ensure_state_topic(admin)
    state_store(west).write(Progress(flow, topic, 0, 24))  # the pipeline read to the source end
    wait_state_readable(west, lambda state: state.progress(flow).get((topic, 0)) == 24, "the progress record")
    after = translate_group(topology, flow, group).partitions[0]
    assert after.caught_up and after.target_offset == before.target_offset


def test_sync_guards_active_member_never_rewind_selection_dry_run(
    replicated: SyntheticPipeline, east: ClusterConnection, west: ClusterConnection,
    base_topology: Topology, unique: Callable[[str], str],
) -> None:
    pipe, topic = replicated, replicated.src_topic
    active, ahead, ignored, fresh = unique("app-active"), unique("app-ahead"), unique("other"), unique("app-fresh")
    topology = with_flow(base_topology, "f", source="east", target="west", topics=[topic], rename="identity",
                         groups=["app-.*"])
    pipe.run()
    for group in (active, ahead, ignored, fresh):
        consume_and_commit(east, topic, group, {0: 3, 1: 3, 2: 3})
    target_end = _ends(west, topic)
    commit_on(west, topic, ahead, target_end)  # this group already read everything on the target
    member = join_group(west, topic, active)
    try:
        dry = sync_group_offsets(topology, "f", dry_run=True)
        assert ignored not in dry.groups and {active, ahead, fresh} <= set(dry.groups)
        assert {a.action for a in dry.by_group(fresh)} == {"commit"}
        assert target_committed(west, topic, fresh) == {}  # dry run: nothing written

        report = sync_group_offsets(topology, "f")
        assert all(a.action == "skip" and "target group is active" in a.reason for a in report.by_group(active))
        assert target_committed(west, topic, active) == {}
        assert all(a.action == "skip" and "never rewound" in a.reason for a in report.by_group(ahead))
        assert target_committed(west, topic, ahead) == target_end
        assert {a.action for a in report.by_group(fresh)} == {"commit"}
    finally:
        member.close()
    report = sync_group_offsets(topology, "f")  # the member left: the group is empty now
    assert {a.action for a in report.by_group(active)} == {"commit"}


def test_failover_uses_checkpoints_when_the_source_is_gone(
    replicated: SyntheticPipeline, east: ClusterConnection, west: ClusterConnection,
    base_topology: Topology, unique: Callable[[str], str],
) -> None:
    pipe, topic, group, flow = replicated, replicated.src_topic, unique("app"), unique("flow")
    topology = with_flow(base_topology, flow, source="east", target="west", topics=[topic], rename="identity",
                         groups=["app-.*"])
    pipe.run(limit={0: 2})
    committed = consume_and_commit(east, topic, group, {0: 4})
    live = sync_group_offsets(topology, flow)  # while east is up: commits a provisional offset, stores a checkpoint
    assert live.checkpoints_written >= 1
    provisional = live.by_group(group)[0]
    assert not provisional.caught_up
    pipe.run()  # the last records arrive just before the site is lost

    gone = lost_source(topology)
    with pytest.raises(ClusterUnreachableError, match="east"):
        sync_group_offsets(gone, flow, timeout_s=3)
    # (failover reads the state settled first; the sync alone reads it to its stable end)
    wait_state_readable(west, lambda state: group in state.checkpoints(flow), "the live sync's checkpoint")
    final = sync_group_offsets(gone, flow, clamp_to_end=True, fallback_to_checkpoints=True, timeout_s=3)
    assert final.offsets_from == "checkpoint"
    action = final.by_group(group)[0]
    assert action.action == "commit" and action.caught_up and action.target_offset > provisional.target_offset
    assert resume_on(west, topic, group, "east")[0] == [r.offset for r in pipe.of(0) if r.offset >= committed[0]]


def lost_source(topology: Topology) -> Topology:
    """The same topology with east pointing at a port nothing listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    clusters = {**topology.clusters, "east": Cluster(bootstrap=f"127.0.0.1:{port}")}
    return topology.model_copy(update={"clusters": clusters})


def _ends(conn: ClusterConnection, topic: str) -> dict[int, int]:
    consumer = Consumer(conn.librdkafka(**{"group.id": "ends"}))
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=10)[1] for p in range(PARTITIONS)}
    finally:
        consumer.close()


def commit_on(conn: ClusterConnection, topic: str, group: str, offsets: dict[int, int]) -> None:
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    commit_retrying(consumer, [TopicPartition(topic, p, o) for p, o in offsets.items()])
    consumer.close()


def join_group(conn: ClusterConnection, topic: str, group: str) -> Consumer:
    """A live member of ``group`` on ``conn`` (returns once it has partitions)."""
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False,
                                           "auto.offset.reset": "latest"}))
    consumer.subscribe([topic])
    deadline = time.monotonic() + 30
    while not consumer.assignment() and time.monotonic() < deadline:
        consumer.poll(0.2)
    assert consumer.assignment(), "consumer never joined"
    return consumer
