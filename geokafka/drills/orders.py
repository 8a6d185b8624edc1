"""Realistic traffic for demos and drills: an order stream with acks=all and a consumer group, written with
geokafka's client library, so both follow a failover of their flow on their own, as applications would.

Both sides remember exactly what happened (acked source offsets, consumed source positions),
so RPO, RTO and duplicates can be measured by direct comparison, not estimated.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
import uuid

from confluent_kafka import KafkaError, KafkaException

from geokafka.client import FollowingConsumer, FollowingProducer
from geokafka.control.provenance import source_position
from geokafka.topology import Topology


class OrderStream:
    """Produces orders (key = customer, JSON value, headers) at ``rate`` per second until stopped, through a
    :class:`~geokafka.client.FollowingProducer` of ``flow``: at the flow's source while it is active, at its target
    once it failed over, without a restart."""

    def __init__(self, topology: Topology, flow: str, topic: str, rate: float = 400.0) -> None:
        self.topic, self.rate = topic, rate
        self.source = topology.flow(flow).source
        self.acked: set[tuple[int, int]] = set()
        """(partition, offset) of every order the flow's source acknowledged."""
        self.acked_elsewhere = 0
        """Orders acknowledged by the flow's target, after the producer followed the failover there."""
        self.acks_per_second: dict[int, int] = {}
        self.errors = 0
        self.last_ack_ms = 0
        self._stop = threading.Event()
        # linger 20 ms: the same acks, a third of the Python CPU of 5 ms (0.38 -> 0.14 core at
        # 300 orders/s here), which the demo's mirror shares this process and machine with.
        self._producer = FollowingProducer(topology, flow, {
            "acks": "all", "linger.ms": 20, "enable.idempotence": True, "message.timeout.ms": 4000,
        })
        self._thread = threading.Thread(target=self._run, name="order-stream", daemon=True)

    def _on_delivery(self, err: KafkaError | None, msg: object) -> None:
        if err is not None:
            self.errors += 1
            return
        now_ms = int(time.time() * 1000)
        if self._producer.cluster == self.source:  # served by poll() in the producing thread: who acknowledged it
            self.acked.add((msg.partition(), msg.offset()))  # type: ignore[attr-defined]
        else:
            self.acked_elsewhere += 1
        self.last_ack_ms = now_ms
        self.acks_per_second[now_ms // 1000] = self.acks_per_second.get(now_ms // 1000, 0) + 1

    def _run(self) -> None:
        rng = random.Random(7)
        i = 0
        started = time.monotonic()
        while not self._stop.is_set():
            customer = f"customer-{rng.randrange(500):04d}"
            order = {"order_id": i, "customer": customer, "amount": round(rng.uniform(5, 500), 2),
                     "items": rng.randrange(1, 6), "currency": "USD"}
            try:
                self._producer.produce(
                    self.topic, key=customer.encode(), value=json.dumps(order).encode(),
                    headers=[("source-app", b"checkout"), ("trace-id", uuid.uuid4().hex.encode())],
                    on_delivery=self._on_delivery,
                )
            except (BufferError, KafkaException):
                self.errors += 1
            self._producer.poll(0)
            i += 1
            delay = started + i / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        with contextlib.suppress(KafkaException):  # a producer failed for good has nothing more to deliver
            self._producer.close(5)

    def start(self) -> OrderStream:
        """Start producing in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop producing and wait for outstanding acks (or their failure)."""
        self._stop.set()
        self._thread.join(15)


class GroupReader:
    """A member of ``group`` reading ``topic`` through a :class:`~geokafka.client.FollowingConsumer` of ``flow``: at
    the flow's source, then at its target once the flow failed over, without a restart; it commits after every
    batch and records what it read.

    ``at_source`` and ``at_target`` hold the *source* coordinates of every record of the flow's source it read
    (from the record itself at the source, from ``gk.src`` on the target's replica), so reads before and after a
    failover can be compared for duplicates and gaps; orders written at the target after it are counted apart.
    """

    def __init__(self, topology: Topology, flow: str, group: str, topic: str) -> None:
        spec = topology.flow(flow)
        self.source, self.target = spec.source, spec.target
        self.at_source: list[tuple[int, int]] = []
        self.at_target: list[tuple[int, int]] = []
        self.new_at_target = 0
        self.first_read_ms: int | None = None
        self.first_at_target_ms: int | None = None
        self.switched_ms: int | None = None
        self._stop = threading.Event()
        self._consumer = FollowingConsumer(topology, flow, group, [topic], {"session.timeout.ms": 6000},
                                           on_switch=self._switched)
        self._thread = threading.Thread(target=self._run, name=f"reader-{group}", daemon=True)

    @property
    def positions(self) -> list[tuple[int, int]]:
        """Source coordinates of every source record read, at either site."""
        return self.at_source + self.at_target

    def _switched(self, _switch: object) -> None:
        self.switched_ms = int(time.time() * 1000)

    def _run(self) -> None:
        consumer = self._consumer
        try:
            while not self._stop.is_set():
                good = [m for m in consumer.consume(200, timeout=0.3) if m.error() is None]
                at_target = consumer.cluster == self.target
                for m in good:
                    src = source_position(m.headers())
                    if at_target and src is not None and src.cluster == self.source:
                        self.at_target.append((src.partition, src.offset))
                    elif at_target:
                        self.new_at_target += 1
                    elif src is None:
                        partition, offset = m.partition(), m.offset()
                        if partition is not None and offset is not None:
                            self.at_source.append((partition, offset))
                if good:
                    now_ms = int(time.time() * 1000)
                    self.first_read_ms = self.first_read_ms or now_ms
                    if at_target:
                        self.first_at_target_ms = self.first_at_target_ms or now_ms
                    with contextlib.suppress(Exception):  # the site may be dying; the next commit retries
                        consumer.commit(asynchronous=True)
        finally:
            with contextlib.suppress(Exception):  # closing against a dead cluster
                consumer.close()

    def start(self) -> GroupReader:
        """Start reading in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop reading."""
        self._stop.set()
        self._thread.join(60)
