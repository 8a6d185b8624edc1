"""Reads a flow's role from its target's state topic, now and then, in a background thread.

The watcher only reads and publishes an immutable :class:`~geokafka.client.placement.Placement`;
the clients that use it switch in their caller's thread. It never contacts the flow's source, so
a dead source cannot slow it down. While the target cannot be read, the last placement read
stays (a target that does not answer changes nothing about which site is active).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from geokafka.client.placement import Placement, placement_of
from geokafka.control.connection import ClusterConnection, connection
from geokafka.control.state_records import Role
from geokafka.control.state_store import KafkaStateStore, StateStore
from geokafka.errors import ClusterUnreachableError, GeokafkaError
from geokafka.topology.schema import Flow, Topology

log = logging.getLogger("geokafka.client")

Clock = Callable[[], float]


class RoleWatcher:
    """The latest placement of one flow, read from ``store`` (its target's state) every ``interval_s``;
    ``owns_store``: the watcher closes ``store`` once it has stopped."""

    def __init__(self, store: StateStore, flow_name: str, spec: Flow, *, interval_s: float = 0.5,
                 read_timeout_s: float = 10.0, clock: Clock = time.monotonic, owns_store: bool = False) -> None:
        self.store = store
        self._owns_store = owns_store
        self.flow_name = flow_name
        self.spec = spec
        self.interval_s = interval_s
        self.read_timeout_s = read_timeout_s
        self.clock = clock
        self.reads = 0
        self.last_error: str | None = None
        self._placement = Placement(flow_name, spec)
        self._since = clock()
        self.read_at: float | None = None
        """Clock time of the last read that worked (None: none yet)."""
        self._read_once = False
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def placement(self) -> Placement:
        """The placement last read (the flow's source until a first read says otherwise)."""
        with self._lock:
            return self._placement

    @property
    def since(self) -> float:
        """Clock time at which the current placement's site (:attr:`Placement.site_key`) was first read."""
        with self._lock:
            return self._since

    def refresh(self, timeout_s: float | None = None) -> Placement:
        """Read the role now and publish it; raises the store's error when the target cannot be read."""
        snapshot = self.store.read(self.read_timeout_s if timeout_s is None else timeout_s)
        placement = placement_of(self.flow_name, self.spec, snapshot.record(Role, self.flow_name))
        with self._lock:
            self.reads += 1
            if placement.site_key != self._placement.site_key or not self._read_once:
                self._since = self.clock()
            self._placement, self._read_once, self.read_at = placement, True, self.clock()
        return placement

    def first_read(self, timeout_s: float) -> Placement:
        """The first read, before a client connects anywhere: a target that cannot be read is an error here."""
        try:
            return self.refresh(timeout_s)
        except GeokafkaError as exc:
            raise ClusterUnreachableError(
                f"flow {self.flow_name}: its role cannot be read on {self.spec.target}, so the active cluster is "
                f"unknown: {exc}") from None

    def start(self) -> RoleWatcher:
        """Read every ``interval_s`` in a daemon thread until :meth:`stop`."""
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name=f"geokafka-role-{self.flow_name}", daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        """Stop reading (a read under way ends within its time-out, in its own thread, which then closes the store
        the watcher owns)."""
        self._stop.set()
        if self._thread is None and self._owns_store:
            self.store.close()

    def _run(self) -> None:
        try:
            self._watch()
        finally:
            if self._owns_store:
                self.store.close()

    def _watch(self) -> None:
        while not self._stop.wait(self.interval_s):
            try:
                self.refresh()
                if self.last_error is not None:
                    log.info("flow %s: its role can be read on %s again", self.flow_name, self.spec.target)
                self.last_error = None
            except Exception as exc:  # noqa: BLE001 - said once, retried next interval; the last placement stays
                reason = f"{type(exc).__name__}: {exc}"
                if reason != self.last_error:
                    log.warning("flow %s: its role cannot be read on %s (%s); still %s", self.flow_name,
                                self.spec.target, reason, self.placement.describe())
                self.last_error = reason


def watcher_for(topology: Topology, flow_name: str, *, interval_s: float = 0.5,
                read_timeout_s: float = 10.0, store: StateStore | None = None) -> RoleWatcher:
    """A watcher of ``flow_name`` over ``store`` (its target's state store; without one, a store of the watcher's
    own, closed when it stops)."""
    spec = topology.flow(flow_name)
    own = store is None
    reader = store or KafkaStateStore(connection(topology, spec.target))
    return RoleWatcher(reader, flow_name, spec, interval_s=interval_s, read_timeout_s=read_timeout_s, owns_store=own)


def started_watcher(target: ClusterConnection, flow_name: str, spec: Flow, interval_s: float, role_timeout_s: float,
                    clock: Clock) -> RoleWatcher:
    """A client's own watcher of ``flow_name`` on its ``target``: read once (an error when the target cannot be
    read: the active cluster is unknown), then every ``interval_s`` in the background. The watcher owns its store
    (closed when it stops)."""
    watcher = RoleWatcher(KafkaStateStore(target), flow_name, spec, interval_s=interval_s, clock=clock, owns_store=True)
    try:
        watcher.first_read(role_timeout_s)
    except BaseException:
        watcher.stop()
        raise
    return watcher.start()
