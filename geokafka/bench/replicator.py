"""Run one replicator process (MM2 or geokafka) over a prepared topic: throughput, CPU, RSS, latency."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from geokafka.bench.new_topic import new_topic_pickup
from geokafka.bench.procstat import TreeSampler
from geokafka.bench.setup import DST, SRC
from geokafka.bench.watch import ENDS_EVERY_S, FETCH_WAIT_MS, FirstWritten, TargetCounter, VisibleEnds, latency_probe

MIN_WINDOW_S = 5 * ENDS_EVERY_S
"""The shortest copy window a rate is taken from: five looks at the target's ends; a shorter copy is timed from its
process's start."""


def run_replicator(
    name: str, cmd: list[str], log: Path, *, topic: str, target_topic: str | list[str], records: int, size: int,
    lat_topic: str | list[str] | None = None, lat_target: str | list[str] | None = None, lat_rate: float = 500,
    lat_s: float = 5,
    lat_warmup_s: float = 0.0, lat_fetch_wait_ms: int = FETCH_WAIT_MS, lat_one_per_topic: bool = False,
    timeout_s: float = 600, env: dict[str, str] | None = None,
    broker_pid: int | None = None, idle_s: float = 0.0, log_sizes: Callable[[], dict[str, int]] | None = None,
    while_running: Callable[[], dict[str, Any]] | None = None,
    new_topic: tuple[str, str, int] | None = None, count_after: bool = False,
) -> dict[str, Any]:
    """Start ``cmd``; measure until ``target_topic`` (or every topic of a list) holds ``records``;
    then the latency probe (over every topic of ``lat_topic``, each read on ``lat_target``, its consumer's fetches
    held at most ``lat_fetch_wait_ms``, with ``lat_one_per_topic`` one partition of each topic read); then
    ``while_running`` (what else is measured beside the running replicator, kept under that key); then, with
    ``idle_s``, its cost while nothing is written (its CPU, the target broker's ``broker_pid`` CPU, and the growth
    of the target's internal topics as ``log_sizes`` reads them, per hour); then, with ``new_topic`` (source topic,
    its replica's name, partitions), how long the replicator takes to copy a topic created under it
    (:func:`~geokafka.bench.new_topic.new_topic_pickup`); stop it.

    With ``count_after``, only the target's read_committed ends are watched while the copy runs (every
    :func:`~geokafka.bench.watch.ends_every_s` of their partitions), and the counter that reads every record
    confirms they all arrived once each partition's end reached its share: over thousands of partitions the
    counter's fetches kept the target broker busy and slowed the copy it measured. Without it (the record-size
    sections) the counter reads beside the copy, as it always has, and one topic's ends say when the records
    became visible."""
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("w") as out:
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True, env={**os.environ, **(env or {})})
    sampler = TreeSampler(proc.pid).start()
    broker = TreeSampler(broker_pid, 1.0).start() if broker_pid is not None else None
    counter = TargetCounter(DST, target_topic, records)
    # the ends say when records became visible, while the counter (which reads them all) may be behind
    targets = [target_topic] if isinstance(target_topic, str) else list(target_topic)
    ends = VisibleEnds(DST, targets, records, None if count_after else ENDS_EVERY_S) \
        if count_after or len(targets) == 1 else None
    marks: dict[str, float] = {}

    def first() -> None:
        sampler.sample()
        marks["cpu_first"] = sampler.cpu_s

    def first_written() -> None:
        if broker is not None:
            broker.sample()
            marks["broker_first"] = broker.cpu_s
        sampler.sample()
        marks["cpu_written"] = sampler.cpu_s
        marks["jit_written"] = sampler.jit_cpu_s()
        marks["count_written"] = counter.count

    def half() -> None:
        sampler.sample()
        marks["cpu_half"] = sampler.cpu_s

    watch: TargetCounter | VisibleEnds = ends if ends is not None else counter
    watch.on_first = first
    watch.on_half = half
    written = FirstWritten(DST, target_topic)
    written.on_first = first_written
    written.start()
    if not count_after:
        counter.start()
    if ends is not None:
        ends.start()
    result: dict[str, Any] = {"contender": name, "records": records, "record_bytes": size, "topic": topic}
    try:
        deadline = t0 + timeout_s
        if count_after and ends is not None:
            while time.monotonic() < deadline and not ends.complete.wait(1.0):
                if proc.poll() is not None:
                    raise RuntimeError(f"{name} exited with {proc.returncode} (see {log})")
            counter.start()  # every partition's end reached its share: the counter confirms every record is there
            result["counted_after"] = True
        while time.monotonic() < deadline and not counter.wait(1.0):
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with {proc.returncode} (see {log})")
        if counter.done_at is None:
            raise RuntimeError(f"{name}: {counter.count:,}/{records:,} records on the target after {timeout_s:.0f}s")
        sampler.sample()
        done_at, first_at, first_count = counter.done_at, counter.first_at, counter.first_count
        half_at, half_count = counter.half_at, counter.half_count
        if ends is not None:
            ends.stop()
            final = ends.sample()  # the copy is complete: the ends are final
            if final is not None:
                # a transaction's commit marker takes an offset of each partition it wrote: ends past the records
                # copied (the counter found each once) say the writer's batches were transactional
                result["transactional_writes"] = final > records
            visible_at = ends.reached_at(final) if final is not None else None
            if visible_at is not None and ends.first_at is not None:
                result["counter_behind_s"] = round(done_at - visible_at, 2)
                done_at, first_at, first_count = visible_at, ends.first_at, ends.first_sum
                half_at, half_count = ends.half_at, ends.half_sum
        cpu_done = sampler.cpu_at(done_at)
        if broker is not None and "broker_first" in marks:
            broker.sample()
            result["target_broker_cpu_s"] = round(broker.cpu_s - marks["broker_first"], 2)
        jit_done = sampler.jit_cpu_s()
        first_at = first_at or t0
        wall = done_at - t0
        # the window opens when the first record is written (committed or not: a transactional
        # replicator writes long before its first commit is visible) and closes when the last is
        # visible; it excludes process start, and is used when it holds most of the data and
        # lasts long enough to mean something (MIN_WINDOW_S)
        if written.at is not None and marks.get("cpu_written") is not None:
            opened: float = written.at
            cpu_open: float | None = marks["cpu_written"]
            in_window = records - int(marks["count_written"])
            basis = "first record written -> last visible (start excluded)"
        else:
            opened, cpu_open, in_window = first_at, marks.get("cpu_first"), records - first_count
            basis = "first record visible -> last (start excluded)"
        steady = done_at - opened
        min_window_s = MIN_WINDOW_S if ends is None else 5 * ends.every_s  # five looks at the ends
        if steady > min_window_s and in_window >= records // 2 and cpu_open is not None:
            seconds, cpu = steady, cpu_done - cpu_open
        else:
            in_window, seconds, cpu, basis = records, wall, cpu_done, "process start -> last record (start included)"
        gb = in_window * size / 1e9
        result.update({
            "ran": True, "startup_s": round((written.at or first_at) - t0, 2),
            "first_visible_s": round(first_at - t0, 2), "wall_s": round(wall, 2), "seconds": round(seconds, 3),
            "basis": basis, "records_in_window": in_window, "records_per_s": round(in_window / seconds, 1),
            "mb_per_s": round(in_window * size / 1e6 / seconds, 2),
            "cpu_s": round(cpu, 2), "cpu_s_total": round(cpu_done, 2), "cpu_s_per_gb": round(cpu / gb, 1),
            "peak_rss_mb": round(sampler.peak_rss / 1e6, 1), "processes": sampler.processes,
        })
        if "jit_written" in marks and basis.startswith("first record written"):
            # the JVM's compilers at work in the window: a cost of a fresh JVM, paid once
            jit = jit_done - marks["jit_written"]  # the sampler keeps the CPU of threads HotSpot retired
            result.update({"jit_cpu_s": round(jit, 2), "jit_share": round(jit / cpu, 3) if cpu > 0 else None})
        if half_at is not None and "cpu_half" in marks and done_at > half_at and half_count < records:
            # the second half of the records: later in the run, the JVMs warmer (steadier than the whole window)
            half_n = records - half_count
            half_s = done_at - half_at
            result["second_half"] = {
                "records": half_n, "seconds": round(half_s, 3), "records_per_s": round(half_n / half_s, 1),
                "cpu_s_per_gb": round((cpu_done - marks["cpu_half"]) / (half_n * size / 1e9), 1)}
        elif half_at is not None and half_at >= done_at:
            # a transaction that made the half and the rest visible at once (a short copy, a slow commit): the
            # target's ends, looked at every ENDS_EVERY_S (or ends_every_s), have no later half to time
            result["second_half_unmeasured"] = "the half and the last record became visible in the same look"
        if lat_topic and lat_target:
            result["latency"] = latency_probe(SRC, lat_topic, DST, lat_target, lat_rate, lat_s, warmup_s=lat_warmup_s,
                                              fetch_wait_ms=lat_fetch_wait_ms, one_per_topic=lat_one_per_topic)
            sampler.sample()
            result["peak_rss_mb"] = round(sampler.peak_rss / 1e6, 1)
        if while_running is not None:
            result["while_running"] = while_running()
        if idle_s > 0:
            result["idle"] = _idle_cost(sampler, broker, log_sizes, idle_s)
        if new_topic is not None:  # after the idle window: geokafka restarts its query for a new topic
            result["new_topic"] = new_topic_pickup(*new_topic)
        result.update({"peak_threads": sampler.peak_threads, "peak_sockets": sampler.peak_sockets})
    finally:
        written.stop()
        counter.stop()
        if ends is not None:
            ends.close()
        sampler.stop()
        if broker is not None:
            broker.stop()
        _stop(proc)
    return result


def _idle_cost(sampler: TreeSampler, broker: TreeSampler | None, log_sizes: Callable[[], dict[str, int]] | None,
               idle_s: float) -> dict[str, Any]:
    """CPU of the replicator and of the target broker while no record is written, and the growth of the target's
    internal topics, each per hour."""
    sampler.sample()
    cpu0 = sampler.cpu_s
    broker_cpu0 = broker.cpu_s if broker is not None else 0.0
    sizes0 = log_sizes() if log_sizes is not None else {}
    time.sleep(idle_s)  # the measurement itself: nothing is written meanwhile
    sampler.sample()
    out: dict[str, Any] = {"seconds": idle_s, "cpu_percent": round(100 * (sampler.cpu_s - cpu0) / idle_s, 2)}
    if broker is not None:
        broker.sample()
        out["target_broker_cpu_percent"] = round(100 * (broker.cpu_s - broker_cpu0) / idle_s, 2)
    if log_sizes is not None:
        sizes1 = log_sizes()
        out["growth_mb_per_hour"] = {name: round((sizes1.get(name, 0) - sizes0.get(name, 0)) * 3600 / idle_s / 1e6, 2)
                                     for name in sorted(set(sizes0) | set(sizes1))}
    return out


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(10)
    except ProcessLookupError:
        pass

