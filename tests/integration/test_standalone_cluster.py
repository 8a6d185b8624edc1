"""Flows on a real Spark standalone cluster: a master and one-core workers started from pyspark's own
``bin/spark-class``, as a user who outgrew one machine would run them. geokafka's jars reach the
executors with ``spark.jars``; the records are written by executor JVMs of the workers.

What must hold there as on one machine: every record exactly once, in order, with its provenance,
also when a task fails after it committed (a test hook makes it), and when a worker dies under a
real-time query with no spare slot (the mirror falls back to micro-batches on what is left, then
returns to real-time mode when a worker is back). Each test's mirror is an application of its own.
"""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from kafka_util import create_topic, produce
from mirror_util import PARTITIONS, Mirror, Traffic, assert_exactly_once, caught_up, target_ends, topology_file
from pipeline_util import state_store, wait_for

from geokafka.control.state_records import Heartbeat
from geokafka.procfs import stat_fields

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=240), pytest.mark.timeout(1200)]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _spark_class() -> Path:
    import pyspark

    return Path(pyspark.__file__).parent / "bin" / "spark-class"


def _listening(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return True
    except OSError:
        return False


def _running(pid: int) -> bool:
    fields = stat_fields(pid)
    return fields is not None and fields[0] != "Z"


def _children(pid: int) -> list[int]:
    return [int(entry.name) for entry in Path("/proc").iterdir()
            if entry.name.isdigit() and (fields := stat_fields(int(entry.name))) and fields[1:2] == [str(pid)]]


class Standalone:
    """A standalone master and its one-core workers; workers can be killed (SIGKILL) and added."""

    def __init__(self, home: Path) -> None:
        self.home = home
        # the master and the workers only schedule: the quick compiler and a small heap (their executors get the
        # mirror's own JVM options, through spark.executor.extraJavaOptions)
        self.env = {**os.environ, "SPARK_LOCAL_IP": "127.0.0.1", "SPARK_HOME": str(_spark_class().parents[1]),
                    "SPARK_LOG_DIR": str(home / "spark-logs"), "SPARK_DAEMON_MEMORY": "256m",
                    "SPARK_DAEMON_JAVA_OPTS": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC"}
        self.port = _free_port()
        self.url = f"spark://127.0.0.1:{self.port}"
        self.work = home / "work"
        self.workers: dict[int, subprocess.Popen] = {}
        self._procs: list[subprocess.Popen] = []

    def _start(self, name: str, *args: str) -> subprocess.Popen:
        with open(self.home / f"{name}.log", "ab") as log:
            # spark-class execs the JVM: the process is the master's or the worker's JVM itself
            proc = subprocess.Popen([str(_spark_class()), *args], stdout=log, stderr=subprocess.STDOUT,
                                    env=self.env, start_new_session=True)
        self._procs.append(proc)
        return proc

    def _registered(self) -> int:
        return (self.home / "master.log").read_text(errors="replace").count("Registering worker")

    def start(self, workers: int) -> None:
        self._start("master", "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port",
                    str(self.port), "--webui-port", str(_free_port()))
        wait_for(lambda: _listening(self.port), 120, "the Spark master")
        for _ in range(workers):
            self.add_worker()

    def add_worker(self) -> int:
        n = len(self.workers) + 1
        before = self._registered()
        self.workers[n] = self._start(
            f"worker-{n}", "org.apache.spark.deploy.worker.Worker", "--host", "127.0.0.1", "--webui-port",
            str(_free_port()), "--cores", "1", "--memory", "1g", "--work-dir", str(self.work / f"worker-{n}"), self.url)
        wait_for(lambda: self._registered() > before, 120, f"worker {n} to register")
        return n

    def executors(self, n: int) -> list[int]:
        """The executor JVMs worker ``n`` started (its children)."""
        return _children(self.workers[n].pid)

    def kill_worker(self, n: int) -> None:
        """SIGKILL worker ``n``'s JVM and the executor JVMs it started, as a lost machine's would go; returns once
        none of them runs (an executor left alone goes on writing until it notices its worker is gone)."""
        executors = self.executors(n)
        self.workers[n].kill()
        for pid in executors:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.workers[n].wait(30)
        wait_for(lambda: not any(_running(pid) for pid in executors), 30,
                 f"worker {n}'s executors to be gone")

    def stop(self) -> None:
        for proc in self._procs:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            proc.wait(30)


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Standalone]:
    """A master with two one-core workers, for the module (each test's mirror is an application of its own)."""
    cluster = Standalone(tmp_path_factory.mktemp("standalone"))
    try:
        cluster.start(workers=2)
        yield cluster
    finally:
        cluster.stop()


def test_a_flow_runs_exactly_once_and_a_task_that_fails_after_it_committed_writes_nothing_twice(
        base_topology, east, west, unique, standalone, tmp_path):
    """A backlog copied by executors of the workers, exactly once, in order, with live counts. The test hook fails each
    group's first task attempt after its first commit of a real-time batch, holding it past the batch's end first (as a lost
    executor holds its task until Spark notices): its retry reads nothing, the batch ends where it started for that
    group, and the next batch's task, on whichever executor, opens the group's writer anew and skips what the failed
    attempt committed."""
    total = 20_000
    topic = unique("standalone")
    create_topic(east, topic, partitions=PARTITIONS, rf=1)
    target_topic = f"east.{topic}"
    now = int(time.time() * 1000)
    produce(east, topic, [{"key": f"k{i}".encode(), "value": f"{i:08d}".encode() * 16, "partition": i % PARTITIONS,
                           "timestamp": now + i, "headers": [("h", str(i).encode())]} for i in range(total)])
    path = topology_file(base_topology, tmp_path, "sa", topic, standalone.url, realtime_batch_s=5,
                         **{"spark.geokafka.test.failAfterCommits": "1", "spark.geokafka.test.failStallMs": "6000",
                            "spark.task.maxFailures": "4"})
    mirror = Mirror(path, "sa", tmp_path / "mirror.log")
    try:
        wait_for(lambda: caught_up(mirror, west, target_topic, total), 600, "every record on the target")
        assert all(f"failing this attempt of group {g} of flow sa" in _executor_logs(standalone) for g in (0, 1))
        # the counts the mirror shows come from the executors as they commit, not at a batch's end
        wait_for(lambda: re.search(rf"running, {total:,} records", mirror.text()), 60, "the running line's count")
        # the next batches' tasks met records the failed attempts had committed, and skipped them
        wait_for(lambda: (state_store(west).read(timeout_s=10).heartbeat("sa") or Heartbeat("sa", "", 0)).details
                 .get("duplicates_skipped", 0) > 0, 60, "the skipped records in the mirror's heartbeat")
    finally:
        mirror.stop()
    assert_exactly_once(east, topic, west, target_topic)
    assert re.search(rf"flow sa: stopped, {total:,} records, .* real-time mode", mirror.text())
    # the records were written by executors the workers started, not by the driver
    assert list(standalone.work.glob("worker-*/app-*/*/stderr")), f"no executor ran on the workers ({standalone.work})"


def _executor_logs(cluster: Standalone) -> str:
    return "".join(p.read_text(errors="replace") for p in cluster.work.glob("worker-*/app-*/*/stderr"))


def test_a_lost_worker_neither_duplicates_nor_freezes(base_topology, east, west, unique, tmp_path, standalone):
    """Real-time mode, two groups on two one-core workers, records flowing; one worker's JVM is killed (no spare
    slot). The lost group's partitions flow again on what is left (micro-batches) long before the real-time
    batch would end; when a worker is back the flow returns to real-time mode; every record once."""
    topic = unique("lost-worker")
    create_topic(east, topic, partitions=PARTITIONS, rf=1)
    target_topic = f"east.{topic}"
    path = topology_file(base_topology, tmp_path, "lw", topic, standalone.url)
    mirror = Mirror(path, "lw", tmp_path / "mirror.log")
    try:
        with Traffic(east, topic) as traffic:
            live = [n for n, w in standalone.workers.items() if w.poll() is None]
            wait_for(lambda: mirror.alive() and all(standalone.executors(n) for n in live), 300,
                     "an executor on each worker")
            wait_for(lambda: mirror.alive() and min(target_ends(west, target_topic).values()) > 200, 300,
                     "records flowing on every partition")
            killed_at = time.monotonic()
            standalone.kill_worker(live[0])
            # measured once nothing of the lost worker writes: what its group's partitions gain from here on was
            # written by what is left
            ends = target_ends(west, target_topic)
            wait_for(lambda: mirror.alive() and all(e > ends[p] + 100 for p, e in target_ends(west, target_topic).items()),
                     280, "every partition to flow again after the worker's loss")
            resumed_s = time.monotonic() - killed_at
            print(f"every partition flowed again {resumed_s:.1f} s after the worker's loss")
            assert "running micro-batches" in mirror.text()
            standalone.add_worker()
            wait_for(lambda: mirror.alive() and "back to real-time mode" in mirror.text(), 180,
                     "the flow to return to real-time mode")
            ends = target_ends(west, target_topic)
            wait_for(lambda: all(e > ends[p] + 100 for p, e in target_ends(west, target_topic).items()), 180,
                     "records flowing in real-time mode again")
        wait_for(lambda: caught_up(mirror, west, target_topic, traffic.sent), 300, "the target to catch up")
    finally:
        mirror.stop()
    assert_exactly_once(east, topic, west, target_topic)
    # long before the real-time batch (300 s) would have ended and freed a slot for the lost group's task
    assert resumed_s < 150, f"the lost group's partitions waited {resumed_s:.0f} s"
