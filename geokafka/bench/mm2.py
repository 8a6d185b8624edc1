"""MirrorMaker 2 in dedicated mode (``org.apache.kafka.connect.mirror.MirrorMaker``) from the fetched jars.

Tuned like geokafka's writer where the settings exist: producer acks=all, batch.size=1000000,
compression as geokafka's default (``WIRE_COMPRESSION``), linger.ms 5; tasks.max = the machine's cores; topics
refreshed as often as geokafka's bench flow refreshes its selection.
Differences that stay:
MM2 runs twice: at-least-once, and exactly-once (KIP-618 ``dst.exactly.once.source.support=enabled``, set for the target,
transactional like geokafka; it needs the internal REST listener). Source aliases ``mm2src`` and
``mm2eos`` so that MM2's target topics (``mm2src.<topic>``) never clash with geokafka's (``src.<topic>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from geokafka.artifacts import jars
from geokafka.bench.replicator import run_replicator
from geokafka.bench.setup import DST, SRC, WIRE_COMPRESSION, TopicSet, as_set, contender_jvm_options, topic_refresh_s
from geokafka.infra import kafka_class_archive

LOG4J = Path(__file__).resolve().parents[1] / "infra" / "log4j2.properties"
ALIAS = "mm2src"
EOS_ALIAS = "mm2eos"
EOS_REST_PORT = 24083


def mm2_properties(patterns: list[str], tasks: int, exactly_once: bool = False) -> str:
    """The generated mm2.properties for replicating exactly the topics ``patterns`` (regular expressions) match."""
    alias = EOS_ALIAS if exactly_once else ALIAS
    regex = "|".join(p.replace("\\", "\\\\") for p in patterns)  # a backslash is an escape in .properties
    props = {
        "clusters": f"{alias}, dst",
        f"{alias}.bootstrap.servers": SRC,
        "dst.bootstrap.servers": DST,
        f"{alias}->dst.enabled": "true",
        f"dst->{alias}.enabled": "false",
        f"{alias}->dst.topics": regex,
        "tasks.max": str(tasks),
        "replication.factor": "1",
        "checkpoints.topic.replication.factor": "1",
        "heartbeats.topic.replication.factor": "1",
        "offset-syncs.topic.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "config.storage.replication.factor": "1",
        "sync.topic.acls.enabled": "false",
        "emit.heartbeats.enabled": "false",
        "emit.checkpoints.enabled": "false",
        "sync.group.offsets.enabled": "false",
        "refresh.topics.interval.seconds": str(topic_refresh_s()),  # geokafka's, for the new-topic figure
        "dedicated.mode.enable.internal.rest": "false",
        "plugin.discovery": "service_load",
        "offset.flush.interval.ms": "5000",
        # producer (the writer side), equal to geokafka's writer
        "dst.producer.acks": "all",
        "dst.producer.linger.ms": "5",
        "dst.producer.batch.size": "1000000",
        "dst.producer.compression.type": WIRE_COMPRESSION,
        "dst.producer.max.request.size": "8388608",
        f"{alias}->dst.producer.override.acks": "all",
        # consumer (the reader side): large fetches, like Spark's Kafka source
        f"{alias}.consumer.max.poll.records": "2000",
        f"{alias}.consumer.fetch.max.bytes": "52428800",
        f"{alias}.consumer.max.partition.fetch.bytes": "8388608",
    }
    if exactly_once:
        props.update({
            # per target cluster: a top-level `exactly.once.source.support` leaves the writes plain (not transactional)
            "dst.exactly.once.source.support": "enabled",
            "dedicated.mode.enable.internal.rest": "true",
            "listeners": f"http://127.0.0.1:{EOS_REST_PORT}",
            f"{alias}.consumer.isolation.level": "read_committed",
        })
    return "".join(f"{k} = {v}\n" for k, v in props.items())


def run_mm2(work: Path, topic: str | TopicSet, records: int, size: int, lat_topic: str | TopicSet | None,
            exactly_once: bool = False, new_topic: bool = False, **kw: Any) -> dict[str, Any]:
    """Replicate ``topic`` (and ``lat_topic``; each a topic or a set of them) with MM2 until the target holds
    ``records``; with ``new_topic``, how long it takes to copy a topic of the set created under it
    (:attr:`~geokafka.bench.setup.TopicSet.newcomer`)."""
    tasks = os.cpu_count() or 2
    work.mkdir(parents=True, exist_ok=True)
    name = "mm2-eos" if exactly_once else "mm2"
    alias = EOS_ALIAS if exactly_once else ALIAS
    data, lat = as_set(topic), None if lat_topic is None else as_set(lat_topic)
    config = work / f"{name}-{data.prefix}.properties"
    patterns = list(dict.fromkeys(s.pattern for s in (data, lat) if s))  # the probe may write to the data
    config.write_text(mm2_properties(patterns, tasks, exactly_once))
    # the class archive of the local brokers fits every JVM on Kafka's classpath (geokafka's Spark has its own)
    cmd = ["java", "-Xmx512m", "-XX:+UseG1GC", *kafka_class_archive.java_options(), *contender_jvm_options(),
           f"-Dlog4j2.configurationFile={LOG4J}", f"-Dkafka.logs.dir={work}",
           "-cp", jars.kafka_classpath(), "org.apache.kafka.connect.mirror.MirrorMaker", str(config),
           "--clusters", "dst"]
    if new_topic:
        kw["new_topic"] = (data.newcomer, f"{alias}.{data.newcomer}", data.partitions)
    result = run_replicator(name, cmd, work / f"{name}-{data.prefix}.log", topic=data.prefix,
                            target_topic=data.targets(f"{alias}."), records=records, size=size,
                            lat_topic=None if lat is None else lat.names,
                            lat_target=None if lat is None else lat.targets(f"{alias}."), **kw)
    result["config"] = {"tasks.max": tasks, "mode": "dedicated", "exactly_once": exactly_once, "file": str(config)}
    return result
