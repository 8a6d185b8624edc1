"""In-memory stand-ins for the following clients' collaborators: the clients they wrap (the calls of
``geokafka.client._clients.ConsumerLike`` / ``ProducerLike``), a clock, and a role store
(geokafka's own ``InMemoryStateStore``) with helpers that write role records as failover and
failback do."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError

from geokafka.client.watch import RoleWatcher
from geokafka.control.state_records import Role
from geokafka.control.state_store import InMemoryStateStore
from geokafka.topology import parse_topology
from geokafka.topology.schema import Topology


def topology(rename: str = "prefix", groups: str = "[billing]") -> Topology:
    return parse_topology(f"""\
clusters:
  nyc: {{bootstrap: 127.0.0.1:19092}}
  atl: {{bootstrap: 127.0.0.1:29092}}
flows:
  nyc-to-atl: {{source: nyc, target: atl, topics: [orders, payments, "orders-.*"], rename: {rename}, groups: {groups},
               sync: [group-offsets]}}
""")


FLOW = "nyc-to-atl"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class Roles:
    """The target's state store and a watcher over it that reads only when told (no thread)."""

    def __init__(self, topo: Topology, clock: Clock) -> None:
        self.store = InMemoryStateStore("atl")
        self.watcher = RoleWatcher(self.store, FLOW, topo.flows[FLOW], clock=clock)
        self.watcher.refresh()
        self.at_ms = 1_764_000_000_000

    def write(self, role: str, **details: Any) -> None:
        self.at_ms += 1000
        self.store.write(Role(FLOW, role, self.at_ms, details))
        self.watcher.refresh()

    def failover_started(self) -> None:
        self.write(Role.FAILED_OVER, kind="failover")

    def failover_done(self) -> None:
        self.write(Role.FAILED_OVER, kind="failover", rpo={"records_lower": 0})

    def failed_back(self) -> None:
        self.write(Role.ACTIVE, failed_back_to="nyc")


@dataclass
class Message:
    _topic: str
    _partition: int
    _offset: int
    _error: KafkaError | None = None

    def topic(self) -> str:
        return self._topic

    def partition(self) -> int:
        return self._partition

    def offset(self) -> int:
        return self._offset

    def error(self) -> KafkaError | None:
        return self._error

    def value(self) -> bytes:
        return f"{self._topic}/{self._partition}@{self._offset}".encode()


@dataclass
class FakeConsumer:
    settings: dict[str, Any]
    subscribed: list[str] = field(default_factory=list)
    waiting: list[Message] = field(default_factory=list)
    stored: dict[tuple[str, int], int] = field(default_factory=dict)
    commits: list[bool] = field(default_factory=list)
    """``asynchronous`` of each commit."""
    consumed_calls: int = 0
    closed: bool = False

    @property
    def bootstrap(self) -> str:
        return str(self.settings["bootstrap.servers"])

    def subscribe(self, topics: list[str]) -> None:
        self.subscribed = list(topics)

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        assert not self.closed
        self.consumed_calls += 1
        batch, self.waiting = self.waiting[:num_messages], self.waiting[num_messages:]
        return batch

    def store_offsets(self, message: Any = None, offsets: Any = None) -> None:
        for tp in offsets or []:
            self.stored[(tp.topic, tp.partition)] = tp.offset

    def commit(self, *, asynchronous: bool = True) -> None:
        self.commits.append(asynchronous)

    def close(self) -> None:
        self.closed = True


class Consumers:
    """The consumer factory: every consumer made, in order."""

    def __init__(self) -> None:
        self.made: list[FakeConsumer] = []

    def __call__(self, settings: dict[str, Any]) -> FakeConsumer:
        self.made.append(FakeConsumer(settings))
        return self.made[-1]

    @property
    def last(self) -> FakeConsumer:
        return self.made[-1]


@dataclass
class Sent:
    topic: str
    kwargs: dict[str, Any]
    on_delivery: Callable[[Any, Any], None]


class FakeProducer:
    """Records are queued, then in flight (``send()``), then acknowledged (``ack()``); reports are served by poll."""

    def __init__(self, settings: dict[str, Any]) -> None:
        self.settings = settings
        self.queued: list[Sent] = []
        self.in_flight: list[Sent] = []
        self.written: list[Sent] = []
        self.reports: list[tuple[Sent, KafkaError | None]] = []
        self.purged = False

    @property
    def bootstrap(self) -> str:
        return str(self.settings["bootstrap.servers"])

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1, callback: Any = None,
                on_delivery: Any = None, timestamp: int = 0, headers: Any = None) -> None:
        assert not self.purged, "a record was produced to a producer that was retired"
        kwargs = {"value": value, "key": key, "timestamp": timestamp}
        self.queued.append(Sent(topic, kwargs, on_delivery))

    def send(self) -> None:
        self.in_flight += self.queued
        self.queued = []

    def ack(self) -> None:
        self.written += self.in_flight
        self.reports += [(s, None) for s in self.in_flight]
        self.in_flight = []

    def poll(self, timeout: float = -1) -> int:
        reports, self.reports = self.reports, []
        for sent, err in reports:
            sent.on_delivery(err, Message(sent.topic, 0, 0, err))
        return len(reports)

    def flush(self, timeout: float = -1) -> int:
        self.send()
        self.ack()
        self.poll(0)
        return 0

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        self.purged = True
        if in_queue:
            self.reports += [(s, KafkaError(KafkaError._PURGE_QUEUE)) for s in self.queued]
            self.queued = []
        if in_flight:
            self.reports += [(s, KafkaError(KafkaError._PURGE_INFLIGHT)) for s in self.in_flight]
            self.in_flight = []

    def __len__(self) -> int:
        return len(self.queued) + len(self.in_flight) + len(self.reports)


class Producers:
    def __init__(self) -> None:
        self.made: list[FakeProducer] = []

    def __call__(self, settings: dict[str, Any]) -> FakeProducer:
        self.made.append(FakeProducer(settings))
        return self.made[-1]

    @property
    def last(self) -> FakeProducer:
        return self.made[-1]


class Released:
    """The release of old clients, run inline so a test sees it at once."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, last_call: Callable[[], object]) -> None:
        self.calls += 1
        last_call()
