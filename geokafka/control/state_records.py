"""The typed records of ``__geokafka_state``: each owns its key and its encoding.

One compacted topic of two partitions (below) on every target cluster holds geokafka's durable state
(it lives on the target because the target is what survives a source-site disaster). Its
records, by key:

* :class:`PackedProgress` ``packed/<flow>/g<generation>.<group>/<slot>``: the next source offset to
  replicate and the last replicated record's timestamp of a partition group's partitions, committed *in the
  same Kafka transaction* as the records they cover (by the JVM sink, ``jvm/.../Progress.java``): each commit
  the partitions that moved under one of 64 delta slots in turn, every 64th commit the whole group under
  the snapshot slot ``all``, so compaction keeps every partition's latest position.
* :class:`Progress` ``progress/<flow>/<topic>/<partition>``: the same for one partition, as earlier versions
  of the sink wrote it and the driver still does outside a query (a skipped gap, a replay of stranded
  records). A partition's progress is its last mention in either kind.
* :class:`Heartbeat` ``flow/<flow>``: the flow's state (running, retrying, stopped,
  failed-over, error) with the mirror's counters, rewritten every ~5 s by a live mirror.
* :class:`SourceEnds` ``ends/<flow>``: the source's end offsets as last observed (every
  ``rpo.observe_ms``), the peak append rate and when a look failed: what bounds the RPO after a disaster.
* :class:`SourceEndsSeen` ``ends-seen/<flow>``: a later look that found the same ends (idle sources).
* :class:`Role` ``role/<flow>``: ``failed-over`` or ``active``, set by failover, promote and
  failback only, kept apart from the heartbeat so a heartbeat can never overwrite it.
* :class:`FailoverRecord` ``report/<flow>``: the last failover report.
* :class:`LossAccount` ``loss/<flow>``: the exact loss of the last failover, counted by
  `reconcile` in the old source's logs once it answered again.
* :class:`Reconciled` ``reconciled/<flow>/<topic>/<partition>``: up to where `reconcile --replay`
  produced a partition's stranded records to the target, committed in the same transaction as them.
* :class:`HeldGroups` ``held-groups/<flow>``: groups whose target offsets the sync leaves alone.
* :class:`AutoFailover` ``auto/<flow>``: what `geokafka guard --sites` last decided about the flow's source
  site (suspect, held for a person, failed over), so status, metrics and alerts show it.
* :class:`GroupCheckpoint` ``checkpoint/<flow>/<group>``: what a group sync saw and wrote.
* :class:`TopicId` ``topic-id/<flow>/<topic>``: the source topic's ID when the flow started it.
* :class:`Generation` ``generation/<flow>``: the flow's partition groups (how many, a digest of
  which partitions each holds) and their generation, written before a new generation writes.

**Two partitions.** Records written inside transactions (progress, with the data it covers; reconciled,
with the replayed records) live in partition :data:`DATA_PARTITION` (0); every other record in
:data:`CONTROL_PARTITION` (1), which no transaction writes, so a transaction left open by any writer
never hides a heartbeat, a role or a failover from a ``read_committed`` reader. :func:`partition_of`
says where a key lives. A topic of the first layout (one partition, every record in 0) is grown and
its control records carried over once (:class:`Layout` marks the end of the carry-over; from then
on readers ignore control keys in partition 0).

The progress record's key and fields, and the topic's name, are the Python-Java contract's
(:mod:`geokafka.contract`). Standard library only: cheap to import anywhere.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, Self

from geokafka import contract

STATE_TOPIC = contract.STATE_TOPIC

_NEXT = contract.spec()["progress"]["fields"]["next"]
_LAST_TIMESTAMP = contract.spec()["progress"]["fields"]["last_timestamp"]

TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""

DATA_PARTITION = 0
"""The state partition transactions write: progress (by the JVM sink) and reconciled (by a replay)."""
CONTROL_PARTITION = 1
"""The state partition no transaction writes: every other record."""
STATE_PARTITIONS = 2
TRANSACTIONAL_KINDS = frozenset({"progress", "packed", "reconciled"})


def partition_of(key: str) -> int:
    """The state partition of ``key``: its kind (the key's first part) decides, so a key never moves."""
    return DATA_PARTITION if key.partition("/")[0] in TRANSACTIONAL_KINDS else CONTROL_PARTITION


class StateRecord(Protocol):
    """A record of the state topic: its key and its JSON value."""

    KIND: ClassVar[str]

    @property
    def key(self) -> str: ...

    def encode(self) -> dict[str, Any]: ...


def flow_prefix(kind: str, flow: str) -> str:
    """Key prefix of the per-item records (``kind/<flow>/...``) of one flow."""
    return f"{kind}/{flow}/"


class FlowRecord:
    """A record a flow has one of: key ``<KIND>/<flow>``, decoded from its value alone."""

    KIND: ClassVar[str]
    flow: str

    @classmethod
    def key_of(cls, flow: str) -> str:
        """Key of the flow's record of this kind."""
        return f"{cls.KIND}/{flow}"

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return self.key_of(self.flow)

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        raise NotImplementedError


@dataclass(frozen=True)
class Progress:
    """The next source offset of one partition a flow has replicated up to (exclusive)."""

    KIND: ClassVar[str] = "progress"
    flow: str
    topic: str
    partition: int
    next: int
    last_timestamp: int = -1
    """Timestamp (ms) of the last source record replicated, -1 if unknown: what an RPO in seconds needs."""

    @staticmethod
    def key_of(flow: str, topic: str, partition: int) -> str:
        """Key of one source partition's progress."""
        return contract.progress_key(flow, topic, partition)

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return self.key_of(self.flow, self.topic, self.partition)

    def encode(self) -> dict[str, Any]:
        """Its value (the JVM sink writes the same)."""
        return {_NEXT: self.next, _LAST_TIMESTAMP: self.last_timestamp}

    @classmethod
    def decode(cls, flow: str, rest: str, value: Mapping[str, Any]) -> Progress:
        """From the key's part after ``progress/<flow>/`` (``<topic>/<partition>``) and the value."""
        topic, partition = contract.parse_partition_key(rest)
        return cls(flow, topic, partition, int(value[_NEXT]), int(value.get(_LAST_TIMESTAMP, -1)))


_PACKED_TOPICS = contract.spec()["packed_progress"]["fields"]["topics"]


@dataclass(frozen=True)
class PackedProgress:
    """The progress of some partitions of one partition group, as the JVM sink writes it in each commit's
    transaction: the partitions that moved under one of the group's delta slots, or every partition of the group
    under its snapshot slot (see ``packed_progress`` in ``contract.json``). A partition's progress is its last
    mention in the state topic, in a record of this kind or a :class:`Progress`."""

    KIND: ClassVar[str] = "packed"
    flow: str
    generation: int
    group: int
    slot: str
    entries: tuple[Progress, ...]

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return contract.packed_progress_key(self.flow, self.generation, self.group, self.slot)

    def encode(self) -> dict[str, Any]:
        """Its value (what the JVM sink writes)."""
        topics: dict[str, list[int]] = {}
        for e in self.entries:
            topics.setdefault(e.topic, []).extend((e.partition, e.next, e.last_timestamp))
        return {_PACKED_TOPICS: topics}

    @staticmethod
    def decode_entries(flow: str, value: Mapping[str, Any]) -> tuple[Progress, ...]:
        """The partitions a packed value names, each as a :class:`Progress`."""
        out: list[Progress] = []
        for topic, numbers in value[_PACKED_TOPICS].items():
            if len(numbers) % 3:
                raise ValueError(f"packed progress of {topic}: {len(numbers)} numbers, not triples")
            out.extend(Progress(flow, topic, int(numbers[i]), int(numbers[i + 1]), int(numbers[i + 2]))
                       for i in range(0, len(numbers), 3))
        return tuple(out)


@dataclass(frozen=True)
class Heartbeat(FlowRecord):
    """A flow's state as its mirror (or failover) last recorded it."""

    KIND: ClassVar[str] = "flow"
    flow: str
    state: str
    at_ms: int
    details: dict[str, Any] = field(default_factory=dict)
    """The mirror's counters and identity (written, bytes, restarts, host, pid, reason, ...)."""

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {**self.details, "state": self.state, "at_ms": self.at_ms}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        details = {k: v for k, v in value.items() if k not in ("state", "at_ms")}
        return cls(flow, str(value.get("state")), int(value.get("at_ms", 0)), details)

    def as_dict(self) -> dict[str, Any]:
        """The value as a plain mapping (what status shows)."""
        return self.encode()


@dataclass(frozen=True)
class SourceEnds(FlowRecord):
    """The mirror's last look at a flow's source end offsets."""

    KIND: ClassVar[str] = "ends"
    flow: str
    at_ms: int
    ends: dict[str, int]
    """``<topic>/<partition>`` -> end offset (high watermark) at ``at_ms``."""
    peak_rate: float | None = None
    """Records per second the source took at most over a second between looks, in the last minute."""
    failed_at_ms: int | None = None
    """When a later look failed (the source did not answer), if one did."""

    def encode(self) -> dict[str, Any]:
        """Its value: the ends per topic as ``[[partition, end], ...]`` runs of consecutive partitions written as
        their first partition and the ends in order (``{"orders": [[0, 41, 38, 40]]}``): a few bytes a partition,
        for a flow over thousands of them observed four times a second."""
        by_topic: dict[str, list[tuple[int, int]]] = {}
        for key, end in self.ends.items():
            name, number = contract.parse_partition_key(key)
            by_topic.setdefault(name, []).append((number, end))
        packed: dict[str, list[list[int]]] = {}
        for topic, pairs in by_topic.items():
            runs: list[list[int]] = []
            for partition, end in sorted(pairs):
                if runs and runs[-1][0] + len(runs[-1]) - 1 == partition:
                    runs[-1].append(end)
                else:
                    runs.append([partition, end])
            packed[topic] = runs
        value: dict[str, Any] = {"at_ms": self.at_ms, "topics": packed}
        if self.peak_rate is not None:
            value["peak_rate"] = round(self.peak_rate, 3)
        if self.failed_at_ms is not None:
            value["failed_at_ms"] = self.failed_at_ms
        return value

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value (the packed ``topics`` form, or the ``ends`` map written before it)."""
        rate = value.get("peak_rate")
        failed = value.get("failed_at_ms")
        ends = {str(k): int(v) for k, v in value.get("ends", {}).items()}
        for topic, runs in value.get("topics", {}).items():
            for first, *run_ends in runs:
                ends.update({contract.partition_key(topic, int(first) + i): int(end) for i, end in enumerate(run_ends)})
        return cls(flow, int(value["at_ms"]), ends, float(rate) if rate is not None else None,
                   int(failed) if failed is not None else None)


@dataclass(frozen=True)
class SourceEndsSeen(FlowRecord):
    """A look at the source that found the ends of the flow's last :class:`SourceEnds` unchanged: a small record
    instead of the whole observation again, which keeps the observation's age honest at no cost."""

    KIND: ClassVar[str] = "ends-seen"
    flow: str
    at_ms: int
    of_at_ms: int
    """The ``at_ms`` of the observation whose ends were seen again."""

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"at_ms": self.at_ms, "of_at_ms": self.of_at_ms}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        return cls(flow, int(value["at_ms"]), int(value["of_at_ms"]))


@dataclass(frozen=True)
class Role(FlowRecord):
    """A flow's role as failover, promote and failback set it."""

    KIND: ClassVar[str] = "role"
    FAILED_OVER: ClassVar[str] = "failed-over"
    ACTIVE: ClassVar[str] = "active"
    flow: str
    role: str
    at_ms: int
    details: dict[str, Any] = field(default_factory=dict)

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {**self.details, "role": self.role, "at_ms": self.at_ms}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        details = {k: v for k, v in value.items() if k not in ("role", "at_ms")}
        return cls(flow, str(value.get("role", cls.ACTIVE)), int(value.get("at_ms", 0)), details)


@dataclass(frozen=True)
class FailoverRecord(FlowRecord):
    """The report of a flow's last failover or promote."""

    KIND: ClassVar[str] = "report"
    flow: str
    report: dict[str, Any]

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return dict(self.report)

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        return cls(flow, dict(value))


@dataclass(frozen=True)
class LossAccount(FlowRecord):
    """The exact loss of a flow's last failover: its stranded records, counted in the old source's logs."""

    KIND: ClassVar[str] = "loss"
    flow: str
    at_ms: int
    """When `reconcile` (or `failback`) counted them."""
    failover_at_ms: int
    """When the failover they belong to started."""
    records: int
    seconds: float | None
    """From the oldest stranded record's timestamp to the newest (None: no record, or no timestamps)."""
    partitions: list[dict[str, Any]] = field(default_factory=list)
    """``{"topic", "partition", "first", "last", "records", "first_ms", "last_ms"}`` per partition with stranded records."""

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"at_ms": self.at_ms, "failover_at_ms": self.failover_at_ms, "records": self.records,
                "seconds": self.seconds, "partitions": self.partitions}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        seconds = value.get("seconds")
        return cls(flow, int(value.get("at_ms", 0)), int(value.get("failover_at_ms", 0)), int(value.get("records", 0)),
                   None if seconds is None else float(seconds), list(value.get("partitions", [])))


@dataclass(frozen=True)
class Reconciled:
    """Up to where `reconcile --replay` produced one partition's stranded records to the target."""

    KIND: ClassVar[str] = "reconciled"
    flow: str
    topic: str
    partition: int
    next: int
    """The next stranded source offset to replay (exclusive end of what was produced)."""
    end: int
    """The end of the partition's stranded records at the old source when the replay began."""
    records: int
    """Records produced so far (across runs)."""
    at_ms: int

    @staticmethod
    def key_of(flow: str, topic: str, partition: int) -> str:
        """Key of one source partition's replay."""
        return f"reconciled/{flow}/{topic}/{partition}"

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return self.key_of(self.flow, self.topic, self.partition)

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"next": self.next, "end": self.end, "records": self.records, "at_ms": self.at_ms}

    @classmethod
    def decode(cls, flow: str, rest: str, value: Mapping[str, Any]) -> Reconciled:
        """From the key's part after ``reconciled/<flow>/`` (``<topic>/<partition>``) and the value."""
        topic, partition = contract.parse_partition_key(rest)
        return cls(flow, topic, partition, int(value["next"]), int(value.get("end", value["next"])),
                   int(value.get("records", 0)), int(value.get("at_ms", 0)))


@dataclass(frozen=True)
class HeldGroups(FlowRecord):
    """Groups in use on the target whose offsets there the sync leaves alone."""

    KIND: ClassVar[str] = "held-groups"
    flow: str
    at_ms: int
    held: list[dict[str, Any]]
    """``{"group", "topic", "partition", "reason"}`` per held target partition."""

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"at_ms": self.at_ms, "held": self.held}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        return cls(flow, int(value.get("at_ms", 0)), list(value.get("held", [])))


@dataclass(frozen=True)
class AutoFailover(FlowRecord):
    """What the automatic failover (`geokafka guard --sites`) last decided about the flow's source site."""

    KIND: ClassVar[str] = "auto"
    SUSPECT: ClassVar[str] = "suspect"
    HELD: ClassVar[str] = "held"
    FAILED_OVER: ClassVar[str] = "failed-over"
    CLEAR: ClassVar[str] = "clear"
    flow: str
    site: str
    state: str
    """``suspect`` (out of reach, not yet for confirm_s), ``held`` (lost, waiting for a person: ``reason``),
    ``failed-over`` (the guard failed it over), ``clear`` (reached again)."""
    reason: str
    at_ms: int
    dry_run: bool = False

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"site": self.site, "state": self.state, "reason": self.reason, "at_ms": self.at_ms,
                "dry_run": self.dry_run}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        return cls(flow, str(value.get("site", "")), str(value.get("state", cls.CLEAR)), str(value.get("reason", "")),
                   int(value.get("at_ms", 0)), bool(value.get("dry_run", False)))


@dataclass(frozen=True)
class GroupCheckpoint:
    """One group as last seen by a sync: its committed source offsets and what the sync wrote."""

    KIND: ClassVar[str] = "checkpoint"
    flow: str
    group: str
    offsets: dict[TopicPartitionKey, int]
    """(source topic, partition) -> the group's committed offset on the source."""
    at_ms: int
    synced: dict[TopicPartitionKey, int] = field(default_factory=dict)
    """(target topic, partition) -> the offset the sync last committed for the group on the target."""

    @staticmethod
    def key_of(flow: str, group: str) -> str:
        """Key of one group's checkpoint (group names may hold ``/``)."""
        return f"checkpoint/{flow}/{group}"

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return self.key_of(self.flow, self.group)

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"offsets": _encode_offsets(self.offsets), "synced": _encode_offsets(self.synced), "at_ms": self.at_ms}

    @classmethod
    def decode(cls, flow: str, rest: str, value: Mapping[str, Any]) -> GroupCheckpoint:
        """From the key's part after ``checkpoint/<flow>/`` (the group) and the value."""
        return cls(flow, rest, _decode_offsets(value.get("offsets", [])), int(value.get("at_ms", 0)),
                   _decode_offsets(value.get("synced", [])))


@dataclass(frozen=True)
class TopicId:
    """The ID of a source topic when the flow started replicating it (KIP-516)."""

    KIND: ClassVar[str] = "topic-id"
    flow: str
    topic: str
    topic_id: str
    at_ms: int

    @staticmethod
    def key_of(flow: str, topic: str) -> str:
        """Key of the ID of one source topic of a flow."""
        return f"topic-id/{flow}/{topic}"

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return self.key_of(self.flow, self.topic)

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"topic_id": self.topic_id, "at_ms": self.at_ms}

    @classmethod
    def decode(cls, flow: str, rest: str, value: Mapping[str, Any]) -> TopicId:
        """From the key's part after ``topic-id/<flow>/`` (the topic) and the value."""
        return cls(flow, rest, str(value["topic_id"]), int(value.get("at_ms", 0)))


@dataclass(frozen=True)
class Generation(FlowRecord):
    """A flow's partition groups as its last new generation recorded them (see :mod:`geokafka.pipeline.groups`)."""

    KIND: ClassVar[str] = "generation"
    flow: str
    generation: int
    groups: int
    """How many groups, hence the transactional ids ``0 .. groups-1`` of the generation."""
    digest: str
    """Names the exact grouping: the same partitions in the same groups give the same digest."""
    partitions: int
    at_ms: int

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"generation": self.generation, "groups": self.groups, "digest": self.digest,
                "partitions": self.partitions, "at_ms": self.at_ms}

    @classmethod
    def decode(cls, flow: str, value: Mapping[str, Any]) -> Self:
        """From a value."""
        return cls(flow, int(value["generation"]), int(value["groups"]), str(value["digest"]),
                   int(value.get("partitions", 0)), int(value.get("at_ms", 0)))


def _encode_offsets(offsets: Mapping[TopicPartitionKey, int]) -> list[list[Any]]:
    return [[topic, partition, offset] for (topic, partition), offset in sorted(offsets.items())]


def _decode_offsets(rows: list[list[Any]]) -> dict[TopicPartitionKey, int]:
    return {(str(t), int(p)): int(o) for t, p, o in rows}


@dataclass(frozen=True)
class Layout:
    """``layout``: written to the control partition once a topic of the first layout had its control records
    carried over; readers then ignore control keys in the data partition (what an older writer may still put
    there is not state any more)."""

    KIND: ClassVar[str] = "layout"
    version: int
    at_ms: int
    carried: int
    """Control keys copied from the data partition."""

    @property
    def key(self) -> str:
        """Its key in the state topic."""
        return self.KIND

    def encode(self) -> dict[str, Any]:
        """Its value."""
        return {"version": self.version, "at_ms": self.at_ms, "carried": self.carried}

