"""Where a flow's applications belong now: the active cluster and the topic names there (pure).

The only input is the flow's :class:`~geokafka.control.state_records.Role` record in its target's
state topic, so a client learns that the source is gone without asking the source::

    role record on the target             applications run at   consumers read                producers write
    none, or active                       source                orders                        orders
    failed-over (failover, promote)       target                nyc.orders, orders (prefix)   orders
                                                                orders (identity)
    active, failed_back_to=<source>       source                orders, atl.orders (prefix)   orders
                                                                orders (identity)

After a failover with prefix naming the group reads the replica (``nyc.orders``, from the offsets
the failover translated) and the topic's own name on the target, where producers now write. After
a failback it reads its own topic and the reverse flow's copies of what was written on the target
meanwhile (``atl.orders``; failback moved the group on both to its first unprocessed record).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from geokafka.control.naming import policy_for
from geokafka.control.state_records import Role
from geokafka.topology.schema import Flow


@dataclass(frozen=True)
class Placement:
    """A flow's role as last recorded, and what it means for its applications."""

    flow: str
    spec: Flow = field(repr=False, compare=False)
    role: str = Role.ACTIVE
    since_ms: int | None = None
    """When the role was recorded (the role record's ``at_ms``); None: never failed over."""
    kind: str | None = None
    """What set the role: ``failover``, ``promote`` or ``failback`` (None: never failed over)."""
    settled: bool = True
    """The command that set the role has moved the consumer groups (see :func:`moves_done`)."""
    failed_back_to: str | None = None

    @property
    def failed_over(self) -> bool:
        """The flow runs at its target now."""
        return self.role == Role.FAILED_OVER

    @property
    def cluster(self) -> str:
        """The cluster applications use now: the flow's target once failed over, else its source."""
        return self.spec.target if self.failed_over else self.spec.source

    @property
    def site_key(self) -> tuple[str, str, bool]:
        """What a client must follow: a change of it is a switch (the settling of a failover is not)."""
        return self.cluster, self.role, self.failed_back_to is not None

    def consumer_topics(self, topics: Iterable[str]) -> list[str]:
        """The names on :attr:`cluster` that hold the records of ``topics`` (named as on the flow's source)."""
        policy = policy_for(self.spec)
        names: list[str] = []
        for topic in topics:
            if self.failed_over:
                candidates = [policy.remote_topic(self.spec.source, topic), topic]
            elif self.failed_back_to is not None:
                candidates = [topic, policy.remote_topic(self.spec.target, topic)]
            else:
                candidates = [topic]
            for name in candidates:
                if name not in names:
                    names.append(name)
        return names

    def producer_topic(self, topic: str) -> str:
        """The name producers write ``topic`` to on :attr:`cluster`: its own name, never a replica's."""
        return topic

    def describe(self) -> str:
        """One phrase: ``active at nyc`` / ``failed over to atl (failover at 2026-11-28 10:01:02 UTC)``."""
        when = f" at {format_ms(self.since_ms)}" if self.since_ms else ""
        if self.failed_over:
            pending = "" if self.settled else ", moving consumer groups"
            return f"failed over to {self.cluster} ({self.kind or 'failover'}{when}{pending})"
        if self.failed_back_to is not None:
            return f"active at {self.cluster} (failed back{when})"
        return f"active at {self.cluster}"


def moves_done(role: Role) -> bool:
    """Whether the command that wrote ``role`` has moved the consumer groups already.

    ``failover`` and ``promote`` write the role twice: when they fence the flow, before any group
    moved, and once more at the end, after moving the groups (``groups_moved``; records of earlier
    versions said so with the RPO they measured, ``rpo``, alone). ``failback`` writes ``active``
    once, after moving the groups back.
    """
    return role.role != Role.FAILED_OVER or bool(role.details.get("groups_moved")) or "rpo" in role.details


def placement_of(flow_name: str, spec: Flow, role: Role | None) -> Placement:
    """The placement a role record (None: none recorded yet) gives the flow."""
    if role is None:
        return Placement(flow_name, spec)
    back_to = role.details.get("failed_back_to")
    failed_back_to = str(back_to) if back_to and role.role == Role.ACTIVE else None
    kind = "failback" if failed_back_to else (str(role.details.get("kind") or "failover")
                                               if role.role == Role.FAILED_OVER else None)
    return Placement(flow_name, spec, role.role, role.at_ms or None, kind, moves_done(role), failed_back_to)


def format_ms(at_ms: int) -> str:
    """Epoch milliseconds as ``2026-11-28 10:01:02 UTC``."""
    return datetime.fromtimestamp(at_ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def iso_ms(at_ms: int | None) -> str | None:
    """Epoch milliseconds as ISO 8601 UTC with milliseconds (None stays None)."""
    if at_ms is None:
        return None
    return datetime.fromtimestamp(at_ms / 1000, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def placement_dict(placement: Placement, bootstrap: str, topics: Iterable[str]) -> dict[str, Any]:
    """What `geokafka where --json` and the dashboard's ``/api/flows/<flow>`` say."""
    return {
        "flow": placement.flow,
        "role": placement.role,
        "active_cluster": placement.cluster,
        "bootstrap": bootstrap,
        "since_ms": placement.since_ms,
        "since": iso_ms(placement.since_ms),
        "kind": placement.kind,
        "settled": placement.settled,
        "failed_back_to": placement.failed_back_to,
        "source": placement.spec.source,
        "target": placement.spec.target,
        "naming": placement.spec.rename,
        "topics": [{"topic": t, "consume": placement.consumer_topics([t]), "produce": placement.producer_topic(t)}
                   for t in topics],
    }
