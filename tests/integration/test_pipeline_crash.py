"""Exactly-once effect across crashes: kill -9 the pipeline 20 times while a stream of records runs through them.

The mirror runs on a Spark cluster of its own (``local-cluster``: a master, a worker and two
executor JVMs under the mirror process), so both halves are killed for real: the whole process
group (driver, worker, executors) 5 times, and one executor JVM, in the middle of writing, 15 times.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from functools import partial
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Producer
from kafka_util import create_topic, read_all
from pipeline_util import sentinels_through, wait_for, with_flows

from geokafka.control.provenance import source_position

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=230), pytest.mark.timeout(1500)]

CHUNK = 500
MIN_RECORDS = 50_000
PARTITIONS = 6


def _descendants(pid: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    out, todo = [], [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


EXECUTOR = b"org.apache.spark.executor.CoarseGrainedExecutorBackend"
# a Spark cluster of its own under the mirror process: two executor JVMs the test can kill, which
# Spark's worker replaces, as a standalone or Kubernetes cluster would
MASTER = "local-cluster[2,1,1024]"


def _executors(root: int) -> list[int]:
    """The Spark executor JVMs under the mirror process (they write the batches to the target)."""
    out = []
    for pid in _descendants(root):
        try:
            if EXECUTOR in Path(f"/proc/{pid}/cmdline").read_bytes():
                out.append(pid)
        except OSError:
            continue
    return out


def _start_mirror(topology_file: Path, log: Path) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    with open(log, "ab") as out:
        return subprocess.Popen(
            [sys.executable, "-m", "geokafka", "-f", str(topology_file), "--json", "mirror", "crash"],
            stdout=out, stderr=subprocess.STDOUT, start_new_session=True, env=env,
        )


def _kill_group(proc: subprocess.Popen) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(30)


def test_twenty_kill_minus_nine_lose_nothing_duplicate_nothing(base_topology, east, west, unique, tmp_path):
    topic = unique("crash")
    create_topic(east, topic, partitions=PARTITIONS, rf=3)
    topology = with_flows(base_topology, crash={"source": "east", "target": "west", "topics": [topic]})
    topology = topology.model_copy(update={"pipeline": topology.pipeline.model_copy(update={"master": MASTER})})
    data = topology.model_dump(mode="json", exclude_none=True)
    topology_file = tmp_path / "crash.yaml"
    topology_file.write_text(yaml.safe_dump(data))
    rng = random.Random(20)

    kills_done = threading.Event()
    produced = [0]

    def stream() -> None:
        """Records until the last kill (500 every half second or so), so that every kill finds the pipeline writing."""
        writer = Producer(east.librdkafka(**{"linger.ms": 5, "enable.idempotence": True}))
        now = int(time.time() * 1000)
        while not kills_done.is_set() or produced[0] < MIN_RECORDS:
            start = produced[0]
            for i in range(start, start + CHUNK):
                writer.produce(topic, key=f"k{i}".encode(), value=f"{i:08d}".encode() * 12,
                               partition=i % PARTITIONS, timestamp=now + i)
            assert writer.flush(60) == 0
            produced[0] = start + CHUNK
            time.sleep(0.5)

    producer = threading.Thread(target=stream, daemon=True)
    producer.start()
    log = tmp_path / "mirror.log"
    proc = _start_mirror(topology_file, log)
    kills = {"driver": 0, "executor": 0}
    try:
        for n in range(20):
            if n % 4 == 0:  # 5 whole-pipeline kills (driver, worker and executor JVMs), at any moment
                time.sleep(rng.uniform(2.0, 14.0))
                _kill_group(proc)
                kills["driver"] += 1
                proc = _start_mirror(topology_file, log)
            else:  # 15 executor kills: one of the JVMs writing the batches, which Spark replaces
                wait_for(partial(lambda pid: len(_executors(pid)) == 2, proc.pid), 180, "two Spark executor JVMs")
                time.sleep(rng.uniform(0.5, 5.0))
                victims = _executors(proc.pid)
                try:
                    os.kill(rng.choice(victims), signal.SIGKILL)
                except (ProcessLookupError, IndexError):
                    continue
                kills["executor"] += 1
        kills_done.set()
        producer.join(300)
        assert not producer.is_alive()
        total = produced[0]
        source = read_all(east, topic, timeout_s=120)
        assert len(source) == total

        # a sentinel behind the last record of every partition, through: whatever the kills left to redo
        # was written before it (the copy keeps a partition's order), duplicates included
        def running() -> None:
            assert proc.poll() is None, log.read_text()[-2000:]

        sentinels = sentinels_through(east, topic, west, f"east.{topic}", PARTITIONS, timeout_s=300, check=running)
    finally:
        kills_done.set()
        if proc.poll() is None:
            _kill_group(proc)
    copied = read_all(west, f"east.{topic}", timeout_s=120)
    assert sorted(r.value for r in copied if r.value in sentinels) == sorted(sentinels)  # each once
    target = [r for r in copied if r.value not in sentinels]
    origins = [source_position(list(r.headers)) for r in target]
    seen = {(o.partition, o.offset) for o in origins if o is not None}
    assert kills == {"driver": 5, "executor": 15}
    assert len(target) == total, f"{len(target) - total:+d} records (duplicates if positive)"
    assert len(seen) == total  # no duplicates
    assert seen == {(r.partition, r.offset) for r in source}  # nothing lost
    by_partition: dict[int, list[int]] = {}
    for o in origins:
        by_partition.setdefault(o.partition, []).append(o.offset)
    assert all(offsets == sorted(offsets) for offsets in by_partition.values())  # order kept
