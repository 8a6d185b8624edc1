"""Regrouping never lets two generations write a partition: group-count changes and a partition added
while records flow, kill -9 in between, and a frozen writer of the previous generation that wakes up
after the next one started (a zombie): every source record on the target exactly once, in order.

Phases (one mirror process each, its topology file rewritten between them):
  1. 2 groups over 4 partitions (generation 0); frozen with SIGSTOP mid-stream, transactions open.
  2. 3 groups (generation 1) starts beside the frozen one and fences it; the frozen one is woken up,
     must be refused (fenced), and is killed. Two partitions are added to the source while it runs:
     the flow regroups on its own (generation 2). kill -9.
  3. 1 group (generation 3), kill -9 mid-stream.
  4. 2 groups over 6 partitions (generation 4) until the target holds everything.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import yaml
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewPartitions
from kafka_util import create_topic, produce, read_all, watermarks
from pipeline_util import wait_for, with_flows

from geokafka.control.connection import ClusterConnection
from geokafka.control.provenance import source_position
from geokafka.control.state_store import KafkaStateStore

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=170), pytest.mark.timeout(900)]

FIRST, ADDED = 4, 6
RATE_BATCH = 200  # records every 0.2 s: 1,000 rec/s


class Traffic:
    """Numbered records produced round-robin over the topic's current partitions until stopped."""

    def __init__(self, conn: ClusterConnection, topic: str) -> None:
        self.conn, self.topic = conn, topic
        self.partitions = FIRST
        self.sent = 0
        self.stop = threading.Event()
        self.error: list[BaseException] = []
        self.thread = threading.Thread(target=self._run, name="traffic", daemon=True)

    def _run(self) -> None:
        try:
            while not self.stop.is_set():
                now, parts = int(time.time() * 1000), self.partitions
                produce(self.conn, self.topic, [
                    {"key": f"k{i}".encode(), "value": f"{i:08d}".encode() * 8, "partition": i % parts, "timestamp": now}
                    for i in range(self.sent, self.sent + RATE_BATCH)])
                self.sent += RATE_BATCH
                self.stop.wait(0.2)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the test
            self.error.append(exc)


def _ends(conn: ClusterConnection, topic: str) -> dict[int, int]:
    """The high watermark of each partition of ``topic``."""
    md = AdminClient(conn.librdkafka()).list_topics(topic, timeout=10).topics[topic]
    consumer = Consumer(conn.librdkafka(**{"group.id": "regroup-probe", "enable.auto.commit": False}))
    try:
        # a partition the mirror just added on the target may not have its leader in place yet
        return {p: watermarks(consumer, TopicPartition(topic, p))[1] for p in sorted(md.partitions)}
    finally:
        consumer.close()


class Mirror:
    """``geokafka mirror regroup`` in a process group of its own, with ``groups`` partition groups."""

    def __init__(self, topology: dict, groups: int, tmp: Path, name: str) -> None:
        data = {**topology, "pipeline": {**topology["pipeline"], "partition_groups": groups}}
        path = tmp / f"{name}.yaml"
        path.write_text(yaml.safe_dump(data))
        self.log = tmp / f"{name}.log"
        with open(self.log, "ab") as out:
            self.proc = subprocess.Popen([sys.executable, "-m", "geokafka", "-f", str(path), "mirror", "regroup"],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                         env={**os.environ, "PYTHONUNBUFFERED": "1"})

    def alive(self) -> bool:
        return self.proc.poll() is None

    def signal(self, sig: signal.Signals) -> None:
        os.killpg(self.proc.pid, sig)

    def kill(self) -> None:
        if self.alive():
            self.signal(signal.SIGKILL)
            self.proc.wait(30)


def _replicating(mirror: Mirror, west: ClusterConnection, target: str, more: int) -> None:
    """Positive evidence that ``mirror`` writes: the target grows by ``more`` records after now."""
    start = sum(_ends(west, target).values())

    def grown() -> bool:
        assert mirror.alive(), mirror.log.read_text()[-3000:]
        return sum(_ends(west, target).values()) >= start + more

    wait_for(grown, 180, f"{mirror.log.stem} to replicate {more} more records")


def test_regrouping_with_kills_and_a_zombie_writes_each_record_once(base_topology, east, west, unique, tmp_path):
    topic = unique("regroup")
    target = f"east.{topic}"
    create_topic(east, topic, partitions=FIRST, rf=3)
    topology = with_flows(base_topology, regroup={"source": "east", "target": "west", "topics": [topic]})
    data = topology.model_dump(mode="json", exclude_none=True)
    rng = random.Random(34)
    traffic = Traffic(east, topic)
    traffic.thread.start()
    mirrors: list[Mirror] = []
    store = KafkaStateStore(west)
    try:
        # 1. generation 0, then frozen with its transactions open
        first = Mirror(data, 2, tmp_path, "m1-two-groups")
        mirrors.append(first)
        _replicating(first, west, target, 2_000)
        time.sleep(rng.uniform(0.2, 2.0))
        first.signal(signal.SIGSTOP)

        # 2. generation 1 fences generation 0; the frozen writer wakes up and must be refused
        second = Mirror(data, 3, tmp_path, "m2-three-groups")
        mirrors.append(second)
        _replicating(second, west, target, 2_000)
        first.signal(signal.SIGCONT)
        # refused as fenced, or (the broker's other word for it) for producing with an old epoch; killed at once: left
        # alone, its runner would restart, regroup and fence generation 1 in turn (two mirrors of a flow take turns)
        wait_for(lambda: any(word in first.log.read_text().lower() for word in ("fenced", "old epoch")), 120,
                 "the woken writer of generation 0 to be refused as fenced")
        first.kill()
        _replicating(second, west, target, 1_000)

        # ... partitions added while it runs: it regroups on its own (generation 2)
        admin = AdminClient(east.librdkafka())
        admin.create_partitions([NewPartitions(topic, ADDED)])[topic].result(timeout=30)
        traffic.partitions = ADDED
        wait_for(lambda: len(_ends(west, target)) == ADDED and all(_ends(west, target)[p] > 0 for p in (4, 5)),
                 180, "records of the added partitions on the target")
        time.sleep(rng.uniform(0.2, 2.0))
        second.kill()

        # 3. generation 3: one group, killed mid-stream
        third = Mirror(data, 1, tmp_path, "m3-one-group")
        mirrors.append(third)
        _replicating(third, west, target, 2_000)
        time.sleep(rng.uniform(0.2, 2.0))
        third.kill()

        # 4. generation 4 replicates everything
        last = Mirror(data, 2, tmp_path, "m4-two-groups")
        mirrors.append(last)
        _replicating(last, west, target, 1_000)
        traffic.stop.set()
        traffic.thread.join(60)
        assert not traffic.error, traffic.error
        source = read_all(east, topic, timeout_s=120)
        assert len(source) == traffic.sent

        def caught_up() -> bool:
            assert last.alive(), last.log.read_text()[-3000:]
            return len(read_all(west, target, timeout_s=60)) >= len(source)

        wait_for(caught_up, 300, "the target to hold every source record")
        # nothing left in flight: the last mirror's recorded progress is at the source ends
        ends = _ends(east, topic)
        wait_for(lambda: _progress(store, topic) == ends, 60, "the last mirror's progress at the source ends")
        stored = store.read(timeout_s=30).generation("regroup")
    finally:
        store.close()
        traffic.stop.set()
        for mirror in mirrors:
            if mirror.alive():
                mirror.signal(signal.SIGCONT)
                mirror.kill()
    assert stored is not None and (stored.generation, stored.groups, stored.partitions) == (4, 2, ADDED)
    copies = read_all(west, target, timeout_s=120)
    found = [source_position(list(r.headers)) for r in copies]
    origins = [o for o in found if o is not None]
    assert len(origins) == len(found)  # every copy says where it came from
    seen = [(o.partition, o.offset) for o in origins]
    assert len(copies) == len(source), f"{len(copies) - len(source):+d} records (duplicates if positive)"
    assert len(set(seen)) == len(seen) == len(source)  # no duplicates
    assert set(seen) == {(r.partition, r.offset) for r in source}  # nothing lost
    assert all(r.partition == o.partition for r, o in zip(copies, origins, strict=True))  # partitions kept
    by_partition: dict[int, list[int]] = {}
    for o in origins:
        by_partition.setdefault(o.partition, []).append(o.offset)
    assert all(offsets == sorted(offsets) for offsets in by_partition.values())  # order kept


def _progress(store: KafkaStateStore, topic: str) -> dict[int, int]:
    """Partition -> the next offset the flow recorded as replicated, for ``topic``."""
    return {p: nxt for (t, p), nxt in store.read(timeout_s=30).progress("regroup").items() if t == topic}
