"""An application with a FollowingConsumer group and a FollowingProducer runs throughout a real failover (a
mirror on Spark, prefix naming, the group's offsets synced): without a restart it goes on consuming at west from
the offsets the failover translated, skips no record, and its producer writes to west from its switch on and
never to east again."""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from kafka_util import create_topic, read_all
from pipeline_util import running_mirror, wait_for, with_flows

from geokafka.client import FollowingConsumer, FollowingProducer, Switch
from geokafka.failover.failover import failover
from geokafka.topology.schema import Topology

pytestmark = pytest.mark.integration

PARTITIONS = 2


class App:
    """Produces numbered records and consumes them, in one thread, through the following clients; it consumes
    more slowly than it produces, so the group has a backlog when the flow fails over."""

    def __init__(self, topology: Topology, flow: str, group: str, topic: str) -> None:
        self.topology, self.flow, self.group, self.topic = topology, flow, group, topic
        self.acked: set[bytes] = set()
        self.failed: list[str] = []
        self.consumed: list[tuple[str, str, int, int, bytes]] = []
        """(cluster, topic, partition, offset, value) of every record the application got."""
        self.switches: list[Switch] = []
        self.producer_switched_at: int | None = None
        """The number of the first record produced after the producer's switch."""
        self.next = 0
        self.producing = threading.Event()
        self.producing.set()
        self.stop = threading.Event()
        self.failure: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="following-app", daemon=True)

    def consumed_at(self, cluster: str) -> list[tuple[str, str, int, int, bytes]]:
        return [c for c in list(self.consumed) if c[0] == cluster]

    def _on_switch(self, switch: Switch) -> None:
        self.switches.append(switch)
        if switch.client == "producer":
            self.producer_switched_at = self.next

    def _delivered(self, err: Any, msg: Any) -> None:
        if err is None:
            self.acked.add(msg.value())
        else:
            self.failed.append(err.str())

    def _run(self) -> None:
        try:
            with FollowingProducer(self.topology, self.flow, {"linger.ms": 2}, self._on_switch,
                                   watch_interval_s=0.2) as producer, \
                    FollowingConsumer(self.topology, self.flow, self.group, [self.topic], on_switch=self._on_switch,
                                      watch_interval_s=0.2) as consumer:
                while not self.stop.is_set():
                    producing = self.producing.is_set()
                    for _ in range(2 if producing else 0):  # twice as fast as it consumes: a backlog builds up
                        producer.produce(self.topic, value=f"{self.next:08d}".encode(), key=str(self.next).encode(),
                                         on_delivery=self._delivered)
                        self.next += 1
                    producer.poll(0)
                    for msg in consumer.consume(1 if producing else 500, 0 if producing else 0.05):
                        if msg.error() is None:
                            self.consumed.append((consumer.cluster or "", msg.topic(), msg.partition(), msg.offset(),
                                                  msg.value()))
                    if producing:
                        time.sleep(0.005)  # the application's pace: some 400 records a second
                assert producer.flush(30) == 0
        except BaseException as exc:  # noqa: BLE001 - raised in the test
            self.failure.append(exc)

    def check(self) -> None:
        if self.failure:
            raise AssertionError(f"the application failed: {self.failure[0]!r}") from self.failure[0]


def committed_partitions(conn: Any, group: str, topic: str) -> set[int]:
    """The partitions of ``topic`` on which ``group`` has a committed offset at ``conn``'s cluster."""
    from confluent_kafka import ConsumerGroupTopicPartitions
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(conn.librdkafka())
    request = ConsumerGroupTopicPartitions(group, [TopicPartition(topic, p) for p in range(PARTITIONS)])
    answer = admin.list_consumer_group_offsets([request])[group].result(30)
    return {tp.partition for tp in answer.topic_partitions if tp.offset >= 0}


def first_record_at_or_after(conn: Any, topic: str, partition: int, offset: int) -> int | None:
    """Offset of the first committed record of ``topic``/``partition`` at or after ``offset`` (None: none yet)."""
    consumer = Consumer(conn.librdkafka(**{"group.id": "first-record-reader", "enable.auto.commit": False,
                                           "isolation.level": "read_committed", "enable.partition.eof": True}))
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"{topic}/{partition} did not answer"
            return None if msg.error() else msg.offset()
    finally:
        consumer.close()


def test_an_application_follows_a_failover_without_a_restart(base_topology, east, west, unique):
    topic, flow, group = unique("follow"), unique("follow"), unique("follow-g")
    create_topic(east, topic, partitions=PARTITIONS, rf=3)
    create_topic(west, topic, partitions=PARTITIONS, rf=1)  # the topic's own name at west, written after the failover
    replica = f"east.{topic}"
    topology = with_flows(base_topology, **{flow: {
        "source": "east", "target": "west", "topics": [topic], "groups": [group],
        "sync": ["configs", "partitions", "group-offsets"], "sync_interval_s": 1.0}})
    app = App(topology, flow, group, topic)
    with running_mirror(topology) as runners:
        app.thread.start()

        def replicated() -> int:
            return sum(p.next_offset for p in runners[flow].progress.values()) if flow in runners else 0

        # the premise of the checks below: the group committed a position at east on every partition (a consumer
        # fetching from two leaders under load can read 300 records of one partition before the other's first)
        wait_for(lambda: app.check() or (replicated() >= 300 and len(app.consumed_at("east")) >= 300
                                         and committed_partitions(east, group, topic) == set(range(PARTITIONS))),
                 180, "300 records produced, consumed at east on every partition and replicated")
        report = failover(topology, flow)
    assert report.groups[group], report.groups
    wait_for(lambda: app.check() or (app.producer_switched_at is not None and len(app.switches) == 2), 60,
             "the consumer and the producer at west")
    wait_for(lambda: app.check() or sum(1 for c in app.consumed_at("west") if c[1] == topic) >= 200, 90,
             "200 records the application wrote at west, consumed there")
    app.producing.clear()

    # what the failover stranded at east: written there after the last replicated offset
    replicated_next = {p.partition: p.replicated_next for p in report.partitions if p.topic == topic}
    at_east = read_all(east, topic)
    stranded = {r.value for r in at_east if r.offset >= replicated_next[r.partition]}

    def missing() -> set[bytes]:
        return app.acked - {c[4] for c in list(app.consumed)} - stranded

    wait_for(lambda: app.check() or (not app.producing.is_set() and app.next == len(app.acked) + len(app.failed)
                                     and not missing()), 60, "every acknowledged record consumed")
    app.stop.set()
    app.thread.join(60)
    app.check()

    # the switch: one each, from east to west; the group waited for the failover to move it, and read both names
    by_client = {s.client: s for s in app.switches}
    consumer_switch, producer_switch = by_client[f"consumer {group}"], by_client["producer"]
    assert (consumer_switch.from_cluster, consumer_switch.to_cluster, consumer_switch.groups_moved) == (
        "east", "west", True)
    assert consumer_switch.topics == (replica, topic)
    assert (producer_switch.from_cluster, producer_switch.to_cluster) == ("east", "west")

    # the group resumed at west exactly at the offsets the failover moved it to (the first record from there)
    moved = {row["partition"]: row["resume_at"] for row in report.groups[group] if row["topic"] == replica}
    assert set(moved) == set(range(PARTITIONS))
    for partition, resume_at in moved.items():
        first = [c[3] for c in app.consumed_at("west") if c[1] == replica and c[2] == partition][:1]
        assert first == ([] if (at := first_record_at_or_after(west, replica, partition, resume_at)) is None else [at])

    # no record skipped; duplicates counted
    consumed = Counter(c[4] for c in app.consumed)
    assert not missing()
    assert not app.failed, app.failed[:3]
    duplicates = sum(n - 1 for n in consumed.values())
    from_replica = sum(1 for c in app.consumed_at("west") if c[1] == replica)
    print(f"\n{len(app.acked)} records acknowledged, {len(consumed)} consumed ({from_replica} of them from {replica} "
          f"at west), {duplicates} duplicates, {len(stranded)} stranded at east by the failover; the consumer waited "
          f"{consumer_switch.waited_s:.2f} s for the failover to move its group")

    # the producer never wrote to east after its switch, and wrote there at west
    switched_at = app.producer_switched_at
    assert switched_at is not None
    assert max(int(r.value) for r in at_east if r.value is not None) < switched_at
    assert max(int(r.value) for r in read_all(east, topic) if r.value is not None) < switched_at
    at_west = [int(r.value) for r in read_all(west, topic) if r.value is not None]
    assert switched_at in at_west and len(at_west) >= 200
