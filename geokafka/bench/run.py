"""The whole benchmark: clusters, data, contenders, ratios and targets, as one JSON-able dict."""

from __future__ import annotations

import os
import platform
import shutil
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path
from typing import Any

from geokafka.bench.geokafka_run import run_geokafka
from geokafka.bench.mm2 import run_mm2
from geokafka.bench.raw import run_raw
from geokafka.bench.setup import SRC, bench_topology, create_topic, load
from geokafka.bench.spark_kafka import run_spark_kafka
from geokafka.bench.translation import time_translation
from geokafka.bench.trigger_modes import EPOCH_S, compare_modes
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import start_clusters, stop_cluster

Say = Callable[[str], None]


@dataclass(frozen=True)
class BenchSizes:
    """What one run measures."""

    records: int = 2_000_000
    partitions: int = 12
    small_records: int = 2_000_000
    scaling: tuple[int, ...] = (1, 12, 48)
    scaling_records: int = 500_000
    latency_rate: float = 2000.0
    latency_s: float = 30.0
    latency_warmup_s: float = 5.0
    """Traffic at the latency rate before the measured seconds: the first seconds of a topic that was
    idle during the throughput run (new consumers, first transactions, code not yet compiled) are
    start-up, not the steady state the latency target is about."""
    realtime_epoch_s: int = EPOCH_S
    translation_groups: int = 1000
    datasets: tuple[str, ...] = ("1k", "100b")
    """Which record sizes to run: 1 KiB (with latency) and 100 B."""


QUICK = BenchSizes(records=30_000, partitions=6, small_records=30_000, scaling=(1, 6), scaling_records=30_000,
                   latency_rate=500.0, latency_s=5.0, latency_warmup_s=2.0, realtime_epoch_s=5)  # a 30-s epoch costs 45 s more
FULL = BenchSizes()


def _safe(name: str, say: Say, fn: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    load_before = os.getloadavg()[0]
    try:
        result = fn()
        # a shared machine skews everything: each result says how busy it was (1-min load average)
        result["load_avg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
        return result
    except Exception as exc:  # noqa: BLE001 - a contender that fails is reported as not run, with why
        say(f"[red]{name} did not run: {exc}[/]")
        return {"contender": name.split()[0], "ran": False, "reason": f"{type(exc).__name__}: {exc}"}


def _latency_topic(label: str, partitions: int, contender: str) -> str:
    """A latency topic of the contender's own: a contender replicates its topics from the beginning,
    so a shared one would hold every earlier contender's probe records as a backlog."""
    name = f"bench.lat.{label}.{contender}"
    create_topic(SRC, name, partitions)
    return name


def _no_latency_topic(contender: str) -> None:
    return None


def run_bench(state_dir: Path, sizes: BenchSizes, say: Say, keep: bool = False) -> dict[str, Any]:
    """Start fresh local clusters, load the data once, run raw / MM2 / geokafka on it; return the report."""
    topology = bench_topology(state_dir)
    specs = local_cluster_specs(topology)
    for spec in specs:
        stop_cluster(spec)
    shutil.rmtree(state_dir, ignore_errors=True)
    work = (state_dir / "work").absolute()
    t_start = time.monotonic()
    say("starting clusters src (24092) and dst (25092)")
    start_clusters(specs)
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "sizes": asdict(sizes),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "runs": {}, "scaling": [], "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
    }
    try:
        datasets = [d for d in [("1k", 1024, sizes.records, sizes.partitions, True),
                                ("100b", 100, sizes.small_records, sizes.partitions, False)] if d[0] in sizes.datasets]
        for label, size, n, parts, with_latency in datasets:
            topic = f"bench.{label}"
            say(f"loading {n:,} records of {size} B (key, 2 headers) over {parts} partitions into {topic}")
            load_s = load(SRC, topic, n, size, parts)
            lat = partial(_latency_topic, label, parts) if with_latency else _no_latency_topic
            lat_kw: dict[str, Any] = {"lat_rate": sizes.latency_rate, "lat_s": sizes.latency_s,
                                      "lat_warmup_s": sizes.latency_warmup_s, "timeout_s": 300 + n / 500}
            run: dict[str, Any] = {"records": n, "record_bytes": size, "partitions": parts, "load_s": round(load_s, 2)}
            say(f"[{label}] raw: ConsumerPerformance + ProducerPerformance")
            run["raw"] = _safe("raw", say, lambda: run_raw(work, topic, n, size, parts))
            say(f"[{label}] MirrorMaker 2 (dedicated mode)")
            run["mm2"] = _safe("mm2", say, lambda: run_mm2(work, topic, n, size, lat("mm2"), **lat_kw))
            say(f"[{label}] MirrorMaker 2, exactly-once")
            run["mm2-eos"] = _safe("mm2-eos", say, lambda: run_mm2(work, topic, n, size, lat("mm2eos"), exactly_once=True,
                                                                    **lat_kw))
            say(f"[{label}] Spark's Kafka source -> Kafka sink (local[16], at-least-once)")
            run["spark-kafka"] = _safe("spark-kafka", say, lambda: run_spark_kafka(work, topic, n, size, parts, lat("sk"),
                                                                                     **lat_kw))
            say(f"[{label}] geokafka (local[16])")
            run["geokafka"] = _safe("geokafka", say, lambda: run_geokafka(work, state_dir, topic, n, size, lat("gk"),
                                                                               **lat_kw))
            run["ratios"] = ratios(run)
            report["runs"][label] = run
        for parts in sizes.scaling:
            if parts == sizes.partitions and sizes.scaling_records == sizes.records and "1k" in report["runs"]:
                row = report["runs"]["1k"]["geokafka"]
            else:
                topic = f"bench.p{parts}"
                say(f"scaling: {parts} partitions: loading {sizes.scaling_records:,} x 1 KiB, geokafka")
                load(SRC, topic, sizes.scaling_records, 1024, parts)
                row = _safe("geokafka", say, lambda: run_geokafka(
                    work, state_dir, topic, sizes.scaling_records, 1024, None, timeout_s=300 + sizes.scaling_records / 500))
            report["scaling"].append({"partitions": parts, **{k: row.get(k) for k in (
                "ran", "records", "records_per_s", "mb_per_s", "cpu_s_per_gb", "peak_rss_mb", "reason")}})
        say("latency by trigger: micro-batch vs Spark real-time mode (same Python ForeachWriter)")
        try:
            report["trigger_modes"] = compare_modes(work, sizes.latency_rate, sizes.latency_s, sizes.realtime_epoch_s)
        except Exception as exc:  # noqa: BLE001 - reported, the rest of the bench stands
            report["trigger_modes"] = [{"mode": "both", "ran": False, "reason": f"{type(exc).__name__}: {exc}"}]
        say(f"offset translation: {sizes.translation_groups} groups x 12 partitions")
        report["translation"] = time_translation(sizes.translation_groups, 12)
        report["targets"] = targets(report)
    finally:
        if not keep:
            for spec in specs:
                stop_cluster(spec)
    report["total_s"] = round(time.monotonic() - t_start, 1)
    return report


def ratios(run: dict[str, Any]) -> dict[str, float | None]:
    """geokafka/MM2 and geokafka/raw on records/s (None where a side did not run)."""
    def rps(name: str) -> float | None:
        r = run.get(name) or {}
        return r.get("records_per_s") if r.get("ran") else None

    g, m, r, e = rps("geokafka"), rps("mm2"), rps("raw"), rps("mm2-eos")
    return {"geokafka_over_mm2": round(g / m, 3) if g and m else None,
            "geokafka_over_mm2_eos": round(g / e, 3) if g and e else None,
            "geokafka_over_raw": round(g / r, 3) if g and r else None,
            "mm2_over_raw": round(m / r, 3) if m and r else None}


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The targets of the JVM data path (1 KiB run), each with its measured value and whether it was met (None: not measured)."""
    run = report["runs"].get("1k", {})
    ratio = run.get("ratios", {})

    def field(name: str, *keys: str) -> float | None:
        value: Any = run.get(name) or {}
        if not value.get("ran"):
            return None
        for key in keys:
            value = (value or {}).get(key)
        return value if isinstance(value, (int, float)) and value >= 0 else None

    def check(name: str, value: float | None, goal: str, ok: bool | None) -> dict[str, Any]:
        return {"target": name, "value": value, "goal": goal, "met": ok}

    g_p99, e_p99 = field("geokafka", "latency", "p99_ms"), field("mm2-eos", "latency", "p99_ms")
    g_cpu, m_cpu = field("geokafka", "cpu_s_per_gb"), field("mm2", "cpu_s_per_gb")
    g_rss = field("geokafka", "peak_rss_mb")
    tr = report.get("translation", {})
    ge, gm = ratio.get("geokafka_over_mm2_eos"), ratio.get("geokafka_over_mm2")
    return [
        check("throughput geokafka/MM2 exactly-once", ge, ">= 1.5", None if ge is None else ge >= 1.5),
        check("throughput geokafka/MM2 at-least-once", gm, ">= 1.0", None if gm is None else gm >= 1.0),
        check("CPU s/GB geokafka", g_cpu, f"<= 1.5 x MM2 at-least-once ({m_cpu})",
              None if g_cpu is None or m_cpu is None else g_cpu <= 1.5 * m_cpu),
        check("p99 latency geokafka (ms)", g_p99, f"<= 1000 and <= MM2 exactly-once's ({e_p99})",
              None if g_p99 is None or e_p99 is None else g_p99 <= min(1000.0, e_p99)),
        check("peak RSS geokafka (MB)", g_rss, "<= 1500", None if g_rss is None else g_rss <= 1500),
        check("translation 1,000 groups x 12 partitions (s)", tr.get("translate_s"), "< 1", tr.get("met")),
    ]
