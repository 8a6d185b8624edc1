"""A group rewound at the source (a reset for reprocessing) is followed on the target, and
failover honours it; a group that consumers on the target moved stays theirs unless the
failover is told to overwrite it. Judged by plain consumers at the target."""

from __future__ import annotations

import socket
import time

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka_util import create_topic, numbered_records, produce, read_all
from pipeline_util import running_mirror, wait_for, wait_job_runs, with_flows

from geokafka.control.provenance import source_position
from geokafka.failover.failover import failover
from geokafka.topology.schema import Cluster, Topology

pytestmark = pytest.mark.integration

PARTITIONS = 2
SYNC_S = 2.0


def commit(conn, topic: str, group: str, offsets: dict[int, int]) -> None:
    """What `kafka-consumer-groups --reset-offsets --execute` does: commit for an idle group."""
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in offsets.items()], asynchronous=False)
    consumer.close()


def committed(conn, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    try:
        tps = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=15)
        return {tp.partition: tp.offset for tp in tps if tp.offset >= 0}
    finally:
        consumer.close()


def first_source_offsets(conn, topic: str, group: str) -> dict[int, int]:
    """The source offset (gk.src) of the first record ``group`` reads next on each partition."""
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False,
                                           "auto.offset.reset": "earliest"}))
    at = committed(conn, topic, group)
    consumer.assign([TopicPartition(topic, p, at.get(p, -2)) for p in range(PARTITIONS)])
    first: dict[int, int] = {}
    deadline = time.monotonic() + 30
    while len(first) < PARTITIONS and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error() and msg.partition() not in first:
            first[msg.partition()] = source_position(msg.headers()).offset
    consumer.close()
    return first


def target_offset_of(conn, topic: str, source_offset: int) -> dict[int, int]:
    """Per partition, the target offset of the record copied from ``source_offset``."""
    out = {}
    for rec in read_all(conn, topic):
        if source_position(list(rec.headers)).offset == source_offset:
            out[rec.partition] = rec.offset
    return out


def dead(topology: Topology, cluster: str) -> Topology:
    """The same topology with ``cluster`` pointing at a port nothing listens on (the site is gone)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return topology.model_copy(update={"clusters": {**topology.clusters, cluster: Cluster(bootstrap=f"127.0.0.1:{port}")}})


def test_a_group_rewound_at_the_source_is_followed_and_failover_honours_it(base_topology, east, west, unique):
    topic, flow = unique("rw"), unique("rwflow")
    group, busy = unique("rw-app"), unique("rw-busy")
    create_topic(east, topic, partitions=PARTITIONS, rf=3)
    produce(east, topic, numbered_records(300 * PARTITIONS, PARTITIONS, size=20))
    replica = f"east.{topic}"
    for g in (group, busy):
        commit(east, topic, g, {p: 250 for p in range(PARTITIONS)})
    topology = with_flows(base_topology, **{flow: {
        "source": "east", "target": "west", "topics": [topic], "groups": ["rw-.*"],
        "sync": ["configs", "partitions", "group-offsets"], "sync_interval_s": SYNC_S}})
    with running_mirror(topology) as runners:
        wait_for(lambda: len(read_all(west, replica, timeout_s=10)) == 300 * PARTITIONS, 120, "replication")
        at_250 = target_offset_of(west, replica, 250)
        wait_for(lambda: committed(west, replica, group) == at_250 and committed(west, replica, busy) == at_250,
                 60, "both groups synced to offset 250's copy")
        # consumers on the target read on for `busy`: its position is theirs from now on
        at_280 = target_offset_of(west, replica, 280)
        commit(west, replica, busy, at_280)
        # reprocessing at the source: both groups reset to 100
        for g in (group, busy):
            commit(east, topic, g, {p: 100 for p in range(PARTITIONS)})
        at_100 = target_offset_of(west, replica, 100)
        wait_for(lambda: committed(west, replica, group) == at_100, 2 * SYNC_S + 20, "the rewind to be followed")
        wait_job_runs(runners, flow, "sync")  # two more sync rounds: a move of busy would be made by now
        assert committed(west, replica, busy) == at_280  # held: consumers on the target moved it

    # the source site dies: failover works from the checkpoint, which holds the rewound offsets
    gone = dead(topology, "east")
    preview = failover(gone, flow, dry_run=True, probe_timeout_s=2, overwrite_groups=True)
    assert preview.dry_run and committed(west, replica, busy) == at_280  # a dry run changes nothing
    # the user's choice: overwriting would move the group consumers on the target moved, too
    assert {r["partition"]: (r["action"], r["resume_at"]) for r in preview.groups[busy]} == {
        p: ("commit", at_100[p]) for p in range(PARTITIONS)}
    report = failover(gone, flow, probe_timeout_s=2)
    assert not report.source_reachable
    assert first_source_offsets(west, replica, group) == {p: 100 for p in range(PARTITIONS)}
    assert report.groups_held_on_target() == [busy]
    rows = {r["partition"]: r for r in report.groups[busy]}
    assert all(r["action"] == "skip" and r["held"] for r in rows.values())
    assert first_source_offsets(west, replica, busy) == {p: 280 for p in range(PARTITIONS)}
