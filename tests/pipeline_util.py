"""Helpers for tests that run flows: a topology with flows, a mirror in a background thread."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml
from confluent_kafka import Consumer, KafkaException, TopicPartition
from kafka_util import produce, watermarks

from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import KafkaStateStore, StateSnapshot
from geokafka.control.state_stores import StateStores
from geokafka.errors import GeokafkaError
from geokafka.pipeline.flow_jobs import HEARTBEAT_S
from geokafka.pipeline.mirror import mirror
from geokafka.pipeline.runner import FlowRunner, PartitionProgress
from geokafka.topology.schema import Flow, Topology

FRESH_HEARTBEAT_S = HEARTBEAT_S + 2.0
"""The oldest heartbeat `status` may show a live mirror with: one beat's interval, plus the beat's own state read
before its write and the write's ack, which take up to 2 s on this suite's loaded machine (load 30-50)."""


def with_flows(base: Topology, **flows: dict[str, Any]) -> Topology:
    """``base`` plus the given flows (keyword = flow name, value = Flow fields)."""
    return base.model_copy(update={"flows": {name: Flow(**spec) for name, spec in flows.items()}})


@contextmanager
def running_mirror(
    topology: Topology, flows: list[str] | None = None, expect_flow_errors: bool = False
) -> Iterator[dict[str, FlowRunner]]:
    """Run ``mirror`` in a thread (sharing the test SparkSession) until the block ends.

    ``mirror`` raises when every flow stopped on an error; tests that expect that pass
    ``expect_flow_errors`` and check the runners' errors themselves.
    """
    stop = threading.Event()
    runners: dict[str, FlowRunner] = {}
    failure: list[BaseException] = []
    last_error: dict[str, str] = {}

    def on_tick(rs: list[FlowRunner]) -> None:
        runners.update({r.name: r for r in rs})
        for r in rs:
            if r.error is not None and str(r.error) != last_error.get(r.name):
                last_error[r.name] = str(r.error)
                print(f"[mirror] flow {r.name}: {r.status}: {r.error}", flush=True)

    def run() -> None:
        try:
            mirror(topology, flows, on_tick=on_tick, stop_event=stop)
        except BaseException as exc:  # noqa: BLE001 - surfaced to the test below
            failure.append(exc)

    thread = threading.Thread(target=run, name="mirror", daemon=True)
    thread.start()
    try:
        yield runners
    finally:
        stop.set()
        thread.join(120)
    if failure and not (expect_flow_errors and isinstance(failure[0], GeokafkaError)):
        raise AssertionError(f"mirror failed: {type(failure[0]).__name__}: {failure[0]}") from failure[0]


GEOKAFKA = Path(sys.executable).with_name("geokafka")
"""The geokafka command of this environment."""


def write_topology(topology: Topology, path: Path) -> Path:
    """``topology`` as a YAML file at ``path`` (its defaults left out, as a person writes one)."""
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    return path


def left_behind(pgid: int) -> bool:
    """True while any process of the process group ``pgid`` (the command and what it started) lives."""
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def wait_for_line(proc: subprocess.Popen, log: Path, line: str, timeout_s: float = 240) -> None:
    """Wait until ``log`` (``proc``'s output) holds ``line``; fails at once, with its last words, if ``proc`` exits
    first."""
    deadline = time.monotonic() + timeout_s
    while line not in log.read_text() and time.monotonic() < deadline:
        assert proc.poll() is None, log.read_text()[-3000:]
        time.sleep(0.5)
    assert line in log.read_text(), log.read_text()[-3000:]


@dataclass
class MirrorCommand:
    """A `geokafka mirror` in a process group of its own: its topology file, its output's log and the process."""

    path: Path
    log: Path
    proc: subprocess.Popen

    def text(self) -> str:
        """What it said so far."""
        return self.log.read_text()

    def wait_for_line(self, line: str, timeout_s: float = 240) -> None:
        """Wait until it says ``line``; fails at once, with its last words, if it exits first."""
        wait_for_line(self.proc, self.log, line, timeout_s)

    def status(self) -> subprocess.CompletedProcess[str]:
        """`geokafka --json status` of its topology, as another process sees it."""
        return subprocess.run([str(GEOKAFKA), "-f", str(self.path), "--json", "status"], capture_output=True,
                              text=True, timeout=120)


@contextmanager
def mirror_command(topology: Topology, flows: list[str], home: Path, *options: str) -> Iterator[MirrorCommand]:
    """`geokafka [OPTIONS] -f home/geokafka.yaml mirror FLOWS` with ``topology`` written there, its output in
    home/mirror.log; whatever of its process group is left after the block is killed."""
    path = write_topology(topology, home / "geokafka.yaml")
    log = home / "mirror.log"
    with log.open("w") as out:
        proc = subprocess.Popen([str(GEOKAFKA), *options, "-f", str(path), "mirror", *flows], stdout=out,
                                stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        yield MirrorCommand(path, log, proc)
    finally:
        if left_behind(proc.pid):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(30)


def wait_for(condition: Callable[[], Any], timeout_s: float = 60.0, what: str = "condition") -> Any:
    """Poll ``condition`` until truthy; fail the test with ``what`` after ``timeout_s``.

    Every 0.25 s for the first 10 s, then less and less often, from 25 s on once a second: a look mostly opens
    Kafka clients (a ``read_all`` of a small topic, two fresh clients, cost a test broker 14-20 ms of CPU and the
    test 7 ms), and a wait that lasts is one for something slow (a catch-up, a restart, a time-out). In a full
    run the 34 waits that lasted over 10 s (844 s in all) took 1,701 looks; at 0.25 s they would take ~2,800."""
    start = time.monotonic()
    while time.monotonic() < start + timeout_s:
        result = condition()
        if result:
            return result
        time.sleep(poll_interval(time.monotonic() - start))
    raise AssertionError(f"timed out after {timeout_s:.0f}s waiting for {what}")


def poll_interval(waited_s: float) -> float:
    """How long :func:`wait_for` sleeps between looks once it has waited ``waited_s``."""
    return 0.25 if waited_s < 10 else min(1.0, 0.25 + (waited_s - 10) / 20)


TEST_STORES = StateStores()
"""The state stores tests read and write through (as a command would through its own), closed when the session ends
(``conftest.py``)."""


def state_store(conn: ClusterConnection) -> KafkaStateStore:
    """The tests' state store of ``conn``'s cluster."""
    return TEST_STORES.of(conn)


def wait_state_readable(conn: ClusterConnection, readable: Callable[[StateSnapshot], Any], what: str) -> None:
    """Wait (up to 60 s) until state a test just wrote on ``conn`` is readable. Readers see the state topic to its
    stable end: a transaction open there (another test's writer on the session's shared west) holds what was written
    after it back until it ends."""
    wait_for(lambda: readable(state_store(conn).read(timeout_s=10)), 60, f"{what} readable on {conn.name}")


def wait_progress_at(runners: dict[str, FlowRunner], flow: str, topic: str, ends: dict[int, int],
                     timeout_s: float = 60.0) -> None:
    """Until ``flow``'s committed progress on ``topic`` sits at ``ends`` (partition -> next source
    offset): the driver saw every record committed on the target, so nothing is left in flight."""
    none = PartitionProgress()
    wait_for(lambda: flow in runners and all(runners[flow].progress.get((topic, p), none).next_offset == end
                                             for p, end in ends.items()),
             timeout_s, f"flow {flow}'s progress at the source's end")


def wait_job_runs(runners: dict[str, FlowRunner], flow: str, job: str, more: int = 2, timeout_s: float = 60.0) -> None:
    """Until ``flow``'s periodic job ``job`` (``sync``, ``selection``, ...) ran ``more`` more times than now:
    positive evidence that whatever it would do, it had the chance to."""
    start = runners[flow].job_runs(job)
    wait_for(lambda: runners[flow].job_runs(job) >= start + more, timeout_s, f"{more} more runs of {flow}'s {job} job")


def sentinels_through(src: ClusterConnection, src_topic: str, dst: ClusterConnection, dst_topic: str,
                      partitions: int, timeout_s: float = 90.0, check: Callable[[], None] | None = None) -> set[bytes]:
    """Produce one sentinel record to every partition of ``src_topic`` and wait until each is on ``dst_topic``:
    a flow keeps a partition's order, so everything written before them was handled by then (positive
    evidence, where a fixed sleep would only hope). Returns the sentinels' values.

    The target (``dst_topic``, which must exist) is read from its ends as they were before the sentinels were
    produced (the sentinels can only land after them), by one consumer that keeps its place: a wait after a large
    copy does not read the whole topic again on every look. ``check`` runs at every look (say, an assertion that
    the mirror still runs)."""
    tag = uuid.uuid4().hex[:8]
    values = {f"sentinel-{tag}-{p}".encode() for p in range(partitions)}
    consumer = Consumer(dst.librdkafka(**{"group.id": f"test-sentinels-{tag}", "enable.auto.commit": False,
                                          "isolation.level": "read_committed"}))
    try:
        starts = [TopicPartition(dst_topic, p, watermarks(consumer, TopicPartition(dst_topic, p))[1])
                  for p in range(partitions)]
        produce(src, src_topic, [{"key": b"sentinel", "value": f"sentinel-{tag}-{p}".encode(), "partition": p}
                                 for p in range(partitions)])
        consumer.assign(starts)
        seen: set[bytes] = set()

        def arrived() -> bool:
            if check is not None:
                check()
            for msg in consumer.consume(10_000, 0.5):
                if msg.error():
                    raise KafkaException(msg.error())
                if msg.value() in values:
                    seen.add(msg.value())
            return values <= seen

        wait_for(arrived, timeout_s, f"the sentinels of {src_topic} on {dst_topic}")
    finally:
        consumer.close()
    return values
