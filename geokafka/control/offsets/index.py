"""The offset index of target topics, built from the ``gk.src`` header of every replicated record.

:class:`PartitionIndex` (pure) holds, for one target partition, an :class:`OffsetMapping` per
source partition whose records it contains (several in identity fan-in and active/active) and
how far the partition has been read. :class:`TargetIndex` reads target topics with
``isolation.level=read_committed`` (aborted records take offsets but are never seen) and is
incremental: each :meth:`TargetIndex.refresh` reads only what was appended since the last one.
Once built, a translation is a dictionary lookup and a bisect.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import cast

from confluent_kafka import OFFSET_BEGINNING, KafkaError, KafkaException, Message, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped
from geokafka.control.connection import ClusterConnection
from geokafka.control.offsets._groups_io import end_offsets
from geokafka.control.offsets.translate import OffsetMapping, SourcePartition, Translation, translate_offset
from geokafka.control.provenance import SourcePosition, source_position
from geokafka.errors import KafkaOperationError

_BATCH = 5000


class PartitionIndex:
    """Offset mappings found in one target partition, and how far it was read."""

    def __init__(self, topic: str, partition: int) -> None:
        self.topic = topic
        self.partition = partition
        self.position = 0
        """Next target offset to read: every committed record below it is indexed."""
        self.records = 0
        """Committed records read (replicated or not)."""
        self.unattributed = 0
        """Records without a valid ``gk.src``: written directly on the target."""
        self._mappings: dict[SourcePartition, OffsetMapping] = {}
        self._local = OffsetMapping()
        """Offsets of the records written directly on this cluster (as offset -> offset pairs, in runs)."""

    def add(self, target_offset: int, src: SourcePosition | None) -> None:
        """Index the record at ``target_offset`` (records must come in target order)."""
        if target_offset < self.position:
            raise ValueError(
                f"{self.topic}/{self.partition}: offset {target_offset} is below read position {self.position}"
            )
        self.position = target_offset + 1
        self.records += 1
        if src is None:
            self.unattributed += 1
            self._local.add(target_offset, target_offset)
            return
        key = SourcePartition(src.cluster, src.topic, src.partition)
        mapping = self._mappings.get(key)
        if mapping is None:
            mapping = self._mappings[key] = OffsetMapping()
        mapping.add(src.offset, target_offset)

    def advance(self, position: int) -> None:
        """Everything below ``position`` was read (end of partition reached; markers skipped)."""
        self.position = max(self.position, position)

    def first_not_from(self, cluster: str, offset: int) -> int | None:
        """Offset of the first record at or after ``offset`` that was not copied from ``cluster``."""
        candidates = [self._local.first_target_at_or_after(offset)]
        candidates += [m.first_target_at_or_after(offset) for k, m in self._mappings.items() if k.cluster != cluster]
        found = [c[1] for c in candidates if c is not None]
        return min(found) if found else None

    def sources(self) -> list[SourcePartition]:
        """Source partitions with records in this target partition."""
        return sorted(self._mappings)

    def mapping(self, source: SourcePartition) -> OffsetMapping | None:
        """The mapping of one source partition, if any of its records is here."""
        return self._mappings.get(source)

    def translate(self, source: SourcePartition, committed: int, replicated_next: int | None = None) -> Translation:
        """Where a group that committed ``committed`` on ``source`` resumes in this partition."""
        return translate_offset(
            self._mappings.get(source), committed, resume_at=self.position, replicated_next=replicated_next
        )


class TargetIndex:
    """Incremental offset index of topics on one (target) cluster.

    Keep one instance per flow and call :meth:`refresh` before each round of translations;
    it reads only new records. A refresh that cannot reach the end of a partition raises
    rather than leave a partial index behind (a partial index would translate too early).
    """

    def __init__(self, conn: ClusterConnection, *, timeout_s: float = 30.0) -> None:
        self.conn = conn
        self.timeout_s = timeout_s
        self._partitions: dict[tuple[str, int], PartitionIndex] = {}
        self._admin = ClusterAdmin(conn, timeout_s)
        self._consumer = self._admin.consumer(**{
            "group.id": "geokafka-offset-index", "enable.partition.eof": True,
            "auto.offset.reset": "earliest", "fetch.max.bytes": 16 * 1024 * 1024,
        })

    def __enter__(self) -> TargetIndex:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Release the consumer."""
        self._consumer.close()

    def partition(self, topic: str, partition: int) -> PartitionIndex | None:
        """The index of one target partition (None if never seen)."""
        return self._partitions.get((topic, partition))

    def partitions(self, topic: str) -> list[int]:
        """Indexed partitions of ``topic``."""
        return sorted(p for t, p in self._partitions if t == topic)

    def refresh(self, topics: Iterable[str]) -> dict[str, int]:
        """Read what was appended to ``topics`` since the last refresh.

        Returns topic -> partition count; topics missing on the cluster are left out.
        """
        counts = self._partition_counts(sorted(set(topics)))
        every = [(t, p) for t, n in counts.items() for p in range(n)]
        stable_ends = end_offsets(self._admin, every, committed_only=True)
        ends: dict[TopicPartition, int] = {}
        for (topic, p), end in stable_ends.items():
            pidx = self._partitions.setdefault((topic, p), PartitionIndex(topic, p))
            if end < pidx.position:  # topic recreated or truncated: start over
                pidx = self._partitions[(topic, p)] = PartitionIndex(topic, p)
            if end > pidx.position:
                ends[TopicPartition(topic, p, pidx.position or OFFSET_BEGINNING)] = end
        if ends:
            self._read(ends)
        return counts

    def _partition_counts(self, topics: list[str]) -> dict[str, int]:
        on_cluster = self._admin.topic_partitions()
        return {topic: on_cluster[topic] for topic in topics if on_cluster.get(topic)}

    def _read(self, ends: dict[TopicPartition, int]) -> None:
        """Consume each partition from its position up to at least its end offset."""
        goal = {(tp.topic, tp.partition): end for tp, end in ends.items()}
        pending = set(goal)
        consumer = self._consumer
        consumer.assign(list(ends))
        deadline = time.monotonic() + self.timeout_s
        try:
            while pending:
                if time.monotonic() > deadline:
                    topic, p = min(pending)
                    pidx = self._partitions[(topic, p)]
                    raise KafkaOperationError(
                        f"cluster {self.conn.name}: reading {topic}/{p} for the offset index stalled at offset "
                        f"{pidx.position} of {goal[(topic, p)]} (no progress for {self.timeout_s:.0f}s)"
                    )
                batch = consumer.consume(_BATCH, timeout=0.2)
                if batch:
                    deadline = time.monotonic() + self.timeout_s  # a stall, not a slow read, is an error
                for msg in batch:
                    key = self._index_message(msg)
                    if key in pending and self._partitions[key].position >= goal[key]:
                        pending.discard(key)
        except KafkaException as exc:
            raise_mapped(self.conn, "reading target topics for the offset index", exc)
        finally:
            consumer.unassign()

    def _index_message(self, msg: Message) -> tuple[str, int]:
        """Add one consumed record (or end-of-partition event) to its partition's index."""
        topic, partition, offset = msg.topic(), msg.partition(), msg.offset()
        if topic is None or partition is None or offset is None:
            raise KafkaOperationError(f"cluster {self.conn.name}: consumer returned a record without coordinates")
        key = (topic, partition)
        pidx = self._partitions[key]
        err = msg.error()
        if err is not None:
            if err.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(err)
            pidx.advance(offset)
            return key
        if offset < pidx.position:  # the log went back: the topic was recreated
            pidx = self._partitions[key] = PartitionIndex(topic, partition)
        headers = cast("list[tuple[str, bytes | None]] | None", msg.headers())
        pidx.add(offset, source_position(headers))
        return key
