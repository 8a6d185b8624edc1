"""A producer that writes wherever its flow is active, and never to a site the flow failed over from.

It writes to the flow's source while the flow is active and to the topic's own name on the target
once the role record there says failed-over (``orders`` on the target, never the replica
``nyc.orders``); after a failback, to the source again. At a switch, records still queued for the old
cluster (never sent) are taken back and sent to the new one; records in flight to it get their
delivery report there for at most ``drain_timeout_s``, then a failure (they may or may not have
been written). Nothing is sent to the old cluster once the switch happened, and the switch happens
in the caller's next :meth:`~FollowingProducer.produce`, :meth:`~FollowingProducer.poll` or
:meth:`~FollowingProducer.flush` after the watcher read the role.

With ``site``, the producer writes at that cluster only and refuses, with
:class:`~geokafka.errors.FlowFailedOverError`, while the flow is active elsewhere: the split-brain
guard for applications that must never write across sites.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError

from geokafka.client._clients import (
    ProducerFactory,
    ProducerLike,
    Release,
    check_topics,
    kafka_producer,
    own_settings,
    release_in_background,
)
from geokafka.client.placement import Placement
from geokafka.client.switch import Switch
from geokafka.client.watch import Clock, RoleWatcher, started_watcher
from geokafka.control.connection import ClusterConnection, connection
from geokafka.errors import ClusterUnreachableError, FlowFailedOverError, TopologyError
from geokafka.topology.schema import Topology

log = logging.getLogger("geokafka.client")

DeliveryCallback = Callable[[Any, Any], None]
_DEFAULTS: dict[str, Any] = {"enable.idempotence": True, "acks": "all"}


@dataclass(frozen=True)
class _Send:
    """One produce call as the application made it: what a record taken back from the old cluster is sent as."""

    topic: str
    kwargs: dict[str, Any]
    on_delivery: DeliveryCallback | None


@dataclass
class _Draining:
    producer: ProducerLike
    cluster: str
    until: float


class FollowingProducer:
    """Produces to ``flow``'s active cluster (``topics`` named as on the flow's source).

    ``config``: librdkafka producer settings (not ``bootstrap.servers``; idempotence is on unless
    turned off). ``site``: write only at this cluster, refuse elsewhere. ``role_max_age_s``: refuse
    (:class:`~geokafka.errors.ClusterUnreachableError`) while the role could not be read for longer
    than this (None: keep writing where the last read said). ``on_switch`` is called in the caller's
    thread after each switch. ``watcher``, ``producer_factory``, ``release`` and
    ``clock`` are for tests.
    """

    def __init__(self, topology: Topology, flow: str, config: Mapping[str, Any] | None = None,
                 on_switch: Callable[[Switch], None] | None = None, *, site: str | None = None,
                 drain_timeout_s: float = 5.0, role_max_age_s: float | None = None, watch_interval_s: float = 0.5,
                 role_timeout_s: float = 15.0,
                 watcher: RoleWatcher | None = None, producer_factory: ProducerFactory = kafka_producer,
                 release: Release = release_in_background, clock: Clock = time.monotonic) -> None:
        spec = topology.flow(flow)
        if site is not None and site not in (spec.source, spec.target):
            raise TopologyError(f"site {site!r} is neither the source ({spec.source}) nor the target ({spec.target}) "
                                f"of flow {flow}")
        self.flow, self.site = flow, site
        self._spec = spec
        self._settings = {**_DEFAULTS, **own_settings(config, ("bootstrap.servers",), "FollowingProducer")}
        self._connections: dict[str, ClusterConnection] = {n: connection(topology, n) for n in (spec.source, spec.target)}
        self._on_switch = on_switch
        self._drain_timeout_s = drain_timeout_s
        self._role_max_age_s = role_max_age_s
        self._factory, self._release, self._clock = producer_factory, release, clock
        self._own_watcher = watcher is None
        self._watcher = watcher or started_watcher(self._connections[spec.target], flow, spec, watch_interval_s,
                                                   role_timeout_s, clock)
        self._current: Placement | None = None
        self._producer: ProducerLike | None = None
        self._draining: list[_Draining] = []
        self._checked: set[str] = set()
        self._closed = False
        self.sent: dict[str, int] = {}
        """Cluster -> records handed to its producer (a record taken back at a switch counts at both)."""
        self.taken_back = 0
        """Records queued for the old cluster at a switch, unacknowledged there, and sent to the new one instead."""
        self.taken_back_keys: list[bytes | None] = []
        """Their keys. A record librdkafka had sent once and queued again for a retry when the old cluster stopped
        answering may be in that cluster's log as well: `reconcile --replay --skip-keys` passes over these keys."""
        try:
            self._follow(refuse=False)
        except BaseException:
            self._closed = True  # a refused setting: the watcher stops with it
            if self._own_watcher:
                self._watcher.stop()
            raise

    @property
    def cluster(self) -> str | None:
        """The cluster it writes to now (None: refusing, with ``site``)."""
        return None if self._producer is None or self._current is None else self._current.cluster

    @property
    def placement(self) -> Placement:
        """The flow's placement as last read from its target."""
        return self._watcher.placement

    def produce(self, topic: str, value: bytes | str | None = None, key: bytes | str | None = None, *,
                partition: int | None = None, on_delivery: DeliveryCallback | None = None, timestamp: int = 0,
                headers: Any = None) -> None:
        """Send one record to ``topic`` (its name on the source) at the active cluster; as confluent-kafka's
        ``Producer.produce``: asynchronous, ``on_delivery(err, msg)`` served by :meth:`poll` and :meth:`flush`.

        Raises :class:`~geokafka.errors.FlowFailedOverError` when pinned to a ``site`` the flow is not active at.
        """
        if self._closed:
            raise RuntimeError("the producer is closed")
        if topic not in self._checked:
            check_topics(self.flow, self._spec, [topic])
            self._checked.add(topic)
        producer, placement = self._active()
        kwargs: dict[str, Any] = {"value": value, "key": key, "timestamp": timestamp}
        if partition is not None:
            kwargs["partition"] = partition
        if headers is not None:
            kwargs["headers"] = headers
        self._send(producer, placement, _Send(topic, kwargs, on_delivery))

    def poll(self, timeout: float = 0.0) -> int:
        """Serve delivery reports (and switch if the flow moved); returns how many were served."""
        self._follow(refuse=False)
        served = self._drain()
        return served + (self._producer.poll(timeout) if self._producer is not None else 0)

    def flush(self, timeout: float | None = None) -> int:
        """Wait until every record sent was delivered or failed; returns how many are still pending."""
        self._follow(refuse=False)
        deadline = None if timeout is None else self._clock() + timeout
        while self._draining and (deadline is None or self._clock() < deadline):
            self._drain()
            if self._draining:
                time.sleep(0.01)
        left = -1.0 if deadline is None else max(0.0, deadline - self._clock())
        pending = self._producer.flush(left) if self._producer is not None else 0
        return pending + sum(len(d.producer) for d in self._draining)

    def close(self, timeout: float = 30.0) -> int:
        """Flush (up to ``timeout`` seconds), stop watching; returns the records still undelivered."""
        if self._closed:
            return 0
        pending = self.flush(timeout)
        self._closed = True
        if self._own_watcher:
            self._watcher.stop()
        for draining in self._draining:
            self._end(draining)
        self._draining.clear()
        self._producer = None
        return pending

    def __len__(self) -> int:
        return (len(self._producer) if self._producer is not None else 0) + sum(len(d.producer) for d in self._draining)

    def __enter__(self) -> FollowingProducer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _active(self) -> tuple[ProducerLike, Placement]:
        """The producer of the active cluster and its placement; raises when refusing."""
        self._follow(refuse=True)
        read_at = self._watcher.read_at
        age = None if read_at is None else self._clock() - read_at
        if self._role_max_age_s is not None and (age is None or age > self._role_max_age_s):
            last = f" ({self._watcher.last_error})" if self._watcher.last_error else ""
            raise ClusterUnreachableError(
                f"flow {self.flow}: its role was not read on {self._spec.target} for "
                f"{'ever' if age is None else f'{age:.0f} s'}{last}: this producer refuses to write without knowing "
                f"where the flow is active (role_max_age_s={self._role_max_age_s:g})")
        if self._producer is None or self._current is None:  # _follow raised already when refusing
            raise FlowFailedOverError(f"flow {self.flow}: no cluster to write to")
        return self._producer, self._current

    def _send(self, producer: ProducerLike, placement: Placement, send: _Send) -> None:
        def delivered(err: Any, msg: Any) -> None:
            self._delivered(send, err, msg)

        producer.produce(placement.producer_topic(send.topic), on_delivery=delivered, **send.kwargs)
        self.sent[placement.cluster] = self.sent.get(placement.cluster, 0) + 1

    def _delivered(self, send: _Send, err: Any, msg: Any) -> None:
        if err is not None and err.code() == KafkaError._PURGE_QUEUE and self._producer is not None \
                and self._current is not None:
            # unacknowledged by the old cluster (only a switch purges queues): send it where the flow is now; one that
            # was queued again for a retry after a first send may have reached the old cluster's log too
            self.taken_back += 1
            key = send.kwargs.get("key")
            self.taken_back_keys.append(key.encode() if isinstance(key, str) else key)
            self._send(self._producer, self._current, send)
        elif send.on_delivery is not None:
            send.on_delivery(err, msg)

    def _follow(self, *, refuse: bool) -> None:
        observed = self._watcher.placement
        if self._current is not None and self._producer is not None and observed.cluster == self._current.cluster:
            self._current = observed
            return
        if self.site is not None and observed.cluster != self.site:
            old, self._producer = self._producer, None  # what was queued for it fails: nowhere to send it now
            if old is not None:
                self._retire(old, self._current.cluster if self._current else self.site, observed)
            self._current = observed
            if refuse:
                raise FlowFailedOverError(
                    f"flow {self.flow} is {observed.describe()}: this producer writes only at {self.site} and "
                    "refuses to write elsewhere")
            return
        before = self._current.cluster if self._current is not None and self._producer is not None else None
        old = self._producer
        self._producer = self._factory(self._connections[observed.cluster].librdkafka(**self._settings))
        self._current = observed
        if old is not None and before is not None:
            self._retire(old, before, observed)
        if before is None:
            log.info("flow %s: producer writes at %s (%s)", self.flow, observed.cluster, observed.describe())
            return
        switch = Switch(self.flow, "producer", before, observed.cluster, observed)
        log.warning("%s", switch.describe())
        if self._on_switch is not None:
            self._on_switch(switch)

    def _retire(self, producer: ProducerLike, cluster: str, observed: Placement) -> None:
        """Nothing more goes to ``producer``'s cluster: take back what is queued, wait a little for what is in flight."""
        producer.purge(in_queue=True, in_flight=False)
        draining = _Draining(producer, cluster, self._clock() + self._drain_timeout_s)
        self._draining.append(draining)
        producer.poll(0)  # the purged records' reports: each goes to the new producer, or fails (refusing)
        log.debug("flow %s: %d records in flight to %s when it became %s", self.flow, len(producer), cluster,
                  observed.describe())

    def _drain(self) -> int:
        served = 0
        for draining in list(self._draining):
            served += draining.producer.poll(0)
            if len(draining.producer) == 0 or self._clock() >= draining.until:
                self._end(draining)
                self._draining.remove(draining)
        return served

    def _end(self, draining: _Draining) -> None:
        """Fail what is still in flight (it may or may not have been written) and let the client go."""
        producer = draining.producer
        if len(producer):
            log.warning("flow %s: %d records sent to %s before the switch got no answer in %.0f s: reported failed "
                        "(they may have been written there)", self.flow, len(producer), draining.cluster,
                        self._drain_timeout_s)
            producer.purge(in_queue=True, in_flight=True)
            producer.poll(0)
        self._release(lambda: producer.flush(0))
