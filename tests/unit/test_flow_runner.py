"""FlowRunner driven through injected collaborators: a fake clock, fake clients, an in-memory state
store, a scheduler that runs the jobs inline, a fake start and a fake query (no Kafka, no Spark)."""

from __future__ import annotations

import logging
import threading
import time
from typing import Any

import pytest

from geokafka import errors
from geokafka.control.flow_states import FlowState
from geokafka.control.state_records import Progress, Role
from geokafka.control.state_store import InMemoryStateStore
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import Assignment, Expected
from geokafka.pipeline.backoff import Backoff
from geokafka.pipeline.flow_clients import FlowClients
from geokafka.pipeline.flow_machine import FlowMachine, loss_outcome
from geokafka.pipeline.flow_start import Prepared
from geokafka.pipeline.mirror import FlowSupervisor
from geokafka.pipeline.runner import BatchCallback, FlowRunner
from geokafka.pipeline.scheduler import ManualScheduler, ThreadScheduler
from geokafka.topology import parse_topology

TOPOLOGY = parse_topology("""\
clusters:
  east: {bootstrap: 127.0.0.1:1}
  west: {bootstrap: 127.0.0.1:2}
flows:
  f: {source: east, target: west, topics: [orders], sync: []}
""")
PAIRS = [TopicPair("orders", "east.orders", 1)]


class FakeAdmin:
    """The calls the runner and its jobs make on their own: reachability, topics, their IDs and offsets."""

    def __init__(self) -> None:
        self.reachable = True
        self.ids = {"orders": "id-1"}
        self.ranges = {"orders": {0: (0, 10)}}
        self.closed = False

    def check_reachable(self) -> None:
        if not self.reachable:
            raise errors.ClusterUnreachableError("west is down")

    def topic_partitions(self) -> dict[str, int]:
        return {"orders": 1}

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        return {t: self.ids[t] for t in topics if t in self.ids}

    def log_ranges(self, partitions: dict[str, int]) -> dict[str, dict[int, tuple[int, int]]]:
        return {t: self.ranges[t] for t in partitions}

    def offsets(self, partitions: list[tuple[str, int]], timeout_s: float) -> dict[tuple[str, int], int]:
        return {(t, p): self.ranges[t][p][1] for t, p in partitions}

    def background_cpu_s(self) -> float:
        return 0.0  # answers made into objects on no thread of their own

    def close(self) -> None:
        self.closed = True


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


class FakeQuery:
    """A running query; ``failure`` set: it stopped with it."""

    def __init__(self) -> None:
        self.failure: errors.GeokafkaError | None = None
        self.stopped = False
        self.writing = True

    @property
    def active(self) -> bool:
        return self.failure is None and not self.stopped

    def poll(self) -> int:
        return 0

    def failure_error(self) -> errors.GeokafkaError:
        assert self.failure is not None
        return self.failure

    def stop(self) -> None:
        self.stopped = True


class Harness:
    """A runner whose starts fail with each exception of ``starts`` in turn (None: it starts)."""

    def __init__(self, starts: list[BaseException | None], store: InMemoryStateStore | None = None,
                 skip_gaps: bool = False, expected: int = 0, sync: list[str] | None = None) -> None:
        self.clock = Clock()
        self.store = store or InMemoryStateStore("west")
        self.admin = FakeAdmin()
        self.starts = starts
        self.expected = expected
        self.attempts: list[float] = []
        self.queries: list[FakeQuery] = []
        topology = TOPOLOGY
        if skip_gaps or sync is not None:
            flow = topology.flows["f"].model_copy(update={"skip_gaps": skip_gaps, "sync": sync or []})
            topology = topology.model_copy(update={"flows": {"f": flow}})
        clients = FlowClients(self.admin, self.admin, self.admin, self.admin)  # type: ignore[arg-type]
        self.scheduler = ManualScheduler("flow f", self.clock)
        self.runner = FlowRunner(topology, "f", clock=self.clock, clients=clients, store=self.store,
                                 scheduler=self.scheduler, prepare=self.prepare, query_factory=self.query)

    def prepare(self) -> Prepared:
        self.attempts.append(self.clock.now)
        outcome = self.starts.pop(0) if self.starts else None
        if outcome is not None:
            raise outcome
        assignment = Assignment(list(PAIRS), expected={"orders/0": Expected(self.expected, 0)}, topic_ids={"orders": "id-1"},
                                groups=[{"orders": [0]}])
        return Prepared(assignment, {})

    def query(self, prepared: Prepared, on_batch: BatchCallback) -> FakeQuery:
        self.on_batch = on_batch
        self.queries.append(FakeQuery())
        return self.queries[-1]

    def tick_for(self, seconds: float, step: float = 0.5) -> None:
        end = self.clock.now + seconds
        while self.clock.now < end:
            self.runner.tick()
            self.clock.now += step


def test_retriable_failures_back_off_exponentially_up_to_30_s_then_start() -> None:
    h = Harness([*[errors.ClusterUnreachableError("east is down") for _ in range(7)], None])
    h.tick_for(200)
    assert h.runner.status == FlowState.RUNNING and h.runner.error is None
    gaps = [round(b - a) for a, b in zip(h.attempts, h.attempts[1:], strict=False)]
    assert gaps == [1, 2, 4, 8, 16, 30, 30]


def test_a_fatal_failure_stops_the_flow_and_records_why_on_the_target() -> None:
    h = Harness([errors.DataLossError("orders/0: offsets 0-99 are gone")])
    h.tick_for(10)
    assert h.runner.status == FlowState.ERROR and len(h.attempts) == 1  # an error is final: nothing more is tried
    heartbeat = h.store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "error"
    assert heartbeat.details["error"] == "DataLossError" and "offsets 0-99" in heartbeat.details["reason"]


def test_a_kafka_error_code_marked_not_retriable_is_fatal_too() -> None:
    h = Harness([errors.KafkaOperationError("INVALID_CONFIG", kafka_code=40, retriable=False)])
    h.tick_for(5)
    assert h.runner.status == FlowState.ERROR and h.runner.error is not None and h.runner.error.kafka_code == 40


def test_a_query_failure_marked_not_retriable_stops_the_flow_and_a_retriable_one_restarts_it() -> None:
    h = Harness([None, None])
    h.tick_for(1)
    h.queries[-1].failure = errors.KafkaOperationError("broker restarting", kafka_code=6, retriable=True)
    h.tick_for(3)
    assert h.runner.status == FlowState.RUNNING and h.runner.restarts == 1 and len(h.queries) == 2
    h.queries[-1].failure = errors.JvmFatalError("java.lang.OutOfMemoryError: Java heap space", retriable=False)
    h.tick_for(3)
    assert h.runner.status == FlowState.ERROR and len(h.queries) == 2
    heartbeat = h.store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "error" and heartbeat.details["error"] == "JvmFatalError"


def test_a_failover_made_elsewhere_while_retrying_stops_the_flow_without_writing_state() -> None:
    h = Harness([errors.ClusterUnreachableError("east is down")] * 50)
    h.tick_for(3)  # the heartbeat job already recorded 'retrying'
    h.store.set_role("f", Role.FAILED_OVER, kind="failover")
    written = len(h.store.log)
    h.tick_for(12)
    assert h.runner.status == FlowState.FAILED_OVER
    h.runner.stop()
    assert len(h.store.log) == written  # the failover's own records stay as it wrote them


def test_a_query_stopped_by_a_failover_fencing_its_writers_ends_failed_over_not_in_error() -> None:
    h = Harness([None])
    h.tick_for(1)
    # the failover fenced the writers before the heartbeat saw its record: the commit met an error no retry helps
    h.store.set_role("f", Role.FAILED_OVER, kind="failover")
    written = len(h.store.log)
    h.queries[-1].failure = errors.KafkaOperationError("committing group 0: Unhandled error in EndTxnResponse",
                                                       retriable=False)
    h.runner.tick()
    assert h.runner.status == FlowState.FAILED_OVER and h.runner.error is None
    assert [key for key, _ in h.store.log[written:] if key == "flow/f"] == []  # no error over the failover's state
    heartbeat = h.store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "failed-over"


def test_a_flow_that_never_started_stops_as_an_error_with_its_reason() -> None:
    h = Harness([errors.ClusterUnreachableError("east is down")] * 50)
    h.tick_for(3)
    h.runner.stop()
    assert h.runner.status == FlowState.ERROR
    heartbeat = h.store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "error" and "east is down" in heartbeat.details["reason"]


def test_stopping_closes_every_client_and_does_not_write_to_a_target_that_does_not_answer() -> None:
    h = Harness([None])
    h.tick_for(1)
    h.admin.reachable = False
    before = len(h.store.log)
    h.runner.stop()
    assert h.runner.status == FlowState.STOPPED and len(h.store.log) == before
    assert h.queries[-1].stopped and h.admin.closed


def test_the_mirror_switching_modes_restarts_the_running_query_once_and_the_same_mode_changes_nothing() -> None:
    h = Harness([None, None, None])
    h.tick_for(1)
    assert h.runner.mode == "real-time" and len(h.queries) == 1
    h.runner.run_in("real-time")
    h.tick_for(2)
    assert len(h.queries) == 1 and not h.queries[0].stopped
    h.runner.run_in("micro-batch")  # from the mirror's thread: a task slot was lost
    h.tick_for(2)
    assert h.queries[0].stopped and len(h.queries) == 2 and h.runner.mode == "micro-batch"
    assert h.runner.status == FlowState.RUNNING and h.runner.error is None
    h.runner.run_in("real-time")
    h.tick_for(2)
    assert h.queries[1].stopped and len(h.queries) == 3 and h.runner.mode == "real-time"


def test_a_recreated_source_topic_stops_the_query_and_the_next_start_decides() -> None:
    h = Harness([None, errors.DataLossError("flow f: orders/0 from offset 7 of the old topic")])
    h.tick_for(1)
    h.admin.ids = {"orders": "id-2"}  # deleted and created again under the running query
    h.tick_for(3)
    assert h.queries[0].stopped and h.runner.status == FlowState.ERROR and "old topic" in str(h.runner.error)


def test_a_gap_the_source_met_restarts_a_skip_gaps_flow_at_once_so_its_plan_counts_it() -> None:
    h = Harness([None, None], skip_gaps=True)
    h.tick_for(1)
    h.store.write(Progress("f", "orders", 0, 5))
    h.admin.ranges = {"orders": {0: (8, 20)}}  # the source lost 5..7: the driver finds the gap
    h.queries[-1].failure = errors.DataLossError("orders-0 offset 5 is no longer on the source")
    started = len(h.attempts)
    h.runner.tick()
    h.runner.tick()
    assert len(h.attempts) == started + 1 and h.runner.status == FlowState.RUNNING and h.runner.restarts == 1


def test_a_gap_is_named_from_the_sinks_last_commit_when_the_state_read_is_behind_it() -> None:
    h = Harness([None])
    h.tick_for(1)
    h.store.write(Progress("f", "orders", 0, 5))  # what a read stopped at another writer's open transaction sees
    h.on_batch(1, [{"topic": "orders", "partition": 0, "next_offset": 7, "written": 7, "duplicates_skipped": 0, "bytes": 70,
                    "last_timestamp": -1}])  # the sink committed up to 7
    h.admin.ranges = {"orders": {0: (9, 20)}}  # the source lost 7..8
    h.queries[-1].failure = errors.DataLossError("orders-0 offset 7 is no longer on the source")
    h.runner.tick()
    assert h.runner.status == FlowState.ERROR and "orders/0 offsets 7..8" in str(h.runner.error), h.runner.error


def test_a_partition_never_replicated_and_never_reported_has_no_gap() -> None:
    h = Harness([None], expected=-1)  # no progress recorded: the flow starts where the source's log does
    h.tick_for(1)
    h.admin.ranges = {"orders": {0: (9, 20)}}
    h.queries[-1].failure = errors.DataLossError("orders-0 offset 3 is no longer on the source")
    h.runner.tick()
    assert "orders/0" not in str(h.runner.error), h.runner.error


def test_loss_outcomes() -> None:
    met = errors.DataLossError("orders-0 offset 5 is no longer on the source")
    found = errors.DataLossError("flow f: orders/0 offsets 5..9 are gone")
    assert loss_outcome(met, found, skip_gaps=True) == (True, found)  # restart at once: the plan skips and counts it
    restart, retried = loss_outcome(met, None, skip_gaps=True)  # not found (yet): back off, no restart loop
    assert not restart and isinstance(retried, errors.DataLossError) and retried.retriable
    assert loss_outcome(met, found, skip_gaps=False) == (False, found)  # fatal, named by the driver
    assert loss_outcome(met, None, skip_gaps=False) == (False, met)


def test_the_machine_gives_up_with_the_reason_of_a_flow_that_never_started() -> None:
    machine = FlowMachine()
    machine.start_failed(errors.ClusterUnreachableError("east is down"), 0.0)
    assert machine.status == FlowState.RETRYING
    assert machine.final_state() == FlowState.ERROR
    machine = FlowMachine()
    machine.started()
    machine.query_failed(errors.KafkaOperationError("timeout"), 0.0)
    assert machine.final_state() == FlowState.STOPPED  # it replicated: a stop while retrying is a stop
    machine.failed_over()
    assert machine.final_state() is None


def test_backoff() -> None:
    backoff = Backoff()
    assert [backoff.schedule(0.0) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    backoff.reset()
    assert backoff.schedule(100.0) == 1 and not backoff.due(100.5) and backoff.due(101.0)


@pytest.mark.parametrize("state", list(FlowState))
def test_states_are_their_recorded_strings(state: FlowState) -> None:
    import json

    assert json.loads(json.dumps({"state": state}))["state"] == state.value
    assert state.final == (state.value in ("error", "failed-over"))


def test_a_job_that_hangs_delays_neither_the_flows_loop_nor_its_other_jobs() -> None:
    release = threading.Event()
    beats: list[float] = []
    scheduler = ThreadScheduler("flow f")
    try:
        scheduler.add("observe", 0.05, lambda: release.wait(30), timeout_s=0.1)  # a source that died
        scheduler.add("heartbeat", 0.05, lambda: beats.append(time.monotonic()), timeout_s=0.1)
        deadline = time.monotonic() + 10
        while len(beats) < 5 and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(beats) >= 5 and scheduler.jobs["observe"].runs == 0  # still in its first run
    finally:
        release.set()
        scheduler.close()


def test_closing_a_scheduler_names_the_job_that_outlived_it(caplog: pytest.LogCaptureFixture) -> None:
    release, started = threading.Event(), threading.Event()
    scheduler = ThreadScheduler("flow f")

    def stuck() -> None:
        started.set()
        release.wait(30)

    try:
        scheduler.add("sync", 0.05, stuck, timeout_s=0.1)
        scheduler.add("heartbeat", 0.05, lambda: None, timeout_s=0.1)
        assert started.wait(10)
        with caplog.at_level(logging.WARNING):
            scheduler.close(timeout_s=0.3)
        said = [r.getMessage() for r in caplog.records if "still running" in r.getMessage()]
        assert said == ["flow f: jobs sync still running 0.3 s after the stop (a call waiting on its time-out); they end "
                        "on their own"]
    finally:
        release.set()


def test_a_job_with_a_cpu_share_runs_less_often_when_its_runs_cost_more() -> None:
    now, cpu = [0.0], [0.0]
    cost = {"each": 0.001}

    def look() -> None:
        cpu[0] += cost["each"]

    scheduler = ManualScheduler("flow f", lambda: now[0], cpu_clock=lambda: cpu[0])
    job = scheduler.add("observe", 0.25, look, timeout_s=1.0, cpu_share=0.02)

    def runs_in(seconds: float) -> int:
        before, end = job.runs, now[0] + seconds
        while now[0] < end:
            now[0] = round(now[0] + 0.05, 3)
            scheduler.run_due(now[0])
        return job.runs - before

    assert runs_in(10.0) == 40  # 1 ms a look: every 250 ms, as asked (0.4% of a core)
    cost["each"] = 0.025  # thousands of partitions: 25 ms a look
    assert runs_in(2.0) == 8  # a cost every run pays counts once the last 8 runs paid it
    assert runs_in(10.0) in (8, 9)  # then every 1.25 s: 2% of a core
    assert job.period_s == pytest.approx(1.25)
    cost["each"] = 0.001
    assert 35 <= runs_in(10.0) <= 40  # cheap again: as asked again, after the one long wait already scheduled


def test_a_job_pays_for_the_cpu_its_calls_cost_a_clients_own_threads() -> None:
    """An admin client builds its requests and parses the answers on its main thread and turns them into Python
    objects on its background thread: a look at 2,000 partitions cost the calling thread 6-7 ms and those threads
    10-13 ms more. The job's share counts them all."""
    now, own, background = [0.0], [0.0], [0.0]

    def look() -> None:
        own[0] += 0.006
        background[0] += 0.010

    scheduler = ManualScheduler("flow f", lambda: now[0], cpu_clock=lambda: own[0])
    job = scheduler.add("observe", 0.25, look, timeout_s=1.0, cpu_share=0.02, max_period_s=5.0,
                        extra_cpu=lambda: background[0])
    alone = scheduler.add("topic-ids", 0.25, look, timeout_s=1.0, cpu_share=0.02, max_period_s=5.0)
    while now[0] < 20.0:
        now[0] = round(now[0] + 0.05, 3)
        scheduler.run_due(now[0])
    assert job.cpu_cost_s == pytest.approx(0.016) and job.period_s == pytest.approx(0.8)  # 16 ms at 2% of a core
    assert alone.cpu_cost_s == pytest.approx(0.006) and alone.period_s == pytest.approx(0.3)  # its own thread only


def test_another_threads_burst_of_cpu_does_not_slow_a_job_with_a_cpu_share() -> None:
    """The process's CPU time counts every thread: a run during which another flow started is not what a run
    costs."""
    now, cpu = [0.0], [0.0]
    bursts = iter([0.0, 0.2, 0.0, 0.0, 0.5, 0.3, 0.0] * 20)

    def look() -> None:
        cpu[0] += 0.001 + next(bursts)

    scheduler = ManualScheduler("flow f", lambda: now[0], cpu_clock=lambda: cpu[0])
    job = scheduler.add("observe", 0.25, look, timeout_s=1.0, cpu_share=0.02)
    while now[0] < 10.0:
        now[0] = round(now[0] + 0.05, 3)
        scheduler.run_due(now[0])
    assert job.runs == 40 and job.period_s == 0.25


def test_a_job_with_a_cpu_share_still_runs_every_max_period_however_much_a_run_costs() -> None:
    """The source observation: its age bounds the RPO at a site's death, so a costly look stretches it to
    ``max_period_s`` at most."""
    now, cpu = [0.0], [0.0]

    def look() -> None:
        cpu[0] += 0.050  # a look at many partitions: 50 ms, which 2% of a core would run every 2.5 s

    scheduler = ManualScheduler("flow f", lambda: now[0], cpu_clock=lambda: cpu[0])
    job = scheduler.add("observe", 0.25, look, timeout_s=1.0, cpu_share=0.02, max_period_s=0.75)
    gaps, last = [], 0.0
    while now[0] < 20.0:
        now[0] = round(now[0] + 0.05, 3)
        before = job.runs
        scheduler.run_due(now[0])
        if job.runs > before:
            gaps.append(now[0] - last)
            last = now[0]
    assert job.period_s == 0.75 and max(gaps) <= 0.75 + 0.05 and gaps[-1] == pytest.approx(0.75)


def test_a_thread_schedulers_job_pays_only_its_own_threads_cpu() -> None:
    """A job that waits (a look at a slow source) while another thread of the process burns CPU costs nothing: the
    process's CPU time would have made it look costly and run it less often."""
    from geokafka.pipeline.scheduler import ThreadScheduler

    burning, done = threading.Event(), threading.Event()

    def burn() -> None:
        burning.set()
        while not done.is_set():
            sum(range(10_000))

    process_cpu_at_start = time.process_time()

    def waiting_look() -> None:  # waits while the burner burns 0.15 s of CPU, however loaded the machine is
        burning.wait(5)
        deadline = time.monotonic() + 20
        while time.process_time() - process_cpu_at_start < 0.15 and time.monotonic() < deadline:
            time.sleep(0.02)

    burner = threading.Thread(target=burn, daemon=True)
    scheduler = ThreadScheduler("flow f")
    try:
        burner.start()
        job = scheduler.add("observe", 60.0, waiting_look, timeout_s=5.0, cpu_share=0.02)
        deadline = time.monotonic() + 30
        while job.runs < 1 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert job.runs == 1
        process_cpu_meanwhile = time.process_time() - process_cpu_at_start
    finally:
        done.set()
        scheduler.close()
        burner.join(5)
    assert process_cpu_meanwhile > 0.1  # the premise: the process was busy while the job ran
    assert job.cpu_cost_s < 0.05 and job.period_s == 60.0


def test_one_flows_unexpected_failure_is_that_flows_state_not_the_processes() -> None:
    stop = threading.Event()
    broken, healthy = Harness([None]), Harness([None])

    def explode() -> None:
        raise KeyError("a bug")

    broken.runner.tick = explode  # type: ignore[method-assign]
    supervisors = [FlowSupervisor(h.runner, stop).start() for h in (broken, healthy)]
    assert supervisors[0].done.wait(10)
    assert broken.runner.status == FlowState.ERROR and "KeyError" in str(broken.runner.error)
    deadline = time.monotonic() + 10
    while healthy.runner.status != FlowState.RUNNING and time.monotonic() < deadline:
        time.sleep(0.01)
    assert not supervisors[1].done.is_set() and healthy.runner.status == FlowState.RUNNING
    stop.set()
    assert supervisors[1].done.wait(10) and healthy.runner.status == FlowState.STOPPED


class _JavaClass:
    def __init__(self, name: str) -> None:
        self._name = name

    def getName(self) -> str:  # py4j spells it so
        return self._name


class _JavaException:
    def __init__(self, name: str, text: str) -> None:
        self._class, self._text = _JavaClass(name), text

    def getClass(self) -> _JavaClass:
        return self._class

    def __str__(self) -> str:
        return self._text


class _Py4JError(Exception):
    def __init__(self, java: _JavaException) -> None:
        super().__init__("An error occurred while calling o95.stop.\n" + str(java))
        self.java_exception = java


def test_a_query_that_does_not_stop_in_time_is_said_in_geokafkas_words() -> None:
    from geokafka.pipeline.query import stop_failure

    timeout = _Py4JError(_JavaException("java.util.concurrent.TimeoutException", "Stream Execution thread ..."))
    said = stop_failure(timeout)
    assert "did not stop within spark.sql.streaming.stopTimeout" in said and "o95" not in said
    other = _Py4JError(_JavaException("java.lang.IllegalStateException", "SparkContext was shut down\n\tat ..."))
    assert stop_failure(other) == "its query did not stop cleanly: SparkContext was shut down"
    assert stop_failure(RuntimeError("gateway gone")) == "its query did not stop cleanly: gateway gone"


def test_a_jvm_that_is_gone_is_told_by_the_errors_class() -> None:
    from py4j.protocol import Py4JNetworkError

    from geokafka.pipeline.query import jvm_gone

    assert jvm_gone(ConnectionRefusedError(111, "Connection refused"))
    assert jvm_gone(Py4JNetworkError("Error while sending or receiving"))
    assert not jvm_gone(_Py4JError(_JavaException("java.lang.IllegalStateException", "SparkContext was shut down")))
    assert not jvm_gone(RuntimeError("Connection refused"))  # the words alone decide nothing


def said(caplog: pytest.LogCaptureFixture, logger: str) -> list[tuple[str, str]]:
    """What ``logger`` logged: (level, line)."""
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == logger]


class FlakyStore(InMemoryStateStore):
    """A state store whose cluster can go away."""

    down = False

    def read(self, timeout_s: float = 60.0) -> Any:
        if self.down:
            raise errors.ClusterUnreachableError("cluster west (127.0.0.1:2) did not answer: reading its state topic")
        return super().read(timeout_s)


def test_a_target_down_for_long_is_warned_once_by_the_heartbeat_and_its_return_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore("west")
    h = Harness([errors.ClusterUnreachableError("east is down")] * 500, store)  # retrying: the heartbeat's own work
    caplog.set_level(logging.INFO, logger="geokafka.pipeline.flow_jobs")
    h.tick_for(1)
    store.down = True
    h.tick_for(300)  # five minutes of heartbeats every 5 s
    store.down = False
    h.tick_for(5)
    assert said(caplog, "geokafka.pipeline.flow_jobs") == [
        ("INFO", "flow f: jobs run every: heartbeat 5 s, observe 250 ms (rpo.observe_ms), topic-ids 1 s, selection 30 s "
                 "(pipeline.topic_refresh_s), sync 10 s (sync_interval_s)"),
        ("WARNING", "flow f: heartbeat failed: cluster west (127.0.0.1:2) did not answer: reading its state topic "
                    "(retried every 5 s; said again when it works or fails otherwise)"),
        ("WARNING", "flow f: heartbeat works again after 60 failures"),
    ]
    beat = store.read().heartbeat("f")
    assert beat is not None and beat.state == FlowState.RETRYING  # written once the target is back


def test_failed_starts_are_warned_once_per_kind_and_the_first_commit_after_them_once(
        caplog: pytest.LogCaptureFixture) -> None:
    down = [errors.ClusterUnreachableError("cluster east (127.0.0.1:1) is not reachable") for _ in range(6)]
    slow = errors.KafkaOperationError("west: request timed out", kafka_code=7, retriable=True)
    h = Harness([*down, slow, slow, None])
    caplog.set_level(logging.INFO, logger="geokafka.pipeline.runner")
    h.tick_for(300)
    assert h.runner.status == FlowState.RUNNING and len(h.attempts) == 9
    h.runner._record_batch(0, [])  # the query's first commit
    h.runner._record_batch(1, [])
    backoff = "(retried with backoff up to 30s; said again when it works or fails otherwise)"
    assert said(caplog, "geokafka.pipeline.runner") == [
        ("WARNING", f"flow f: replication failed: cluster east (127.0.0.1:1) is not reachable {backoff}"),
        ("WARNING", f"flow f: replication failed: west: request timed out {backoff}"),
        ("INFO", "flow f: real-time mode, 1 partition group"),
        ("WARNING", "flow f: replication works again after 8 failures"),
    ]


def test_a_flow_whose_start_outlasts_the_stop_ends_as_the_error_it_was_retrying() -> None:
    """`mirror` stops while a start still waits on a cluster that does not answer (a DNS look-up, a closed port):
    a flow that never replicated ends as an error with its reason (the command's exit code says so), not as
    the retrying it was stopped in; one that had replicated is stopped."""
    from types import SimpleNamespace

    from geokafka.pipeline import mirror

    unreachable = errors.ClusterUnreachableError("cluster east (no-such-host.invalid:9092) did not answer")
    never, once = FlowMachine(), FlowMachine()
    never.start_failed(unreachable, now=0.0)
    once.started()
    once.query_failed(unreachable, now=1.0)
    from geokafka.pipeline.runner import RunnerView

    def view(name: str, machine: FlowMachine) -> RunnerView:
        return RunnerView(name, machine.shown, machine.error, machine.restarts, "real-time", False, False,
                          machine.ever_started, [], {}, {}, {}, {}, {})

    late = [SimpleNamespace(done=threading.Event(), runner=SimpleNamespace(name=name, view=view(name, machine)))
            for name, machine in (("never", never), ("once", once))]
    ended = mirror._wait_for(late, timeout_s=0.01)  # type: ignore[arg-type]
    assert [(v.name, v.status, v.error) for v in ended] == [("never", FlowState.ERROR, unreachable),
                                                           ("once", FlowState.STOPPED, unreachable)]
    assert (never.shown, once.shown) == (FlowState.RETRYING, FlowState.RETRYING)  # their owners' state: untouched


def test_a_failure_posted_from_another_thread_is_acted_on_by_the_runners_owner() -> None:
    """The mirror's thread posts Spark's death; the runner's own tick stops the flow and records why, and the view
    other threads read says so only once it happened."""
    h = Harness([None])
    h.tick_for(2)
    assert h.runner.view.status == FlowState.RUNNING
    dead = errors.JvmFatalError("Spark's JVM exited with status 137 under the running flows")
    poster = threading.Thread(target=h.runner.post_failure, args=(dead,))
    poster.start()
    poster.join(5)
    assert h.runner.status == FlowState.RUNNING and h.runner.view.status == FlowState.RUNNING  # not its to change
    h.runner.tick()
    assert (h.runner.status, h.runner.error) == (FlowState.ERROR, dead) and h.runner.view.status == FlowState.ERROR
    assert h.queries[-1].stopped
    heartbeat = h.store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "error" and "status 137" in heartbeat.details["reason"]


def test_a_failure_posted_as_the_mirror_stops_is_the_flows_final_state_written_once() -> None:
    class CountingStore(InMemoryStateStore):
        def __init__(self) -> None:
            super().__init__("west")
            self.states: list[str] = []

        def set_flow_state(self, flow: str, state: str, **details: Any) -> None:
            self.states.append(state)
            super().set_flow_state(flow, state, **details)

    store = CountingStore()
    h = Harness([None], store=store)
    h.tick_for(2)
    h.runner.post_failure(errors.JvmFatalError("Spark's JVM ran out of memory"))
    h.runner.stop()  # the supervisor's stop, with no tick between
    heartbeat = h.store.read().heartbeat("f")
    assert h.runner.view.status == FlowState.ERROR and heartbeat is not None and heartbeat.state == "error"
    assert store.states.count("error") == 1, store.states


def test_no_heartbeat_is_written_after_the_final_state() -> None:
    """A heartbeat mid-write when the flow stops (its target slow to acknowledge) finishes before the runner writes
    its final state, and none is written after it: `status` never shows a stopped flow running."""
    from geokafka.pipeline.flow_jobs import FlowJobs, FlowSignals

    class SlowStore(InMemoryStateStore):
        def __init__(self) -> None:
            super().__init__("west")
            self.entered, self.release = threading.Event(), threading.Event()

        def set_flow_state(self, flow: str, state: str, **details: Any) -> None:
            if state == "running":
                self.entered.set()
                self.release.wait(10)
            super().set_flow_state(flow, state, **details)

    store = SlowStore()
    h = Harness([None], store=store)
    jobs = FlowJobs(TOPOLOGY, lambda: h.runner.view, FlowClients(None, None, None, None),  # type: ignore[arg-type]
                    store, FlowSignals())
    h.tick_for(1)  # the runner runs: its view says so
    beat = threading.Thread(target=jobs.heartbeat)
    beat.start()
    assert store.entered.wait(10)

    def final() -> None:
        jobs.retire()
        store.set_flow_state("f", "stopped")

    stopper = threading.Thread(target=final)
    stopper.start()
    stopper.join(0.3)
    assert stopper.is_alive()  # the final state waits for the heartbeat being written
    store.release.set()
    beat.join(10)
    stopper.join(10)
    jobs.heartbeat()  # a job that runs once more after the stop writes nothing
    heartbeat = store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "stopped"


def test_a_heartbeat_mid_write_when_the_flow_fails_is_written_before_its_error() -> None:
    """The heartbeat read the runner's view (running) and is writing it, slowly, when the query fails for good: the
    error the runner records waits for that write and comes last; `status` never shows the failed flow running."""

    class SlowStore(InMemoryStateStore):
        def __init__(self) -> None:
            super().__init__("west")
            self.armed, self.entered, self.release = False, threading.Event(), threading.Event()

        def set_flow_state(self, flow: str, state: str, **details: Any) -> None:
            if self.armed and state == "running":
                self.entered.set()
                self.release.wait(10)
            super().set_flow_state(flow, state, **details)

    store = SlowStore()
    h = Harness([None], store=store)
    h.tick_for(1)
    store.armed = True
    beat = threading.Thread(target=h.scheduler.run_now, args=("heartbeat",))
    beat.start()
    assert store.entered.wait(10)  # a heartbeat of the running flow is being written
    h.queries[-1].failure = errors.KafkaOperationError("the target refused the topic", retriable=False)
    supervisor = threading.Thread(target=h.runner.tick)
    supervisor.start()
    supervisor.join(0.3)
    store.release.set()
    beat.join(10)
    supervisor.join(10)
    heartbeat = store.read().heartbeat("f")
    assert h.runner.view.status == FlowState.ERROR
    assert heartbeat is not None and heartbeat.state == "error", heartbeat


def test_spark_dying_explains_the_error_the_flow_met_first_and_is_recorded_after_its_supervisor_ended() -> None:
    """Spark's JVM gone: the runner's own tick fails first on the bridge to it; the mirror then sees the JVM's exit and
    posts it after the supervisor stopped the flow. Its owner (the mirror, once the supervisor is done) settles the
    runner: the JVM's death is the recorded reason. A later, lesser failure does not replace an error."""
    h = Harness([None])
    h.tick_for(2)
    h.runner.fail(errors.GeokafkaError("flow f: Py4JNetworkError: Error while sending or receiving"))
    h.runner.stop()
    oom = errors.JvmFatalError("Spark's JVM ran out of memory (java.lang.OutOfMemoryError) and exited")
    h.runner.post_failure(oom)
    h.runner.post_failure(errors.KafkaOperationError("cluster west did not answer", retriable=True))
    h.runner.settle()
    heartbeat = h.store.read().heartbeat("f")
    assert h.runner.view.error is oom and heartbeat is not None and heartbeat.state == "error"
    assert "OutOfMemoryError" in heartbeat.details["reason"]


def test_the_view_holds_copies_of_the_progress_and_a_tick_publishes_what_changed() -> None:
    h = Harness([None])
    h.tick_for(1)
    before = h.runner.view
    assert before.progress[("orders", 0)].written == 0
    h.on_batch(1, [{"topic": "orders", "partition": 0, "next_offset": 7, "written": 7, "duplicates_skipped": 0,
                    "bytes": 70, "last_timestamp": -1}])
    assert before.progress[("orders", 0)].written == 0  # a published view never changes
    h.runner.tick()
    after = h.runner.view
    assert (after.progress[("orders", 0)].written, after.progress[("orders", 0)].next_offset) == (7, 7)
    assert after.summary()["written"] == 7 and after.progress[("orders", 0)] is not h.runner.progress[("orders", 0)]
