"""Consumers on the target: a record counter (read_committed) and the latency probe."""

from __future__ import annotations

import struct
import threading
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from geokafka.bench.procstat import busy_percent, machine_cpu
from geokafka.control.admin import silent_logger

LAT_FORMAT = ">d8s"  # a probe record's value starts with its produce wall-clock time (s) and the probe's id
LAT_HEAD = struct.calcsize(LAT_FORMAT)


def probe_value(probe_id: bytes, sent_at: float, size: int) -> bytes:
    """A latency probe record's value of ``size`` bytes (at least its head)."""
    return struct.pack(LAT_FORMAT, sent_at, probe_id) + b"x" * max(0, size - LAT_HEAD)


def probe_latency_ms(value: bytes | None, probe_id: bytes, now: float) -> float | None:
    """Milliseconds from produce to ``now`` of one of this probe's records; None for any other record
    (an earlier probe's, or a backlog the replicator was still copying when the probe began)."""
    if value is None or len(value) < LAT_HEAD:
        return None
    sent_at, tag = struct.unpack(LAT_FORMAT, value[:LAT_HEAD])
    return (now - sent_at) * 1000 if tag == probe_id else None


class TargetCounter:
    """Counts committed records of one target topic (or of every topic of a list) from the beginning, in a
    thread.

    ``first_at``/``done_at`` are ``time.monotonic()`` when the first record / the ``expected``-th
    record became visible.
    """

    def __init__(self, bootstrap: str, topic: str | Sequence[str], expected: int) -> None:
        self.bootstrap, self.topic, self.expected = bootstrap, topic, expected
        self.count = 0
        self.first_at: float | None = None
        self.first_count = 0
        """Records in the first fetch that showed any (already copied when the window opens)."""
        self.done_at: float | None = None
        self.half_at: float | None = None
        """When at least half of ``expected`` was visible; ``half_count`` records were."""
        self.half_count = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-counter")
        self.on_first: Callable[[], None] | None = None  # run in this thread when the first record shows up
        self.on_half: Callable[[], None] | None = None  # run in this thread when half the records are visible

    def start(self) -> TargetCounter:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({"logger": silent_logger(),
            "bootstrap.servers": self.bootstrap, "group.id": f"bench-count-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": "read_committed",
            "topic.metadata.refresh.interval.ms": 1000, "fetch.max.bytes": 64 * 1024 * 1024,
            "allow.auto.create.topics": False,
        })
        follow = PartitionFollower(consumer, self.topic)
        try:
            while not self._stop.is_set() and self.count < self.expected:
                follow.assign_new()
                msgs = consumer.consume(10_000, 0.2)
                got = sum(1 for m in msgs if m.error() is None)
                if got:
                    if self.first_at is None:
                        self.first_at = time.monotonic()
                        self.first_count = got
                        if self.on_first is not None:
                            self.on_first()
                    self.count += got
                    if self.half_at is None and self.count >= self.expected // 2:
                        self.half_at, self.half_count = time.monotonic(), self.count
                        if self.on_half is not None:
                            self.on_half()
            if self.count >= self.expected:
                self.done_at = time.monotonic()
        finally:
            consumer.close()

    def wait(self, timeout_s: float) -> bool:
        self._thread.join(timeout_s)
        return self.done_at is not None

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


ENDS_EVERY_S = 0.05
"""How often :class:`VisibleEnds` looks at a target topic's ends."""


class VisibleEnds:
    """Samples the sum of target topics' read_committed end offsets (their last stable offsets) every ``every_s``
    in a thread, with when each sample was taken: when records *became* visible, whatever a counter that reads
    them is still at. A counter that consumes every record in Python falls behind a fast copy on a loaded machine
    (it read 1 KiB records at about 90,000 a second under a load of 8), and its times then measure itself; over
    2,000 partitions its fetches also kept the target broker busy (a copy of 1,000,000 records beside it ran at a
    third of the rate it reached with only the ends watched).

    ``topic`` is one topic or a list of them; ``every_s`` None looks as often as :func:`ends_every_s` says for their
    partitions. ``on_first`` and ``on_half`` run in this thread as the sum first
    exceeds 0 and first reaches half of ``expected`` (offsets count a transaction's commit markers too: a few per
    commit, next to records by the million); :meth:`reached_at` says when the sum first reached a value, e.g. the
    final one. :attr:`complete` is set once every partition's end reached its share of ``expected``, the records
    spread over the partitions in turn as :func:`~geokafka.bench.setup.load` writes them (a few markers may still
    stand for records not there yet: a counter confirms).
    """

    def __init__(self, bootstrap: str, topic: str | Sequence[str], expected: int,
                 every_s: float | None = ENDS_EVERY_S) -> None:
        self.bootstrap, self.expected = bootstrap, expected
        self.every_s = ENDS_EVERY_S if every_s is None else every_s
        self._every_for_partitions = every_s is None
        self.topics = [topic] if isinstance(topic, str) else list(topic)
        self.samples: list[tuple[float, int]] = []
        self.first_at: float | None = None
        self.first_sum = 0
        self.half_at: float | None = None
        self.half_sum = 0
        self.on_first: Callable[[], None] | None = None
        self.on_half: Callable[[], None] | None = None
        self.complete = threading.Event()
        self._partitions: list[tuple[str, int]] = []
        self._admin: Any = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-visible-ends")

    def start(self) -> VisibleEnds:
        from geokafka.control.admin import ClusterAdmin
        from geokafka.control.connection import ClusterConnection

        self._admin = ClusterAdmin(ClusterConnection(name="bench target", bootstrap=self.bootstrap, security={}),
                                   timeout_s=5.0)
        self._thread.start()
        return self

    def sample(self) -> int | None:
        """One look: the sum of the topics' read_committed ends (kept with its time), or None when a topic is not
        there yet or the look failed."""
        from geokafka.errors import GeokafkaError

        try:
            if not self._partitions:
                counts = self._admin.topic_partitions()
                if any(not counts.get(name) for name in self.topics):
                    return None
                self._partitions = [(name, p) for name in self.topics for p in range(counts[name])]
                if self._every_for_partitions:
                    self.every_s = ends_every_s(len(self._partitions))
            ends = self._admin.offsets(self._partitions, timeout_s=5.0)
        except GeokafkaError:
            return None
        at = time.monotonic()
        total = sum(ends.values())
        self.samples.append((at, total))
        if not self.complete.is_set() and every_share_reached(self._partitions, ends, self.expected):
            self.complete.set()
        return total

    def _run(self) -> None:
        while not self._stop.is_set():
            total = self.sample()
            if total is not None:
                if self.first_at is None and total > 0:
                    self.first_at, self.first_sum = self.samples[-1][0], total
                    if self.on_first is not None:
                        self.on_first()
                if self.half_at is None and total >= self.expected // 2:
                    self.half_at, self.half_sum = self.samples[-1][0], total
                    if self.on_half is not None:
                        self.on_half()
            self._stop.wait(self.every_s)

    def reached_at(self, value: int) -> float | None:
        """When a sample first showed at least ``value`` (None: none did)."""
        return reached_at(self.samples, value)

    def stop(self) -> None:
        """No more looks in the thread (:meth:`sample` still looks once more)."""
        self._stop.set()
        self._thread.join(10)

    def close(self) -> None:
        """Stop, and release the admin client."""
        self.stop()
        if self._admin is not None:
            self._admin.close()
            self._admin = None


def ends_every_s(partitions: int) -> float:
    """How often :class:`VisibleEnds` looks at ``partitions`` partitions: every :data:`ENDS_EVERY_S`, less often
    past 500 (a look at 2,000 costs ~20 ms of the bench's CPU: every 0.2 s there, 0.5 s at 5,000)."""
    return max(ENDS_EVERY_S, partitions / 10_000)


def every_share_reached(partitions: Sequence[tuple[str, int]], ends: dict[tuple[str, int], int], records: int) -> bool:
    """Whether each of ``partitions`` (in the order :func:`~geokafka.bench.setup.load` writes to them in turn) has an
    end at or past its share of ``records``."""
    count = len(partitions)
    if count == 0:
        return False
    base, extra = divmod(records, count)
    return all(ends.get(tp, 0) >= base + (1 if i < extra else 0) for i, tp in enumerate(partitions))


def reached_at(samples: Sequence[tuple[float, int]], value: int) -> float | None:
    """The time of the first ``(time, total)`` sample whose total is at least ``value`` (None: none is)."""
    for at, total in samples:
        if total >= value:
            return at
    return None


class PartitionFollower:
    """Assigns a consumer every partition of ``topics`` from the beginning as the replicator creates them: no group,
    so no rebalance (a regex subscription's group rebalanced for each topic a replicator added: its first record
    showed seconds late at 200 topics). Looks at the metadata only while a topic is missing (at 2,000 partitions
    a busy broker took over 5 s to answer).

    Each partition is assigned at offset 0, the start of a topic the replicator just created, never at the logical
    "beginning": librdkafka resolves that with one ListOffsets request per partition, and at 2,000 partitions,
    beside a replicator starting on the same broker, its first fetch of most of them came 25 s after the
    assignment, so the watch saw geokafka's first record 10-15 s after geokafka had committed it. A log that no
    longer starts at 0 answers the fetch out of range, and the consumer's ``auto.offset.reset`` then asks for its
    beginning."""

    def __init__(self, consumer: Any, topics: str | Sequence[str], every_s: float = 1.0) -> None:
        self.consumer, self.every_s = consumer, every_s
        self.missing = {topics} if isinstance(topics, str) else set(topics)
        self._next_at = 0.0

    def assign_new(self) -> None:
        """Assign the topics that appeared since the last look (at most every ``every_s``)."""
        from confluent_kafka import KafkaException, TopicPartition

        if not self.missing or time.monotonic() < self._next_at:
            return
        self._next_at = time.monotonic() + self.every_s
        try:
            listed = self.consumer.list_topics(timeout=10).topics
        except KafkaException:
            return  # answered late: the next look
        there = sorted(t for t in self.missing if t in listed and listed[t].error is None and listed[t].partitions)
        if there:
            self.consumer.incremental_assign([TopicPartition(t, p, 0) for t in there
                                              for p in sorted(listed[t].partitions)])
            self.missing.difference_update(there)


class FirstWritten:
    """Notes when the first record of a target topic (or of any of a list) is written, committed or not
    (read_uncommitted).

    A transactional replicator's records become visible to read_committed readers only at its
    commits; its throughput window opens when it starts writing, as an at-least-once one's does.
    """

    def __init__(self, bootstrap: str, topic: str | Sequence[str]) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.at: float | None = None
        self.on_first: Callable[[], None] | None = None  # run in this thread when the first record is written
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-first-written")

    def start(self) -> FirstWritten:
        self._thread.start()
        return self

    def _run(self) -> None:
        from confluent_kafka import Consumer

        consumer = Consumer({"logger": silent_logger(),
            "bootstrap.servers": self.bootstrap, "group.id": f"bench-first-{uuid.uuid4().hex[:8]}",
            "auto.offset.reset": "earliest", "enable.auto.commit": False, "isolation.level": "read_uncommitted",
            "topic.metadata.refresh.interval.ms": 1000, "allow.auto.create.topics": False,
            "fetch.wait.max.ms": 20,
        })
        follow = PartitionFollower(consumer, self.topic)
        try:
            while not self._stop.is_set():
                follow.assign_new()
                msg = consumer.poll(0.05)
                if msg is not None and msg.error() is None:
                    self.at = time.monotonic()
                    if self.on_first is not None:
                        self.on_first()
                    return
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(10)


FETCH_WAIT_MS = 10
"""How long the latency probe's consumer lets the target hold a fetch while no record is visible (the broker
answers at once when one is): short, so the probe adds nothing to a latency of milliseconds."""
MANY_PARTITIONS_FETCH_WAIT_MS = 500
"""The same over thousands of partitions: a librdkafka consumer names every partition in each fetch, so at
2,000 idle partitions a fetch every 10 ms kept the 1-node target broker 88-94% of a core busy by itself
(14% at 500 ms, Kafka's own default)."""


def latency_probe(src: str, src_topic: str | Sequence[str], dst: str, dst_topic: str | Sequence[str], rate: float,
                  seconds: float, size: int = 1024, drain_s: float = 20.0, warmup_s: float = 0.0,
                  fetch_wait_ms: int = FETCH_WAIT_MS, one_per_topic: bool = False) -> dict[str, float | int | None]:
    """Produce ``rate`` records/s for ``warmup_s`` + ``seconds`` to ``src_topic`` (or round-robin to each of a
    list; value starts with the wall time), consume ``dst_topic`` (every one of a list) and return replication
    latency percentiles in ms (produce call -> visible) of the records sent after the warm-up: the steady state's.

    The consumer on the target is assigned at the end before producing starts, and only counts records
    that carry this probe's id (warm-up records carry another). With ``one_per_topic`` the records still go to
    every partition, evenly (:class:`OnePerTopic`), and the consumer reads one partition of each topic: over
    thousands of partitions, reading them all cost the target broker a fifth of a core more.
    """
    from confluent_kafka import Consumer, Producer

    sources = [src_topic] if isinstance(src_topic, str) else list(src_topic)
    consumer = Consumer({"logger": silent_logger(),
        "bootstrap.servers": dst, "group.id": f"bench-lat-{uuid.uuid4().hex[:8]}", "auto.offset.reset": "latest",
        "enable.auto.commit": False, "isolation.level": "read_committed", "fetch.wait.max.ms": fetch_wait_ms,
        "fetch.min.bytes": 1,
    })
    targets = [dst_topic] if isinstance(dst_topic, str) else list(dst_topic)
    partitions = _partitions(consumer, targets)
    spread = OnePerTopic(tuple(len(partitions[t]) for t in targets)) if one_per_topic else None
    read = ([(t, spread.read(i)) for i, t in enumerate(targets)] if spread is not None
            else [(t, p) for t in targets for p in partitions[t]])
    ends = _at_end(consumer, read)  # only the partitions read: one request each
    consumer.assign(ends)
    consumer.consume(100, 0.5)
    producer = Producer({"logger": silent_logger(), "bootstrap.servers": src, "acks": "all", "linger.ms": 0})
    probe_id = uuid.uuid4().bytes[:8]
    warmup_id = uuid.uuid4().bytes[:8]
    lat: list[float] = []

    def take(messages: list[Any]) -> None:
        now = time.time()
        for m in messages:
            ms = probe_latency_ms(m.value() if m.error() is None else None, probe_id, now)
            if ms is not None:
                lat.append(ms)

    def send(n: int, probe: bytes, key: bytes) -> bool:
        """Record ``n`` sent; whether the consumer reads its partition."""
        if spread is None:
            producer.produce(sources[n % len(sources)], probe_value(probe, time.time(), size), key=key)
            return True
        topic, partition = spread.place(n)
        producer.produce(sources[topic], probe_value(probe, time.time(), size), key=key, partition=partition)
        return partition == spread.read(topic)

    sent = warm = expected = 0
    t0 = time.monotonic()
    measured_from = t0 + warmup_s
    interval = 1.0 / rate
    next_at = t0
    cpu_from: tuple[int, int] | None = None
    while time.monotonic() - measured_from < seconds:
        now = time.monotonic()
        if cpu_from is None and now >= measured_from:
            cpu_from = machine_cpu()
        while next_at <= now:
            if next_at < measured_from:
                # spread like the measured records: the warm-up reaches every partition
                send(warm, warmup_id, b"warm%d" % warm)
                warm += 1
            else:
                expected += send(sent, probe_id, b"lat%d" % sent)
                sent += 1
            next_at += interval
        producer.poll(0)
        take(consumer.consume(1000, 0.002))
    # how busy the whole machine was while the measured records were sent: near 100%, the figures measure a
    # saturated machine
    busy = busy_percent(cpu_from, machine_cpu()) if cpu_from is not None else None
    producer.flush(30)
    deadline = time.monotonic() + drain_s
    while len(lat) < expected and time.monotonic() < deadline:
        take(consumer.consume(1000, 0.05))
    consumer.close()
    return {"sent": sent, "read": expected, "received": len(lat), "read_partitions": len(ends), "rate": rate,
            "warmup_s": warmup_s, "machine_busy_percent": busy, "fetch_wait_ms": fetch_wait_ms, **percentiles(lat)}


@dataclass(frozen=True)
class OnePerTopic:
    """Where the probe's record ``n`` goes when its consumer reads one partition of each topic: the topics by
    turns, each topic's partitions by turns (every partition gets the same traffic), and which partition of
    topic ``i`` is read (topics of equal size are read at different partitions)."""

    partitions: tuple[int, ...]
    """Each topic's partition count, in the order of the probe's topics."""

    def place(self, n: int) -> tuple[int, int]:
        """(topic index, partition) of record ``n``."""
        topic = n % len(self.partitions)
        return topic, (n // len(self.partitions)) % self.partitions[topic]

    def read(self, topic: int) -> int:
        """The partition of topic ``topic`` the probe reads."""
        return topic % self.partitions[topic]


def _partitions(consumer: Any, topics: list[str], wait_s: float = 60.0) -> dict[str, list[int]]:
    """Each of ``topics``' partitions, once every topic is there (a replicator creates them)."""
    deadline = time.monotonic() + wait_s
    while True:
        listed = consumer.list_topics(timeout=10).topics
        missing = [t for t in topics if t not in listed or listed[t].error is not None or not listed[t].partitions]
        if not missing:
            return {t: sorted(listed[t].partitions) for t in topics}
        if time.monotonic() > deadline:
            raise RuntimeError(f"latency probe: {', '.join(missing[:3])} never appeared on the target")
        time.sleep(0.5)


def _at_end(consumer: Any, partitions: list[tuple[str, int]]) -> list[Any]:
    """Each (topic, partition) positioned at its current end."""
    from confluent_kafka import TopicPartition

    ends = []
    for topic, p in partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
        ends.append(TopicPartition(topic, p, high))
    return ends


def percentiles(values: list[float]) -> dict[str, float]:
    """p50/p95/p99/max (nearest rank), NaN-free: 0-length input gives -1."""
    if not values:
        return {"p50_ms": -1.0, "p95_ms": -1.0, "p99_ms": -1.0, "max_ms": -1.0}
    s = sorted(values)

    def rank(q: float) -> float:
        return round(s[min(len(s) - 1, max(0, int(q * len(s) + 0.5) - 1))], 2)

    return {"p50_ms": rank(0.50), "p95_ms": rank(0.95), "p99_ms": rank(0.99), "max_ms": round(s[-1], 2)}
