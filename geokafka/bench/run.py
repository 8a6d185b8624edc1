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

from geokafka.bench.copy_loop import run_copy_loop
from geokafka.bench.geokafka_run import run_geokafka, spark_archive_built
from geokafka.bench.mm2 import run_mm2
from geokafka.bench.raw import run_raw
from geokafka.bench.scaling import run_scaling
from geokafka.bench.setup import SRC, WIRE_COMPRESSION, bench_topology, contender_jvm_options, create_topic, load
from geokafka.bench.spark_kafka import run_spark_kafka
from geokafka.bench.state_reads import time_state_reads
from geokafka.bench.translation import time_translation
from geokafka.control.connection import connection
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import start_clusters, stop_cluster
from geokafka.pipeline.query import writer_config
from geokafka.topology import Topology

Say = Callable[[str], None]


@dataclass(frozen=True)
class BenchSizes:
    """What one run measures."""

    records: int = 2_000_000
    partitions: int = 12
    small_records: int = 2_000_000
    latency_rate: float = 2000.0
    latency_s: float = 30.0
    latency_warmup_s: float = 5.0
    """Traffic at the latency rate before the measured seconds: the first seconds of a topic that was
    idle during the throughput run (new consumers, first transactions, code not yet compiled) are
    start-up, not the steady state the latency target is about. The scaling section's probe warms up as long."""
    scaling: tuple[tuple[int, int], ...] = ((1, 12), (1, 120), (120, 10), (200, 10), (500, 10))
    """The scaling section's shapes: (topics, partitions per topic)."""
    scaling_records: int = 200_000
    scaling_size: int = 500
    scaling_rate: float = 2000.0
    scaling_latency_s: float = 30.0
    idle_s: float = 120.0
    """How long the largest scaling run and the one beside MirrorMaker 2 sit without traffic (idle cost)."""
    mm2_scaling_at: int | None = 2000
    """The partition count MirrorMaker 2 runs at in the scaling section, beside geokafka."""
    micro_batch: bool = True
    """Also run geokafka in micro-batch mode on the 1 KiB data (the default, real-time mode, is measured anyway)."""
    translation_groups: int = 1000
    state_progress_records: int = 1_000_000
    state_checkpoints: int = 10_000
    datasets: tuple[str, ...] = ("1k", "100b")
    """Which record sizes to run: 1 KiB (with latency) and 100 B."""
    rounds: int = 2
    """How often the contenders the targets compare (:data:`ROUND_CONTENDERS`) copy each record size, every later
    round on a fresh copy of the data and in the order reversed: each one's figures are the mean of its rounds, so a
    machine that speeds up or slows down over the minutes between the first contender and the last moves them alike."""


# The quick bench's scaling section runs its one many-topic shape only (geokafka, then MirrorMaker 2 at it): the
# one-topic row beside it ran the same code as the record-size copies and cost the suite's bench test ~20 CPU s.
QUICK = BenchSizes(records=100_000, partitions=6, small_records=100_000, latency_rate=500.0, latency_s=3.0,
                   latency_warmup_s=2.0, scaling=((6, 10),), scaling_records=12_000, scaling_rate=500.0,
                   scaling_latency_s=3.0, idle_s=5.0, mm2_scaling_at=60, micro_batch=False,
                   state_progress_records=50_000, state_checkpoints=1_000, rounds=1)
FULL = BenchSizes()
ROUND_CONTENDERS = ("limit", "mm2", "mm2-eos", "geokafka")
"""The contenders of the record-size targets' ratios, in the first round's order; a later round runs them again."""


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


FIRST_ROUND = (
    ("raw", "raw: ConsumerPerformance + ProducerPerformance"),
    ("limit", "the limit: a plain Java loop, one consumer feeding one producer"),
    ("mm2", "MirrorMaker 2 (dedicated mode)"),
    ("mm2-eos", "MirrorMaker 2, exactly-once"),
    ("spark-kafka", "Spark's Kafka source -> Kafka sink (local[16], at-least-once)"),
    ("geokafka", "geokafka (real-time mode, the default)"),
    ("geokafka-micro-batch", "geokafka in micro-batch mode (the 1 KiB data of the full run only)"),
)
"""Every contender of a record size, in the order the first round runs them, and what the bench says of each."""

Contender = Callable[[str, str], dict[str, Any]]
"""Runs one contender over a source topic; its second argument tells its latency topic from an earlier round's."""


def _contenders(work: Path, state_dir: Path, n: int, size: int, parts: int, lat: Callable[[str], str | None],
                lat_kw: dict[str, Any]) -> dict[str, Contender]:
    """Each contender of a record size, by name, as a call over a source topic (the data, loaded) and a suffix that
    names its latency topic in a later round (``""`` in the first)."""
    return {
        "raw": lambda topic, again: run_raw(work, topic, n, size, parts),
        "limit": lambda topic, again: run_copy_loop(work, topic, n, size, lat("copy" + again), **lat_kw),
        "mm2": lambda topic, again: run_mm2(work, topic, n, size, lat("mm2" + again), **lat_kw),
        "mm2-eos": lambda topic, again: run_mm2(work, topic, n, size, lat("mm2eos" + again), exactly_once=True,
                                                **lat_kw),
        "spark-kafka": lambda topic, again: run_spark_kafka(work, topic, n, size, parts, lat("sk" + again), **lat_kw),
        "geokafka": lambda topic, again: run_geokafka(work, state_dir, topic, n, size, lat("gk" + again), **lat_kw),
        "geokafka-micro-batch": lambda topic, again: run_geokafka(work, state_dir, topic, n, size, lat("gkmb" + again),
                                                                  mode="micro-batch", **lat_kw),
    }


def round_order(k: int) -> tuple[str, ...]:
    """The order round ``k`` (from 1) runs :data:`ROUND_CONTENDERS` in: every second round reversed, so that over two
    rounds each contender's mean position is about the same."""
    return ROUND_CONTENDERS[::-1] if k % 2 == 0 else ROUND_CONTENDERS


def _later_round(k: int, rounds: int, label: str, topic: str, n: int, size: int, parts: int,
                 contenders: dict[str, Contender], say: Say) -> dict[str, Any]:
    """Round ``k`` of a record size: the same data loaded again into a topic of its own (every contender copies it
    from its start, to target topics of their own), then :func:`round_order`'s contenders over it."""
    again = f"{topic}.r{k}"
    say(f"[{label}] round {k} of {rounds}: the same {n:,} records of {size} B loaded again into {again}")
    later: dict[str, Any] = {"round": k, "topic": again, "order": list(round_order(k)),
                             "load_s": round(load(SRC, again, n, size, parts), 2)}
    for name in round_order(k):
        say(f"[{label}] round {k}: {name}")
        later[name] = _safe(name, say, partial(contenders[name], again, f".r{k}"))
    return later


def run_bench(state_dir: Path, sizes: BenchSizes, say: Say, keep: bool = False) -> dict[str, Any]:
    """Start fresh local clusters, load the data once, run raw / MM2 / geokafka on it; return the report."""
    topology = bench_topology(state_dir)
    specs = local_cluster_specs(topology)
    for spec in specs:
        stop_cluster(spec)
    shutil.rmtree(state_dir, ignore_errors=True)
    work = (state_dir / "work").absolute()
    t_start = time.monotonic()
    if not spark_archive_built():
        say("the Spark driver's class archive is not built (`python -m geokafka.pipeline.class_archive_build` builds "
            "it, as `./run` does): geokafka starts without it, as from an installed wheel, and takes longer to start")
    say("starting clusters src (24092) and dst (25092)")
    start_clusters(specs)
    report: dict[str, Any] = {
        "started": time.strftime("%Y-%m-%dT%H:%M:%S"), "sizes": asdict(sizes),
        "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
        "runs": {}, "scaling": [], "load_avg_1m_at_start": round(os.getloadavg()[0], 2),
        "jvm_options": {"contenders": contender_jvm_options()},
    }
    dst_spec = next(spec for spec in specs if spec.name == "dst")
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
            contenders = _contenders(work, state_dir, n, size, parts, lat, lat_kw)
            for name, what in FIRST_ROUND:
                if name != "geokafka-micro-batch" or (with_latency and sizes.micro_batch):
                    say(f"[{label}] {what}")
                    run[name] = _safe(name, say, partial(contenders[name], topic, ""))
            for k in range(2, sizes.rounds + 1):
                run.setdefault("later_rounds", []).append(
                    _later_round(k, sizes.rounds, label, topic, n, size, parts, contenders, say))
            for name, codec in compressions(topology).items():  # what each writer sent the target
                for result in rounds_of(run, name):
                    result["compression"] = codec
            run["ratios"] = ratios(run)
            report["runs"][label] = run
        report["scaling"] = run_scaling(work, state_dir, dst_spec, sizes.scaling, sizes.scaling_records,
                                        sizes.scaling_size, sizes.scaling_rate, sizes.scaling_latency_s, sizes.idle_s,
                                        say, sizes.mm2_scaling_at, warmup_s=sizes.latency_warmup_s)
        say(f"offset translation: {sizes.translation_groups} groups x 12 partitions")
        report["translation"] = time_translation(sizes.translation_groups, 12)
        say(f"state reads: {sizes.state_progress_records:,} progress records and {sizes.state_checkpoints:,} checkpoints")
        report["state_reads"] = _safe("state-reads", say, lambda: time_state_reads(
            connection(topology, "dst"), sizes.state_progress_records, 2000, sizes.state_checkpoints))
        report["targets"] = targets(report)
    finally:
        if not keep:
            for spec in specs:
                stop_cluster(spec)
    report["total_s"] = round(time.monotonic() - t_start, 1)
    return report


def compressions(topology: Topology) -> dict[str, str]:
    """The compression.type of each contender's writer: geokafka's as its defaults make it, the others' set to it."""
    flow = next(iter(topology.flows.values()))
    own = writer_config(flow, topology.pipeline)["compression.type"]
    return {name: own if name.startswith("geokafka") else WIRE_COMPRESSION
            for name, _ in FIRST_ROUND}


def rounds_of(run: dict[str, Any], name: str) -> list[dict[str, Any]]:
    """``name``'s results in every round of a record size's ``run`` where it ran, the first round's first."""
    found = [run.get(name), *(later.get(name) for later in run.get("later_rounds", []))]
    return [r for r in found if isinstance(r, dict) and r.get("ran")]


def mean_over_rounds(run: dict[str, Any], name: str, *keys: str) -> float | None:
    """The mean of ``name``'s figure at ``keys`` (e.g. ``"latency", "p50_ms"``) over the rounds it ran and gave it
    in; None where it gave it in none."""
    values = []
    for result in rounds_of(run, name):
        value: Any = result
        for key in keys:
            value = (value or {}).get(key)
        if isinstance(value, (int, float)) and value >= 0:
            values.append(float(value))
    return round(sum(values) / len(values), 3) if values else None


def ratios(run: dict[str, Any]) -> dict[str, float | None]:
    """geokafka over each other contender, on records/s, each side the mean of its rounds (None where a side did
    not run)."""
    def rps(name: str) -> float | None:
        return mean_over_rounds(run, name, "records_per_s")

    def over(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a and b else None

    g, m, r, e, limit = rps("geokafka"), rps("mm2"), rps("raw"), rps("mm2-eos"), rps("limit")
    return {"geokafka_over_mm2": over(g, m), "geokafka_over_mm2_eos": over(g, e), "geokafka_over_raw": over(g, r),
            "geokafka_over_limit": over(g, limit), "mm2_over_raw": over(m, r)}


def targets(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The data path's targets, each with its measured value and whether it was met (None: not measured)."""
    runs = report["runs"]

    def field(label: str, name: str, *keys: str) -> float | None:
        return mean_over_rounds(runs.get(label, {}), name, *keys)

    def check(name: str, value: float | None, goal: str, ok: bool | None) -> dict[str, Any]:
        return {"target": name, "value": value, "goal": goal, "met": ok}

    def at_most(value: float | None, limit: float | None) -> bool | None:
        return None if value is None or limit is None else value <= limit

    def at_least(value: float | None, limit: float) -> bool | None:
        return None if value is None else value >= limit

    def over(a: float | None, b: float | None) -> float | None:
        return round(a / b, 3) if a is not None and b else None

    def times(factor: float, value: float | None) -> float | None:
        return None if value is None else round(factor * value, 3)

    ratio = runs.get("1k", {}).get("ratios", {})
    g_p50, g_p99, m_p50 = (field("1k", "geokafka", "latency", "p50_ms"), field("1k", "geokafka", "latency", "p99_ms"),
                           field("1k", "mm2", "latency", "p50_ms"))
    g_cpu, e_cpu = field("1k", "geokafka", "cpu_s_per_gb"), field("1k", "mm2-eos", "cpu_s_per_gb")
    ge, gm, gl = ratio.get("geokafka_over_mm2_eos"), ratio.get("geokafka_over_mm2"), ratio.get("geokafka_over_limit")
    gl_cpu = over(g_cpu, field("1k", "limit", "cpu_s_per_gb"))
    small_gl = runs.get("100b", {}).get("ratios", {}).get("geokafka_over_limit")
    small_gl_cpu = over(field("100b", "geokafka", "cpu_s_per_gb"), field("100b", "limit", "cpu_s_per_gb"))
    scaling = report.get("scaling", [])
    rows = {(r["contender"], r["partitions"]): r for r in scaling if r.get("ran")}
    counts = sorted({r["partitions"] for r in scaling})
    # the comparisons at MirrorMaker 2's partition count (the largest when it ran at none)
    most = next((r["partitions"] for r in scaling if r["contender"] == "mm2"), counts[-1] if counts else None)
    big, mm2_big = rows.get(("geokafka", most)), rows.get(("mm2", most))
    largest = rows.get(("geokafka", counts[-1])) if counts and counts[-1] != most else None
    small = rows.get(("geokafka", counts[0])) if counts else None
    second = rows.get(("geokafka", counts[-2])) if len(counts) >= 2 else None

    def big_value(key: str) -> Any:
        return None if big is None else big.get(key)

    def mm2_value(key: str) -> Any:
        return None if mm2_big is None else mm2_big.get(key)

    first, mm2_first = big_value("first_record_s"), mm2_value("first_record_s")
    done, mm2_done = big_value("backlog_done_s"), mm2_value("backlog_done_s")
    p99, mm2_p99 = big_value("p99_ms"), mm2_value("p99_ms")
    new, mm2_new = big_value("new_topic_s"), mm2_value("new_topic_s")
    idle, mm2_idle = big_value("idle_cpu_percent"), mm2_value("idle_cpu_percent")
    scale = None if small is None or second is None or not small.get("records_per_s") else \
        round(second["records_per_s"] / small["records_per_s"], 3)
    tr = report.get("translation", {})
    reads = report.get("state_reads", {})
    beat, status = reads.get("heartbeat_cpu_ms"), reads.get("status_read_cpu_ms")
    big_state = f"{reads.get('progress_records', 0):,} progress records, {reads.get('checkpoints', 0):,} checkpoints"
    return [
        check("throughput geokafka/MM2 at-least-once (1 KiB)", gm, ">= 1.3", at_least(gm, 1.3)),
        check("throughput geokafka/MM2 exactly-once (1 KiB)", ge, ">= 1.2", at_least(ge, 1.2)),
        check("throughput geokafka/copy loop (1 KiB)", gl, ">= 0.8", at_least(gl, 0.8)),
        check("CPU s/GB geokafka/copy loop (1 KiB)", gl_cpu, "<= 1.3", at_most(gl_cpu, 1.3)),
        check("CPU s/GB geokafka (1 KiB)", g_cpu, f"<= 0.9 x MM2 exactly-once's ({e_cpu})",
              at_most(g_cpu, times(0.9, e_cpu))),
        check("throughput geokafka/copy loop (100 B)", small_gl, ">= 0.7", at_least(small_gl, 0.7)),
        check("CPU s/GB geokafka/copy loop (100 B)", small_gl_cpu, "<= 1.5", at_most(small_gl_cpu, 1.5)),
        check("p50 latency geokafka (ms)", g_p50, f"<= MM2 at-least-once's ({m_p50})", at_most(g_p50, m_p50)),
        check("p99 latency geokafka (ms)", g_p99, "<= 250", at_most(g_p99, 250.0)),
        check(f"first record at {most} partitions (s)", first, f"<= MM2's ({mm2_first})", at_most(first, mm2_first)),
        check(f"backlog on the target at {most} partitions (s)", done, f"<= MM2's ({mm2_done})", at_most(done, mm2_done)),
        check(f"p50 at {most} partitions (ms)", big_value("p50_ms"), "<= 1000", at_most(big_value("p50_ms"), 1000.0)),
        check(f"p99 at {most} partitions (ms)", p99, f"<= MM2's ({mm2_p99})", at_most(p99, mm2_p99)),
        check(f"a new topic copied at {most} partitions (s)", new, f"<= MM2's ({mm2_new}), same refresh",
              at_most(new, mm2_new)),
        check(f"idle CPU at {most} partitions (%)", idle, f"<= 2 x MM2's ({mm2_idle})", at_most(idle, times(2, mm2_idle))),
        check(f"threads at {most} partitions", big_value("threads"), "<= 200", at_most(big_value("threads"), 200)),
        check(f"sockets at {most} partitions", big_value("sockets"), "<= 200", at_most(big_value("sockets"), 200)),
        check(f"peak RSS at {most} partitions (MB)", big_value("peak_rss_mb"), "<= 1500",
              at_most(big_value("peak_rss_mb"), 1500.0)),
        check(f"`geokafka status` CPU at {most} partitions (s)", (big_value("status") or {}).get("cpu_s"), "< 2",
              at_most((big_value("status") or {}).get("cpu_s"), 1.999)),
        *([check(f"p50 at {counts[-1]} partitions (ms)", largest.get("p50_ms"), "<= 2000",
                 at_most(largest.get("p50_ms"), 2000.0))] if largest is not None else []),
        check(f"throughput at {counts[-2] if len(counts) >= 2 else '?'} / {counts[0] if counts else '?'} partitions",
              scale, ">= 0.8", at_least(scale, 0.8)),
        check("translation 1,000 groups x 12 partitions (s)", tr.get("translate_s"), "< 1", tr.get("met")),
        check(f"heartbeat CPU with {big_state} (ms)", beat, "< 50", None if beat is None else beat < 50),
        check(f"status read CPU with {big_state} (ms)", status, "< 50", None if status is None else status < 50),
    ]
