"""The Kafka reads behind ``status``: the target's state topic, the source's offsets and records."""

from __future__ import annotations

import threading
import time
from typing import Any

from confluent_kafka import TIMESTAMP_NOT_AVAILABLE, KafkaError, KafkaException, TopicPartition

from geokafka import contract
from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.naming import policy_for
from geokafka.control.selection import select_topics
from geokafka.control.state_records import TopicPartitionKey
from geokafka.control.state_store import StateSnapshot, StateStore
from geokafka.control.state_stores import StateStores
from geokafka.control.topic_identity import Recreation, recreations
from geokafka.errors import GeokafkaError
from geokafka.monitoring.status import PartitionStatus, lost_offsets, observed_lag, partition_lag, raw_lag
from geokafka.topology.schema import Flow, Topology


class StateCache:
    """The latest value of every key of one target's ``__geokafka_state``: the cluster's state store,
    which keeps its consumer open and reads only what is new."""

    def __init__(self, store: StateStore, timeout_s: float) -> None:
        self.store = store
        self.timeout_s = timeout_s
        self.snapshot = StateSnapshot()
        """The last snapshot read (empty before the first)."""

    def refresh(self) -> StateSnapshot:
        """Read what was written since the last refresh; raises GeokafkaError when it cannot."""
        self.snapshot = self.store.read(self.timeout_s)
        return self.snapshot


class ClusterReads:
    """Clients kept across observations: one admin per source, one state cache per target (its store from
    ``stores``, whose owner closes it)."""

    def __init__(self, topology: Topology, state_timeout_s: float, source_timeout_s: float,
                 stores: StateStores) -> None:
        self.topology = topology
        self.stores = stores
        self.state_timeout_s = state_timeout_s
        self.source_timeout_s = source_timeout_s
        self._states: dict[str, StateCache] = {}
        self._admins: dict[str, ClusterAdmin] = {}
        self._lock = threading.Lock()
        """Guards the two maps: the flows of one observation are read side by side."""

    def state(self, cluster: str) -> tuple[StateSnapshot, GeokafkaError | None]:
        """State of target ``cluster`` and the error that kept it from being current.

        After a failed read, the state is that of the last successful read (maybe empty).
        """
        with self._lock:
            if cluster not in self._states:
                self._states[cluster] = StateCache(self.stores.of(connection(self.topology, cluster)),
                                                   self.state_timeout_s)
            cache = self._states[cluster]
        try:
            return cache.refresh(), None
        except GeokafkaError as exc:
            return cache.snapshot, exc

    def admin(self, cluster: str) -> ClusterAdmin:
        """The admin client of ``cluster``."""
        with self._lock:
            if cluster not in self._admins:
                self._admins[cluster] = ClusterAdmin(connection(self.topology, cluster), self.source_timeout_s)
            return self._admins[cluster]

    def close(self) -> None:
        """Close every admin client (the state stores are their owner's)."""
        for admin in self._admins.values():
            admin.close()
        self._admins.clear()


def flow_progress(state: StateSnapshot, flow: str) -> dict[TopicPartitionKey, tuple[int, int | None]]:
    """(topic, partition) -> (next source offset, timestamp of the last replicated record)."""
    return {tp: (r.next, r.last_timestamp if r.last_timestamp >= 0 else None)
            for tp, r in state.progress_records(flow).items()}


def observed_ends(state: StateSnapshot, flow: str) -> tuple[int | None, dict[TopicPartitionKey, int]]:
    """The mirror's last observation of the source end offsets: (at ms, ends)."""
    record = state.source_ends(flow)
    if record is None:
        return None, {}
    ends: dict[TopicPartitionKey, int] = {}
    for key, end in record.ends.items():
        ends[contract.parse_partition_key(key)] = end
    return record.at_ms, ends


def source_offsets(admin: ClusterAdmin, flow: Flow) -> dict[TopicPartitionKey, tuple[int, int]]:
    """(topic, partition) -> (log start, end offset) of every topic the flow selects."""
    partitions = admin.topic_partitions()
    out: dict[TopicPartitionKey, tuple[int, int]] = {}
    for topic in select_topics(partitions, flow):
        for partition, (low, high) in admin.watermarks(topic, partitions[topic]).items():
            out[(topic, partition)] = (low, high)
    return out


def first_committed(
    admin: ClusterAdmin, positions: dict[TopicPartitionKey, int], timeout_s: float
) -> dict[TopicPartitionKey, Any]:
    """For each partition, the first committed record at/after its position: (offset, timestamp ms).

    None when there is none (only transaction markers or aborted records remain); partitions
    not answered within ``timeout_s`` are missing from the result.
    """
    if not positions:
        return {}
    consumer = admin.consumer(**{
        "enable.partition.eof": True, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100,
        "max.partition.fetch.bytes": 65536, "queued.max.messages.kbytes": 4096,
    })
    pending = set(positions)
    found: dict[TopicPartitionKey, Any] = {}
    try:
        consumer.assign([TopicPartition(t, p, off) for (t, p), off in positions.items()])
        deadline = time.monotonic() + timeout_s
        while pending and time.monotonic() < deadline:
            for msg in consumer.consume(500, timeout=0.2):
                tp = (msg.topic(), msg.partition())
                if tp not in pending:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        found[tp] = None
                        pending.discard(tp)
                    continue
                kind, timestamp = msg.timestamp()
                found[tp] = (msg.offset(), None if kind == TIMESTAMP_NOT_AVAILABLE else timestamp)
                pending.discard(tp)
                consumer.pause([TopicPartition(*tp)])
    except KafkaException:
        pass  # what was found stands; the rest stays unknown
    finally:
        consumer.close()
    return found


def flow_partitions(
    io: ClusterReads, name: str, flow: Flow, state: StateSnapshot, as_of_ms: int | None = None
) -> tuple[list[PartitionStatus], str | None, int | None, int]:
    """Per-partition status of one flow: (partitions, source error, observation time, now ms).

    A partition's lag in seconds is counted to ``as_of_ms``, when the state (its progress) was read, else to
    when the source answered: the flow went on replicating while the source was read, and counted to the
    answer a slow source read (a loaded machine, a dead flow's time-out beside it) would show the flow as far
    behind as that read took."""
    progress = flow_progress(state, name)
    policy = policy_for(flow)
    try:
        admin = io.admin(flow.source)
        offsets = source_offsets(admin, flow)
    except GeokafkaError as exc:
        observed_ms, ends = observed_ends(state, name)
        rows = []
        # the mirror's last observation lists the partitions the source had then: progress of
        # topics deleted (or deselected) before it is history, not lag
        for topic, partition in sorted(set(ends) if ends else set(progress)):
            next_offset, last_ms = progress.get((topic, partition), (None, None))
            end = ends.get((topic, partition))
            if next_offset is None and end is not None:
                next_offset = 0 if flow.start == "earliest" else end
            lag, seconds = observed_lag(end, next_offset, last_ms, observed_ms)
            replicated = progress.get((topic, partition), (None, None))[0]
            rows.append(PartitionStatus(topic, partition, policy.remote_topic(flow.source, topic), end,
                                        replicated, lag, seconds, last_ms, resume_offset=replicated))
        return rows, str(exc), observed_ms, int(time.time() * 1000)

    effective: dict[TopicPartitionKey, int] = {}  # where lag counts from
    resume: dict[TopicPartitionKey, int] = {tp: nxt for tp, (nxt, _) in progress.items()}  # where throughput counts from
    for tp, (low, high) in offsets.items():
        next_offset = progress.get(tp, (None, None))[0]
        if next_offset is None:
            next_offset = low if flow.start == "earliest" else high
            if flow.start == "earliest":
                resume[tp] = low
        effective[tp] = next_offset
    lagging = {tp: max(nxt, offsets[tp][0]) for tp, nxt in effective.items() if (raw_lag(offsets[tp][1], nxt) or 0) > 0}
    probes = first_committed(admin, lagging, io.source_timeout_s)
    now_ms = int(time.time() * 1000)
    rows = []
    for tp in sorted(offsets):  # progress of a partition the source no longer has (topic deleted) is history
        topic, partition = tp
        next_offset, last_ms = progress.get(tp, (None, None))
        low, end = offsets[tp]
        probe = probes.get(tp, "unknown") if tp in lagging else None
        lag, seconds = partition_lag(end, effective[tp], probe, now_ms if as_of_ms is None else as_of_ms)
        rows.append(PartitionStatus(topic, partition, policy.remote_topic(flow.source, topic), end,
                                    next_offset, lag, seconds, last_ms, resume_offset=resume.get(tp),
                                    lost_records=lost_offsets(low, next_offset), source_start=low))
    return rows, None, None, now_ms


def recreated_topics(io: ClusterReads, name: str, flow: Flow, state: StateSnapshot) -> list[Recreation]:
    """Source topics whose ID changed since the flow recorded it (progress of the old topic); none
    when the source does not answer (its topics are then not compared)."""
    stored = state.topic_ids(name)
    replicated = {topic for topic, _ in state.progress(name)} & set(stored)
    if not replicated:
        return []
    try:
        current = io.admin(flow.source).topic_ids(sorted(replicated))
    except GeokafkaError:
        return []
    return recreations(stored, current, replicated)
