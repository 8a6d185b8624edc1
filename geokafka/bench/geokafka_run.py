"""geokafka itself: ``python -m geokafka -f <bench topology> mirror bench`` on local Spark (local[16])."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from geokafka.bench.replicator import run_replicator
from geokafka.bench.setup import bench_topology_text


def run_geokafka(work: Path, state_dir: Path, topic: str, records: int, size: int, lat_topic: str | None,
                 **kw: Any) -> dict[str, Any]:
    """Replicate ``topic`` (and ``lat_topic``) with the geokafka pipeline until the target holds ``records``."""
    work.mkdir(parents=True, exist_ok=True)
    topics = [t for t in (topic, lat_topic) if t]
    file = work / f"geokafka-{topic}.yaml"
    file.write_text(bench_topology_text(state_dir, topics))
    cmd = [sys.executable, "-m", "geokafka", "--json", "-f", str(file), "mirror", "bench"]
    result = run_replicator("geokafka", cmd, work / f"geokafka-{topic}.log", topic=topic,
                            target_topic=f"src.{topic}", records=records, size=size, lat_topic=lat_topic,
                            lat_target=f"src.{lat_topic}" if lat_topic else None, **kw)
    result["config"] = {"master": "local[16]", "trigger_ms": 0, "max_records_per_batch": 200_000,
                        "writer": "geokafka's JVM sink: transactional, commits every 100 ms (stretched while commits are "
                                  "slow), acks=all, linger.ms=100 (each commit flushes), batch.size=524288, lz4"}
    return result
