"""geokafka itself: ``python -m geokafka -f <bench topology> mirror bench`` on local Spark, with its defaults."""

from __future__ import annotations

import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from geokafka import contract
from geokafka.bench.replicator import run_replicator
from geokafka.bench.setup import TopicSet, as_set, bench_flow, bench_topology_text
from geokafka.pipeline.class_archive import archive_path
from geokafka.pipeline.spark_session import driver_classpath


def run_geokafka(work: Path, state_dir: Path, topic: str | TopicSet, records: int, size: int,
                 lat_topic: str | TopicSet | None, mode: str = "real-time", status_cost: bool = False,
                 new_topic: bool = False, **kw: Any) -> dict[str, Any]:
    """Replicate ``topic`` (and ``lat_topic``; each a topic or a set of them) with the geokafka pipeline until the
    target holds ``records``; with ``status_cost``, what a `geokafka status` of the running flow costs
    (:func:`status_command_cost`); with ``new_topic``, how long it takes to copy a topic of the set created under
    it (:attr:`~geokafka.bench.setup.TopicSet.newcomer`)."""
    work.mkdir(parents=True, exist_ok=True)
    data, lat = as_set(topic), None if lat_topic is None else as_set(lat_topic)
    file = work / f"geokafka-{mode}-{data.prefix}.yaml"
    patterns = list(dict.fromkeys(s.pattern for s in (data, lat) if s))  # the probe may write to the data
    file.write_text(bench_topology_text(state_dir, mode=mode, patterns=patterns))
    flow, separator = bench_flow(mode)
    cmd = [sys.executable, "-m", "geokafka", "--json", "-f", str(file), "mirror", flow]
    name = "geokafka" if mode == "real-time" else f"geokafka-{mode}"
    if status_cost:
        kw["while_running"] = lambda: {"status": status_command_cost(file, flow)}
    target = f"src{separator}"
    if new_topic:
        kw["new_topic"] = (data.newcomer, target + data.newcomer, data.partitions)
    result = run_replicator(name, cmd, work / f"{name}-{data.prefix}.log", topic=data.prefix,
                            target_topic=data.targets(target), records=records, size=size,
                            lat_topic=None if lat is None else lat.names,
                            lat_target=None if lat is None else lat.targets(target), **kw)
    result["config"] = {"master": "local[*]", "mode": mode, "groups": "one per core",
                        **({"trigger_ms": 0, "max_records_per_batch": 200_000} if mode == "micro-batch" else {}),
                        "writer": "geokafka's JVM sink: one transactional producer per partition group, a transaction "
                                  "every 100 ms (stretched while commits are slow), acks=all, linger.ms=5, "
                                  "batch.size=524288, " + contract.WRITER_COMPRESSION + " (its defaults)",
                        # the Spark driver's class archive (`./run` builds it; an installed wheel has none): without
                        # it the same mirror took twice as long to its first record in the bench
                        "class_archive": spark_archive_built()}
    return result


def spark_archive_built() -> bool:
    """Whether the Spark driver's class archive for geokafka's classpath exists (`./run` builds it; a wheel has none):
    a mirror then starts without it."""
    return archive_path(driver_classpath()).exists()


def status_command_cost(topology_file: Path, flow: str) -> dict[str, Any]:
    """CPU seconds (user + system, the whole process and its threads), wall seconds and output lines of one
    ``geokafka status FLOW`` as an operator runs it (a new process, its output to a pipe), the median of three."""
    runs = []
    for _ in range(3):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "geokafka", "-f", str(topology_file), "status", flow],
                              capture_output=True, text=True, timeout=300, check=False)
        wall = time.monotonic() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        runs.append({"cpu_s": round(cpu, 2), "wall_s": round(wall, 2), "lines": len(proc.stdout.splitlines()),
                     "exit": proc.returncode})
    runs.sort(key=lambda r: r["cpu_s"])
    return {**runs[1], "cpu_s_all": [r["cpu_s"] for r in runs]}
