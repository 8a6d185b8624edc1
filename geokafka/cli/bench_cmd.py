"""`geokafka bench`: raw Kafka tools vs MirrorMaker 2 (both modes) vs Spark's Kafka sink vs geokafka.

On local clusters started for the run.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import click
from rich.console import Console
from rich.measure import Measurement
from rich.table import Table

from geokafka.artifacts.jars import local_kafka_jars
from geokafka.cli.context import CliContext, pass_ctx

CONTENDERS = ("raw", "limit", "mm2", "mm2-eos", "spark-kafka", "geokafka", "geokafka-micro-batch")


def _n(value: Any, fmt: str = ",.0f") -> str:
    return "-" if value is None else format(value, fmt)


def _blank(table: Table, filled: int) -> list[str]:
    """Empty cells for the rest of a row of ``table`` that fills ``filled`` columns itself."""
    return [""] * (len(table.columns) - filled)


def render(report: dict[str, Any]) -> list[Table]:
    """The result table, the scaling table and the targets."""
    table = Table("run", "contender", "records/s", "MB/s", "p50 ms", "p95 ms", "p99 ms", "CPU s/GB", "JIT % of CPU",
                  "2nd half rec/s", "2nd half CPU s/GB", "peak RSS MB", "vs raw", "note", title="geokafka bench")
    for label, run in report["runs"].items():
        raw = (run.get("raw") or {}).get("records_per_s") if (run.get("raw") or {}).get("ran") else None
        for name in CONTENDERS:
            if name in run:
                _add_result(table, label, name, run.get(name) or {}, raw)
        for later in run.get("later_rounds", []):
            for name in later.get("order", []):
                _add_result(table, f"{label} r{later['round']}", name, later.get(name) or {}, raw)
        ratios = run.get("ratios", {})
        over = "ratios (means of rounds)" if run.get("later_rounds") else "ratios"
        table.add_row(label, over, f"gk/mm2 {_n(ratios.get('geokafka_over_mm2'), '.2f')}",
                      f"gk/raw {_n(ratios.get('geokafka_over_raw'), '.2f')}",
                      f"gk/mm2-eos {_n(ratios.get('geokafka_over_mm2_eos'), '.2f')}",
                      f"gk/limit {_n(ratios.get('geokafka_over_limit'), '.2f')}", *_blank(table, 6))
    scaling = Table("contender", "partitions", "records/s", "first record s", "backlog s", "p50 ms", "p99 ms",
                    "CPU busy % (latency)", "CPU s/GB",
                    "threads", "sockets", "peak RSS MB", "broker CPU s", "idle CPU %", "idle broker CPU %",
                    "idle growth MB/h", "status CPU s", "new topic s", "load",
                    title="scaling (the same backlog over more partitions and topics, then steady traffic)")
    for row in report.get("scaling", []):
        if not row.get("ran"):
            scaling.add_row(row["contender"], _shape(row), "not run", str(row.get("reason", ""))[:60],
                            *_blank(scaling, 4))
            continue
        growth = row.get("idle_growth_mb_per_hour") or {}
        scaling.add_row(row["contender"], _shape(row), _n(row["records_per_s"]), _n(row["first_record_s"], ".1f"),
                        _n(row["backlog_done_s"], ".1f"), _n(row["p50_ms"], ".0f"), _n(row["p99_ms"], ".0f"),
                        _n(row.get("latency_machine_busy_percent"), ".0f"), _n(row["cpu_s_per_gb"]),
                        _n(row["threads"]), _n(row["sockets"]), _n(row["peak_rss_mb"]),
                        _n(row["target_broker_cpu_s"], ".1f"), _n(row["idle_cpu_percent"], ".1f"),
                        _n(row["idle_target_broker_cpu_percent"], ".1f"),
                        ", ".join(f"{k.strip('_')} {v:.1f}" for k, v in growth.items()) or "-",
                        _n((row.get("status") or {}).get("cpu_s"), ".2f"), _n(row.get("new_topic_s"), ".1f"),
                        "-".join(str(x) for x in row.get("load_avg_1m") or []))
    goals = Table("target", "measured", "goal", "met", title="targets")
    for t in report.get("targets", []):
        met = {True: "[green]yes[/]", False: "[red]NO (out of reach on this run)[/]", None: "not measured"}[t["met"]]
        goals.add_row(t["target"], str(t["value"]), t["goal"], met)
    tr = report.get("translation", {})
    goals.caption = (f"translation: {tr.get('translations', 0):,} translations in {tr.get('translate_s')} s "
                     f"(index build {tr.get('index_build_s')} s); total bench {report.get('total_s')} s")
    return [table, scaling, goals]


def _add_result(table: Table, label: str, name: str, r: dict[str, Any], raw: float | None) -> None:
    """One contender's row of the result table (``raw``: the raw tools' records/s of the same run, if they ran)."""
    if not r.get("ran"):
        table.add_row(label, name, "not run", *_blank(table, 4), str(r.get("reason", ""))[:60])
        return
    lat = r.get("latency") or {}
    half = r.get("second_half") or {}
    vs_raw = f"{r['records_per_s'] / raw:.2f}" if raw else "-"
    note = "" if name == "raw" else f"start {r.get('startup_s')}s excluded" if "excluded" in r.get("basis", "") \
        else "start included"
    if r.get("first_visible_s") is not None and name != "raw":
        note += f", first visible {r['first_visible_s']}s"
    note += f" load {r.get('load_avg_1m', ['?'])[0]}"
    if (r.get("config") or {}).get("class_archive") is False:
        note += ", no class archive"
    note = f"{r.get('compression', '?')}, {note.lstrip(', ')}"
    table.add_row(label, name, _n(r["records_per_s"]), _n(r["mb_per_s"], ",.1f"), _n(lat.get("p50_ms"), ".1f"),
                  _n(lat.get("p95_ms"), ".1f"), _n(lat.get("p99_ms"), ".1f"), _n(r.get("cpu_s_per_gb"), ",.0f"),
                  _n(None if r.get("jit_share") is None else 100 * r["jit_share"], ".0f"),
                  _n(half.get("records_per_s")), _n(half.get("cpu_s_per_gb"), ",.0f"),
                  _n(r.get("peak_rss_mb"), ",.0f"), vs_raw, note)


def _shape(row: dict[str, Any]) -> str:
    """``2000 (200 x 10)`` for many topics, ``120`` for one."""
    topics = int(row.get("topics") or 1)
    partitions = int(row["partitions"])
    return str(partitions) if topics == 1 else f"{partitions} ({topics} x {partitions // topics})"


@click.command()
@click.option("--quick", is_flag=True, help="small sizes (CI): 100k records, 6 partitions, 3 s latency")
@click.option("--records", "datasets", type=click.Choice(["1k", "100b"]), multiple=True,
              help="run only these record sizes (repeatable; default: both, 1 KiB with latency)")
@click.option("--keep", is_flag=True, help="leave the bench clusters running afterwards")
@click.option("--out", type=click.Path(path_type=Path), default=None, help="JSON report path (default reports/bench-<time>.json)")
@pass_ctx
def bench(ctx: CliContext, quick: bool, datasets: tuple[str, ...], keep: bool, out: Path | None) -> None:
    """Throughput, latency, CPU and memory: Kafka's perf tools vs MirrorMaker 2 vs geokafka.

    \b
    Starts two fresh local 1-broker clusters (ports 24092 and 25092, state under
    .geokafka/bench), loads the same data once (1 KiB and 100 B records, keyed, 2 headers)
    and runs on it, one after the other:
    - raw: org.apache.kafka.tools.ConsumerPerformance on the source and ProducerPerformance
      to the target (acks=all, linger.ms=5, batch.size=1000000, lz4); the slower of the two.
    - limit: a plain Java loop, one consumer feeding one producer (not transactional).
    - mm2: MirrorMaker 2 dedicated mode, tasks.max = cores, the same producer settings.
    - mm2-eos: the same with dst.exactly.once.source.support=enabled (transactional).
    - spark-kafka: Spark's Kafka source -> Kafka sink on local[16] (JVM only, at-least-once).
    - geokafka: `geokafka mirror` with its defaults (real-time mode, a partition group per
      core), exactly-once; and, in the full run, the same in micro-batch mode.
    The full run then loads each record size's data again and runs limit, mm2-eos, mm2 and
    geokafka on it in the reverse order: the figures the targets compare are each the mean of
    its two rounds, whatever the machine's pace did in between.
    Then the scaling section: the same backlog over 12 to 5,000 partitions (from 1,200 on, topics
    of 10 partitions: 120, 200 and 500 of them), steady traffic over every partition, then idle
    (MirrorMaker 2 beside geokafka at 2,000, where both also copy a topic created under them,
    MirrorMaker 2 refreshing its topics as often as geokafka), and offset translation.
    Throughput counts from the first record written on the target to the last one visible
    (process start excluded); latency is produce -> visible to read_committed under a steady load.
    """
    local_kafka_jars("bench")  # before anything starts: what is missing and how to fetch it
    from dataclasses import replace

    from geokafka.bench.run import FULL, QUICK, run_bench

    t0 = time.monotonic()

    def say(text: str) -> None:
        ctx.info(f"[bold cyan]{time.monotonic() - t0:6.1f}s[/] {text}")

    sizes = QUICK if quick else FULL
    if datasets:
        sizes = replace(sizes, datasets=tuple(dict.fromkeys(datasets)))
    report = run_bench(Path(".geokafka") / "bench", sizes, say, keep=keep)
    report["mode"] = "quick" if quick else "full"
    path = out or Path("reports") / f"bench-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(report, indent=2, default=str) + "\n")
    report["report"] = str(path)
    if ctx.json_output:
        ctx.emit(report)
        return
    print_tables(ctx.console, render(report))
    ctx.console.print(f"report: {path}")


PIPED_MAX_WIDTH = 400
"""Piped output (a log, CI): a table up to this wide is printed on one line per row instead of wrapping its
cells at the console's 160 columns (the scaling table has 19 columns)."""


def print_tables(console: Console, tables: list[Table]) -> None:
    """Print ``tables`` on ``console``: on a terminal at its width; piped, each at its own natural width (up to
    :data:`PIPED_MAX_WIDTH`), so a row stays one line a script or a person can read."""
    if console.is_terminal:
        for table in tables:
            console.print(table)
        return
    width = console.width
    try:
        for table in tables:
            natural = Measurement.get(console, console.options.update_width(PIPED_MAX_WIDTH), table).maximum
            console.width = max(width, min(natural, PIPED_MAX_WIDTH))
            console.print(table)
    finally:
        console.width = width


COMMANDS = [bench]
