"""Small helpers for tests that talk to the real test clusters."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from geokafka.control.connection import ClusterConnection

T = TypeVar("T")

# five workers (`./run tests`: the two cores were busy 74% of a 4-worker run and 89-96% of 5-worker ones; 19:53 of
# pytest with 4, 17:13-19:53 with 5: see the benchmark history), and a spare for the worker pytest-xdist starts in
# place of one that crashed (gw5: the crashed worker's clusters may still hold its ports);
# tests/unit/test_port_bases.py checks they share no port
DEFAULT_PORT_BASES = "20300,1500,1100,1700,1900,1300"


SHARED_PORT_BASE = 11500


def shared_port_base() -> int:
    """First port of the clusters every worker shares (east +92..94, west +1092, south +2092,
    controllers +100); GEOKAFKA_TEST_SHARED_PORT_BASE moves them (to run two suites side by side)."""
    return int(os.environ.get("GEOKAFKA_TEST_SHARED_PORT_BASE", SHARED_PORT_BASE))


def port_base() -> int:
    """First port of this test process's own clusters (the private east base+92, west +1092, south
    +2092 of ``integration/private/``, the fan-in test's north +3092, the restart test's target +4092, SASL +5092
    and +6092, the link-cut DC +7092, the partition-refusal cluster +8092, the policy cluster +9092; controllers
    +100; ``tests/unit/test_port_bases.py`` checks them all).

    GEOKAFKA_TEST_PORT_BASE is a comma-separated list (default 20300,1500,1100,1700,1900,1300): a run without
    pytest-xdist, or its worker gw0, takes the first, gw1 the second, and so on. The defaults keep
    every worker's ports below the kernel's ephemeral range (32768-60999) and clear of the ports
    fixed by the demo (17092-18192), the bench (24092, 24192, 25092, 25192), ``geokafka up`` in
    test_cli_clusters (27500-27899) and the drills (31000-31999).
    """
    bases = [int(b) for b in os.environ.get("GEOKAFKA_TEST_PORT_BASE", DEFAULT_PORT_BASES).split(",")]
    worker = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw"))
    if worker >= len(bases):
        raise RuntimeError(f"GEOKAFKA_TEST_PORT_BASE lists {len(bases)} port bases, not one for worker gw{worker}")
    return bases[worker]



def closed_port() -> int:
    """A loopback port nothing listens on (bound then released; nothing else grabs it in seconds)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])

@dataclass(frozen=True)
class Rec:
    """A record as read back from Kafka."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...]
    timestamp: int


def create_topic(
    conn: ClusterConnection, name: str, partitions: int = 3, rf: int = 1, config: dict[str, str] | None = None
) -> None:
    """Create ``name`` (a name only the calling test uses) and wait until it has ``partitions`` partitions, each with
    a leader."""
    admin = AdminClient(conn.librdkafka())
    futures = admin.create_topics([NewTopic(name, partitions, rf, config=config or {})], operation_timeout=30)
    try:
        futures[name].result(timeout=60)
    except KafkaException as exc:
        # CreateTopics is not idempotent: a request the client retried (the broker's forward to a busy KRaft
        # controller failed after the controller had created it; seen at load ~30) answers TOPIC_ALREADY_EXISTS
        # for a name only this test uses. Whether it is what was asked is checked below, as for any create.
        if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
            raise
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(name, timeout=10).topics.get(name)
        if md is not None and md.error is None and len(md.partitions) == partitions:
            if all(p.leader >= 0 for p in md.partitions.values()):
                return
        time.sleep(0.1)
    raise AssertionError(f"topic {name} not ready")


def produce(conn: ClusterConnection, topic: str, records: list[dict], **config: object) -> None:
    """Produce dicts with key/value/partition/headers/timestamp and wait for every ack."""
    producer = Producer(conn.librdkafka(**{"linger.ms": 5, "enable.idempotence": True, **config}))
    errors: list[str] = []

    def on_delivery(err, _msg):  # type: ignore[no-untyped-def]
        if err is not None:
            errors.append(str(err))

    for rec in records:
        kwargs = {k: rec[k] for k in ("key", "value", "partition", "headers", "timestamp") if k in rec}
        while True:
            try:
                producer.produce(topic, on_delivery=on_delivery, **kwargs)
                break
            except BufferError:
                producer.poll(0.1)
    producer.flush(60)
    assert not errors, errors[:3]


_MOVING = {KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
           KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
           KafkaError._TIMED_OUT}
"""A group coordinator or a partition leader still moving, loading or being elected: gone in moments."""


def retrying_while_moving(call: Callable[[], T], timeout_s: float = 30.0) -> T:
    """``call()`` (a group's commit or committed offsets, a partition's watermarks), waiting out a coordinator or
    leader that is still moving (freshly started clusters, a topic or partition created a moment ago, a busy
    machine) and other retriable errors."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return call()
        except KafkaException as exc:
            error = exc.args[0] if exc.args else None
            busy = error is not None and (error.code() in _MOVING or error.retriable())
            if not busy or time.monotonic() > deadline:
                raise
            time.sleep(0.2)


def watermarks(consumer: Consumer, tp: TopicPartition, timeout_s: float = 30.0) -> tuple[int, int]:
    """Low and high watermark of ``tp``, waiting out a leader the broker has not taken up yet."""
    return retrying_while_moving(lambda: consumer.get_watermark_offsets(tp, timeout=10), timeout_s)


def commit_retrying(consumer: Consumer, offsets: list[TopicPartition]) -> None:
    """Commit ``offsets`` for ``consumer``'s group, waiting out a coordinator that is still moving."""
    retrying_while_moving(lambda: consumer.commit(offsets=offsets, asynchronous=False))


def numbered_records(n: int, partitions: int, start: int = 0, *, size: int = 10,
                     headers: bool = False) -> list[dict]:
    """Records ``start`` .. ``start + n - 1``: key ``k<i>``, value ``<i>`` zero-padded (then padded
    with dots to ``size`` bytes), partition ``i % partitions``, timestamps one ms apart, and with
    ``headers`` one header ``h`` = ``<i>``."""
    now = int(time.time() * 1000)
    return [{"key": f"k{i}".encode(), "value": f"{i:010d}".encode().ljust(size, b"."), "partition": i % partitions,
             "timestamp": now + i, **({"headers": [("h", str(i).encode())]} if headers else {})}
            for i in range(start, start + n)]


def assert_same_records(source: list[Rec], target: list[Rec]) -> None:
    """Record for record, in order per partition: key, value, timestamp and user headers.
    Offsets are not compared: every transaction marker (commit or abort of a retried write)
    takes an offset on the target."""
    def fields(r: Rec) -> tuple:
        return r.partition, r.key, r.value, r.timestamp, tuple(h for h in r.headers if not h[0].startswith("gk."))

    assert [fields(r) for r in target] == [fields(r) for r in source]


def read_all(conn: ClusterConnection, topic: str, timeout_s: float = 30.0, isolation: str = "read_committed") -> list[Rec]:
    """Every record of ``topic`` from the beginning to the current end, in partition order."""
    admin = AdminClient(conn.librdkafka())
    md = admin.list_topics(topic, timeout=10).topics[topic]
    consumer = Consumer(conn.librdkafka(**{
        "group.id": "test-reader", "enable.auto.commit": False, "isolation.level": isolation,
        "enable.partition.eof": True,
    }))
    try:
        tps = [TopicPartition(topic, p) for p in sorted(md.partitions)]
        ends, starts = {}, {}
        for tp in tps:
            starts[tp.partition], ends[tp.partition] = watermarks(consumer, tp)
        # from the log start, which delete-records or retention may have moved past 0
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in ends])
        out: list[Rec] = []
        done = {p for p, hi in ends.items() if hi <= starts[p]}
        deadline = time.monotonic() + timeout_s
        while len(done) < len(ends) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                if msg.error().code() == -191:  # _PARTITION_EOF
                    if consumer.position([TopicPartition(topic, msg.partition())])[0].offset >= ends[msg.partition()]:
                        done.add(msg.partition())
                    continue
                raise KafkaException(msg.error())
            out.append(Rec(msg.partition(), msg.offset(), msg.key(), msg.value(),
                           tuple(msg.headers() or ()), msg.timestamp()[1]))
            if msg.offset() + 1 >= ends[msg.partition()]:
                done.add(msg.partition())
        return sorted(out, key=lambda r: (r.partition, r.offset))
    finally:
        consumer.close()


def throttle_producer(conn: ClusterConnection, client_id: str, bytes_per_s: int) -> None:
    """A broker quota on ``conn`` for the producer ``client_id`` (``kafka-configs --entity-type clients``): the
    broker delays its produce responses so that it writes at most ``bytes_per_s``. Nobody else is affected."""
    import subprocess

    from geokafka.artifacts.jars import kafka_classpath

    cmd = ["java", "-Xmx192m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", kafka_classpath(),
           "kafka.admin.ConfigCommand", "--bootstrap-server", conn.bootstrap, "--alter", "--entity-type", "clients",
           "--entity-name", client_id, "--add-config", f"producer_byte_rate={bytes_per_s}"]
    subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
