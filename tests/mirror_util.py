"""Helpers for tests that run `geokafka mirror` as a process of its own against the session's clusters: numbered
traffic by the clock, the mirror in a process group with its log, the topology file, and the exactly-once check
read from the target's provenance headers."""

from __future__ import annotations

import json as json_module
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import yaml
from confluent_kafka import Consumer, TopicPartition
from kafka_util import produce, read_all, watermarks
from pipeline_util import with_flows

from geokafka.control.connection import ClusterConnection
from geokafka.control.provenance import source_position
from geokafka.topology import Topology

PARTITIONS = 6


class Traffic:
    """Numbered records, round-robin over the partitions, ``rate`` a second by the clock, until stopped."""

    def __init__(self, conn: ClusterConnection, topic: str, rate: int = 500) -> None:
        self.conn, self.topic, self.rate = conn, topic, rate
        self.sent = 0
        self._stop = threading.Event()
        self.error: list[BaseException] = []
        self._thread = threading.Thread(target=self._run, name="traffic", daemon=True)

    def __enter__(self) -> Traffic:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        step = 0.2
        started = time.monotonic()
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - started) * self.rate)
                if due > self.sent:
                    produce(self.conn, self.topic, [
                        {"key": f"k{i}".encode(), "value": f"{i:08d}".encode() * 8, "partition": i % PARTITIONS}
                        for i in range(self.sent, due)])
                    self.sent = due
                self._stop.wait(step)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the test
            self.error.append(exc)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(60)
        assert not self.error, self.error


class Mirror:
    """``geokafka mirror`` of one flow in a process group of its own, its output in a file (``json``: the final
    summary as JSON on stdout instead of progress lines)."""

    def __init__(self, topology_file: Path, flow: str, log: Path, json: bool = False) -> None:
        self.log = log
        with open(log, "ab") as out:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "geokafka", "-f", str(topology_file), *(["--json"] if json else []), "mirror", flow],
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def summary(self, flow: str) -> dict:
        """The flow's entry of the final JSON summary (a ``json`` mirror that stopped)."""
        text = "\n" + self.text()
        return dict(json_module.loads(text[text.rindex("\n{"):])[flow])

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def alive(self) -> bool:
        assert self.proc.poll() is None, f"the mirror ended with {self.proc.returncode}:\n{self.text()[-3000:]}"
        return True

    def stop(self) -> None:
        if self.proc.poll() is None:
            os.killpg(self.proc.pid, signal.SIGTERM)
            try:
                self.proc.wait(60)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(30)


def topology_file(base: Topology, tmp: Path, flow: str, topic: str, master: str, realtime_batch_s: float = 300.0,
                  **spark_conf: str) -> Path:
    """A topology file of ``base`` with one flow east -> west of ``topic`` on ``master`` (two cores at most)."""
    topology = with_flows(base, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    pipeline = topology.pipeline.model_copy(update={
        "master": master, "realtime_batch_s": realtime_batch_s,
        "spark_conf": {"spark.executor.memory": "768m", "spark.cores.max": "2", **spark_conf}})
    path = tmp / f"{flow}.yaml"
    path.write_text(yaml.safe_dump(topology.model_copy(update={"pipeline": pipeline})
                                   .model_dump(mode="json", exclude_none=True)))
    return path


def target_ends(west: ClusterConnection, topic: str) -> dict[int, int]:
    """The high watermark of each partition of ``topic`` on ``west`` (0 while the mirror has not created it)."""
    consumer = Consumer(west.librdkafka(**{"group.id": "mirror-probe", "enable.auto.commit": False}))
    try:
        found = consumer.list_topics(topic, timeout=10).topics.get(topic)
        if found is None or found.error is not None or len(found.partitions) < PARTITIONS:
            return dict.fromkeys(range(PARTITIONS), 0)
        return {p: watermarks(consumer, TopicPartition(topic, p))[1] for p in range(PARTITIONS)}
    finally:
        consumer.close()


def assert_exactly_once(east: ClusterConnection, topic: str, west: ClusterConnection, target_topic: str) -> None:
    """Every source record on the target once (read_committed), each partition in source order, fields kept."""
    source = {(r.partition, r.offset): r for r in read_all(east, topic, timeout_s=120)}
    target = read_all(west, target_topic, timeout_s=120)
    origins = [source_position(list(r.headers)) for r in target]
    assert all(o is not None for o in origins)
    seen = [(o.partition, o.offset) for o in origins if o is not None]
    duplicates = len(seen) - len(set(seen))
    missing = len(set(source) - set(seen))
    assert (duplicates, missing) == (0, 0), (
        f"{duplicates} duplicates, {missing} missing of {len(source)}: {where_copies_differ(target, origins, set(source))}")
    by_partition: dict[int, list[int]] = {}
    for o in origins:
        assert o is not None
        by_partition.setdefault(o.partition, []).append(o.offset)
    assert all(offsets == sorted(offsets) for offsets in by_partition.values()), "a partition's order broke"
    for rec, origin in zip(target, origins):
        assert origin is not None
        src = source[(origin.partition, origin.offset)]
        assert (rec.partition, rec.key, rec.value, rec.timestamp) == (src.partition, src.key, src.value, src.timestamp)


def where_copies_differ(target: list, origins: list, source: set[tuple[int, int]]) -> str:
    """Per source partition, the source offsets written twice (with the target offsets of their first and last
    copies) and those never written, as ranges: which writer and which batch did it."""
    copies: dict[tuple[int, int], list[int]] = {}
    for rec, origin in zip(target, origins):
        if origin is not None:
            copies.setdefault((origin.partition, origin.offset), []).append(rec.offset)
    parts = []
    for p in sorted({p for p, _ in source} | {p for p, _ in copies}):
        twice = sorted(o for (q, o), at in copies.items() if q == p and len(at) > 1)
        never = sorted(o for q, o in source if q == p and (q, o) not in copies)
        if twice:
            first, last = copies[(p, twice[0])], copies[(p, twice[-1])]
            parts.append(f"p{p}: {len(twice)} twice in {_ranges(twice)} (first at target {first}, last at {last})")
        if never:
            parts.append(f"p{p}: {len(never)} never in {_ranges(never)}")
    return "; ".join(parts)


def _ranges(offsets: list[int]) -> str:
    """Sorted offsets as compact ranges: 3-7,9."""
    spans: list[list[int]] = []
    for o in offsets:
        if spans and o == spans[-1][1] + 1:
            spans[-1][1] = o
        else:
            spans.append([o, o])
    shown = [f"{a}-{b}" if a != b else str(a) for a, b in spans[:8]]
    return ",".join(shown) + (f" and {len(spans) - 8} more" if len(spans) > 8 else "")


def caught_up(mirror: Mirror, west: ClusterConnection, target_topic: str, total: int) -> bool:
    """The mirror runs and ``target_topic`` holds at least ``total`` records."""
    mirror.alive()
    return len(read_all(west, target_topic, timeout_s=60)) >= total
