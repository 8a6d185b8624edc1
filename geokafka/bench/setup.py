"""The bench topology (two 1-broker local clusters), the data loader and target counters."""

from __future__ import annotations

import os
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from geokafka import contract
from geokafka.control.admin import silent_logger
from geokafka.infra.processes import jvm_options_from_env
from geokafka.pipeline.flow_jobs import selection_refresh_s
from geokafka.topology import Topology, parse_topology

SRC_PORT, DST_PORT = 24092, 25092
WIRE_COMPRESSION = contract.WRITER_COMPRESSION
"""How every contender's writer compresses: geokafka's default, so each is measured as its users run it."""
BENCH_JVM_OPTIONS_ENV = "GEOKAFKA_BENCH_JVM_OPTS"
"""Extra JVM options for the bench's own JVMs (the copy loop, MirrorMaker 2, Kafka's perf tools), space-separated,
after their own: the test suite's quick bench gives them the quick compiler, as its brokers and Spark get theirs
(``GEOKAFKA_LOCAL_JVM_OPTS``, ``GEOKAFKA_SPARK_JVM_OPTS``); the report's ``jvm_options`` says what was set. The copy
loop and MirrorMaker 2 run G1: an option that selects another collector stops them."""


def contender_jvm_options() -> list[str]:
    """The options of :data:`BENCH_JVM_OPTIONS_ENV` (none when unset)."""
    return jvm_options_from_env(BENCH_JVM_OPTIONS_ENV)


SRC = f"127.0.0.1:{SRC_PORT}"
DST = f"127.0.0.1:{DST_PORT}"

BENCH_TOPOLOGY = """
clusters:
  src:
    bootstrap: {src}
    local: {{brokers: 1, heap_mb: 768}}
  dst:
    bootstrap: {dst}
    local: {{brokers: 1, heap_mb: 768}}
flows:
  {flow}:
    source: src
    target: dst
    topics: {topics}
    rename: prefix
    separator: "{separator}"
    sync: [configs, partitions]
pipeline:
  state_dir: {state_dir}
  mode: {mode}
  trigger_ms: 0  # micro-batch mode only: a batch as soon as the last one ends
  max_records_per_batch: {max_batch}
"""


@dataclass(frozen=True)
class TopicSet:
    """``topics`` topics of ``partitions`` partitions each: ``<prefix>.000``, ``<prefix>.001``, ... (one topic is
    ``prefix`` itself), as real clusters spread their partitions over many topics."""

    prefix: str
    topics: int = 1
    partitions: int = 1

    @property
    def names(self) -> list[str]:
        """Every topic's name."""
        return [self.prefix] if self.topics == 1 else [f"{self.prefix}.{i:03d}" for i in range(self.topics)]

    @property
    def total_partitions(self) -> int:
        """Partitions over every topic."""
        return self.topics * self.partitions

    @property
    def pattern(self) -> str:
        """A regular expression matching these topics' names and no other name but a later one of theirs
        (:attr:`newcomer`): a flow's topic selection, MM2's topics."""
        return re.escape(self.prefix) + ("" if self.topics == 1 else r"\.[0-9][0-9][0-9]")

    @property
    def newcomer(self) -> str:
        """A topic :attr:`pattern` matches that is not one of the set's: what a replicator over the set picks up once it
        is created (a set of many topics only)."""
        if not 1 < self.topics < 999:
            raise ValueError(f"topic set {self.prefix}: a newcomer needs a set of 2 to 998 topics, not {self.topics}")
        return f"{self.prefix}.999"

    def targets(self, prefix: str) -> list[str]:
        """Every replica's name on the target under ``prefix``."""
        return [prefix + name for name in self.names]


def as_set(topic: str | TopicSet, partitions: int = 1) -> TopicSet:
    """A single topic as a set of one."""
    return topic if isinstance(topic, TopicSet) else TopicSet(topic, 1, partitions)


def bench_topology_text(state_dir: Path, topics: list[str] | None = None, max_batch: int = 200_000,
                        mode: str = "real-time", patterns: Sequence[str] = ()) -> str:
    """YAML of the bench topology; the one flow ``bench`` replicates exactly ``topics`` and the topics ``patterns``
    match (src -> dst, prefix), with geokafka's defaults (master local[*], partition groups = cores) but for
    ``mode``."""
    every = [re.escape(t) for t in topics or []] + list(patterns) or [re.escape("bench-none")]
    regexes = "[" + ", ".join('"' + p.replace("\\", "\\\\") + '"' for p in every) + "]"
    flow, separator = bench_flow(mode)
    return BENCH_TOPOLOGY.format(src=SRC, dst=DST, topics=regexes, state_dir=state_dir.absolute(), max_batch=max_batch,
                                 mode=mode, flow=flow, separator=separator)


def bench_flow(mode: str) -> tuple[str, str]:
    """The bench flow's name and naming separator in ``mode``: the micro-batch run copies the same topics to
    ``src-<topic>``, beside the default run's ``src.<topic>``, with progress of its own."""
    return ("bench", ".") if mode == "real-time" else (f"bench-{mode}", "-")


def bench_topology(state_dir: Path, topics: list[str] | None = None) -> Topology:
    """The parsed bench topology."""
    return parse_topology(bench_topology_text(state_dir, topics), "<bench topology>")


def topic_refresh_s() -> int:
    """How often geokafka's bench flow looks for new topics (its defaults, whole seconds): MirrorMaker 2's
    ``refresh.topics.interval.seconds`` in the bench, so a new topic is picked up by both on the same period."""
    topology = bench_topology(Path("."))
    refresh, _ = selection_refresh_s(topology, next(iter(topology.flows.values())))
    return max(1, round(refresh))


def _admin(bootstrap: str):  # type: ignore[no-untyped-def]
    from confluent_kafka.admin import AdminClient

    config: dict[str, Any] = {"logger": silent_logger(), "bootstrap.servers": bootstrap}
    return AdminClient(config)


def create_topic(bootstrap: str, topic: str | Sequence[str], partitions: int) -> None:
    """Create ``topic`` (or every topic of a list, in one request; RF 1); an existing topic is left as it is."""
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import NewTopic

    from geokafka.control.admin import kafka_error_code

    names = [topic] if isinstance(topic, str) else list(topic)
    admin = _admin(bootstrap)  # kept referenced until the futures resolve
    futures = admin.create_topics([NewTopic(name, partitions, 1) for name in names], operation_timeout=120)
    for fut in futures.values():
        try:
            fut.result(timeout=180)
        except Exception as exc:
            if kafka_error_code(exc) != KafkaError.TOPIC_ALREADY_EXISTS:
                raise


def load(bootstrap: str, topic: str | TopicSet, records: int, size: int, partitions: int) -> float:
    """Create ``topic`` (or every topic of a set) and write ``records`` records of ``size`` value bytes, keyed,
    with 2 headers, spread evenly over every partition.

    Returns the seconds the load took. Values are random bytes (incompressible-ish; lz4 gains little).
    """
    from confluent_kafka import Producer

    topics = as_set(topic, partitions)
    create_topic(bootstrap, topics.names, topics.partitions)
    producer = Producer({"logger": silent_logger(),
                         "bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20, "batch.size": 1_000_000,
                         "compression.type": "lz4", "queue.buffering.max.messages": 500_000})
    pool = os.urandom(size + 4096)
    headers: list[tuple[str, str | bytes | None]] = [("bench-h1", b"alpha"), ("bench-h2", b"0123456789")]
    t0 = time.monotonic()
    names, per_topic = topics.names, topics.partitions
    for i in range(records):
        off = (i * 131) % 4096
        spot = i % topics.total_partitions
        while True:
            try:
                producer.produce(names[spot // per_topic], pool[off:off + size], key=b"k%08d" % i, headers=headers,
                                 partition=spot % per_topic)
                break
            except BufferError:
                producer.poll(0.05)
        if i % 10_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    if remaining:
        raise RuntimeError(f"loading {topics.prefix}: {remaining} records not delivered")
    return time.monotonic() - t0


def partition_count(bootstrap: str, topic: str) -> int:
    """Partitions of ``topic`` (0 if missing)."""
    meta = _counter(bootstrap).list_topics(topic, timeout=10).topics.get(topic)
    return 0 if meta is None or meta.error is not None else len(meta.partitions)


def count(bootstrap: str, topic: str) -> int:
    """Records in ``topic`` as the sum of high watermarks (0 if missing). Includes markers of transactions."""
    from confluent_kafka import TopicPartition

    consumer = _counter(bootstrap)
    meta = consumer.list_topics(topic, timeout=5).topics.get(topic)
    if meta is None or meta.error is not None or not meta.partitions:
        return 0
    total = 0
    for p in meta.partitions:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=5, cached=False)
        total += max(high, 0)
    return total


_COUNTERS: dict[str, object] = {}


def _counter(bootstrap: str):  # type: ignore[no-untyped-def]
    from confluent_kafka import Consumer

    if bootstrap not in _COUNTERS:
        _COUNTERS[bootstrap] = Consumer({"logger": silent_logger(), "bootstrap.servers": bootstrap,
                                         "group.id": "geokafka-bench-counter",
                                         "enable.auto.commit": False})
    return _COUNTERS[bootstrap]
