"""The records a failover stranded at the old source, read from its logs once it answers again.

A flow's progress on the target (:class:`~geokafka.control.state_records.PackedProgress`) is committed in the
same transaction as the records it covers, and failover fences the flow's writers, so every
record of the old source at or past the progress the failover recorded never reached the
target: those are the **stranded** records. They are read here with a read_committed reader
(records of aborted transactions and transaction markers are not records anyone was promised)
from that position up to the end the old source has when the read starts.
"""

from __future__ import annotations

import bisect
import time
from array import array
from collections.abc import Generator, Mapping
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError, KafkaException, Message, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped
from geokafka.control.state_records import TopicPartitionKey
from geokafka.errors import KafkaOperationError


@dataclass(frozen=True)
class StrandedRange:
    """Where one source partition's stranded records lie at the old source."""

    topic: str
    partition: int
    target_topic: str
    replicated_next: int
    """The progress the failover recorded: every offset below it is on the target."""
    log_start: int
    end: int
    """The old source's last stable offset when reconcile read it (exclusive)."""
    high_watermark: int
    """Its high watermark: offsets past ``end`` belong to transactions not decided yet."""

    @property
    def start(self) -> int:
        """First offset to read (records below the log start are gone at the old source too)."""
        return max(self.replicated_next, self.log_start)

    @property
    def deleted(self) -> int:
        """Offsets between the replicated position and the log start: deleted at the old source, on no cluster."""
        return max(0, min(self.log_start, self.end) - self.replicated_next)

    @property
    def undecided(self) -> int:
        """Offsets of transactions still open at the old source (counted once they are decided)."""
        return max(0, self.high_watermark - self.end)


@dataclass
class StrandedPartition:
    """The stranded records of one source partition: offsets, count, timestamps."""

    range: StrandedRange
    records: int = 0
    first_offset: int | None = None
    last_offset: int | None = None
    first_ms: int | None = None
    last_ms: int | None = None
    after_failover: int = 0
    """Late writes: records whose timestamp is after the failover started, written at the old site after it (a
    split brain), not lost by the failover."""
    last_late_offset: int | None = None
    stranded_first_ms: int | None = None
    stranded_last_ms: int | None = None
    """Timestamps of the records written before the failover (the failover's loss)."""
    offsets: array[int] = field(default_factory=lambda: array("q"), repr=False)

    @property
    def stranded(self) -> int:
        """Records written before the failover and never replicated: what the failover lost."""
        return self.records - self.after_failover

    def add(self, offset: int, timestamp_ms: int | None, failover_at_ms: int) -> None:
        """One stranded record (records come in offset order)."""
        self.records += 1
        self.offsets.append(offset)
        if self.first_offset is None:
            self.first_offset = offset
        self.last_offset = offset
        if timestamp_ms is not None:
            self.first_ms = timestamp_ms if self.first_ms is None else min(self.first_ms, timestamp_ms)
            self.last_ms = timestamp_ms if self.last_ms is None else max(self.last_ms, timestamp_ms)
            if timestamp_ms >= failover_at_ms:
                self.after_failover += 1
                self.last_late_offset = offset
                return
        if timestamp_ms is not None:
            self.stranded_first_ms = timestamp_ms if self.stranded_first_ms is None else min(self.stranded_first_ms,
                                                                                             timestamp_ms)
            self.stranded_last_ms = timestamp_ms if self.stranded_last_ms is None else max(self.stranded_last_ms,
                                                                                           timestamp_ms)

    def at_or_after(self, offset: int) -> int:
        """Stranded records at or after ``offset``."""
        return len(self.offsets) - bisect.bisect_left(self.offsets, offset)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready (the offsets list left out)."""
        r = self.range
        return {"topic": r.topic, "partition": r.partition, "target_topic": r.target_topic,
                "replicated_next": r.replicated_next, "end": r.end, "first": self.first_offset,
                "last": self.last_offset, "records": self.records, "first_ms": self.first_ms,
                "last_ms": self.last_ms, "deleted_at_source": r.deleted, "undecided": r.undecided,
                "stranded": self.stranded, "after_failover": self.after_failover, "late": self.after_failover}


@dataclass(frozen=True)
class GroupBacklog:
    """A consumer group at the old source and the stranded records of one partition it had not processed."""

    group: str
    topic: str
    partition: int
    committed: int
    """The group's committed offset at the old source."""
    not_processed: int
    processed: int
    synced: bool
    """The flow moves this group on failover (it now consumes on the target)."""


def loss_span_s(partitions: list[StrandedPartition]) -> float | None:
    """Seconds from the oldest stranded record's timestamp to the newest written before the failover (None: no
    timestamp; late writes are no part of the loss)."""
    firsts = [p.stranded_first_ms for p in partitions if p.stranded_first_ms is not None]
    lasts = [p.stranded_last_ms for p in partitions if p.stranded_last_ms is not None]
    if not firsts or not lasts:
        return None
    return max(0.0, (max(lasts) - min(firsts)) / 1000)


def group_backlogs(partitions: list[StrandedPartition], committed: Mapping[str, Mapping[TopicPartitionKey, int]],
                   synced: set[str]) -> list[GroupBacklog]:
    """Per group and partition with stranded records: how many the group had and had not processed (pure).

    Groups without a committed offset on a partition say nothing about it and are left out.
    """
    out = []
    for group in sorted(committed):
        for part in partitions:
            if not part.records:
                continue
            r = part.range
            offset = committed[group].get((r.topic, r.partition))
            if offset is None:
                continue
            pending = part.at_or_after(offset)
            out.append(GroupBacklog(group, r.topic, r.partition, offset, pending, part.records - pending,
                                    group in synced))
    return out


def processed_by(committed: Mapping[str, Mapping[TopicPartitionKey, int]], groups: set[str],
                 topic: str, partition: int, offset: int) -> list[str]:
    """The groups (of ``groups``) whose committed offset was past ``offset``: they had processed it."""
    return sorted(g for g in groups if committed.get(g, {}).get((topic, partition), -1) > offset)


def read_stranded(admin: ClusterAdmin, ranges: list[StrandedRange], timeout_s: float,
                  starts: Mapping[TopicPartitionKey, int] | None = None) -> Generator[Message, None, None]:
    """Every committed record of ``ranges`` (from ``starts`` where given), partition by partition in
    offset order, up to each range's end; a KafkaOperationError when not all are read within ``timeout_s``."""
    wanted = {(r.topic, r.partition): (max(r.start, (starts or {}).get((r.topic, r.partition), 0)), r.end)
              for r in ranges}
    pending = {tp for tp, (start, end) in wanted.items() if start < end}
    if not pending:
        return
    consumer = admin.consumer(**{"enable.partition.eof": True, "auto.offset.reset": "earliest",
                                 "max.partition.fetch.bytes": 4 * 1024 * 1024})
    try:
        consumer.assign([TopicPartition(t, p, wanted[(t, p)][0]) for t, p in sorted(pending)])
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(1000, timeout=0.5):
                tp = (str(msg.topic()), int(msg.partition() or 0))
                if tp not in pending:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                    if _position(consumer, tp) >= wanted[tp][1]:
                        pending.discard(tp)
                    continue
                offset = int(msg.offset() or 0)
                if offset >= wanted[tp][1]:  # written since the read began: not part of this account
                    pending.discard(tp)
                    consumer.pause([TopicPartition(*tp)])
                    continue
                yield msg
                if offset + 1 >= wanted[tp][1]:
                    pending.discard(tp)
                    consumer.pause([TopicPartition(*tp)])
        if pending:
            shown = ", ".join(f"{t}/{p}" for t, p in sorted(pending)[:5])
            raise KafkaOperationError(f"cluster {admin.conn.name}: the stranded records of {shown} could not be read "
                                      f"to their end within {timeout_s:.0f}s; nothing was written")
    except KafkaException as exc:
        raise_mapped(admin.conn, "reading the stranded records", exc)
    finally:
        consumer.close()


def timestamp_of(msg: Message) -> int | None:
    """A record's timestamp in ms (None when it has none)."""
    kind, stamp = msg.timestamp()
    return None if kind == TIMESTAMP_NOT_AVAILABLE or stamp < 0 else int(stamp)


def headers_of(msg: Message) -> list[tuple[str, bytes | None]]:
    """A record's headers as (name, value) pairs."""
    raw: Any = msg.headers() or []
    pairs = raw.items() if isinstance(raw, dict) else raw
    return [(str(k), v.encode() if isinstance(v, str) else v) for k, v in pairs]


def _position(consumer: Any, tp: TopicPartitionKey) -> int:
    return int(consumer.position([TopicPartition(*tp)])[0].offset)
