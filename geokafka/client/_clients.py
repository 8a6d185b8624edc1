"""The parts of confluent-kafka's clients the following clients use, and how an old one is let go."""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Protocol, overload

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

from geokafka.control.selection import select_topics
from geokafka.errors import TopologyError
from geokafka.topology.schema import Flow

log = logging.getLogger("geokafka.client")


class ConsumerLike(Protocol):
    """What a :class:`~geokafka.client.consumer.FollowingConsumer` calls on confluent-kafka's ``Consumer``."""

    def subscribe(self, topics: list[str]) -> None: ...

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Any]: ...

    def store_offsets(self, message: Any = None, offsets: list[TopicPartition] | None = None) -> None: ...

    @overload
    def commit(self, *, asynchronous: Literal[True] = ...) -> None: ...

    @overload
    def commit(self, *, asynchronous: Literal[False]) -> list[TopicPartition]: ...

    def close(self) -> None: ...


class ProducerLike(Protocol):
    """What a :class:`~geokafka.client.producer.FollowingProducer` calls on confluent-kafka's ``Producer``."""

    def produce(self, topic: str, value: str | bytes | None = None, key: str | bytes | None = None,
                partition: int = ..., callback: Any = None, on_delivery: Any = None, timestamp: int = 0,
                headers: Any = None) -> None: ...

    def poll(self, timeout: float = -1) -> int: ...

    def flush(self, timeout: float = -1) -> int: ...

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None: ...

    def __len__(self) -> int: ...


ConsumerFactory = Callable[[dict[str, Any]], ConsumerLike]
ProducerFactory = Callable[[dict[str, Any]], ProducerLike]
Release = Callable[[Callable[[], object]], None]
"""Runs the last call on a client that is no longer used (its close, or its end)."""


def kafka_consumer(settings: dict[str, Any]) -> ConsumerLike:
    """confluent-kafka's consumer."""
    consumer: ConsumerLike = Consumer(settings)
    return consumer


def kafka_producer(settings: dict[str, Any]) -> ProducerLike:
    """confluent-kafka's producer."""
    producer: ProducerLike = Producer(settings)
    return producer


def release_in_background(last_call: Callable[[], object]) -> None:
    """Run ``last_call`` in a daemon thread: closing a client of a dead cluster can wait for its time-outs,
    which must not delay the switch; the client is destroyed in that thread too."""
    def run() -> None:
        with contextlib.suppress(KafkaException, RuntimeError):
            last_call()

    threading.Thread(target=run, name="geokafka-client-release", daemon=True).start()


def own_settings(given: Mapping[str, Any] | None, reserved: Iterable[str], client: str) -> dict[str, Any]:
    """The application's librdkafka settings, refused when they set what the client sets itself."""
    settings = dict(given or {})
    taken = sorted(key for key in settings if key in set(reserved))
    if taken:
        raise ValueError(f"{client} sets {', '.join(taken)} itself (the bootstrap comes from the topology, "
                         "for whichever cluster is active)")
    return settings


def check_topics(flow_name: str, spec: Flow, topics: Sequence[str]) -> None:
    """Every topic must be one the flow replicates: otherwise the other site has nothing of it."""
    if isinstance(topics, str):
        raise ValueError("topics is a list of topic names, not one string")
    missing = [t for t in topics if not select_topics([t], spec)]
    if missing:
        raise TopologyError(f"flow {flow_name} does not replicate {', '.join(missing)} (its topics: "
                            f"{', '.join(spec.topics)}): a failover would find nothing of it on {spec.target}")
