"""`reconcile --replay --execute`: the stranded records produced to the surviving site, exactly once.

Each source partition's stranded records go to the same partition of the flow's target topic,
with their key, value, timestamp and headers, provenance headers saying they were stranded
(:mod:`geokafka.control.provenance`), and no ``gk.src`` (they are not in replicated order).
One transactional producer per partition, with a fixed id (``geokafka-reconcile-<flow>-<topic>-
<partition>``), commits them in chunks; each chunk's transaction also writes, to the target's
state topic, how far the replay got (:class:`~geokafka.control.state_records.Reconciled`) and
the flow's progress for that partition (the same record the sink commits with replicated
records: a flow resumed after failback continues after them instead of copying them again).
A run starts by initialising the transactional id, which fences an earlier run and aborts what
it left open, and only then reads how far the replay got: across repeated runs and crashes,
each record lands once.
"""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaException, Message, Producer

from geokafka.control.admin import raise_mapped
from geokafka.control.connection import ClusterConnection
from geokafka.control.provenance import (
    ORIGIN_HEADER,
    SOURCE_HEADER,
    STRANDED_FAILOVER_HEADER,
    STRANDED_HEADER,
    STRANDED_PROCESSED_HEADER,
    SourcePosition,
    header_value,
)
from geokafka.control.state_records import STATE_TOPIC, Progress, Reconciled, StateRecord, TopicPartitionKey
from geokafka.control.state_store import StateStore
from geokafka.failover.stranded import StrandedPartition, headers_of, timestamp_of

CHUNK_RECORDS = 5_000
"""Records per transaction (each also commits how far the replay got)."""


@dataclass
class ReplayPartition:
    """One partition's replay: what is left to produce, and what was produced now."""

    topic: str
    partition: int
    target_topic: str
    start: int
    """First stranded offset not replayed yet."""
    end: int
    pending: int
    """Stranded records left to produce."""
    produced: int = 0
    skipped: int = 0
    """Records passed over now because the application said their producer was told they failed (it sent them
    again at the new site)."""


@dataclass
class ReplayResult:
    """A replay preview, or what a replay did."""

    executed: bool
    partitions: list[ReplayPartition] = field(default_factory=list)

    @property
    def pending(self) -> int:
        """Records left to produce before this run."""
        return sum(p.pending for p in self.partitions)

    @property
    def produced(self) -> int:
        """Records produced by this run."""
        return sum(p.produced for p in self.partitions)

    @property
    def skipped(self) -> int:
        """Records this run passed over (their keys were on the skip list)."""
        return sum(p.skipped for p in self.partitions)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        return {"executed": self.executed, "pending": self.pending, "produced": self.produced, "skipped": self.skipped,
                "partitions": [vars(p) for p in self.partitions]}


def transactional_id(flow: str, topic: str, partition: int) -> str:
    """The fixed transactional id of one partition's replay (never the sink's)."""
    return f"geokafka-reconcile-{flow}-{topic}-{partition}"


def replay_plan(parts: list[StrandedPartition], done: dict[TopicPartitionKey, Reconciled]) -> list[ReplayPartition]:
    """Per partition with stranded records: where its replay starts and how many are left (pure)."""
    out = []
    for part in parts:
        r = part.range
        if not part.records:
            continue
        previous = done.get((r.topic, r.partition))
        start = r.start if previous is None else max(r.start, previous.next)
        out.append(ReplayPartition(r.topic, r.partition, r.target_topic, start, r.end, part.at_or_after(start)))
    return out


def replay_headers(msg: Message, source: str, failover_at_ms: int, processed: list[str]
                   ) -> list[tuple[str, bytes | None]]:
    """The record's headers without ``gk.src``, its origin kept (or set to the old source), and where it was stranded."""
    headers = [(k, v) for k, v in headers_of(msg) if k not in (SOURCE_HEADER, STRANDED_HEADER,
                                                                     STRANDED_FAILOVER_HEADER, STRANDED_PROCESSED_HEADER)]
    if header_value(headers, ORIGIN_HEADER) is None:
        headers.append((ORIGIN_HEADER, source.encode()))
    position = SourcePosition(source, str(msg.topic()), int(msg.partition() or 0), int(msg.offset() or 0))
    headers += [(STRANDED_HEADER, position.encode()), (STRANDED_FAILOVER_HEADER, str(failover_at_ms).encode())]
    if processed:
        headers.append((STRANDED_PROCESSED_HEADER, ",".join(processed).encode()))
    return headers


def replay_partition(target: ClusterConnection, store: StateStore, flow: str, source: str, part: ReplayPartition,
                     failover_at_ms: int, read: Callable[[int], Iterator[Message]], processed: Callable[[Message], list[str]],
                     timeout_s: float = 60.0, skip: Callable[[Message], bool] | None = None) -> int:
    """Produce one partition's stranded records from where the last committed replay ended; returns how many.

    ``read(start)`` yields the partition's stranded records from ``start`` on; a record ``skip`` says yes to is
    passed over (counted, and the replayed position moves past it all the same). ``store``: the target's state store.
    """
    producer = Producer(target.librdkafka(**{
        "transactional.id": transactional_id(flow, part.topic, part.partition), "enable.idempotence": True,
        "acks": "all", "linger.ms": 5, "transaction.timeout.ms": 60_000,
    }))
    what = f"replaying the stranded records of {part.topic}/{part.partition} to {part.target_topic}"
    try:
        producer.init_transactions(timeout_s)  # fences an earlier run: its open transaction is aborted
        done = store.read(timeout_s=timeout_s).reconciled(flow).get((part.topic, part.partition))
        start = part.start if done is None else max(part.start, done.next)
        total = 0 if done is None else done.records
        chunk: list[Message] = []
        for msg in read(start):
            chunk.append(msg)
            if len(chunk) >= CHUNK_RECORDS:
                total = _commit(producer, flow, source, part, chunk, total, failover_at_ms, processed, timeout_s, skip)
                chunk = []
        if chunk:
            _commit(producer, flow, source, part, chunk, total, failover_at_ms, processed, timeout_s, skip)
    except KafkaException as exc:
        with contextlib.suppress(KafkaException):  # what this run left open is aborted (or fenced by the next)
            producer.abort_transaction(5)
        raise_mapped(target, what, exc)  # (not closed: close() after a failure warns on stderr)
    producer.close()  # every transaction is committed: nothing is left to deliver
    return part.produced


def _commit(producer: Producer, flow: str, source: str, part: ReplayPartition, chunk: list[Message], total: int,
            failover_at_ms: int, processed: Callable[[Message], list[str]], timeout_s: float,
            skip: Callable[[Message], bool] | None = None) -> int:
    producer.begin_transaction()
    produced = 0
    for msg in chunk:
        if skip is not None and skip(msg):
            part.skipped += 1
            continue
        stamp = timestamp_of(msg)
        _produce(producer, part.target_topic, part.partition, msg.key(), msg.value(),
                 replay_headers(msg, source, failover_at_ms, processed(msg)), stamp)
        produced += 1
    last = chunk[-1]
    nxt = int(last.offset() or 0) + 1
    total += produced
    part.produced += produced
    now = int(time.time() * 1000)
    records: list[StateRecord] = [
        Reconciled(flow, part.topic, part.partition, nxt, part.end, total, now),
        Progress(flow, part.topic, part.partition, nxt, timestamp_of(last) or -1),
    ]
    for record in records:
        _produce(producer, STATE_TOPIC, 0, record.key.encode(), json.dumps(record.encode()).encode(), [], None)
    producer.commit_transaction(timeout_s)
    return total


def _produce(producer: Producer, topic: str, partition: int, key: Any, value: Any,
             headers: list[tuple[str, bytes | None]],
             timestamp_ms: int | None) -> None:
    kwargs: dict[str, Any] = {"key": key, "value": value, "partition": partition, "headers": headers}
    if timestamp_ms is not None:
        kwargs["timestamp"] = timestamp_ms
    while True:
        try:
            producer.produce(topic, **kwargs)
            return
        except BufferError:
            producer.poll(0.1)


def read_skip_keys(text: str) -> frozenset[bytes]:
    """The keys of a skip list (pure): one a line, as text, or raw bytes after ``base64:``; blank lines and lines
    starting with ``#`` say nothing. Raises ValueError naming the line of a ``base64:`` value that is not."""
    import base64
    import binascii

    keys: set[bytes] = set()
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if line.startswith("base64:"):
            try:
                keys.add(base64.b64decode(line[len("base64:"):].strip(), validate=True))
            except binascii.Error:
                raise ValueError(f"line {number}: not base64 after 'base64:'") from None
        else:
            keys.add(line.rstrip("\r\n").encode())
    return frozenset(keys)
