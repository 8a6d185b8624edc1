"""geokafka's durable state store: the ``__geokafka_state`` topic of a target cluster.

The records and their keys are in :mod:`geokafka.control.state_records`. :class:`StateStore`
reads a snapshot (the latest value of every key) and writes typed records; the Kafka store
below keeps them on the target, :class:`InMemoryStateStore` in a list for unit tests.
"""

from __future__ import annotations

import contextlib
import json
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped
from geokafka.control.connection import ClusterConnection
from geokafka.control.delivery import drain, is_fatal
from geokafka.control.state_records import (
    STATE_TOPIC,
    FailoverRecord,
    FlowRecord,
    GroupCheckpoint,
    Heartbeat,
    HeldGroups,
    LossAccount,
    Progress,
    Reconciled,
    Role,
    SourceEnds,
    StateRecord,
    TopicId,
    flow_prefix,
)
from geokafka.errors import KafkaOperationError

_STATE_CONFIGS = {
    "cleanup.policy": "compact",
    "min.cleanable.dirty.ratio": "0.1",
    "segment.ms": "600000",
    "message.timestamp.type": "CreateTime",
}

F = TypeVar("F", bound=FlowRecord)


@dataclass
class StateSnapshot:
    """The latest value of every key, and the offset each was read at; typed views per record."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)
    end_offset: int = 0

    def _items(self, kind: str, flow: str) -> Iterator[tuple[str, dict[str, Any]]]:
        prefix = flow_prefix(kind, flow)
        for key, value in self.values.items():
            if key.startswith(prefix) and value is not None:
                yield key[len(prefix):], value

    def progress_records(self, flow: str) -> dict[tuple[str, int], Progress]:
        """(source topic, partition) -> its progress record, for one flow."""
        records = (Progress.decode(flow, rest, value) for rest, value in self._items(Progress.KIND, flow))
        return {(r.topic, r.partition): r for r in records}

    def progress(self, flow: str) -> dict[tuple[str, int], int]:
        """(source topic, partition) -> next source offset, for one flow."""
        return {tp: r.next for tp, r in self.progress_records(flow).items()}

    def progress_offset(self, flow: str, topic: str, partition: int) -> int | None:
        """Offset in the state topic the partition's progress was read at (None: no progress)."""
        return self.offsets.get(Progress.key_of(flow, topic, partition))

    def record(self, kind: type[F], flow: str) -> F | None:
        """The flow's record of ``kind`` (one per flow), None when there is none."""
        value = self.values.get(kind.key_of(flow))
        return None if value is None else kind.decode(flow, value)

    def heartbeat(self, flow: str) -> Heartbeat | None:
        """The flow's last recorded state."""
        return self.record(Heartbeat, flow)

    def source_ends(self, flow: str) -> SourceEnds | None:
        """The mirror's last observation of the flow's source end offsets."""
        value = self.values.get(SourceEnds.key_of(flow))
        return SourceEnds.decode(flow, value) if value and "at_ms" in value else None

    def role(self, flow: str) -> str:
        """``failed-over`` or ``active`` (the default: no failover recorded)."""
        role = self.record(Role, flow)
        return Role.ACTIVE if role is None else role.role

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

    def checkpoints(self, flow: str) -> dict[str, GroupCheckpoint]:
        """group -> the flow's checkpoint of it."""
        records = (GroupCheckpoint.decode(flow, rest, value) for rest, value in self._items(GroupCheckpoint.KIND, flow))
        return {r.group: r for r in records}

    def topic_ids(self, flow: str) -> dict[str, str]:
        """source topic -> its ID when the flow started replicating it."""
        return {rest: str(value["topic_id"]) for rest, value in self._items(TopicId.KIND, flow) if "topic_id" in value}

    def apply(self, key: str, value: dict[str, Any] | None, offset: int) -> None:
        """One record read from the log, in order (None: the key was deleted)."""
        if value is None:
            self.values.pop(key, None)
        else:
            self.values[key] = value
        self.offsets[key] = offset


class StateStore(ABC):
    """Reads and writes one target's state."""

    name: str

    @abstractmethod
    def read(self, from_offset: int = 0, timeout_s: float = 60.0) -> StateSnapshot:
        """The committed state from ``from_offset`` to the current end (records before it are not applied)."""

    @abstractmethod
    def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
        """Write records and wait for the acks."""

    def set_flow_state(self, flow: str, state: str, **details: Any) -> None:
        """Record a flow's state (running, stopped, failed-over, error)."""
        self.write(Heartbeat(flow, state, int(time.time() * 1000), details))

    def set_role(self, flow: str, role: str, **details: Any) -> None:
        """Record a failover decision (``failed-over`` or ``active``), and show it as the flow's state."""
        now = int(time.time() * 1000)
        shown = "failed-over" if role == Role.FAILED_OVER else "stopped"
        self.write(Role(flow, role, now, details), Heartbeat(flow, shown, now, details))


class InMemoryStateStore(StateStore):
    """A state store in a list, with the Kafka store's semantics (latest value per key wins)."""

    def __init__(self, name: str = "memory") -> None:
        self.name = name
        self.log: list[tuple[str, dict[str, Any]]] = []

    def read(self, from_offset: int = 0, timeout_s: float = 60.0) -> StateSnapshot:
        """Everything written from ``from_offset`` on."""
        snapshot = StateSnapshot(end_offset=len(self.log))
        for offset, (key, value) in enumerate(self.log[from_offset:], start=from_offset):
            snapshot.apply(key, json.loads(json.dumps(value)), offset)
        return snapshot

    def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
        """Append the records."""
        self.log.extend((r.key, r.encode()) for r in records)


class KafkaStateStore(StateStore):
    """The state topic on a target cluster."""

    def __init__(self, conn: ClusterConnection) -> None:
        self.conn = conn
        self.name = conn.name

    def read(self, from_offset: int = 0, timeout_s: float = 60.0) -> StateSnapshot:
        """Read the committed state from ``from_offset`` to the current end."""
        return _read_state(self.conn, from_offset, timeout_s)

    def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
        """Write records and wait for the acks."""
        _write_entries(self.conn, {r.key: r.encode() for r in records}, timeout_s)


def state_store(conn: ClusterConnection) -> KafkaStateStore:
    """The state store of the cluster ``conn`` reaches."""
    return KafkaStateStore(conn)


def ensure_state_topic(admin: ClusterAdmin) -> None:
    """Create the state topic on a target cluster if it is missing."""
    rf = min(3, max(1, admin.broker_count()))
    configs = dict(_STATE_CONFIGS)
    if rf > 1:
        configs["min.insync.replicas"] = "2"
    admin.create_topic(STATE_TOPIC, 1, rf, configs)


def _read_state(conn: ClusterConnection, from_offset: int = 0, timeout_s: float = 60.0) -> StateSnapshot:
    """Read the committed state from ``from_offset`` to the current end."""
    admin = ClusterAdmin(conn, timeout_s)
    consumer = admin.consumer()
    snapshot = StateSnapshot()
    tp = TopicPartition(STATE_TOPIC, 0)
    try:
        _, end = consumer.get_watermark_offsets(tp, timeout=timeout_s)
        snapshot.end_offset = end
        if end <= from_offset:
            return snapshot
        consumer.assign([TopicPartition(STATE_TOPIC, 0, from_offset)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msgs = consumer.consume(1000, timeout=0.5)
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(err)
                raw_key, raw, offset = msg.key(), msg.value(), msg.offset()
                if offset is None:
                    continue  # only error events lack an offset
                key = raw_key.decode() if isinstance(raw_key, bytes) else (raw_key or "")
                snapshot.apply(key, None if raw is None else json.loads(raw), offset)
            position = consumer.position([tp])[0].offset
            if position >= end:
                return snapshot
        # A partial read would resume from stale positions: better to stop than to duplicate.
        raise KafkaOperationError(
            f"cluster {conn.name}: {STATE_TOPIC} could not be read to its end ({end}) within {timeout_s:.0f}s; "
            "an open transaction of a dead writer may hold it (it expires after transaction.timeout.ms)"
        )
    except KafkaException as exc:
        if exc.args and exc.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
            return snapshot  # no state topic yet: nothing replicated, nothing decided
        raise_mapped(conn, f"reading {STATE_TOPIC}", exc)
        return snapshot
    finally:
        consumer.close()


def _write_entries(conn: ClusterConnection, entries: dict[str, dict[str, Any] | None], timeout_s: float = 15.0) -> None:
    """Write state entries (None deletes a key) and wait for the acks."""
    producer = _state_producer(conn)
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(err.str())

    for key, value in entries.items():
        payload = None if value is None else json.dumps(value).encode()
        producer.produce(STATE_TOPIC, key=key.encode(), value=payload, partition=0, on_delivery=on_delivery)
    try:
        remaining = drain(producer, timeout_s)
    except KafkaException as exc:
        if is_fatal(exc):  # that producer can never write again: the next write gets a new one
            _PRODUCERS.pop(_producer_key(conn), None)
        raise_mapped(conn, f"writing {STATE_TOPIC}", exc)
    if remaining or errors:
        reason = errors[0] if errors else "timed out"
        raise_mapped(conn, f"writing {STATE_TOPIC}", KafkaException(KafkaError(KafkaError._TIMED_OUT, reason)))


_PRODUCERS: dict[tuple[str, str], Producer] = {}


def _producer_key(conn: ClusterConnection) -> tuple[str, str]:
    return conn.bootstrap, repr(sorted(conn.security.items()))


def _state_producer(conn: ClusterConnection) -> Producer:
    """One idempotent producer per cluster for state writes (heartbeats come every second)."""
    key = _producer_key(conn)
    if key not in _PRODUCERS:
        _PRODUCERS[key] = Producer(conn.librdkafka(**{"enable.idempotence": True, "acks": "all", "linger.ms": 0}))
    return _PRODUCERS[key]


def release_state_producers() -> None:
    """Close the cached state producers (a mirror that ended): a producer left behind keeps
    reconnecting, and logging, long after its cluster is gone. Writes are flushed by
    ``write_state`` itself, so nothing is pending here."""
    while _PRODUCERS:
        _, producer = _PRODUCERS.popitem()
        with contextlib.suppress(KafkaException):  # a producer that failed for good has nothing to deliver
            drain(producer, 1)
