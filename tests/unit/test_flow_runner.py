"""FlowRunner's transitions with a fake clock, fake clients and an in-memory state store (no Kafka, no Spark)."""

from __future__ import annotations

import logging

import pytest

from geokafka import errors
from geokafka.control.state_records import Role
from geokafka.control.state_store import InMemoryStateStore
from geokafka.pipeline.runner import FlowClients, FlowRunner
from geokafka.pipeline.schedule import Backoff, Every, FlowState
from geokafka.topology import parse_topology

TOPOLOGY = parse_topology("""\
clusters:
  east: {bootstrap: 127.0.0.1:1}
  west: {bootstrap: 127.0.0.1:2}
flows:
  f: {source: east, target: west, topics: [orders]}
""")


class FakeAdmin:
    """Answers the one call the runner's watch loop makes on its own (reachability)."""

    def __init__(self) -> None:
        self.reachable = True

    def check_reachable(self) -> None:
        if not self.reachable:
            raise errors.ClusterUnreachableError("west is down")


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def runner_with(starts: list[BaseException | None], store: InMemoryStateStore | None = None,
                ) -> tuple[FlowRunner, Clock, InMemoryStateStore, list[float]]:
    """A runner whose start() fails with each exception of ``starts`` in turn (None: it starts)."""
    clock, store = Clock(), store or InMemoryStateStore("west")
    admin = FakeAdmin()
    runner = FlowRunner(None, TOPOLOGY, "f", clock=clock, clients=FlowClients(admin, admin, admin, admin),  # type: ignore[arg-type]
                        store=store)
    attempts: list[float] = []

    def start() -> None:
        attempts.append(clock.now)
        outcome = starts.pop(0) if starts else None
        if outcome is not None:
            raise outcome
        runner.status, runner.error = FlowState.RUNNING, None  # what launch() does
        runner._ever_started = True

    runner.start = start  # type: ignore[method-assign]
    runner.status = FlowState.RETRYING  # how `mirror` hands over the first start
    return runner, clock, store, attempts


def tick_for(runner: FlowRunner, clock: Clock, seconds: float, step: float = 0.5) -> None:
    end = clock.now + seconds
    while clock.now < end and runner.status in (FlowState.RETRYING,):
        runner.tick()
        clock.now += step


def test_retriable_failures_back_off_exponentially_up_to_30_s_then_start() -> None:
    down = [errors.ClusterUnreachableError("east is down") for _ in range(7)]
    runner, clock, _, attempts = runner_with([*down, None])
    tick_for(runner, clock, 200)
    assert runner.status == FlowState.RUNNING and runner.error is None
    gaps = [round(b - a) for a, b in zip(attempts, attempts[1:], strict=False)]
    assert gaps == [1, 2, 4, 8, 16, 30, 30]


def test_a_fatal_failure_stops_the_flow_and_records_why_on_the_target() -> None:
    runner, clock, store, attempts = runner_with([errors.DataLossError("orders/0: offsets 0-99 are gone")])
    tick_for(runner, clock, 10)
    assert runner.status == FlowState.ERROR and len(attempts) == 1
    heartbeat = store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "error"
    assert heartbeat.details["error"] == "DataLossError" and "offsets 0-99" in heartbeat.details["reason"]
    runner.tick()
    assert len(attempts) == 1  # an error is final: nothing more is tried


def test_a_kafka_error_code_marked_not_retriable_is_fatal_too() -> None:
    runner, clock, _, _ = runner_with([errors.KafkaOperationError("INVALID_CONFIG", kafka_code=40, retriable=False)])
    tick_for(runner, clock, 5)
    assert runner.status == FlowState.ERROR and runner.error is not None and runner.error.kafka_code == 40


def test_a_failover_made_elsewhere_while_retrying_stops_the_flow_without_writing_state() -> None:
    runner, clock, store, attempts = runner_with([errors.ClusterUnreachableError("east is down")] * 50)
    tick_for(runner, clock, 3)
    runner._heartbeat(force=True)  # the mirror's first heartbeat (it records 'retrying')
    store.set_role("f", Role.FAILED_OVER, kind="failover")
    written = len(store.log)
    tick_for(runner, clock, 12)
    assert runner.status == FlowState.FAILED_OVER
    assert len(store.log) == written  # the failover's own records stay as it wrote them


def test_a_flow_that_never_started_stops_as_an_error_with_its_reason() -> None:
    runner, clock, store, _ = runner_with([errors.ClusterUnreachableError("east is down")] * 50)
    tick_for(runner, clock, 3)
    runner.stop()
    assert runner.status == FlowState.ERROR
    heartbeat = store.read().heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "error" and "east is down" in heartbeat.details["reason"]


def test_the_final_state_is_not_written_when_the_target_does_not_answer() -> None:
    runner, clock, store, _ = runner_with([None])
    tick_for(runner, clock, 1)
    assert runner.clients is not None
    runner.clients.target_probe.reachable = False  # type: ignore[attr-defined]
    before = len(store.log)
    runner.stop()
    assert runner.status == FlowState.STOPPED and len(store.log) == before


def test_every_and_backoff() -> None:
    job = Every(5.0)
    assert not job.ever_run and job.take(0.0) and job.ever_run
    assert not job.take(4.9) and job.take(5.0) and job.take(5.1, force=True)
    backoff = Backoff()
    assert [backoff.schedule(0.0) for _ in range(7)] == [1, 2, 4, 8, 16, 30, 30]
    backoff.reset()
    assert backoff.schedule(100.0) == 1 and not backoff.due(100.5) and backoff.due(101.0)


@pytest.mark.parametrize("state", list(FlowState))
def test_states_are_their_recorded_strings(state: FlowState) -> None:
    import json

    assert json.loads(json.dumps({"state": state}))["state"] == state.value
    assert state.final == (state.value in ("error", "failed-over"))


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


class _StoppedQuery:
    """A query that stopped on its own (its failure is what the runner's _query_failure says)."""

    active = False

    def poll(self) -> int:
        return 0

    def stop(self) -> None:
        pass


def _data_loss_runner(skip_gaps: bool, diagnosed: errors.DataLossError | None) -> tuple[FlowRunner, Clock, list[float]]:
    runner, clock, _, attempts = runner_with([None])
    tick_for(runner, clock, 1)  # started
    runner.flow = runner.flow.model_copy(update={"skip_gaps": skip_gaps})
    runner._heartbeat = lambda force=False: None  # type: ignore[method-assign]
    runner._query = _StoppedQuery()  # type: ignore[assignment]
    runner._query_failure = lambda: errors.DataLossError("orders-0 offset 5 is no longer on the source")  # type: ignore[method-assign]
    runner._diagnose_loss = lambda: diagnosed  # type: ignore[method-assign]
    return runner, clock, attempts


def test_a_gap_the_source_met_restarts_a_skip_gaps_flow_at_once_so_its_plan_counts_it() -> None:
    runner, clock, attempts = _data_loss_runner(True, errors.DataLossError("flow f: orders/0 offsets 5..9 are gone"))
    started = len(attempts)
    runner.tick()
    assert len(attempts) == started + 1 and runner.status == FlowState.RUNNING and runner.restarts == 1


def test_a_gap_the_driver_cannot_find_is_retried_with_backoff_under_skip_gaps_and_fatal_without() -> None:
    runner, clock, attempts = _data_loss_runner(True, None)
    started = len(attempts)
    runner.tick()
    assert runner.status == FlowState.RETRYING and len(attempts) == started  # not at once: no restart loop
    assert isinstance(runner.error, errors.DataLossError) and runner.error.retriable
    runner, clock, _ = _data_loss_runner(False, errors.DataLossError("flow f: orders/0 offsets 5..9 are gone"))
    runner.tick()
    assert runner.status == FlowState.ERROR and "offsets 5..9" in str(runner.error)


def runner_said(caplog: pytest.LogCaptureFixture) -> list[tuple[str, str]]:
    """What the runner logged: (level, line)."""
    return [(r.levelname, r.getMessage()) for r in caplog.records if r.name == "geokafka.pipeline.runner"]


class FlakyStore(InMemoryStateStore):
    """A state store whose cluster can go away."""

    down = False

    def read(self, timeout_s: float = 60.0):  # type: ignore[no-untyped-def]
        if self.down:
            raise errors.ClusterUnreachableError("cluster west (127.0.0.1:2) did not answer: reading its state topic")
        return super().read(timeout_s)


def test_a_target_down_for_long_is_warned_once_by_the_heartbeat_and_its_return_said_once(
        caplog: pytest.LogCaptureFixture) -> None:
    store = FlakyStore("west")
    runner, clock, _, _ = runner_with([], store)  # retrying: no source observation, only the heartbeat's own work
    caplog.set_level(logging.INFO, logger="geokafka.pipeline.runner")
    store.down = True
    for _ in range(60):  # five minutes of heartbeats every 5 s
        runner._heartbeat()
        clock.now += 5.0
    store.down = False
    runner._heartbeat()
    said = runner_said(caplog)
    assert said == [
        ("WARNING", "flow f: heartbeat failed: cluster west (127.0.0.1:2) did not answer: reading its state topic "
                    "(retried every 5s; said again when it works or fails otherwise)"),
        ("WARNING", "flow f: heartbeat works again after 60 failures"),
    ]
    beat = store.read().heartbeat("f")
    assert beat is not None and beat.state == FlowState.RETRYING  # written once the target is back


def test_failed_starts_are_warned_once_per_kind_and_the_first_epoch_after_them_once(
        caplog: pytest.LogCaptureFixture) -> None:
    down = [errors.ClusterUnreachableError("cluster east (127.0.0.1:1) is not reachable") for _ in range(6)]
    slow = errors.KafkaOperationError("west: request timed out", kafka_code=7, retriable=True)
    runner, clock, _, attempts = runner_with([*down, slow, slow, None])
    caplog.set_level(logging.INFO, logger="geokafka.pipeline.runner")
    tick_for(runner, clock, 300)
    assert runner.status == FlowState.RUNNING and len(attempts) == 9
    runner._record_batch(0, [])  # the restarted query's first epoch commits
    runner._record_batch(1, [])
    said = runner_said(caplog)
    backoff = "(retried with backoff up to 30s; said again when it works or fails otherwise)"
    assert said == [
        ("WARNING", f"flow f: replication failed: cluster east (127.0.0.1:1) is not reachable {backoff}"),
        ("WARNING", f"flow f: replication failed: west: request timed out {backoff}"),
        ("WARNING", "flow f: replication works again after 8 failures"),
    ]
