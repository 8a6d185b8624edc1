"""A consumer group member that follows its flow's failover, promote and failback on its own.

At-least-once: a record is committed once the application asked for more after receiving it (the
next :meth:`FollowingConsumer.poll` or :meth:`~FollowingConsumer.consume`, or :meth:`~FollowingConsumer.close`),
as Kafka's Java consumer commits what the previous poll returned; with ``enable.auto.commit: false``
only :meth:`~FollowingConsumer.commit` commits, everything returned so far. At a switch the group
resumes at the new cluster from the offsets the failover translated from what it had committed at the
old one (from the earliest where it has none there, never the latest): no record is skipped, and the
records processed since that commit are read again (duplicates, about a commit interval's worth).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from confluent_kafka import KafkaError, KafkaException, TopicPartition

from geokafka.client._clients import (
    ConsumerFactory,
    ConsumerLike,
    Release,
    check_topics,
    kafka_consumer,
    own_settings,
    release_in_background,
)
from geokafka.client.placement import Placement
from geokafka.client.switch import Step, Switch, consumer_step
from geokafka.client.watch import Clock, RoleWatcher, started_watcher
from geokafka.control.admin import raise_mapped
from geokafka.control.connection import ClusterConnection, connection
from geokafka.control.selection import select_groups
from geokafka.topology.schema import Topology

log = logging.getLogger("geokafka.client")

_SLICE_S = 0.2
"""A poll waits in slices this long, so a switch never waits for a long poll to end."""
_RESERVED = ("bootstrap.servers", "group.id", "enable.auto.offset.store", "auto.offset.reset")
_DEFAULTS: dict[str, Any] = {
    "enable.auto.commit": True,
    "auto.commit.interval.ms": 1000,  # what a switch reads again is what was processed since the last commit
    "topic.metadata.refresh.interval.ms": 5000,  # a topic created after the switch (the target's own) is read soon
    "isolation.level": "read_committed",
}
_MISSING_TOPIC = (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_TOPIC)


class FollowingConsumer:
    """A member of ``group`` reading ``topics`` (named as on the flow's source) wherever ``flow`` is active.

    ``config``: librdkafka settings for the consumer (not ``bootstrap.servers``, ``group.id``,
    ``auto.offset.reset`` or ``enable.auto.offset.store``, which it sets). ``on_switch`` is called
    in the caller's thread after each switch. ``settle_timeout_s``: how long to wait, after the flow
    moved, for the failover to move the group before resuming without it. ``watcher``,
    ``consumer_factory``, ``release`` and ``clock`` are for tests.
    """

    def __init__(self, topology: Topology, flow: str, group: str, topics: Sequence[str],
                 config: Mapping[str, Any] | None = None, on_switch: Callable[[Switch], None] | None = None, *,
                 settle_timeout_s: float = 120.0, watch_interval_s: float = 0.5, role_timeout_s: float = 15.0,
                 watcher: RoleWatcher | None = None, consumer_factory: ConsumerFactory = kafka_consumer,
                 release: Release = release_in_background, clock: Clock = time.monotonic) -> None:
        spec = topology.flow(flow)
        check_topics(flow, spec, topics)
        settings = own_settings(config, _RESERVED, "FollowingConsumer")
        self.flow, self.group, self.topics = flow, group, list(topics)
        self._settings = {**_DEFAULTS, **settings, "group.id": group, "enable.auto.offset.store": False,
                          "auto.offset.reset": "earliest"}
        self._auto_commit = str(self._settings["enable.auto.commit"]).lower() in ("true", "1")
        self._connections: dict[str, ClusterConnection] = {n: connection(topology, n) for n in (spec.source, spec.target)}
        self._on_switch = on_switch
        self._settle_timeout_s = settle_timeout_s
        self._factory, self._release, self._clock = consumer_factory, release, clock
        if not select_groups([group], spec):
            log.warning("flow %s does not sync group %s (its groups: %s): after a switch the group reads the other "
                        "cluster's topics from the earliest record", flow, group, ", ".join(spec.groups) or "none")
        self._own_watcher = watcher is None
        self._watcher = watcher or started_watcher(self._connections[spec.target], flow, spec, watch_interval_s,
                                                   role_timeout_s, clock)
        self._current: Placement | None = None
        self._consumer: ConsumerLike | None = None
        self._subscription: list[str] = []
        self._returned: dict[tuple[str, int], int] = {}
        self._waiting_since: float | None = None
        self._missing_said: set[str] = set()
        self._closed = False
        try:
            self._follow()
        except BaseException:
            self.close()  # a refused setting: the watcher stops with it
            raise

    @property
    def cluster(self) -> str | None:
        """The cluster it reads from now (None: none yet, a failover is moving the group)."""
        return None if self._current is None else self._current.cluster

    @property
    def subscription(self) -> list[str]:
        """The topic names it reads at :attr:`cluster`."""
        return list(self._subscription)

    @property
    def placement(self) -> Placement:
        """The flow's placement as last read from its target."""
        return self._watcher.placement

    def poll(self, timeout: float | None = None) -> Any:
        """The next message (a confluent-kafka ``Message``), or None after ``timeout`` seconds (None: wait)."""
        batch = self._fetch(1, timeout)
        return batch[0] if batch else None

    def consume(self, num_messages: int = 1, timeout: float | None = None) -> list[Any]:
        """Up to ``num_messages`` messages, fewer after ``timeout`` seconds (None: wait for at least one)."""
        return self._fetch(num_messages, timeout)

    def commit(self, asynchronous: bool = True) -> None:
        """Commit everything returned so far at the current cluster (asynchronously by default, as confluent-kafka).

        A synchronous commit to a cluster that is gone waits for a coordinator for some 45 s (librdkafka's);
        once the flow is known to have moved away from it, every commit there is asynchronous.
        """
        self._follow()  # a switch first: what was returned at the old cluster is not committed at the new one
        if self._consumer is None or self._current is None:
            return
        self._store_returned()
        asynchronous = asynchronous or self._waiting_since is not None
        try:
            if asynchronous:
                self._consumer.commit(asynchronous=True)
            else:
                self._consumer.commit(asynchronous=False)
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError._NO_OFFSET:
                return
            raise_mapped(self._connections[self._current.cluster], f"committing group {self.group}'s offsets", exc)

    def close(self) -> None:
        """Commit what was returned (with auto-commit), leave the group, stop watching."""
        if self._closed:
            return
        self._closed = True
        if self._own_watcher:
            self._watcher.stop()
        if self._consumer is not None:
            if self._auto_commit:
                self._store_returned()
            with contextlib.suppress(KafkaException, RuntimeError):
                self._consumer.close()
            self._consumer = None

    def __enter__(self) -> FollowingConsumer:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def _fetch(self, num_messages: int, timeout: float | None) -> list[Any]:
        if self._closed:
            raise RuntimeError("the consumer is closed")
        if self._auto_commit:
            self._store_returned()  # the application asked for more: what it got before is processed
        deadline = None if timeout is None or timeout < 0 else self._clock() + timeout
        while True:
            self._follow()
            left = _SLICE_S if deadline is None else max(0.0, min(_SLICE_S, deadline - self._clock()))
            if self._consumer is None or self._waiting_since is not None:
                time.sleep(left)
                batch = []
            else:
                batch = [m for m in self._consumer.consume(num_messages, left) if self._wanted(m)]
            if batch:
                for message in batch:
                    if message.error() is None:
                        self._returned[(message.topic(), message.partition())] = message.offset() + 1
                return batch
            if deadline is not None and self._clock() >= deadline:
                return []

    def _follow(self) -> None:
        """Switch, wait or stay, as the flow's latest placement says (in the caller's thread)."""
        observed, since = self._watcher.placement, self._watcher.since
        step = consumer_step(self._current, observed, since, self._clock(), self._settle_timeout_s)
        if step is Step.STAY:
            self._waiting_since = None
        elif step is Step.WAIT:
            if self._waiting_since is None:
                self._waiting_since = self._clock()
                log.info("flow %s: %s; group %s stops reading at %s until the move of its offsets is done", self.flow,
                         observed.describe(), self.group, self.cluster or "any cluster")
                if self._consumer is not None:  # what was processed, for the failover to translate (if it still answers)
                    with contextlib.suppress(KafkaException, RuntimeError):
                        self._consumer.commit(asynchronous=True)
        else:
            self._switch(observed)

    def _switch(self, observed: Placement) -> None:
        before, old = self._current, self._consumer
        waited = 0.0 if self._waiting_since is None else self._clock() - self._waiting_since
        self._returned.clear()  # offsets at the old cluster: stored there (auto-commit), or the application's to commit
        if old is not None:
            self._release(old.close)  # commits what is stored and leaves the group, however long a dead cluster takes
        topics = observed.consumer_topics(self.topics)
        consumer = self._factory(self._connections[observed.cluster].librdkafka(**self._settings))
        consumer.subscribe(topics)
        self._consumer, self._current, self._subscription, self._waiting_since = consumer, observed, topics, None
        if before is None:
            log.info("flow %s: group %s reads %s at %s (%s)", self.flow, self.group, ", ".join(topics),
                     observed.cluster, observed.describe())
            return
        switch = Switch(self.flow, f"consumer {self.group}", before.cluster, observed.cluster, observed, tuple(topics),
                        waited)
        log.warning("%s", switch.describe())
        if self._on_switch is not None:
            self._on_switch(switch)

    def _store_returned(self) -> None:
        if not self._returned or self._consumer is None:
            return
        offsets = [TopicPartition(t, p, o) for (t, p), o in self._returned.items()]
        self._returned.clear()
        try:
            self._consumer.store_offsets(offsets=offsets)
        except KafkaException as exc:  # a partition revoked meanwhile: its next owner reads those records again
            log.debug("group %s: offsets not stored: %s", self.group, exc)

    def _wanted(self, message: Any) -> bool:
        """Everything but "topic does not exist": the target's own topic may be created after the switch."""
        error = message.error()
        if error is None or error.code() not in _MISSING_TOPIC:
            return True
        if error.str() not in self._missing_said:
            self._missing_said.add(error.str())
            log.info("flow %s: group %s at %s: %s (read once it exists)", self.flow, self.group, self.cluster,
                     error.str())
        return False
