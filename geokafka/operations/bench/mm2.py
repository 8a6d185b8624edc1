"""MirrorMaker 2 in dedicated mode (``org.apache.kafka.connect.mirror.MirrorMaker``) from the fetched jars.

Tuned like geokafka's writer where the settings exist: producer acks=all, linger.ms=5,
batch.size=1000000, compression lz4; tasks.max = the machine's cores. Differences that stay:
MM2 is at-least-once here (no exactly-once source support in this setup), geokafka is transactional.
Source alias ``mm2src`` so that MM2's target topics (``mm2src.<topic>``) never clash with geokafka's
(``src.<topic>``).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from geokafka.infra import jars
from geokafka.operations.bench.replicator import run_replicator
from geokafka.operations.bench.setup import DST, SRC

LOG4J = Path(__file__).resolve().parents[2] / "infra" / "log4j2.properties"
ALIAS = "mm2src"


def mm2_properties(topics: list[str], tasks: int) -> str:
    """The generated mm2.properties for replicating exactly ``topics``."""
    regex = "|".join(t.replace(".", "\\\\.") for t in topics)
    props = {
        "clusters": f"{ALIAS}, dst",
        f"{ALIAS}.bootstrap.servers": SRC,
        "dst.bootstrap.servers": DST,
        f"{ALIAS}->dst.enabled": "true",
        f"dst->{ALIAS}.enabled": "false",
        f"{ALIAS}->dst.topics": regex,
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
        "refresh.topics.interval.seconds": "2",
        "dedicated.mode.enable.internal.rest": "false",
        "plugin.discovery": "service_load",
        "offset.flush.interval.ms": "5000",
        # producer (the writer side), equal to geokafka's writer
        "dst.producer.acks": "all",
        "dst.producer.linger.ms": "5",
        "dst.producer.batch.size": "1000000",
        "dst.producer.compression.type": "lz4",
        "dst.producer.max.request.size": "8388608",
        f"{ALIAS}->dst.producer.override.acks": "all",
        # consumer (the reader side): large fetches, like Spark's Kafka source
        f"{ALIAS}.consumer.max.poll.records": "2000",
        f"{ALIAS}.consumer.fetch.max.bytes": "52428800",
        f"{ALIAS}.consumer.max.partition.fetch.bytes": "8388608",
    }
    return "".join(f"{k} = {v}\n" for k, v in props.items())


def run_mm2(work: Path, topic: str, records: int, size: int, lat_topic: str | None, **kw: Any) -> dict[str, Any]:
    """Replicate ``topic`` (and ``lat_topic``) with MM2 until the target holds ``records``."""
    tasks = os.cpu_count() or 2
    work.mkdir(parents=True, exist_ok=True)
    config = work / f"mm2-{topic}.properties"
    config.write_text(mm2_properties([t for t in (topic, lat_topic) if t], tasks))
    cmd = ["java", "-Xmx512m", "-XX:+UseG1GC", f"-Dlog4j2.configurationFile={LOG4J}", f"-Dkafka.logs.dir={work}",
           "-cp", jars.kafka_classpath(), "org.apache.kafka.connect.mirror.MirrorMaker", str(config),
           "--clusters", "dst"]
    result = run_replicator("mm2", cmd, work / f"mm2-{topic}.log", topic=topic, target_topic=f"{ALIAS}.{topic}",
                            records=records, size=size, lat_topic=lat_topic,
                            lat_target=f"{ALIAS}.{lat_topic}" if lat_topic else None, **kw)
    result["config"] = {"tasks.max": tasks, "mode": "dedicated", "file": str(config)}
    return result
