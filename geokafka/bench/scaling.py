"""The bench's scaling section: geokafka over 12 to 5,000 partitions, MirrorMaker 2 beside it at 2,000.

Each shape is T topics of P partitions (the large ones many topics of 10 partitions, as real clusters spread them:
200 x 10, 500 x 10), and each contender gets topics of its own. Per shape, the same data: a backlog of ``records``
records of ``size`` bytes spread over every partition, replicated from the start (throughput, first record, the
time the whole backlog took: the target's read_committed ends watched while it copies, every record counted after
it), then ``rate`` records/s for ``latency_s`` seconds spread over the same partitions
(p50 / p99, read on one partition of each topic), then, at MirrorMaker 2's shape and the largest, ``idle_s``
seconds with no traffic at all (the contender's CPU and the target broker's, and how fast the target's internal
topics grow). Threads, sockets and RSS are the peaks of the contender's process tree over the run.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geokafka.bench.geokafka_run import run_geokafka
from geokafka.bench.mm2 import run_mm2
from geokafka.bench.setup import SRC, TopicSet, load
from geokafka.bench.watch import MANY_PARTITIONS_FETCH_WAIT_MS
from geokafka.control.state_records import STATE_TOPIC
from geokafka.infra.local_cluster import LocalClusterSpec, running_nodes

Say = Callable[[str], None]
INTERNAL_TOPICS = (STATE_TOPIC, "__transaction_state", "__consumer_offsets")


def internal_topic_bytes(target: LocalClusterSpec) -> Callable[[], dict[str, int]]:
    """Bytes on disk of the target's internal topics (every partition's log segments and indexes), by topic."""

    def sizes() -> dict[str, int]:
        out = dict.fromkeys(INTERNAL_TOPICS, 0)
        for node in target.nodes:
            data = target.node_dir(node.node_id) / "data"
            for topic in INTERNAL_TOPICS:
                for part in data.glob(f"{topic}-*"):
                    out[topic] += sum(f.stat().st_size for f in part.iterdir() if f.is_file())
        return out

    return sizes


def broker_pid(target: LocalClusterSpec) -> int | None:
    """The target's (first) broker process."""
    running = running_nodes(target)
    return next(iter(running.values()), None)


Shape = tuple[int, int]
"""(topics, partitions per topic)."""


def run_scaling(work: Path, state_dir: Path, target: LocalClusterSpec, shapes: tuple[Shape, ...], records: int,
                size: int, rate: float, latency_s: float, idle_s: float, say: Say,
                mm2_at: int | None, warmup_s: float) -> list[dict[str, Any]]:
    """One row per shape for geokafka, and one for MirrorMaker 2 at the shape of ``mm2_at`` partitions, where both
    also copy a topic created under them when the shape is many topics (:mod:`geokafka.bench.new_topic`); the
    latency probe warms up for ``warmup_s`` before it measures ``latency_s``."""
    rows: list[dict[str, Any]] = []
    largest = max(t * p for t, p in shapes)
    for topics, per_topic in shapes:
        count = topics * per_topic
        for name in ["geokafka", *(["mm2"] if count == mm2_at else [])]:
            # topics of the contender's own, the backlog and then the steady traffic on the same partitions: its flow
            # has exactly ``count`` partitions, and no record another contender's probe wrote
            data = TopicSet(f"bench.scale.{topics}x{per_topic}.{name}", topics, per_topic)
            say(f"scaling: {topics} x {per_topic} partitions: loading {records:,} x {size} B for {name}")
            load(SRC, data, records, size, per_topic)
            idle = idle_s if count in (largest, mm2_at) else 0.0
            say(f"scaling: {topics} x {per_topic} partitions: {name} (backlog, then {rate:,.0f} rec/s"
                + (f", then {idle:.0f} s idle)" if idle else ")"))
            kwargs: dict[str, Any] = {"lat_rate": rate, "lat_s": latency_s, "lat_warmup_s": warmup_s,
                                      "lat_fetch_wait_ms": MANY_PARTITIONS_FETCH_WAIT_MS, "lat_one_per_topic": True,
                                      "timeout_s": 600 + records / 200, "broker_pid": broker_pid(target),
                                      "idle_s": idle, "log_sizes": internal_topic_bytes(target),
                                      # beside MirrorMaker 2 (same refresh): a topic of the set created under it
                                      "new_topic": count == mm2_at and topics > 1,
                                      # the ends watched during the copy, the records counted after it
                                      "count_after": True}
            load_before = os.getloadavg()[0]
            try:
                if name == "geokafka":
                    result = run_geokafka(work, state_dir, data, records, size, data, status_cost=True, **kwargs)
                else:
                    result = run_mm2(work, data, records, size, data, **kwargs)
            except Exception as exc:  # noqa: BLE001 - a contender that fails is reported as not run, with why
                say(f"[red]scaling: {name} at {topics} x {per_topic} partitions did not run: {exc}[/]")
                rows.append({"contender": name, "topics": topics, "partitions": count, "ran": False,
                             "reason": f"{type(exc).__name__}: {exc}"})
                continue
            result["load_avg_1m"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
            rows.append(scaling_row(name, topics, count, result))
    return rows


def scaling_row(name: str, topics: int, partitions: int, result: dict[str, Any]) -> dict[str, Any]:
    """What the table shows of one contender's run at one shape (``partitions`` over ``topics`` topics)."""
    latency = result.get("latency") or {}
    idle = result.get("idle") or {}
    return {
        "contender": name, "topics": topics, "partitions": partitions, "ran": True,
        "records_per_s": result.get("records_per_s"), "first_record_s": result.get("startup_s"),
        "backlog_done_s": result.get("wall_s"), "cpu_s_per_gb": result.get("cpu_s_per_gb"),
        "counted_after": bool(result.get("counted_after")),
        "p50_ms": latency.get("p50_ms"), "p99_ms": latency.get("p99_ms"),
        "latency_machine_busy_percent": latency.get("machine_busy_percent"),
        "probe": {key: latency.get(key) for key in ("read_partitions", "read", "received")},
        "threads": result.get("peak_threads"), "sockets": result.get("peak_sockets"),
        "peak_rss_mb": result.get("peak_rss_mb"), "target_broker_cpu_s": result.get("target_broker_cpu_s"),
        "idle_cpu_percent": idle.get("cpu_percent"), "idle_target_broker_cpu_percent": idle.get("target_broker_cpu_percent"),
        "idle_growth_mb_per_hour": idle.get("growth_mb_per_hour"), "load_avg_1m": result.get("load_avg_1m"),
        "status": (result.get("while_running") or {}).get("status"),
        "new_topic_s": (result.get("new_topic") or {}).get("picked_up_s"),
        "class_archive": (result.get("config") or {}).get("class_archive"),
    }
