"""A writer killed mid-transaction must not block read_committed readers of the target until the
transaction times out: the restarted mirror fences every partition's transactional id before
Spark starts, which aborts the open transaction and moves the last stable offset at once.

The writer's transaction timeout is set to 10 minutes, so only fencing can move the last stable
offset within the test; the test does not time anything tighter than that. The target is a cluster
of the module's own (base +4092): a transaction held open that long on the session's shared west would
hold back every other test's read of its state topic."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from cluster_util import one_more_cluster
from confluent_kafka import TopicPartition
from confluent_kafka._model import IsolationLevel
from confluent_kafka.admin import AdminClient, OffsetSpec
from kafka_util import create_topic, port_base, produce, read_all
from pipeline_util import wait_for, with_flows

from geokafka.control.connection import ClusterConnection, connection
from geokafka.topology import Topology

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

TOTAL = 300_000
PARTITIONS = 3
TXN_TIMEOUT_MS = 600_000


@pytest.fixture(scope="module")
def with_own_target(base_topology: Topology) -> Iterator[Topology]:
    """The session's clusters plus ``lsotarget`` (one broker at base +4092), for this module only."""
    with one_more_cluster(base_topology, "lsotarget", port_base() + 4092) as topology:
        yield topology


def _ends(conn: ClusterConnection, topic: str, isolation: IsolationLevel) -> dict[int, int]:
    admin = AdminClient(conn.librdkafka())
    request = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(PARTITIONS)}
    futures = admin.list_offsets(request, isolation_level=isolation, request_timeout=10)
    return {tp.partition: f.result(timeout=15).offset for tp, f in futures.items()}


def _start(topology_file: Path, log: Path) -> subprocess.Popen:
    with open(log, "ab") as out:
        return subprocess.Popen([sys.executable, "-m", "geokafka", "-f", str(topology_file), "--json", "mirror", "lso"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})


def test_a_restart_after_kill_minus_nine_unblocks_read_committed_readers(with_own_target, east, unique, tmp_path):
    dst = connection(with_own_target, "lsotarget")
    topic = unique("lso")
    create_topic(east, topic, partitions=PARTITIONS, rf=1)
    produce(east, topic, [{"key": f"k{i}".encode(), "value": b"v" * 200, "partition": i % PARTITIONS}
                          for i in range(TOTAL)])
    topology = with_flows(with_own_target, lso={"source": "east", "target": "lsotarget", "topics": [topic]})
    # one long transaction, committed only at its batch's end (30 s): a transaction is open for most of the copy
    # (a caught-up group commits early by default: a copy done between two looks would leave nothing open)
    pipeline = topology.pipeline.model_copy(update={
        "realtime_batch_s": 30, "max_records_per_batch": TOTAL, "commit_interval_ms": 600_000,
        "caught_up_commit_ms": 600_000,
        "producer_config": {"transaction.timeout.ms": str(TXN_TIMEOUT_MS)}})
    topology_file = tmp_path / "lso.yaml"
    topology_file.write_text(yaml.safe_dump(topology.model_copy(update={"pipeline": pipeline})
                                            .model_dump(mode="json", exclude_none=True)))
    target = f"east.{topic}"
    log = tmp_path / "mirror.log"
    proc = _start(topology_file, log)
    try:
        def writing_uncommitted() -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            try:
                high = _ends(dst, target, IsolationLevel.READ_UNCOMMITTED)
                stable = _ends(dst, target, IsolationLevel.READ_COMMITTED)
            except Exception:  # noqa: BLE001 - the target topic is created by the mirror
                return False
            return any(high[p] > stable[p] for p in high)

        wait_for(writing_uncommitted, 300, "the mirror writing an open transaction")
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)
        high = _ends(dst, target, IsolationLevel.READ_UNCOMMITTED)
        stuck = _ends(dst, target, IsolationLevel.READ_COMMITTED)
        blocked = {p for p in high if high[p] > stuck[p]}
        assert blocked, "the kill left no open transaction behind"
        time.sleep(5)
        assert _ends(dst, target, IsolationLevel.READ_COMMITTED) == stuck  # nothing moves it but a fence

        killed_at = time.monotonic()
        proc = _start(topology_file, log)

        def unblocked() -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            now = _ends(dst, target, IsolationLevel.READ_COMMITTED)
            return all(now[p] >= high[p] for p in blocked)

        wait_for(unblocked, 240, "the last stable offset to pass the killed writer's records")
        assert time.monotonic() - killed_at < TXN_TIMEOUT_MS / 1000  # fenced, not timed out

        def copied() -> bool:
            assert proc.poll() is None, log.read_text()[-3000:]
            return sum(_ends(dst, target, IsolationLevel.READ_COMMITTED).values()) > 0 and \
                len(read_all(dst, target, timeout_s=60)) >= TOTAL

        wait_for(copied, 300, "every record on the target")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(30)
    assert len(read_all(dst, target, timeout_s=120)) == TOTAL  # the aborted attempt left no duplicate
