"""Spark's own Kafka source -> Kafka sink, JVM only: the contender geokafka's sink is measured against.

At-least-once (Spark's Kafka sink has no transactions), no provenance headers, no cycle filter;
the same producer settings as the other contenders. Key, value, headers and partition are
copied; Spark 4.1.1's sink ignores a ``timestamp`` column, so target timestamps are the write
time (one of the reasons geokafka has its own sink).

Run as ``python -m geokafka.bench.spark_kafka PREFIX TOPIC [TOPIC...]``: replicates each
``TOPIC`` of the bench source to ``PREFIX.TOPIC`` on the bench target until killed.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from geokafka.bench.replicator import run_replicator
from geokafka.bench.setup import DST, SRC, WIRE_COMPRESSION, create_topic

PREFIX = "sk"
MASTER = "local[16]"  # as geokafka's: tasks wait on round trips to the clusters, not on CPU


def main(prefix: str, checkpoint: str, topics: list[str]) -> None:
    """Run the query (its checkpoint in ``checkpoint``, under the bench's work folder) until the process is killed."""
    from geokafka.pipeline.spark_session import get_spark

    spark = get_spark(MASTER, "bench-spark-kafka")
    frame = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", SRC)
             .option("subscribe", ",".join(topics)).option("startingOffsets", "earliest")
             .option("includeHeaders", "true").option("maxOffsetsPerTrigger", "200000").load())
    out = frame.selectExpr("key", "value", "headers", "partition", "timestamp",
                           f"concat('{prefix}.', topic) AS topic")
    writer = out.writeStream.format("kafka").option("kafka.bootstrap.servers", DST)
    for key, value in {"acks": "all", "linger.ms": "5", "batch.size": "1000000", "compression.type": WIRE_COMPRESSION,
                       "max.request.size": "8388608"}.items():
        writer = writer.option(f"kafka.{key}", value)
    query = writer.option("checkpointLocation", checkpoint).trigger(processingTime="0 seconds").start()
    print(json.dumps({"query": str(query.id)}), flush=True)
    query.awaitTermination()


def run_spark_kafka(work: Path, topic: str, records: int, size: int, partitions: int, lat_topic: str | None,
                    **kw: Any) -> dict[str, Any]:
    """Replicate ``topic`` (and ``lat_topic``) with Spark's Kafka sink until the target holds ``records``."""
    work.mkdir(parents=True, exist_ok=True)
    topics = [t for t in (topic, lat_topic) if t]
    for name in topics:  # the sink writes to existing topics, partition for partition
        create_topic(DST, f"{PREFIX}.{name}", partitions)
    checkpoint = work / f"spark-kafka-{topic}.checkpoint"  # the next run clears the work folder
    cmd = [sys.executable, "-m", "geokafka.bench.spark_kafka", PREFIX, str(checkpoint), *topics]
    result = run_replicator("spark-kafka", cmd, work / f"spark-kafka-{topic}.log", topic=topic,
                            target_topic=f"{PREFIX}.{topic}", records=records, size=size, lat_topic=lat_topic,
                            lat_target=f"{PREFIX}.{lat_topic}" if lat_topic else None, **kw)
    result["config"] = {"master": MASTER, "trigger": "processingTime=0", "maxOffsetsPerTrigger": 200_000,
                        "writer": "Spark's Kafka sink: at-least-once, acks=all, linger.ms=5, batch.size=1000000, "
                                  + WIRE_COMPRESSION}
    return result


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
