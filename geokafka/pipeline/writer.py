"""The executor side of the pipeline: write one micro-batch to the target, exactly once.

Runs inside Spark's Python workers through ``mapInArrow``. For each source partition in the
task, one Kafka transaction on the target holds the replicated records *and* the progress
record (``progress/<flow>/<topic>/<partition>`` in ``__geokafka_state``), so data and resume
position are committed together or not at all.

The transactional id is fixed per flow and source partition. ``init_transactions`` therefore
fences any older writer of the same partition (a zombie task, a killed driver's leftover
transaction), and a retried task reads the progress back, so records an earlier attempt
already committed are skipped: a replayed batch writes nothing twice.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from geokafka.control.provenance import ORIGIN_HEADER, SOURCE_HEADER
from geokafka.control.state_keys import STATE_TOPIC, progress_key
from geokafka.errors import KafkaOperationError, RecordTooLargeError
from geokafka.pipeline.rows import Rows, replicated_headers, rows_of

OUTPUT_SCHEMA = (
    "topic string, partition int, next_offset long, written long, duplicates_skipped long, "
    "cycle_skipped long, filtered long, bytes long, last_timestamp long, state_offset long"
)

_PRODUCER_DEFAULTS = {
    "acks": "all",
    "linger.ms": 5,
    "batch.size": 1_000_000,
    "compression.type": "lz4",
    "message.max.bytes": 1_000_000_000,  # the target topic's max.message.bytes decides
    "transaction.timeout.ms": 30_000,
    "queue.buffering.max.messages": 200_000,
    "delivery.report.only.error": True,  # no Python call per delivered record, only per failed one
    "log_level": 2,  # executors have no logger: errors surface as exceptions instead
}


@dataclass(frozen=True)
class WriterSpec:
    """What a writer task needs, shipped to executors with each batch (small, picklable)."""

    flow: str
    source_cluster: str
    target_cluster: str
    target_conf: dict[str, Any]
    topic_map: dict[str, str]
    # "topic/partition" -> (next source offset known to the driver, state offset to rescan from)
    expected: dict[str, tuple[int, int]]
    producer_conf: dict[str, Any]


def transactional_id(flow: str, topic: str, partition: int) -> str:
    """The fixed transactional id of one source partition of a flow."""
    return f"geokafka-{flow}-{topic}-{partition}"


class _PartitionWriter:
    """One source partition's transaction within one task."""

    def __init__(self, spec: WriterSpec, topic: str, partition: int, retry: bool) -> None:
        self.spec, self.topic, self.partition = spec, topic, partition
        self.key = f"{topic}/{partition}"
        self.target_topic = spec.topic_map[topic]
        self.producer, self.committed_next = _session(spec, topic, partition, retry)
        self.next_offset = self.committed_next
        self.stats = dict(written=0, duplicates_skipped=0, cycle_skipped=0, filtered=0, bytes=0, last_timestamp=-1)
        self.errors: list[str] = []
        self.failed: list[tuple[int, int, int, str]] = []  # (error code, source offset, size, text)
        self.state_offset = -1
        self.producer.begin_transaction()

    def _on_delivery(self, offset: int, size: int, err: Any, _msg: Any) -> None:
        # only failed records get here (delivery.report.only.error)
        if err is not None:
            self.failed.append((err.code(), offset, size, err.str()))

    def _error(self) -> Exception:
        """The error to stop on: an oversize record names itself (a rejected batch fails its
        small neighbours too, so the largest failed record is the culprit)."""
        where = f"{self.spec.source_cluster} {self.topic}/{self.partition}"
        too_large = [f for f in self.failed if f[0] in (10, 18)]  # MSG_SIZE_TOO_LARGE, RECORD_LIST_TOO_LARGE
        if too_large:
            _, offset, size, _ = max(too_large, key=lambda f: f[2])
            return RecordTooLargeError(
                f"record {where} offset {offset} ({size} bytes) is larger than max.message.bytes of "
                f"{self.spec.target_cluster} topic {self.target_topic}; flow {self.spec.flow} stopped"
            )
        if self.failed:
            _, offset, _, text = self.failed[0]
            return KafkaOperationError(f"writing {where} offset {offset} to {self.spec.target_cluster}: {text}")
        return KafkaOperationError(self.errors[0])

    def write(self, rows: Rows, start: int, end: int) -> None:
        """Produce rows ``start:end`` (this partition's, in offset order) that are new."""
        produce, poll = self.producer.produce, self.producer.poll
        failed, target_topic, partition = self._on_delivery, self.target_topic, self.partition
        offsets, keys, values, timestamps, keep = rows.offsets, rows.keys, rows.values, rows.timestamps, rows.keep
        starts, header_keys, header_values = rows.header_starts, rows.header_keys, rows.header_values
        src, target = self.spec.source_cluster, self.spec.target_cluster
        origin = (ORIGIN_HEADER, src.encode())
        where = f"{src}/{self.topic}/{partition}/"
        written = size_sum = 0
        last_timestamp = self.stats["last_timestamp"]
        i = start
        while i < end and offsets[i] < self.committed_next:
            i += 1
        self.stats["duplicates_skipped"] += i - start
        for i in range(i, end):
            offset = offsets[i]
            self.next_offset = offset + 1
            if keep is not None and keep[i] is False:
                self.stats["filtered"] += 1
                continue
            a, b = starts[i], starts[i + 1]
            headers = list(zip(header_keys[a:b], header_values[a:b])) if b > a else []
            if rows.has_provenance:
                out = replicated_headers(headers, src, target, f"{where}{offset}".encode())
                if out is None:
                    self.stats["cycle_skipped"] += 1  # it started on the target: never send it back
                    continue
                headers = out
            else:  # the common first hop: nothing to look for, append the two headers
                headers.append(origin)
                headers.append((SOURCE_HEADER, f"{where}{offset}".encode()))
            value, key = values[i], keys[i]
            size = len(value or b"") + len(key or b"")
            while True:
                try:
                    produce(target_topic, value, key, partition, partial(failed, offset, size),
                            timestamp=timestamps[i], headers=headers)
                    break
                except BufferError:
                    poll(0.05)
            written += 1
            size_sum += size
            last_timestamp = timestamps[i]
        self.stats["written"] += written
        self.stats["bytes"] += size_sum
        self.stats["last_timestamp"] = last_timestamp
        poll(0)

    def abort(self) -> None:
        """Abort the open transaction now, so it does not hold the target's last stable offset
        (and every read_committed reader) until it times out; then forget the producer."""
        try:
            self.producer.abort_transaction(10)
        except Exception:  # noqa: BLE001 - a fenced or broken producer: its transaction dies with it
            pass
        _drop(self.spec, self.topic, self.partition)

    def commit(self) -> dict[str, Any]:
        """Write the progress record and commit the transaction; return this partition's summary."""
        if self.next_offset > self.committed_next:
            progress = {"next": self.next_offset, "last_timestamp": self.stats["last_timestamp"]}

            def on_state(err: Any, msg: Any) -> None:
                if err is None:
                    self.state_offset = msg.offset()
                else:
                    self.errors.append(f"writing progress to {STATE_TOPIC}: {err.str()}")

            self.producer.produce(STATE_TOPIC, key=progress_key(self.spec.flow, self.topic, self.partition).encode(),
                                  value=json.dumps(progress).encode(), partition=0, on_delivery=on_state)
            self.producer.flush(60)
        if self.failed or self.errors:
            self.abort()
            raise self._error()
        try:
            self.producer.commit_transaction(60)
        except Exception:
            _drop(self.spec, self.topic, self.partition)
            raise
        txn_id = transactional_id(self.spec.flow, self.topic, self.partition)
        _SESSIONS[txn_id] = (self.producer, self.next_offset)
        _warm_spare(txn_id, _producer_conf(self.spec, txn_id))
        return {"topic": self.topic, "partition": self.partition, "next_offset": self.next_offset,
                "state_offset": self.state_offset, **self.stats}


# Producers cached in this Python worker across tasks: transactional id -> (producer, committed next).
_SESSIONS: dict[str, tuple[Any, int]] = {}

# Created but not initialised producers, one per transactional id this worker wrote last time:
# a new producer cannot find its transaction coordinator until librdkafka's 500 ms coordinator
# timer fires (its broker connection is not up at the first try), so a partition that comes
# back to this worker from another one takes a producer made at least a batch ago. Creating one
# fences nothing; only init_transactions does.
_SPARES: dict[str, tuple[dict[str, Any], Any]] = {}
_MAX_SPARES = 64


def _producer_conf(spec: WriterSpec, txn_id: str) -> dict[str, Any]:
    return {**spec.target_conf, **_PRODUCER_DEFAULTS, **spec.producer_conf, "transactional.id": txn_id}


def _warm_spare(txn_id: str, conf: dict[str, Any]) -> None:
    from confluent_kafka import Producer

    if txn_id not in _SPARES and len(_SPARES) < _MAX_SPARES:
        _SPARES[txn_id] = (conf, Producer(conf))


def _new_producer(txn_id: str, conf: dict[str, Any]) -> Any:
    """A producer for ``txn_id``: this worker's spare if it has one with the same settings."""
    from confluent_kafka import Producer

    spare = _SPARES.pop(txn_id, None)
    return spare[1] if spare is not None and spare[0] == conf else Producer(conf)


def _session(spec: WriterSpec, topic: str, partition: int, retry: bool) -> tuple[Any, int]:
    """A transactional producer for this partition and the next source offset already committed.

    The driver's expectation is exact for a task's first attempt: it fenced every writer and
    read the progress before the query started, and learns each later commit from the batch
    results. Only a retried attempt can follow a commit the driver never heard of (the
    earlier attempt committed, then died), so only then is the progress read back.
    """
    txn_id = transactional_id(spec.flow, topic, partition)
    expected_next, rescan_from = spec.expected.get(f"{topic}/{partition}", (-1, 0))
    cached = _SESSIONS.get(txn_id)
    if cached is not None and cached[1] == expected_next and not retry:
        return cached  # we wrote last and the driver saw it: still the owner
    _drop(spec, topic, partition)
    producer = _new_producer(txn_id, _producer_conf(spec, txn_id))
    producer.init_transactions(60)  # fences older writers; their open transaction is aborted
    if not retry:
        return producer, expected_next
    committed = _committed_next(spec, progress_key(spec.flow, topic, partition), rescan_from)
    return producer, max(committed, expected_next)


def _committed_next(spec: WriterSpec, key: str, from_offset: int) -> int:
    """The latest committed progress of ``key`` at or after ``from_offset`` (-1 if none)."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({**spec.target_conf, "group.id": "geokafka-writer", "enable.auto.commit": False,
                         "isolation.level": "read_committed", "enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(STATE_TOPIC, 0, max(from_offset, 0))])
        latest = -1
        while True:
            msg = consumer.poll(10)
            if msg is None:
                raise KafkaOperationError(f"reading {STATE_TOPIC} on {spec.target_cluster} timed out")
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF: read up to the last stable offset
                    return latest
                raise KafkaOperationError(f"reading {STATE_TOPIC} on {spec.target_cluster}: {msg.error().str()}")
            if msg.key() == key.encode() and msg.value() is not None:
                latest = int(json.loads(msg.value())["next"])
    finally:
        consumer.close()


def _drop(spec: WriterSpec, topic: str, partition: int) -> None:
    _SESSIONS.pop(transactional_id(spec.flow, topic, partition), None)


def write_batches(spec: WriterSpec, batches: Iterator[Any]) -> Iterator[Any]:
    """``mapInArrow`` function: replicate the task's rows, yield one summary row per partition."""
    import pyarrow as pa

    from pyspark import TaskContext

    task = TaskContext.get()
    # A stage without shuffle is never resubmitted, so the attempt number tells every retry.
    retry = task is None or task.attemptNumber() > 0
    writers: dict[tuple[str, int], _PartitionWriter] = {}
    committed: set[tuple[str, int]] = set()
    summaries = []
    try:
        for batch in batches:
            if batch.num_rows == 0:
                continue
            _write_arrow_batch(spec, batch, writers, retry)
        for tp, writer in writers.items():
            summaries.append(writer.commit())
            committed.add(tp)
    except BaseException:
        for tp, writer in writers.items():
            if tp not in committed:
                writer.abort()  # never leave a transaction open behind a failed task
        raise
    if summaries:
        yield pa.RecordBatch.from_pylist(summaries, schema=_output_schema())


def _write_arrow_batch(spec: WriterSpec, batch: Any, writers: dict[tuple[str, int], _PartitionWriter],
                       retry: bool) -> None:
    """Hand each partition's rows of one Arrow batch to that partition's writer."""
    rows = rows_of(batch)
    topics, partitions, n = rows.topics, rows.partitions, len(rows)
    # A task reads its source partitions one after the other (a Kafka source task each, coalesced):
    # the rows of one partition are contiguous and in offset order.
    start = 0
    while start < n:
        tp = (topics[start], partitions[start])
        end = start
        while end < n and topics[end] == tp[0] and partitions[end] == tp[1]:
            end += 1
        writer = writers.get(tp) or writers.setdefault(tp, _PartitionWriter(spec, *tp, retry))
        writer.write(rows, start, end)
        start = end


def _output_schema() -> Any:
    import pyarrow as pa

    fields = []
    for part in OUTPUT_SCHEMA.split(","):
        name, kind = part.split()
        fields.append(pa.field(name, {"string": pa.string(), "int": pa.int32(), "long": pa.int64()}[kind]))
    return pa.schema(fields)
