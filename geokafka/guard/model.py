"""What the guard sees of a stretched cluster at one instant, and what it can do about it."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class Broker:
    """A broker the guard knows (from a healthy metadata read): its DC is its ``broker.rack``."""

    id: int
    dc: str
    host: str
    port: int


@dataclass(frozen=True)
class PartitionView:
    """One partition's replicas, in-sync replicas and leader (-1: none)."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int


@dataclass(frozen=True)
class ClusterView:
    """One observation of the cluster."""

    at_ms: int
    """Wall clock: when, for people and the journal."""
    elapsed_ms: int
    """Monotonic clock: how long, for the grace period (an NTP step or a paused VM moves the wall clock by
    seconds; a DC must never be lost early because of it)."""
    live: frozenset[int]
    """Brokers the controller has registered and not fenced (from any surviving broker's metadata)."""
    reachable: frozenset[int]
    """Brokers that accept a TCP connection on their client port."""
    partitions: tuple[PartitionView, ...]
    min_isr: dict[str, int]
    """topic -> its effective min.insync.replicas."""

    def topic(self, name: str) -> list[PartitionView]:
        """The partitions of one topic."""
        return [p for p in self.partitions if p.topic == name]


ActionKind = Literal["lower-min-isr", "restore-min-isr", "elect-preferred-leaders"]


@dataclass(frozen=True)
class Action:
    """One change the guard makes to the cluster, and why."""

    kind: ActionKind
    topic: str
    dc: str
    value: int | None
    """The new min.insync.replicas (None for a leader election)."""
    previous: int | None
    reason: str

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


@dataclass(frozen=True)
class Lowered:
    """A topic whose min.insync.replicas the guard lowered and has not restored yet."""

    topic: str
    dc: str
    original: int
    lowered: int
    at_ms: int
    applied: bool = True
    """False in a dry run: the guard only said it would lower it, so the cluster still has ``original``."""


DcState = Literal["up", "suspect", "lost", "returning"]


@dataclass
class GuardMemory:
    """What the guard remembers between observations (rebuilt from the journal after a restart)."""

    out_since_ms: dict[str, int] = field(default_factory=dict)
    """DC -> when every one of its brokers was first seen out (unreachable or fenced), on the monotonic clock."""
    lowered: dict[str, Lowered] = field(default_factory=dict)
    said: set[str] = field(default_factory=set)
    """Events already reported once (a DC loss with the quorum gone is said once, not every second)."""
