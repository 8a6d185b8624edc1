"""geokafka itself: ``python -m geokafka -f <bench topology> mirror bench`` on local Spark, with its defaults."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from geokafka.bench.replicator import run_replicator
from geokafka.bench.setup import bench_flow, bench_topology_text


def run_geokafka(work: Path, state_dir: Path, topic: str, records: int, size: int, lat_topic: str | None,
                 mode: str = "real-time", **kw: Any) -> dict[str, Any]:
    """Replicate ``topic`` (and ``lat_topic``) with the geokafka pipeline until the target holds ``records``."""
    work.mkdir(parents=True, exist_ok=True)
    topics = [t for t in (topic, lat_topic) if t]
    file = work / f"geokafka-{mode}-{topic}.yaml"
    file.write_text(bench_topology_text(state_dir, topics, mode=mode))
    flow, separator = bench_flow(mode)
    cmd = [sys.executable, "-m", "geokafka", "--json", "-f", str(file), "mirror", flow]
    name = "geokafka" if mode == "real-time" else f"geokafka-{mode}"
    result = run_replicator(name, cmd, work / f"{name}-{topic}.log", topic=topic,
                            target_topic=f"src{separator}{topic}", records=records, size=size, lat_topic=lat_topic,
                            lat_target=f"src{separator}{lat_topic}" if lat_topic else None, **kw)
    result["config"] = {"master": "local[*]", "mode": mode, "groups": "one per core",
                        **({"trigger_ms": 0, "max_records_per_batch": 200_000} if mode == "micro-batch" else {}),
                        "writer": "geokafka's JVM sink: one transactional producer per partition group, a transaction "
                                  "every 100 ms (stretched while commits are slow), acks=all, linger.ms=5, "
                                  "batch.size=524288, lz4"}
    return result
