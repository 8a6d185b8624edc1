"""The nodes of a stretched cluster, numbered once from the topology's ``stretch:`` block.

Numbering (used by the plan, its reassignment JSON and the drill alike): DC by DC in the
order of the file, the brokers holding synchronous replicas first, then the DC's observer
brokers, from id 1; KRaft controllers from id 101 (1001 when there are more than 100 brokers).

Observers (``observers: N`` on a DC) are modelled as N brokers of that DC that hold only
asynchronous observer replicas: every partition gets one observer on each of them. They never
join the ISR, so they never count for ``acks=all`` (Confluent Server "Multi-Region Clusters";
Apache Kafka has no asynchronous replica type).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from geokafka.errors import TopologyError
from geokafka.topology.checks import stretch_findings
from geokafka.topology.schema import Stretch, StretchTopic


@dataclass(frozen=True)
class DataCenter:
    """One DC (= one ``broker.rack``) and the node ids that live in it."""

    name: str
    brokers: tuple[int, ...]
    observers: tuple[int, ...]
    controllers: tuple[int, ...]

    @property
    def nodes(self) -> frozenset[int]:
        """Every node id of this DC (brokers, observer brokers, controllers)."""
        return frozenset(self.brokers + self.observers + self.controllers)


@dataclass(frozen=True)
class Layout:
    """DCs with numbered nodes, and the topics to place on them."""

    dcs: tuple[DataCenter, ...]
    topics: Mapping[str, StretchTopic]

    @property
    def brokers(self) -> tuple[int, ...]:
        """Ids of all brokers that hold synchronous replicas."""
        return tuple(b for dc in self.dcs for b in dc.brokers)

    @property
    def observer_brokers(self) -> tuple[int, ...]:
        """Ids of all observer-only brokers."""
        return tuple(b for dc in self.dcs for b in dc.observers)

    @property
    def controllers(self) -> tuple[int, ...]:
        """Ids of all KRaft voters."""
        return tuple(c for dc in self.dcs for c in dc.controllers)

    def dc(self, name: str) -> DataCenter:
        """The DC called ``name``; :class:`TopologyError` if there is none."""
        for dc in self.dcs:
            if dc.name == name:
                return dc
        raise TopologyError(f"unknown DC {name!r} (known: {', '.join(d.name for d in self.dcs)})")

    def dc_of(self, node_id: int) -> str:
        """Name of the DC holding node ``node_id``."""
        for dc in self.dcs:
            if node_id in dc.nodes:
                return dc.name
        raise KeyError(node_id)


def layout_of(stretch: Stretch) -> Layout:
    """Number the nodes of ``stretch`` and check that its topics can be placed.

    Raises :class:`TopologyError` when a topic's replication factor exceeds the brokers, or
    its min.insync.replicas exceeds its replication factor (no ``acks=all`` write could ever
    succeed).
    """
    total_brokers = sum(dc.brokers + dc.observers for dc in stretch.dcs.values())
    next_broker = 1
    next_controller = 101 if total_brokers < 101 else 1001
    dcs: list[DataCenter] = []
    for name, dc in stretch.dcs.items():
        brokers = tuple(range(next_broker, next_broker + dc.brokers))
        next_broker += dc.brokers
        observers = tuple(range(next_broker, next_broker + dc.observers))
        next_broker += dc.observers
        controllers = tuple(range(next_controller, next_controller + dc.controllers))
        next_controller += dc.controllers
        dcs.append(DataCenter(name, brokers, observers, controllers))
    _check_topics(stretch)
    return Layout(tuple(dcs), dict(stretch.topics))


def _check_topics(stretch: Stretch) -> None:
    findings = stretch_findings(stretch)
    if findings:
        key_path, what = findings[0]
        raise TopologyError(f"{'.'.join(key_path)}: {what}")
