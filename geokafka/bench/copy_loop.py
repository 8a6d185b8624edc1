"""The "limit" contender: one consumer feeding one producer in a plain Java loop (``io.geokafka.bench.CopyLoop``
in the jvm module), no framework, no transactions: what any replicator on this machine can at best approach."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from geokafka.artifacts import jars
from geokafka.bench.mm2 import LOG4J
from geokafka.bench.replicator import run_replicator
from geokafka.bench.setup import DST, SRC, WIRE_COMPRESSION, contender_jvm_options, create_topic, partition_count

PREFIX = "copy."


def run_copy_loop(work: Path, topic: str, records: int, size: int, lat_topic: str | None, **kw: Any) -> dict[str, Any]:
    """Copy ``topic`` (and ``lat_topic``) to ``copy.<topic>`` with the plain loop until the target holds ``records``."""
    work.mkdir(parents=True, exist_ok=True)
    topics = [t for t in (topic, lat_topic) if t]
    for name in topics:
        create_topic(DST, PREFIX + name, partition_count(SRC, name))
    cmd = ["java", "-Xmx512m", "-XX:+UseG1GC", *contender_jvm_options(),
           f"-Dgeokafka.compression={WIRE_COMPRESSION}", f"-Dlog4j2.configurationFile={LOG4J}",
           f"-Dkafka.logs.dir={work}", "-cp", f"{jars.kafka_classpath()}:{jars.sink_jar()}",
           "io.geokafka.bench.CopyLoop", SRC, DST, PREFIX, *topics]
    result = run_replicator("limit", cmd, work / f"copy-loop-{topic}.log", topic=topic, target_topic=PREFIX + topic,
                            records=records, size=size, lat_topic=lat_topic,
                            lat_target=PREFIX + lat_topic if lat_topic else None, **kw)
    result["config"] = {"consumer": "max.poll.records=2000", "producer": "acks=all, linger.ms=5, batch.size=1000000, "
                        f"{WIRE_COMPRESSION}; not transactional", "threads": "one loop"}
    return result
