"""Drill traffic: a paced producer that records exactly which records were acknowledged, a
live consumer, and the read-back that decides which acknowledged records survived.

Every record's value is its sequence number. A record counts as *acknowledged* only when its
delivery callback reported success (with its partition and offset); records still queued or in
flight when the drill ends are purged and count as not acknowledged.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient

from geokafka.control.delivery import drain, is_fatal
from geokafka.control.state_records import TopicPartitionKey


def quiet_logger(name: str) -> logging.Logger:
    """A logger that swallows librdkafka's connection noise (brokers die on purpose here)."""
    logger = logging.getLogger(f"geokafka.drill.{name}")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger


PRODUCER_REQUEST_TIMEOUT_MS = 10_000
"""The drill's producers, as the planner advises for stretched clusters: an acks=all request the leader
accepted before a DC loss waits in its purgatory for the whole request timeout, even after the guard has
lowered min.insync.replicas (measured: with Kafka's default 30 s, writes resumed 30-38 s after the loss
whenever the guard acted at 11-24 s; with 10 s, 0.3-1 s after the guard acted)."""


def quiet_client(bootstrap: str, name: str, **settings: Any) -> dict[str, Any]:
    """Settings of a drill's client whose librdkafka lines go nowhere (the drill says what happened itself)."""
    return {"bootstrap.servers": bootstrap, "log_level": 0, "logger": quiet_logger(name), **settings}


@dataclass
class AckLog:
    """What the producer sent and what the cluster acknowledged, with monotonic timestamps."""

    t0: float
    sent_at: dict[int, float] = field(default_factory=dict)
    sent_to: dict[int, TopicPartitionKey] = field(default_factory=dict)
    acked: dict[int, tuple[TopicPartitionKey, int, float]] = field(default_factory=dict)
    failures: Counter[str] = field(default_factory=Counter)
    producer_restarts: list[tuple[float, str]] = field(default_factory=list)
    """(monotonic time, fatal error name) of each producer the drill had to replace."""

    def on_delivery(self, err: KafkaError | None, msg: object) -> None:
        """Delivery callback: record the ack (partition, offset, time) or the error's name."""
        seq = int(msg.value())  # type: ignore[attr-defined]
        if err is None:
            part = (msg.topic(), msg.partition())  # type: ignore[attr-defined]
            self.acked[seq] = (part, msg.offset(), time.monotonic())  # type: ignore[attr-defined]
        else:
            self.failures[err.name()] += 1

    def acked_per_second(self, seconds: int) -> list[int]:
        """Acks in each second since ``t0``."""
        buckets = [0] * seconds
        for _, _, at in self.acked.values():
            i = int(at - self.t0)
            if 0 <= i < seconds:
                buckets[i] += 1
        return buckets

    def resumed_at(self, since: float) -> dict[TopicPartitionKey, float]:
        """Per partition, when the first record *sent* at or after ``since`` was acknowledged."""
        first: dict[TopicPartitionKey, float] = {}
        for seq, (part, _, at) in self.acked.items():
            if self.sent_at[seq] >= since and (part not in first or at < first[part]):
                first[part] = at
        return first


class PacedProducer:
    """Produces records round-robin over the given partitions at a steady rate."""

    def __init__(self, bootstrap: str, acks: str, partitions: list[TopicPartitionKey], rate: float, log: AckLog,
                 request_timeout_ms: int = PRODUCER_REQUEST_TIMEOUT_MS) -> None:
        self._settings = quiet_client(bootstrap, "producer", **{
            "client.id": "geokafka-drill-producer",
            "acks": acks,
            "enable.idempotence": acks == "all",
            "linger.ms": 5,
            "message.timeout.ms": 600_000,
            "request.timeout.ms": request_timeout_ms,
            "topic.metadata.refresh.interval.ms": 2_000,
        })
        self._producer = Producer(self._settings)
        self._partitions = partitions
        self._interval = 1.0 / rate
        self._log = log
        self._seq = 0
        self._next = time.monotonic()

    def pump(self, until: float) -> None:
        """Send what is due and serve delivery callbacks until ``until`` (monotonic)."""
        while True:
            now = time.monotonic()
            if now >= until:
                return
            try:
                while self._next <= now:
                    self._send(now)
                    self._next += self._interval
                self._producer.poll(min(0.01, max(0.0, until - now)))
            except KafkaException as exc:
                if not is_fatal(exc):
                    raise
                self._replace(exc)

    def _replace(self, exc: KafkaException) -> None:
        """Do what an application must after a fatal producer error: drop the producer, start a new one.

        An idempotent producer stops for good when a partition's new leader disagrees with its
        sequence numbers (OUT_OF_ORDER_SEQUENCE_NUMBER; seen after the 2-DC quorum recovery: the
        new leader held batches the producer had sent but never seen acknowledged). Its queued
        and in-flight records are purged, so they count as not acknowledged.
        """
        name = exc.args[0].name()
        self._log.failures[f"fatal {name}"] += 1
        self._log.producer_restarts.append((time.monotonic(), name))
        self._producer.purge(in_queue=True, in_flight=True, blocking=False)
        with contextlib.suppress(KafkaException):  # the fatal error again: it was handled above
            self._producer.poll(0)  # the purged records' delivery callbacks
        self._producer = Producer(self._settings)

    def _send(self, now: float) -> None:
        topic, partition = self._partitions[self._seq % len(self._partitions)]
        try:
            self._producer.produce(topic, value=str(self._seq).encode(), partition=partition,
                                   on_delivery=self._log.on_delivery)
        except BufferError:
            self._log.failures["_QUEUE_FULL"] += 1
            return
        self._log.sent_at[self._seq] = now
        self._log.sent_to[self._seq] = (topic, partition)
        self._seq += 1

    def close(self, grace_s: float = 5.0) -> int:
        """Wait ``grace_s`` for outstanding acks, purge the rest (not acknowledged); return how many were purged."""
        left = self._drain(grace_s)
        if left:
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
            self._drain(5.0)
        return left

    def _drain(self, timeout_s: float) -> int:
        """Serve delivery callbacks until nothing is outstanding or ``timeout_s`` has passed; return what is
        left (:func:`~geokafka.control.delivery.drain`: flush() can raise a fatal error no handler catches)."""
        try:
            return drain(self._producer, timeout_s)
        except KafkaException as exc:
            if not is_fatal(exc):
                raise
            self._log.failures[f"fatal {exc.args[0].name()}"] += 1
            self._producer.purge(in_queue=True, in_flight=True, blocking=False)
            with contextlib.suppress(KafkaException):
                drain(self._producer, 1.0)
            return len(self._producer)


class LiveConsumer(threading.Thread):
    """Reads every partition from the beginning, as a client in ``rack`` would (fetch from follower)."""

    def __init__(self, bootstrap: str, rack: str, partitions: list[TopicPartitionKey], t0: float) -> None:
        super().__init__(name="geokafka-drill-consumer", daemon=True)
        self._consumer = Consumer(quiet_client(
            bootstrap, "consumer", **{"group.id": f"geokafka-drill-{int(t0)}", "client.rack": rack,
                                      "enable.auto.commit": False, "auto.offset.reset": "earliest",
                                      "topic.metadata.refresh.interval.ms": 2_000},
        ))
        self._partitions = partitions
        self._t0 = t0
        self.consumed_at: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        """Consume until :attr:`stop` is set."""
        self._consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in self._partitions])
        try:
            while not self.stop.is_set():
                for msg in self._consumer.consume(500, timeout=0.2):
                    if msg.error() is None:
                        self.consumed_at.append(time.monotonic())
        finally:
            self._consumer.close()

    def per_second(self, seconds: int) -> list[int]:
        """Records consumed in each second since the drill began."""
        buckets = [0] * seconds
        for at in list(self.consumed_at):
            i = int(at - self._t0)
            if 0 <= i < seconds:
                buckets[i] += 1
        return buckets


@dataclass(frozen=True)
class ReadBack:
    """What the surviving brokers still serve."""

    values: dict[TopicPartitionKey, set[int]]
    unreadable: dict[TopicPartitionKey, str]


def read_back(bootstrap: str, partitions: list[TopicPartitionKey], live_brokers: set[int], timeout_s: float = 30.0) -> ReadBack:
    """Read every partition whose leader is a live broker from offset 0 to its high watermark.

    Partitions whose metadata names a dead or no leader cannot be read by any client: they
    are returned in ``unreadable`` with the reason, never guessed.
    """
    admin = AdminClient(quiet_client(bootstrap, "admin"))
    topics = admin.list_topics(timeout=10).topics
    consumer = Consumer(quiet_client(bootstrap, "readback", **{
        "group.id": "geokafka-drill-readback", "enable.auto.commit": False, "enable.partition.eof": True}))
    values: dict[TopicPartitionKey, set[int]] = {}
    unreadable: dict[TopicPartitionKey, str] = {}
    ends: dict[TopicPartitionKey, int] = {}
    try:
        for topic, p in partitions:
            meta = topics.get(topic)
            leader = meta.partitions[p].leader if meta is not None and p in meta.partitions else -1
            if leader not in live_brokers:
                unreadable[(topic, p)] = f"leader is {'none' if leader < 0 else f'broker {leader}, which is dead'}"
                continue
            try:
                _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5)
            except Exception as exc:  # noqa: BLE001 - reported per partition, not raised
                unreadable[(topic, p)] = f"no high watermark: {exc}"
                continue
            ends[(topic, p)] = high
            values[(topic, p)] = set()
        todo = {tp for tp, high in ends.items() if high > 0}
        consumer.assign([TopicPartition(t, p, 0) for (t, p) in todo])
        deadline = time.monotonic() + timeout_s
        while todo and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                name, partition, offset, err = msg.topic(), msg.partition(), msg.offset(), msg.error()
                if name is None or partition is None:
                    continue
                tp = (name, partition)
                if err is None and offset is not None:
                    value = msg.value()
                    if offset < ends[tp] and value is not None:
                        values[tp].add(int(value))
                    if offset + 1 >= ends[tp]:
                        todo.discard(tp)
                elif err is not None and err.code() == KafkaError._PARTITION_EOF:
                    todo.discard(tp)
        for tp in todo:
            unreadable[tp] = "read did not reach the high watermark in time"
            values.pop(tp, None)
    finally:
        consumer.close()
    return ReadBack(values, unreadable)
