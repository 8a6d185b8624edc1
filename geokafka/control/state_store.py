"""geokafka's durable state store: the ``__geokafka_state`` topic of a target cluster.

The records and their keys are in :mod:`geokafka.control.state_records`. A :class:`StateStore`
keeps a snapshot (the latest value of every key) and writes typed records. The Kafka store keeps
one read_committed consumer open and reads only what is new since its last read, like
MirrorMaker 2's ``OffsetSyncStore`` over a ``KafkaBasedLog``; values are decoded when asked for,
so a read of a topic holding a million progress records costs what the new ones cost.
:class:`InMemoryStateStore` keeps them in a list for unit tests. One contract suite runs both stores through the
same cases (``tests/integration/test_state_store_contract.py``); what only Kafka can show (open transactions, the
first layout's upgrade) is tested on clusters of their own (``tests/integration/private/test_failover.py``).

Two ways to read: :meth:`StateStore.read` up to the current stable end (what every transaction
committed so far; never waits for an open transaction), and :meth:`StateStore.read_settled`, which
also waits until every transaction open at the call has ended: what a start needs before it trusts
the progress records as resume positions.
"""

from __future__ import annotations

import contextlib
import json
import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar, cast

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, OffsetSpec

from geokafka.control.admin import ClusterAdmin, raise_mapped, silent_logger
from geokafka.control.connection import ClusterConnection
from geokafka.control.delivery import drain, is_fatal
from geokafka.control.flow_states import FlowState
from geokafka.control.state_records import (
    CONTROL_PARTITION,
    DATA_PARTITION,
    STATE_PARTITIONS,
    STATE_TOPIC,
    AutoFailover,
    FailoverRecord,
    FlowRecord,
    Generation,
    GroupCheckpoint,
    Heartbeat,
    HeldGroups,
    Layout,
    LossAccount,
    PackedProgress,
    Progress,
    Reconciled,
    Role,
    SourceEnds,
    SourceEndsSeen,
    StateRecord,
    TopicId,
    TopicPartitionKey,
    flow_prefix,
    partition_of,
)
from geokafka.errors import AuthError, GeokafkaError, KafkaOperationError

log = logging.getLogger("geokafka.state")

_STATE_CONFIGS = {
    "cleanup.policy": "compact",
    "min.cleanable.dirty.ratio": "0.1",
    # a flow's groups write a progress record per commit (10 a second each): short segments let the cleaner
    # compact them within a minute or two, so a start reads little more than one record a key
    "segment.ms": "60000",
    "message.timestamp.type": "CreateTime",
}

F = TypeVar("F", bound=FlowRecord)
R = TypeVar("R")
STALL_S = 3.0
"""A read whose consumer's position has not moved for this long, short of the end, starts a new consumer."""
Value = dict[str, Any]
LEADERSHIP_MOVED = frozenset({KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
                              KafkaError.FENCED_LEADER_EPOCH, KafkaError.UNKNOWN_LEADER_EPOCH,
                              KafkaError.REPLICA_NOT_AVAILABLE})
"""What a read meets while the state topic's leadership moves: asked again with fresh metadata, it answers."""
LEADERSHIP_RETRY_S = 0.2

_NO_TOPIC = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION, KafkaError._UNKNOWN_TOPIC,
             KafkaError._NOENT)
"""What a read of a state topic that is not there meets (the admin client's offsets query says _NOENT)."""
CONTROL_BASE = 1 << 62
"""Added to a control-partition offset where a snapshot keeps the position a key was read at, so the positions of
the two partitions never collide (a decoded value is cached by its key's position)."""
LAYOUT_CHECK_S = 1.0
"""A store that found the state topic in the first layout (one partition) looks again this often: another process
may have upgraded it."""


class _Values(Mapping[str, Value]):
    """The snapshot's values, decoded from JSON when first asked for."""

    def __init__(self, snapshot: StateSnapshot) -> None:
        self._snapshot = snapshot

    def __getitem__(self, key: str) -> Value:
        value = self._snapshot.value(key)
        if value is None:
            raise KeyError(key)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._snapshot.raw)

    def __len__(self) -> int:
        return len(self._snapshot.raw)


@dataclass
class StateSnapshot:
    """The latest value of every key, and the offset each was read at; typed views per record."""

    raw: dict[str, bytes] = field(default_factory=dict)
    """Key -> its latest value as written (JSON), for every key not deleted."""
    offsets: dict[str, int] = field(default_factory=dict)
    """Key -> the position its latest value was read at: its offset in the data partition, or
    :data:`CONTROL_BASE` + its offset in the control partition."""
    end_offset: int = 0
    """The data partition's end as read (where a start's progress floor is)."""
    control_end_offset: int = 0
    layout_seen: bool = False
    """The control partition holds the :class:`~geokafka.control.state_records.Layout` marker: control keys in the
    data partition are not state any more."""
    read_at_ms: int = 0
    """Wall-clock ms when the read that made this snapshot asked for the ends it read to: every record
    committed before then is in it (0: never read). Ages of what it holds count from here."""
    _decoded: dict[str, tuple[int, Any]] = field(default_factory=dict, repr=False)
    """Key -> (the offset it was read at, its decoded value), shared by a store's snapshot and every copy of
    it: an entry serves whichever snapshot holds the key at that offset, so a repeated read (a heartbeat,
    `status` every few seconds) decodes only what changed since."""
    _typed: dict[str, tuple[int, Any]] = field(default_factory=dict, repr=False)
    """Key -> (offset, typed record) of the per-item records (progress, checkpoints), shared the same way."""
    _version: int = field(default=0, repr=False)
    """Counts the changes applied: what :attr:`_positions` was computed at."""
    _positions: dict[str, tuple[int, dict[TopicPartitionKey, tuple[int, Progress]]]] = field(
        default_factory=dict, repr=False)
    """Flow -> (:attr:`_version`, each partition's progress and the offset of its last mention), this snapshot's
    own."""

    @property
    def values(self) -> Mapping[str, Value]:
        """Key -> latest value (decoded on first access)."""
        return _Values(self)

    def value(self, key: str) -> Value | None:
        """The latest value of ``key``, None when it has none."""
        encoded = self.raw.get(key)
        if encoded is None:
            return None
        offset = self.offsets.get(key, -1)
        cached = self._decoded.get(key)
        if cached is not None and cached[0] == offset:
            return cast(Value, cached[1])
        decoded: Value = json.loads(encoded)
        self._decoded[key] = (offset, decoded)
        return decoded

    def _items(self, kind: str, flow: str) -> Iterator[tuple[str, Value]]:
        prefix = flow_prefix(kind, flow)
        for key in [k for k in self.raw if k.startswith(prefix)]:
            value = self.value(key)
            if value is not None:
                yield key[len(prefix):], value

    def _records(self, kind: str, flow: str, decode: Callable[[str, Value], R]) -> Iterator[R]:
        """The flow's per-item records of ``kind``, each decoded once per offset (see ``_typed``)."""
        return (record for _, record in self._records_at(kind, flow, decode))

    def _records_at(self, kind: str, flow: str, decode: Callable[[str, Value], R]) -> Iterator[tuple[int, R]]:
        """The same, each with the position it was read at."""
        prefix = flow_prefix(kind, flow)
        for key in [k for k in self.raw if k.startswith(prefix)]:
            offset = self.offsets.get(key, -1)
            cached = self._typed.get(key)
            if cached is not None and cached[0] == offset:
                yield offset, cast(R, cached[1])
                continue
            value = self.value(key)
            if value is not None:
                record = decode(key[len(prefix):], value)
                self._typed[key] = (offset, record)
                yield offset, record

    def keys_of(self, kind: str, flow: str) -> list[str]:
        """Every key of a per-item record kind of one flow (``checkpoint``, ``progress``, ...)."""
        prefix = flow_prefix(kind, flow)
        return [k for k in self.raw if k.startswith(prefix)]

    def progress_records(self, flow: str) -> dict[tuple[str, int], Progress]:
        """(source topic, partition) -> its progress, for one flow: its last mention, in a progress record of its
        own or in a group's packed one."""
        return {tp: record for tp, (_, record) in self._progress_positions(flow).items()}

    def _progress_positions(self, flow: str) -> dict[TopicPartitionKey, tuple[int, Progress]]:
        cached = self._positions.get(flow)
        if cached is not None and cached[0] == self._version:
            return cached[1]
        out: dict[TopicPartitionKey, tuple[int, Progress]] = {}
        for offset, record in self._records_at(Progress.KIND, flow, lambda rest, value: Progress.decode(flow, rest, value)):
            held = out.get((record.topic, record.partition))
            if held is None or held[0] < offset:
                out[(record.topic, record.partition)] = (offset, record)
        packed = self._records_at(PackedProgress.KIND, flow, lambda _, value: PackedProgress.decode_entries(flow, value))
        for offset, entries in sorted(packed, key=lambda item: item[0]):
            for entry in entries:
                held = out.get((entry.topic, entry.partition))
                if held is None or held[0] < offset:
                    out[(entry.topic, entry.partition)] = (offset, entry)
        self._positions[flow] = (self._version, out)
        return out

    def progress(self, flow: str) -> dict[tuple[str, int], int]:
        """(source topic, partition) -> next source offset, for one flow."""
        return {tp: r.next for tp, r in self.progress_records(flow).items()}

    def progress_offset(self, flow: str, topic: str, partition: int) -> int | None:
        """Offset in the state topic the partition's progress was read at (None: no progress)."""
        held = self._progress_positions(flow).get((topic, partition))
        return None if held is None else held[0]

    def record(self, kind: type[F], flow: str) -> F | None:
        """The flow's record of ``kind`` (one per flow), None when there is none."""
        value = self.value(kind.key_of(flow))
        return None if value is None else kind.decode(flow, value)

    def heartbeat(self, flow: str) -> Heartbeat | None:
        """The flow's last recorded state."""
        return self.record(Heartbeat, flow)

    def source_ends(self, flow: str) -> SourceEnds | None:
        """The mirror's last observation of the flow's source end offsets (as of its latest look that found them
        unchanged, when one did)."""
        value = self.value(SourceEnds.key_of(flow))
        if not value or "at_ms" not in value:
            return None
        observation = SourceEnds.decode(flow, value)
        seen = self.record(SourceEndsSeen, flow)
        if seen is not None and seen.of_at_ms == observation.at_ms and seen.at_ms > observation.at_ms \
                and observation.failed_at_ms is None:
            return replace(observation, at_ms=seen.at_ms)
        return observation

    def role(self, flow: str) -> str:
        """``failed-over`` or ``active`` (the default: no failover recorded)."""
        role = self.record(Role, flow)
        return Role.ACTIVE if role is None else role.role

    def generation(self, flow: str) -> Generation | None:
        """The flow's partition groups and generation as last recorded."""
        return self.record(Generation, flow)

    def failover_report(self, flow: str) -> dict[str, Any] | None:
        """The flow's last failover report, as recorded."""
        report = self.record(FailoverRecord, flow)
        return None if report is None else report.report

    def loss_account(self, flow: str) -> LossAccount | None:
        """The exact loss of the flow's last failover, once `reconcile` counted it."""
        return self.record(LossAccount, flow)

    def reconciled(self, flow: str) -> dict[tuple[str, int], Reconciled]:
        """(source topic, partition) -> how far `reconcile --replay` got, for one flow."""
        records = (Reconciled.decode(flow, rest, value) for rest, value in self._items(Reconciled.KIND, flow))
        return {(r.topic, r.partition): r for r in records}

    def held_groups(self, flow: str) -> HeldGroups | None:
        """Groups the flow's offset sync leaves alone on the target."""
        return self.record(HeldGroups, flow)

    def auto_failover(self, flow: str) -> AutoFailover | None:
        """What the automatic failover last decided about the flow's source site."""
        return self.record(AutoFailover, flow)

    def checkpoints(self, flow: str) -> dict[str, GroupCheckpoint]:
        """group -> the flow's checkpoint of it."""
        records = self._records(GroupCheckpoint.KIND, flow, lambda rest, value: GroupCheckpoint.decode(flow, rest, value))
        return {r.group: r for r in records}

    def topic_ids(self, flow: str) -> dict[str, str]:
        """source topic -> its ID when the flow started replicating it."""
        return {rest: str(value["topic_id"]) for rest, value in self._items(TopicId.KIND, flow) if "topic_id" in value}

    def apply(self, key: str, value: bytes | None, offset: int, partition: int = DATA_PARTITION) -> None:
        """One record read from partition ``partition``, in its order (None: the key was deleted).

        The control partition's value of a key wins over the data partition's (a topic of the first layout kept
        control keys there); once the layout marker is read, control keys in the data partition are dropped.
        """
        if partition == CONTROL_PARTITION:
            self.control_end_offset = max(self.control_end_offset, offset + 1)
            if key == Layout.KIND and not self.layout_seen:
                self.layout_seen = True
                self._drop_first_layout_control()
            self._set(key, value, CONTROL_BASE + offset)
            return
        self.end_offset = max(self.end_offset, offset + 1)
        if partition_of(key) == CONTROL_PARTITION and (self.layout_seen or self.offsets.get(key, -1) >= CONTROL_BASE):
            return
        self._set(key, value, offset)

    def _set(self, key: str, value: bytes | None, position: int) -> None:
        if value is None:
            self._decoded.pop(key, None)
            self._typed.pop(key, None)
            self.raw.pop(key, None)
        else:
            self.raw[key] = value
        self.offsets[key] = position
        self._version += 1

    def _drop_first_layout_control(self) -> None:
        for key in [k for k, at in self.offsets.items() if at < CONTROL_BASE and partition_of(k) == CONTROL_PARTITION]:
            self._set(key, None, -1)
            del self.offsets[key]

    def first_layout_control(self) -> dict[str, bytes]:
        """Control keys whose value was read from the data partition (a topic of the first layout), with it."""
        return {k: v for k, v in self.raw.items()
                if self.offsets.get(k, -1) < CONTROL_BASE and partition_of(k) == CONTROL_PARTITION}

    def copy(self) -> StateSnapshot:
        """A snapshot that later reads of its store leave as it is."""
        return StateSnapshot(dict(self.raw), dict(self.offsets), self.end_offset, self.control_end_offset,
                             self.layout_seen, self.read_at_ms, self._decoded, self._typed, self._version)


def encode_value(value: Mapping[str, Any] | None) -> bytes | None:
    """A state value as written to the topic."""
    return None if value is None else json.dumps(value).encode()


class StateStore(ABC):
    """Reads and writes one target's state."""

    name: str

    @abstractmethod
    def read(self, timeout_s: float = 60.0) -> StateSnapshot:
        """The committed state up to its current stable end (never waits for an open transaction)."""

    @abstractmethod
    def read_settled(self, timeout_s: float = 60.0) -> StateSnapshot:
        """The committed state once every transaction open at the call has ended (committed or aborted):
        the resume positions a start may trust. Raises a retriable error when one is still open at the
        time-out (a dead writer's, until it is fenced or expires)."""

    @abstractmethod
    def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
        """Write records and wait for the acks."""

    @abstractmethod
    def delete(self, *keys: str, timeout_s: float = 15.0) -> None:
        """Write tombstones: compaction removes the keys for good."""

    def close(self) -> None:  # noqa: B027 - a store without clients has nothing to close
        """Release the store's clients."""

    def set_flow_state(self, flow: str, state: str, **details: Any) -> None:
        """Record a flow's state (running, stopped, failed-over, error)."""
        self.write(Heartbeat(flow, state, int(time.time() * 1000), details))

    def set_role(self, flow: str, role: str, **details: Any) -> None:
        """Record a failover decision (``failed-over`` or ``active``), and show it as the flow's state."""
        now = int(time.time() * 1000)
        shown = FlowState.FAILED_OVER if role == Role.FAILED_OVER else FlowState.STOPPED
        self.write(Role(flow, role, now, details), Heartbeat(flow, shown, now, details))


class InMemoryStateStore(StateStore):
    """A state store in a list, with the Kafka store's semantics (latest value per key wins)."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.log: list[tuple[str, bytes | None]] = []
        self.reads = 0

    def read(self, timeout_s: float = 60.0) -> StateSnapshot:
        """Everything written so far, each record in its key's partition, as the Kafka store reads it."""
        self.reads += 1
        snapshot = StateSnapshot(read_at_ms=int(time.time() * 1000))
        ends = [0] * STATE_PARTITIONS
        for key, value in self.log:
            partition = partition_of(key)
            snapshot.apply(key, value, ends[partition], partition)
            ends[partition] += 1
        return snapshot

    def read_settled(self, timeout_s: float = 60.0) -> StateSnapshot:
        """Everything written so far (nothing here is ever in an open transaction)."""
        return self.read(timeout_s)

    def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
        """Append the records."""
        self.log.extend((r.key, encode_value(r.encode())) for r in records)

    def delete(self, *keys: str, timeout_s: float = 15.0) -> None:
        """Append tombstones."""
        self.log.extend((key, None) for key in keys)


class KafkaStateStore(StateStore):
    """The state topic on a target cluster, read incrementally by one consumer kept open.

    Thread-safe: a flow's scheduled jobs (heartbeat, syncs) and its start share one store per cluster. A read holds
    the store's lock for its own time-out at most; a settled read waits for open transactions between reads, never
    holding the lock while it waits. The store owns its clients (a consumer and an admin client for reads, an
    idempotent producer for writes, each made when first needed) and :meth:`close` releases them; whoever made the
    store closes it (one per cluster and credentials in a :class:`~geokafka.control.state_stores.StateStores`).
    """

    def __init__(self, conn: ClusterConnection) -> None:
        self.conn = conn
        self.name = conn.name
        self._lock = threading.Lock()
        self._snapshot = StateSnapshot()
        self._consumer: Consumer | None = None
        self._assigned: list[int] = []
        self._admin: AdminClient | None = None
        self._producer: Producer | None = None
        self._producer_lock = threading.Lock()
        """Guards making and dropping :attr:`_producer` (writes are not under :attr:`_lock`: a write never waits
        for a read)."""
        self._partitions = 0
        """Partitions of the state topic as last seen (0: not looked yet)."""
        self._partitions_at = 0.0
        self.layout_ready = False
        """The topic has the control partition and the layout marker (set by :meth:`upgrade_layout`)."""

    def read(self, timeout_s: float = 60.0) -> StateSnapshot:
        """Read what was committed since the last read, to the current stable end."""
        with self._lock:
            self._catch_up_within(timeout_s)
            return self._snapshot.copy()

    def read_settled(self, timeout_s: float = 60.0) -> StateSnapshot:
        """Read until every transaction open at the call has ended (they only write the data partition)."""
        deadline = time.monotonic() + timeout_s
        with self._lock:
            target = self._high_watermark(timeout_s)
        while True:
            with self._lock:
                self._catch_up_within(max(0.1, deadline - time.monotonic()))
                if self._snapshot.end_offset >= target:
                    return self._snapshot.copy()
            if time.monotonic() > deadline:
                raise KafkaOperationError(
                    f"cluster {self.conn.name}: {STATE_TOPIC} could not be read to its end ({target}) within "
                    f"{timeout_s:.0f}s; an open transaction of a dead writer may hold it (it is aborted when the "
                    "writer is fenced, or expires after transaction.timeout.ms)", retriable=True)
            time.sleep(0.1)

    def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
        """Write records (each to its key's partition) and wait for the acks; creates the topic if it is not there."""
        self._write({r.key: r.encode() for r in records}, timeout_s)

    def delete(self, *keys: str, timeout_s: float = 15.0) -> None:
        """Write tombstones and wait for the acks."""
        self._write(dict.fromkeys(keys), timeout_s)

    def _write(self, entries: dict[str, dict[str, Any] | None], timeout_s: float) -> None:
        try:
            self._write_entries(entries, self._writable(timeout_s) > 1, timeout_s)
        except GeokafkaError:
            self.forget_layout()  # the next write looks again: the topic may be gone, or its cluster new
            raise

    def _write_entries(self, entries: dict[str, dict[str, Any] | None], control: bool, timeout_s: float) -> None:
        """Write state entries (None deletes a key) and wait for the acks; ``control``: the topic has the control
        partition, where every key that no transaction writes goes."""
        producer = self._writer()
        errors: list[str] = []

        def on_delivery(err: KafkaError | None, _msg: object) -> None:
            if err is not None:
                errors.append(err.str())

        try:
            for key, value in entries.items():
                partition = partition_of(key) if control else DATA_PARTITION
                producer.produce(STATE_TOPIC, key=key.encode(), value=encode_value(value), partition=partition,
                                 on_delivery=on_delivery)
            remaining = drain(producer, timeout_s)
        except KafkaException as exc:
            if is_fatal(exc):  # that producer can never write again: the next write gets a new one
                self._drop_producer(producer)
            raise_mapped(self.conn, f"writing {STATE_TOPIC}", exc)
        if remaining or errors:
            reason = errors[0] if errors else "timed out"
            raise_mapped(self.conn, f"writing {STATE_TOPIC}", KafkaException(KafkaError(KafkaError._TIMED_OUT, reason)))

    def _writer(self) -> Producer:
        """The store's idempotent producer for state writes (heartbeats come every second), made when first needed."""
        with self._producer_lock:
            if self._producer is None:
                self._producer = Producer(self.conn.librdkafka(**{"enable.idempotence": True, "acks": "all",
                                                                  "linger.ms": 0}))
            return self._producer

    def _drop_producer(self, producer: Producer) -> None:
        """Forget ``producer`` (failed for good) unless another write already replaced it."""
        with self._producer_lock:
            if self._producer is producer:
                self._producer = None

    def forget_layout(self) -> None:
        """Look at the topic's partitions and layout afresh (it may have been deleted, or its cluster re-created)."""
        self._partitions, self._partitions_at, self.layout_ready = 0, 0.0, False

    def _writable(self, timeout_s: float) -> int:
        """The partitions of the state topic, created first when it is not there (in its layout: a write to a topic
        that is not there would otherwise fail, or have the broker create it with one partition)."""
        found = self.partitions(timeout_s)
        if found == 0:
            ensure_state_topic(ClusterAdmin(self.conn, timeout_s), self)
            self._partitions_at = 0.0
            found = self.partitions(timeout_s)
        return found

    def close(self) -> None:
        """Close the store's clients: the consumer (a later read opens a new one and reads everything again) and the
        producer, after a short drain (writes wait for their acks, so nothing should be pending)."""
        with self._lock:
            self._drop_clients()
            self._snapshot = StateSnapshot()
        with self._producer_lock:
            producer, self._producer = self._producer, None
        if producer is not None:
            with contextlib.suppress(KafkaException):  # a producer that failed for good has nothing to deliver
                drain(producer, 1)

    def partitions(self, timeout_s: float = 15.0) -> int:
        """Partitions of the state topic (1: the first layout, 0: no topic yet); looked up again every
        :data:`LAYOUT_CHECK_S` until it has the control partition."""
        if self._partitions >= STATE_PARTITIONS or time.monotonic() - self._partitions_at < LAYOUT_CHECK_S:
            return self._partitions
        try:
            # every topic's metadata: asking for the state topic by name would have the broker create it (a
            # producer's metadata request allows that), with one partition
            topic = self._writer().list_topics(timeout=timeout_s).topics.get(STATE_TOPIC)
        except KafkaException as exc:
            raise_mapped(self.conn, f"describing {STATE_TOPIC}", exc)
        found = 0 if topic is None or topic.error is not None else len(topic.partitions)
        self._partitions, self._partitions_at = found, time.monotonic()
        return found

    def upgrade_layout(self, timeout_s: float = 30.0) -> int:
        """Carry the control records of a topic of the first layout over to the control partition, once, and mark
        it done; the number carried (0 when it was done before). The topic must have the control partition."""
        deadline = time.monotonic() + timeout_s
        self._partitions_at = 0.0
        while self.partitions(timeout_s) < STATE_PARTITIONS:  # grown a moment ago: metadata may lag
            if time.monotonic() > deadline:
                raise KafkaOperationError(f"cluster {self.conn.name}: {STATE_TOPIC} does not show its control partition "
                                          f"within {timeout_s:.0f}s", retriable=True)
            time.sleep(0.2)
            self._partitions_at = 0.0
        snapshot = self.read(timeout_s)
        if snapshot.layout_seen:
            self.layout_ready = True
            return 0
        carried: dict[str, Any] = {k: json.loads(v) for k, v in snapshot.first_layout_control().items()}
        marker = Layout(STATE_PARTITIONS, int(time.time() * 1000), len(carried))
        self._write_entries({**carried, marker.key: marker.encode()}, True, timeout_s)
        self.layout_ready = True
        return len(carried)

    def _catch_up(self, timeout_s: float) -> None:
        read_at_ms = int(time.time() * 1000)
        try:
            if self.partitions(timeout_s) == 0:
                self._snapshot.read_at_ms = read_at_ms
                return  # no state topic yet: nothing replicated, nothing decided
            consumer = self._consumer_at(timeout_s)
            # read_committed ends are last stable offsets: what is committed up to the first open transaction (the
            # control partition has none: its end). Asked of the admin client, in one request: the consumer's own
            # watermark query waits behind its fetch in flight (~0.4 s each, measured)
            targets = self._ends(self._assigned, IsolationLevel.READ_COMMITTED, timeout_s)
            end = targets[DATA_PARTITION]
            if end < self._snapshot.end_offset and end < self._position(consumer, DATA_PARTITION):
                # the state topic was deleted and re-created: start over
                self._snapshot = StateSnapshot()
                consumer.assign([TopicPartition(STATE_TOPIC, p, 0) for p in self._assigned])
            deadline = time.monotonic() + timeout_s
            moved_at, last = time.monotonic(), self._positions(consumer)
            while any(self._position(consumer, p) < target for p, target in targets.items()):
                now = self._positions(consumer)
                if now != last:
                    moved_at, last = time.monotonic(), now
                elif time.monotonic() - moved_at > STALL_S:
                    # a consumer assigned before the topic existed waits for a metadata refresh (minutes):
                    # start a new one where the snapshot ends
                    consumer = self._reconnect(timeout_s)
                    moved_at = time.monotonic()
                if time.monotonic() > deadline:
                    raise KafkaOperationError(
                        f"cluster {self.conn.name}: {STATE_TOPIC} could not be read to its end ({targets}) within "
                        f"{timeout_s:.0f}s", retriable=True)
                for msg in consumer.consume(10_000, timeout=0.2):
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            continue
                        raise KafkaException(err)
                    raw_key, offset = msg.key(), msg.offset()
                    if offset is None:
                        continue  # only error events lack an offset
                    key = raw_key.decode() if isinstance(raw_key, bytes) else (raw_key or "")
                    self._snapshot.apply(key, msg.value(), offset, msg.partition() or DATA_PARTITION)
            self._snapshot.end_offset = max(self._snapshot.end_offset, targets[DATA_PARTITION])
            self._snapshot.read_at_ms = read_at_ms
            if CONTROL_PARTITION in targets:
                self._snapshot.control_end_offset = max(self._snapshot.control_end_offset, targets[CONTROL_PARTITION])
        except KafkaException as exc:
            # the next read starts new clients where the snapshot ends: kept ones can hold metadata from before a
            # broker restart (librdkafka refreshes it every 5 minutes; seen: FENCED_LEADER_EPOCH from every read
            # for 5 minutes after a target broker was killed and restarted)
            self._drop_clients()
            if exc.args and exc.args[0].code() in _NO_TOPIC:
                self.forget_layout()
                self._snapshot.read_at_ms = read_at_ms
                return  # no state topic yet (or not any more): nothing replicated, nothing decided
            raise_mapped(self.conn, f"reading {STATE_TOPIC}", exc)

    def _catch_up_within(self, timeout_s: float) -> None:
        """:meth:`_catch_up`, again with new clients while a partition's leadership is moving (a topic just created,
        a broker restarted: the clients' metadata is behind), until ``timeout_s``; any other error at once."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                self._catch_up(max(0.1, deadline - time.monotonic()))
                return
            except KafkaOperationError as exc:
                if exc.kafka_code not in LEADERSHIP_MOVED or time.monotonic() + LEADERSHIP_RETRY_S > deadline:
                    raise
            time.sleep(LEADERSHIP_RETRY_S)

    def _reconnect(self, timeout_s: float) -> Consumer:
        self._drop_consumer()
        return self._consumer_at(timeout_s)

    def _drop_consumer(self) -> None:
        if self._consumer is not None:
            with contextlib.suppress(KafkaException, RuntimeError):
                self._consumer.close()
        self._consumer = None
        self._assigned = []

    def _drop_clients(self) -> None:
        self._drop_consumer()
        self._admin = None

    def _consumer_at(self, timeout_s: float) -> Consumer:
        partitions = [DATA_PARTITION, CONTROL_PARTITION] if self.partitions(timeout_s) > 1 else [DATA_PARTITION]
        if self._consumer is not None and partitions != self._assigned:
            self._drop_consumer()  # the topic was upgraded meanwhile: read its control partition from the start
        if self._consumer is None:
            self._consumer = ClusterAdmin(self.conn, timeout_s).consumer()
            starts = {DATA_PARTITION: self._snapshot.end_offset, CONTROL_PARTITION: self._snapshot.control_end_offset}
            self._consumer.assign([TopicPartition(STATE_TOPIC, p, starts[p]) for p in partitions])
            self._assigned = partitions
        return self._consumer

    def _positions(self, consumer: Consumer) -> tuple[int, ...]:
        return tuple(self._position(consumer, p) for p in self._assigned)

    def _position(self, consumer: Consumer, partition: int) -> int:
        offset = consumer.position([TopicPartition(STATE_TOPIC, partition)])[0].offset
        floor = self._snapshot.end_offset if partition == DATA_PARTITION else self._snapshot.control_end_offset
        return floor if offset < 0 else max(offset, 0)

    def _high_watermark(self, timeout_s: float) -> int:
        """The data partition's end, open transactions included (0: no state topic yet)."""
        if self.partitions(timeout_s) == 0:
            return 0  # no state topic yet
        try:
            return self._ends([DATA_PARTITION], IsolationLevel.READ_UNCOMMITTED, timeout_s)[DATA_PARTITION]
        except KafkaException as exc:
            if exc.args and exc.args[0].code() in _NO_TOPIC:
                return 0
            raise_mapped(self.conn, f"reading the end of {STATE_TOPIC}", exc)
            raise

    def _ends(self, partitions: list[int], isolation: IsolationLevel, timeout_s: float) -> dict[int, int]:
        """The ends of state partitions, in one request; raises KafkaException (and drops the admin client)."""
        if self._admin is None:
            self._admin = AdminClient(self.conn.librdkafka(logger=silent_logger()))
        specs = {TopicPartition(STATE_TOPIC, p): OffsetSpec.latest() for p in partitions}
        try:
            result = self._admin.list_offsets(specs, isolation_level=isolation, request_timeout=timeout_s)
            return {tp.partition: int(future.result(timeout=timeout_s).offset) for tp, future in result.items()}
        except KafkaException:
            self._admin = None
            raise
        except FutureTimeout as exc:
            self._admin = None
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, f"reading the ends of {STATE_TOPIC}")) from exc


_SAID_FIRST_LAYOUT: set[str] = set()


def ensure_state_topic(admin: ClusterAdmin, store: StateStore | None = None) -> None:
    """Create the state topic on a target cluster if it is missing; upgrade one of the first layout (grow it by the
    control partition, carry its control records over once).

    ``store``: the Kafka store of that cluster whose cached layout to reset and that carries the records over (pass
    the caller's: it remembers the upgrade, so a later call costs one metadata request); without one (or with
    another kind of store) a store of its own does it, closed at the end.
    """
    if isinstance(store, KafkaStateStore):
        _ensure_state_topic(admin, store)
        return
    with contextlib.closing(KafkaStateStore(admin.conn)) as own:
        _ensure_state_topic(admin, own)


def _ensure_state_topic(admin: ClusterAdmin, store: KafkaStateStore) -> None:
    existing = admin.topic_partitions().get(STATE_TOPIC)
    if existing is not None and existing >= STATE_PARTITIONS and store.layout_ready:
        return  # upgraded by this store already (every group sync that writes checkpoints asks)
    if existing is None:
        store.forget_layout()  # a cluster that was re-created on the same address (tests do that) has none
        rf = min(3, max(1, admin.broker_count()))
        configs = dict(_STATE_CONFIGS)
        if rf > 1:
            configs["min.insync.replicas"] = "2"
        admin.create_topic(STATE_TOPIC, STATE_PARTITIONS, rf, configs)
    elif existing < STATE_PARTITIONS:
        try:
            admin.add_partitions(STATE_TOPIC, STATE_PARTITIONS)
        except AuthError as exc:
            if admin.conn.name not in _SAID_FIRST_LAYOUT:
                _SAID_FIRST_LAYOUT.add(admin.conn.name)
                log.warning("cluster %s: %s stays in its first layout (control records behind open transactions) until "
                            "it can be grown once: %s (grant Alter on the topic)", admin.conn.name, STATE_TOPIC, exc)
            return
    store._partitions_at = 0.0  # look again now, whatever was seen before
    store.upgrade_layout()
