"""Failback puts every group at the original site exactly at the first record it has not
processed, in both naming modes, whether it consumed at the original site, the new primary or
both (judged by plain consumers reading what each group would read next)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition
from kafka_util import commit_retrying, create_topic, produce, retrying_while_moving
from pipeline_util import running_mirror, with_flows

from geokafka.failover.failback import failback
from geokafka.failover.failover import failover

pytestmark = pytest.mark.integration

PARTITIONS = 2


def originals(p: int) -> list[bytes]:
    return [f"e-{p}-{i}".encode() for i in range(100)]


def new_writes(p: int) -> list[bytes]:
    return [f"w-{p}-{i}".encode() for i in range(40)]


def consume(conn, topic: str, group: str, per_partition: int) -> list[bytes]:
    """Group ``group`` reads ``per_partition`` records of each partition from its committed
    offsets (earliest without one) and commits; returns what it read."""
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False,
                                           "auto.offset.reset": "earliest"}))
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    committed = {tp.partition: tp.offset for tp in retrying_while_moving(lambda: consumer.committed(tps, timeout=15))}
    consumer.assign([TopicPartition(topic, p, committed[p]) if committed[p] >= 0 else TopicPartition(topic, p, -2)
                     for p in range(PARTITIONS)])
    got: dict[int, list] = {p: [] for p in range(PARTITIONS)}
    deadline = time.monotonic() + 60
    while any(len(v) < per_partition for v in got.values()) and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None or msg.error() or len(got[msg.partition()]) >= per_partition:
            continue
        got[msg.partition()].append(msg)
    assert all(len(v) == per_partition for v in got.values()), {p: len(v) for p, v in got.items()}
    offsets = [TopicPartition(topic, p, msgs[-1].offset() + 1) for p, msgs in got.items() if msgs]
    commit_retrying(consumer, offsets)
    consumer.close()
    return [m.value() for msgs in got.values() for m in msgs]


def would_read(conn, topic: str, group: str) -> dict[int, list[bytes]]:
    """What ``group`` reads next on ``topic``, to the end, without committing."""
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False,
                                           "auto.offset.reset": "earliest", "enable.partition.eof": True}))
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    committed = {tp.partition: tp.offset for tp in retrying_while_moving(lambda: consumer.committed(tps, timeout=15))}
    consumer.assign([TopicPartition(topic, p, committed[p] if committed[p] >= 0 else -2) for p in range(PARTITIONS)])
    got: dict[int, list[bytes]] = {p: [] for p in range(PARTITIONS)}
    done: set[int] = set()
    deadline = time.monotonic() + 60
    while len(done) < PARTITIONS and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is None:
            continue
        if msg.error():
            assert msg.error().code() == KafkaError._PARTITION_EOF
            done.add(msg.partition())
            continue
        got[msg.partition()].append(msg.value())
    consumer.close()
    assert len(done) == PARTITIONS
    return got


@pytest.mark.parametrize("rename", ["identity", "prefix"])
def test_failback_resumes_every_group_at_its_first_unprocessed_record(base_topology, east, west, unique, rename):
    topic, flow = unique("fb"), unique("fbflow")
    g_orig, g_mid, g_new = unique("fb-orig"), unique("fb-mid"), unique("fb-new")
    create_topic(east, topic, partitions=PARTITIONS, rf=3)
    produce(east, topic, [{"value": v, "partition": p} for p in range(PARTITIONS) for v in originals(p)])
    replica = topic if rename == "identity" else f"east.{topic}"
    local = topic  # where the business writes at west after the move
    if rename == "prefix":
        create_topic(west, local, partitions=PARTITIONS, rf=1)
    processed = {g_orig: consume(east, topic, g_orig, 30), g_mid: consume(east, topic, g_mid, 10),
                 g_new: consume(east, topic, g_new, 5)}
    topology = with_flows(base_topology, **{flow: {
        "source": "east", "target": "west", "topics": [topic], "rename": rename, "groups": ["fb-.*"],
        "sync": ["configs", "partitions", "group-offsets"], "sync_interval_s": 1.0}})
    with running_mirror(topology):
        report = failover(topology, flow, promote=True, timeout_s=120)
    assert report.rpo_records == 0
    # business at west: new writes; two groups go on reading there, one never does
    produce(west, local, [{"value": v, "partition": p} for p in range(PARTITIONS) for v in new_writes(p)])
    processed[g_mid] += consume(west, replica, g_mid, 50)  # stops among east's records
    if rename == "identity":
        processed[g_new] += consume(west, replica, g_new, 95 + 20)  # east's rest, then 20 of west's own
    else:
        processed[g_new] += consume(west, replica, g_new, 95) + consume(west, local, g_new, 20)

    back = failback(topology, flow, timeout_s=120)
    assert back.groups is not None
    assert {p.action for p in back.groups.positions} <= {"commit", "unchanged"}
    assert not any("does not exist" in p.reason for p in back.groups.positions)

    copies = topic if rename == "identity" else f"west.{topic}"  # west's own records at east
    every = {v for p in range(PARTITIONS) for v in originals(p) + new_writes(p)}
    for group in (g_orig, g_mid, g_new):
        next_reads = would_read(east, topic, group)
        if copies != topic:
            extra = would_read(east, copies, group)
            next_reads = {p: next_reads[p] + extra[p] for p in range(PARTITIONS)}
        read_next = [v for vs in next_reads.values() for v in vs]
        assert not set(read_next) & set(processed[group]), f"{group}: duplicates"
        assert set(read_next) == every - set(processed[group]), f"{group}: missing or extra records"
        assert len(read_next) == len(set(read_next))
