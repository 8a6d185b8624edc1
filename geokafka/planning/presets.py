"""Built-in stretched layouts: the four of the source documents (1, 2, 2.5 and 3 DCs).

``geokafka plan --layout`` and ``geokafka drill stretch --layout`` accept these names, so the
documents' layouts can be planned and drilled without editing the topology file. Each preset
has its own port range inside the drill's 31000-31999: below Linux's ephemeral range
(32768-60999), because a client that keeps reconnecting to a killed broker's port inside that
range can be handed that very port as its source and connect to itself, which holds the port
and keeps the broker from starting again (seen in guard drills).
"""

from __future__ import annotations

from geokafka.errors import TopologyError
from geokafka.topology.schema import Stretch, StretchDC, StretchTopic

TOPOLOGY = "topology"
"""Name of the layout that is the topology file's own ``stretch:`` block."""


def _topic(rf: int, min_isr: int) -> dict[str, StretchTopic]:
    return {"orders": StretchTopic(partitions=6, replication_factor=rf, min_insync_replicas=min_isr, acks="all")}


PRESETS: dict[str, Stretch] = {
    # One DC: survives node failures, not the loss of the DC.
    "1dc": Stretch(
        dcs={"dc1": StretchDC(brokers=3, controllers=3)}, topics=_topic(3, 2), base_port=31892,
    ),
    # Two DCs, the quorum split 2+1: losing dc1 loses the quorum (the seed's manual failover).
    "2dc": Stretch(
        dcs={"dc1": StretchDC(brokers=2, controllers=2), "dc2": StretchDC(brokers=2, controllers=1)},
        topics=_topic(4, 3), base_port=31492,
    ),
    # Two DCs of brokers plus a tie-breaker controller in a third site.
    "2.5dc": Stretch(
        dcs={
            "dc1": StretchDC(brokers=2, controllers=1),
            "dc2": StretchDC(brokers=2, controllers=1),
            "dc3": StretchDC(controllers=1),
        },
        topics=_topic(4, 3), base_port=31692,
    ),
    # Three DCs, rack = DC, RF 3, min.isr 2, acks=all: the "easy way".
    "3dc": Stretch(
        dcs={f"dc{i}": StretchDC(brokers=1, controllers=1) for i in (1, 2, 3)},
        topics=_topic(3, 2), base_port=31292,
    ),
}


def resolve_layout(name: str, topology_stretch: Stretch | None) -> Stretch:
    """The ``stretch:`` block called ``name``: ``topology`` (the file's own) or a preset."""
    if name == TOPOLOGY:
        if topology_stretch is None:
            raise TopologyError(
                f"the topology file has no stretch: block; add one or use a preset ({', '.join(PRESETS)})"
            )
        return topology_stretch
    try:
        return PRESETS[name]
    except KeyError:
        raise TopologyError(f"unknown layout {name!r} (known: {TOPOLOGY}, {', '.join(PRESETS)})") from None
