"""Spark 4.1's real-time mode against micro-batches (``processingTime=0``): end-to-end latency.

Both queries read the same Kafka source and write through the same minimal Python
``ForeachWriter`` (a plain producer: acks=all, linger.ms=5, no transaction), so the only
difference is the trigger. geokafka's own writer cannot run in real-time mode: that mode
allows neither ``foreachBatch`` nor ``mapInArrow``, and a real-time epoch is one long task, so
a transaction per epoch would hide records from read_committed consumers for the whole epoch.
PySpark 4.1.1 has no Python API for the trigger; it is set through the JVM
(``Trigger.RealTime``). Real-time mode needs a task slot per source partition, hence
``local[partitions + 2]``.

Run as ``python -m geokafka.bench.trigger_modes MODE SRC_TOPIC DST_TOPIC RATE SECONDS [EPOCH_S]``;
prints one JSON line.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from geokafka.bench.setup import DST, SRC, create_topic
from geokafka.bench.watch import latency_probe

MODES = ("micro-batch", "real-time")
EPOCH_S = 30  # a real-time epoch: one long task per partition, checkpointed at its end


class _Forward:
    """ForeachWriter: every row to the target topic, same partition, as it comes."""

    def __init__(self, target: str, topic: str) -> None:
        self.target, self.topic = target, topic

    def open(self, partition_id: int, epoch_id: int) -> bool:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": self.target, "acks": "all", "linger.ms": 5, "log_level": 2})
        return True

    def process(self, row: Any) -> None:
        self.producer.produce(self.topic, row.value, row.key, row.partition, timestamp=row.ts)
        self.producer.poll(0)

    def close(self, error: Exception | None) -> None:
        self.producer.flush(30)


def measure(mode: str, src_topic: str, dst_topic: str, rate: float, seconds: float, checkpoint: Path,
            partitions: int = 2, epoch_s: int = EPOCH_S) -> dict[str, Any]:
    """Start one query in ``mode`` on ``src_topic`` -> ``dst_topic`` and probe its latency."""
    from geokafka.pipeline.spark_session import get_spark

    if mode not in MODES:
        raise ValueError(f"mode {mode!r} is not one of {MODES}")
    create_topic(SRC, src_topic, partitions)
    create_topic(DST, dst_topic, partitions)
    spark = get_spark(f"local[{partitions + 2}]", app_name=f"geokafka-bench-{mode}")
    frame = (spark.readStream.format("kafka").option("kafka.bootstrap.servers", SRC).option("subscribe", src_topic)
             .option("startingOffsets", "latest").load()
             .selectExpr("key", "value", "partition", "unix_millis(timestamp) AS ts"))
    writer = (frame.writeStream.foreach(_Forward(DST, dst_topic)).outputMode("update")
              .option("checkpointLocation", str(checkpoint)))
    if mode == "real-time":
        jvm = spark._jvm
        assert jvm is not None  # a classic (py4j) session, as get_spark builds
        writer._jwrite = writer._jwrite.trigger(jvm.org.apache.spark.sql.streaming.Trigger.RealTime(f"{epoch_s} seconds"))
    else:
        writer = writer.trigger(processingTime="0 seconds")
    query = writer.start()
    try:
        _wait_running(query, src_topic, dst_topic)
        result = latency_probe(SRC, src_topic, DST, dst_topic, rate, seconds)
    finally:
        query.stop()
    if query.exception() is not None:
        raise RuntimeError(f"{mode} query failed: {str(query.exception()).splitlines()[0]}")
    return {"mode": mode, "trigger": f"real-time, {epoch_s} s epochs" if mode == "real-time" else "processingTime=0",
            "writer": "Python ForeachWriter, plain producer (not transactional)", **result}


def _wait_running(query: Any, src_topic: str, dst_topic: str, timeout_s: float = 120.0) -> None:
    """Until a record sent to the source shows on the target: the query is past its start-up."""
    from confluent_kafka import Consumer, Producer

    consumer = Consumer({"bootstrap.servers": DST, "group.id": f"warm-{dst_topic}", "auto.offset.reset": "earliest"})
    consumer.subscribe([dst_topic])
    producer = Producer({"bootstrap.servers": SRC})
    deadline = time.monotonic() + timeout_s
    try:
        while time.monotonic() < deadline:
            if query.exception() is not None:
                raise RuntimeError(str(query.exception()).splitlines()[0])
            producer.produce(src_topic, b"\0" * 8, b"warm-up")
            producer.flush(5)
            if any(m.error() is None for m in consumer.consume(100, 1.0)):
                return
        raise RuntimeError(f"no record reached {dst_topic} within {timeout_s:.0f}s")
    finally:
        consumer.close()


def compare_modes(work: Path, rate: float, seconds: float, epoch_s: int = EPOCH_S) -> list[dict[str, Any]]:
    """Both modes, each in a Spark of its own (a subprocess), on fresh topics; a mode that fails says why."""
    work.mkdir(parents=True, exist_ok=True)
    rows = []
    for mode in MODES:
        tag = f"{mode}-{int(time.time())}"
        cmd = [sys.executable, "-m", __name__, mode, f"bench.trig.{tag}", f"bench.trig-out.{tag}",
               str(rate), str(seconds), str(work / f"trigger-{tag}.checkpoint"), str(epoch_s)]
        log = work / f"trigger-{mode}.log"
        with log.open("w") as err:
            proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=err, text=True, timeout=600, check=False)
        lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
        if proc.returncode == 0 and lines:
            rows.append({"ran": True, **json.loads(lines[-1])})
        else:
            rows.append({"mode": mode, "ran": False, "reason": f"exit {proc.returncode} (see {log})"})
    return rows


if __name__ == "__main__":
    mode, src, dst, rate, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), float(sys.argv[5])
    checkpoint, epoch = Path(sys.argv[6]), int(sys.argv[7]) if len(sys.argv) > 7 else EPOCH_S
    print(json.dumps(measure(mode, src, dst, rate, secs, checkpoint, epoch_s=epoch)))
