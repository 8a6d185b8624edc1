"""The raw limit: Kafka's own perf tools (ConsumerPerformance on the source, ProducerPerformance to the target)."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path
from typing import Any

from geokafka.artifacts import jars
from geokafka.bench.mm2 import LOG4J
from geokafka.bench.procstat import TreeSampler
from geokafka.bench.setup import DST, SRC, WIRE_COMPRESSION, contender_jvm_options, create_topic
from geokafka.infra import kafka_class_archive

PRODUCER_PROPS = ["acks=all", "linger.ms=5", "batch.size=1000000", f"compression.type={WIRE_COMPRESSION}",
                  f"bootstrap.servers={DST}"]


def _java(work: Path, main: str, args: list[str]) -> tuple[str, float, int]:
    cmd = ["java", "-Xmx512m", *kafka_class_archive.java_options(), *contender_jvm_options(),
           f"-Dlog4j2.configurationFile={LOG4J}", f"-Dkafka.logs.dir={work}",
           "-cp", jars.kafka_classpath(), main, *args]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    sampler = TreeSampler(proc.pid, 0.2).start()
    out, _ = proc.communicate(timeout=900)
    sampler.stop()
    if proc.returncode != 0:
        raise RuntimeError(f"{main} failed: {out.strip().splitlines()[-1:]}")
    return out, sampler.cpu_s, sampler.peak_rss


def consume(work: Path, topic: str, records: int, size: int) -> dict[str, Any]:
    """ConsumerPerformance over ``records`` of ``topic`` on the source; fetch rate (rebalance excluded)."""
    out, cpu, rss = _java(work, "org.apache.kafka.tools.ConsumerPerformance", [
        "--bootstrap-server", SRC, "--topic", topic, "--messages", str(records), "--timeout", "60000",
        "--group", f"bench-raw-{topic}-{int(time.time())}",
    ])
    lines = [ln for ln in out.splitlines() if re.match(r"^\d{4}-", ln.strip())]
    fields = [f.strip() for f in lines[-1].split(",")]
    # start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
    # rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec
    fetch_ms = float(fields[7])
    got = int(fields[4])
    return {"records": got, "seconds": round(fetch_ms / 1000, 3), "records_per_s": float(fields[9]),
            "mb_per_s": round(got * size / 1e6 / (fetch_ms / 1000), 2), "cpu_s": round(cpu, 2),
            "peak_rss_mb": round(rss / 1e6, 1), "raw_line": lines[-1].strip()}


def produce(work: Path, topic: str, records: int, size: int, partitions: int) -> dict[str, Any]:
    """ProducerPerformance: ``records`` of ``size`` bytes to a fresh topic on the target, writer settings."""
    target = f"raw.{topic}"
    create_topic(DST, target, partitions)
    out, cpu, rss = _java(work, "org.apache.kafka.tools.ProducerPerformance", [
        "--topic", target, "--num-records", str(records), "--record-size", str(size), "--throughput", "-1",
        "--producer-props", *PRODUCER_PROPS,
    ])
    line = [ln for ln in out.splitlines() if "records sent" in ln][-1]
    m = re.search(r"(\d+) records sent, ([\d.]+) records/sec \(([\d.]+) MB/sec\), ([\d.]+) ms avg latency", line)
    assert m is not None, line
    rps = float(m.group(2))
    return {"records": int(m.group(1)), "records_per_s": rps, "mb_per_s": round(rps * size / 1e6, 2),
            "avg_latency_ms": float(m.group(4)), "cpu_s": round(cpu, 2), "peak_rss_mb": round(rss / 1e6, 1),
            "raw_line": line.strip()}


def run_raw(work: Path, topic: str, records: int, size: int, partitions: int) -> dict[str, Any]:
    """Both tools; the raw limit of a copy on this machine is the slower of the two."""
    work.mkdir(parents=True, exist_ok=True)
    c = consume(work, topic, records, size)
    p = produce(work, topic, records, size, partitions)
    limit = min(c["records_per_s"], p["records_per_s"])
    gb = records * size / 1e9
    return {"contender": "raw", "ran": True, "records": records, "record_bytes": size, "topic": topic,
            "records_per_s": round(limit, 1), "mb_per_s": round(limit * size / 1e6, 2),
            "cpu_s_per_gb": round((c["cpu_s"] + p["cpu_s"]) / gb, 1),
            "peak_rss_mb": max(c["peak_rss_mb"], p["peak_rss_mb"]),
            "basis": "min(consumer fetch rate, producer rate); CPU incl. JVM start",
            "consumer": c, "producer": p}
