"""Realistic traffic for demos and drills: an order stream with acks=all and a consumer group.

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
from dataclasses import dataclass, field

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer

from geokafka.control.connection import ClusterConnection
from geokafka.control.delivery import drain
from geokafka.control.provenance import source_position


class OrderStream:
    """Produces orders (key = customer, JSON value, headers) at ``rate`` per second until stopped."""

    def __init__(self, conn: ClusterConnection, topic: str, rate: float = 400.0) -> None:
        self.topic, self.rate = topic, rate
        self.acked: set[tuple[int, int]] = set()
        self.acks_per_second: dict[int, int] = {}
        self.errors = 0
        self.last_ack_ms = 0
        self._stop = threading.Event()
        # linger 20 ms: the same acks, a third of the Python CPU of 5 ms (0.38 -> 0.14 core at
        # 300 orders/s here), which the demo's mirror shares this process and machine with.
        self._producer = Producer(conn.librdkafka(**{
            "acks": "all", "linger.ms": 20, "enable.idempotence": True, "message.timeout.ms": 4000,
        }))
        self._thread = threading.Thread(target=self._run, name="order-stream", daemon=True)

    def _on_delivery(self, err: KafkaError | None, msg: object) -> None:
        if err is not None:
            self.errors += 1
            return
        now_ms = int(time.time() * 1000)
        self.acked.add((msg.partition(), msg.offset()))  # type: ignore[attr-defined]
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
            except BufferError:
                pass
            self._producer.poll(0)
            i += 1
            delay = started + i / self.rate - time.monotonic()
            if delay > 0:
                time.sleep(delay)
        with contextlib.suppress(KafkaException):  # a producer failed for good has nothing more to deliver
            drain(self._producer, 5)

    def start(self) -> OrderStream:
        """Start producing in the background."""
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop producing and wait for outstanding acks (or their failure)."""
        self._stop.set()
        self._thread.join(15)


@dataclass
class GroupReader:
    """A consumer group member that commits after every poll batch and records what it read.

    ``positions`` holds the *source* coordinates of every record read (from ``gk.src`` on a
    replica, from the record itself on the source), so reads before and after a failover
    can be compared for duplicates and gaps.
    """

    conn: ClusterConnection
    topics: list[str]
    group: str
    origin_cluster: str
    positions: list[tuple[int, int]] = field(default_factory=list)
    first_read_ms: int | None = None
    ready_ms: int | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None

    def _run(self) -> None:
        consumer = Consumer(self.conn.librdkafka(**{
            "group.id": self.group, "auto.offset.reset": "earliest", "enable.auto.commit": False,
            "session.timeout.ms": 6000,
        }))
        def on_assign(_consumer: Consumer, partitions: list) -> None:
            if partitions and self.ready_ms is None:
                self.ready_ms = int(time.time() * 1000)

        consumer.subscribe(self.topics, on_assign=on_assign)
        try:
            while not self._stop.is_set():
                msgs = consumer.consume(200, timeout=0.3)
                good = [m for m in msgs if m.error() is None]
                for m in good:
                    src = source_position(m.headers())
                    if src is not None and src.cluster == self.origin_cluster:
                        self.positions.append((src.partition, src.offset))
                    elif src is None:
                        partition, offset = m.partition(), m.offset()
                        if partition is not None and offset is not None:
                            self.positions.append((partition, offset))
                if good:
                    if self.first_read_ms is None:
                        self.first_read_ms = int(time.time() * 1000)
                    try:
                        consumer.commit(asynchronous=False)
                    except Exception:  # noqa: BLE001 - the site may be dying; the next commit retries
                        pass
        finally:
            try:
                consumer.close()
            except Exception:  # noqa: BLE001 - closing against a dead cluster
                pass

    def start(self) -> GroupReader:
        """Start reading in the background."""
        self._thread = threading.Thread(target=self._run, name=f"reader-{self.group}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop reading."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(20)
