"""The clients one flow opens, registered and closed in one place (MirrorMaker 2's ``BackgroundResources``)."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.topology.schema import Topology


class Closeable(Protocol):
    """What the flow's resources can close."""

    def close(self) -> Any: ...


C = TypeVar("C", bound=Closeable)


@dataclass
class FlowClients:
    """The admin clients of a flow: for its work, and short-timeout ones for its watching jobs. Everything
    else the flow opens later (the offset index of the group sync) is :meth:`register`-ed here, and
    :meth:`close` closes it all, last opened first."""

    source_admin: ClusterAdmin
    observer: ClusterAdmin
    """The source, with a 2 s timeout: its jobs must not wait long on a source that died."""
    target_admin: ClusterAdmin
    target_probe: ClusterAdmin
    """The target, with a 2 s timeout: checked before writing state on the way out."""
    _stack: contextlib.ExitStack = field(default_factory=contextlib.ExitStack, repr=False)

    def __post_init__(self) -> None:
        for admin in (self.source_admin, self.observer, self.target_admin, self.target_probe):
            self.register(admin)

    @classmethod
    def connect(cls, topology: Topology, flow_name: str) -> FlowClients:
        """Clients for both clusters of a flow."""
        flow = topology.flows[flow_name]
        source, target = connection(topology, flow.source), connection(topology, flow.target)
        return cls(ClusterAdmin(source), ClusterAdmin(source, timeout_s=2.0), ClusterAdmin(target),
                   ClusterAdmin(target, timeout_s=2.0))

    def register(self, resource: C) -> C:
        """Close ``resource`` with the flow's clients."""
        self._stack.callback(_close_quietly, resource)
        return resource

    def close(self) -> None:
        """Close everything registered (a client that fails to close is gone anyway)."""
        self._stack.close()


def _close_quietly(resource: Closeable) -> None:
    with contextlib.suppress(Exception):
        resource.close()
