"""Where a flow's applications should connect now: what `geokafka where` and ``/api/flows/<flow>`` say.

Read from the flow's target only (its role record and, for the topic names, its progress records),
so the answer comes as fast when the source is gone as when it is there.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from contextlib import closing
from typing import Any

from geokafka.client.placement import placement_dict, placement_of
from geokafka.control.connection import connection
from geokafka.control.state_records import Role
from geokafka.control.state_store import KafkaStateStore, StateStore
from geokafka.topology.schema import Topology


def where(topology: Topology, flow_name: str, topics: Iterable[str] = (), *, timeout_s: float = 10.0,
          store: StateStore | None = None) -> dict[str, Any]:
    """The active cluster of ``flow_name``, its bootstrap, since when, and per topic (named as on the
    source) the names to consume and to produce there.

    Without ``topics``: the topics the flow has replicated (its progress records) and the plain names
    among its ``topics`` regexes. Raises the state store's error when the target cannot be read. ``store``: the
    target's state store (a store of its own otherwise, closed after the read).
    """
    spec = topology.flow(flow_name)
    if store is not None:
        snapshot = store.read(timeout_s)
    else:
        with closing(KafkaStateStore(connection(topology, spec.target))) as own:
            snapshot = own.read(timeout_s)
    placement = placement_of(flow_name, spec, snapshot.record(Role, flow_name))
    names = list(topics) or sorted({t for t, _ in snapshot.progress(flow_name)} | plain_names(spec.topics))
    return placement_dict(placement, connection(topology, placement.cluster).bootstrap, names)


def plain_names(patterns: Iterable[str]) -> set[str]:
    """The regexes that match one name only, literally (``orders``, not ``orders-.*``)."""
    return {p.replace("\\", "") for p in patterns if re.fullmatch(r"(?:[A-Za-z0-9_-]|\\\.)+", p)}
