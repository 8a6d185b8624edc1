"""Run a topology's flows in one Spark application until stopped (SIGINT/SIGTERM or a deadline).

Each flow is supervised on its own: its runner ticks on a thread of its own (a start that waits on a
cluster that died delays that flow only) and its periodic jobs on threads of their own. A flow's
failure of any kind is that flow's state, never the process's; only Spark's JVM failing (out of
memory, or gone) ends every flow, with the error naming it.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
import time
from collections.abc import Callable
from contextlib import ExitStack
from typing import Any

from geokafka import errors
from geokafka.control.connection import connection
from geokafka.control.flow_states import FlowState
from geokafka.control.state_stores import StateStores
from geokafka.infra.signals import stop_on_signals
from geokafka.pipeline.runner import FlowRunner, RunnerView
from geokafka.pipeline.slots import MICRO_BATCH, REAL_TIME, ModeWatch, groups_per_flow, master_with_slots, task_slots
from geokafka.pipeline.spark_session import get_spark, is_local, jvm_exit, kill_spark, live_task_slots
from geokafka.topology.schema import Topology

TickCallback = Callable[[list[RunnerView]], None]

log = logging.getLogger(__name__)

TICK_S = 0.5
STOP_S = 8.0
"""A stop (SIGINT, SIGTERM, a deadline) waits this long for the flows, then leaves what is left to exit:
a service manager's SIGKILL usually follows 10 s after its SIGTERM."""


class FlowSupervisor:
    """One flow's runner, ticking on a thread of its own until the mirror stops; then it stops the flow."""

    def __init__(self, runner: FlowRunner, stop: threading.Event) -> None:
        self.runner = runner
        self._stop = stop
        self.done = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"flow {runner.name}", daemon=True)

    def start(self) -> FlowSupervisor:
        self._thread.start()
        return self

    def _run(self) -> None:
        try:
            while not self._stop.is_set():
                try:
                    self.runner.tick()
                except errors.GeokafkaError as exc:
                    self.runner.fail(exc)
                except Exception as exc:  # a bug in one flow must not end the others
                    log.debug("flow %s", self.runner.name, exc_info=True)
                    self.runner.fail(errors.GeokafkaError(f"flow {self.runner.name}: {type(exc).__name__}: {exc}"))
                if self.runner.status.final:
                    break
                self._stop.wait(TICK_S)
            self.runner.stop()
        finally:
            self.done.set()


def mirror(
    topology: Topology,
    flow_names: list[str] | None = None,
    duration_s: float | None = None,
    on_tick: TickCallback | None = None,
    stop_event: threading.Event | None = None,
) -> list[RunnerView]:
    """Run flows (all when ``flow_names`` is empty) until stopped; return how each ended.

    Raises the first flow's error when every flow stopped on an error, and a
    :class:`~geokafka.errors.JvmFatalError` when Spark's JVM failed under them.
    """
    names = flow_names or sorted(topology.flows)
    for name in names:
        topology.flow(name)  # an unknown name fails here, before Spark starts
    pipeline = topology.pipeline
    slots = task_slots(pipeline.master, pipeline.spark_conf)
    groups = groups_per_flow(pipeline.partition_groups, slots, len(names))
    master = master_with_slots(pipeline.master, groups * len(names)) if pipeline.mode == "real-time" else pipeline.master
    stores = StateStores()  # the flows' state stores, one per target: closed when the mirror ends
    runners, broken = _runners(topology, names, groups, stores)
    if not runners:
        stores.close()
        raise next(iter(broken.values()))
    for runner in runners:
        runner.startup.reached("command started")
    deadline = None if duration_s is None else time.monotonic() + duration_s
    fatal: errors.JvmFatalError | None = None
    with ExitStack() as on_signals:
        on_signals.enter_context(stores)  # closed last, once every flow stopped (or was left to the exit)
        # Ctrl-C and SIGTERM stop the flows cleanly, with the same summary; a second one stops at once
        stop = on_signals.enter_context(stop_on_signals(stop_event, on_second=_stop_at_once))
        # each flow's start prepares (clusters, topics, fencing, progress) while Spark starts
        supervisors = [FlowSupervisor(runner, stop).start() for runner in runners]
        try:
            spark_start = time.monotonic()
            try:
                spark = get_spark(master, "geokafka-mirror", pipeline.spark_conf, quick_jit=pipeline.jit == "quick")
            except Exception:
                # the JVM died as it started (out of memory, ...): say which, in one line; one that died of the
                # stop signal (a service manager signals every process) is a clean stop
                fatal = None if stop.is_set() else _jvm_failure(stop)
                if fatal is not None:
                    for runner in runners:
                        runner.post_failure(fatal)
                    raise fatal from None
                if not _stopping(stop):
                    raise
                spark = None
            spark_took_s = time.monotonic() - spark_start
            # PySpark's SparkContext put its own SIGINT handler in place of ours: ours again
            on_signals.enter_context(stop_on_signals(stop, on_second=_stop_at_once))
            modes = ModeWatch(pipeline.mode, groups * len(names))
            if spark is not None:
                _first_mode(spark, modes, pipeline.master, runners, stop)
                for runner in runners:
                    runner.spark_started(spark, spark_took_s)
            while spark is not None and not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                fatal = _jvm_failure(stop)
                if fatal is not None:
                    for runner in runners:
                        runner.post_failure(fatal)
                    break
                _follow_slots(spark, modes, runners)
                if on_tick is not None:
                    on_tick([runner.view for runner in runners])
                if all(s.done.is_set() for s in supervisors):
                    break
                stop.wait(TICK_S)
        finally:
            stop.set()
            for runner in runners:
                runner.request_stop()  # a start that waits for Spark gives up
            ended = _wait_for(supervisors, STOP_S)
    if fatal is not None:
        raise fatal
    if all(view.status == FlowState.ERROR for view in ended):
        first = ended[0].error
        if isinstance(first, errors.GeokafkaError):
            raise first
    return ended


def _runners(topology: Topology, names: list[str], groups: int,
             stores: StateStores) -> tuple[list[FlowRunner], dict[str, errors.GeokafkaError]]:
    """A runner per flow; a flow whose clients cannot even be made (a CA file that is not there) is that flow's
    error, said once, and the others run."""
    runners: list[FlowRunner] = []
    broken: dict[str, errors.GeokafkaError] = {}
    for name in names:
        try:
            store = stores.of(connection(topology, topology.flows[name].target))
            runners.append(FlowRunner(topology, name, group_count=groups, store=store))
        except errors.GeokafkaError as exc:
            broken[name] = exc
            log.error("flow %s cannot run: %s", name, exc)
    return runners, broken


def _wait_for(supervisors: list[FlowSupervisor], timeout_s: float) -> list[RunnerView]:
    """Every flow stopped (side by side: each may wait on its query), or the time is up; how each ended."""
    deadline = time.monotonic() + timeout_s
    for supervisor in supervisors:
        supervisor.done.wait(max(0.0, deadline - time.monotonic()))
    # a late flow's start still waits on a cluster that does not answer: it ends as what it is (a flow that never
    # replicated and was retrying is an error, with its reason), not as the state it was stopped in; its runner is
    # its supervisor's still, so only its view says so
    for supervisor in supervisors:
        if supervisor.done.is_set():
            supervisor.runner.settle()  # its supervisor is gone: what was posted after its last tick (Spark's death)
    ended = [s.runner.view if s.done.is_set() else s.runner.view.ended() for s in supervisors]
    late = [s.runner.name for s in supervisors if not s.done.is_set()]
    if late:
        log.warning("flows %s did not stop within %.0f s; their writers are fenced by the next start or by "
                    "failover", ", ".join(late), timeout_s)
    return ended


_STOP_SIGNALS = {signal.SIGTERM, signal.SIGINT}
_OWN_SIGNAL_S = 1.0
"""How long a JVM ended by SIGTERM or SIGINT waits for the same signal to reach this process (a service manager
signals every process of the service: the JVM may see it first)."""


def _jvm_failure(stop: threading.Event) -> errors.JvmFatalError | None:
    """Spark's JVM ended under the flows (``-XX:+ExitOnOutOfMemoryError`` makes one out of memory do so); None
    while it runs, or when a stop signal ended it and this process's stop follows."""
    code = jvm_exit()
    if code is None:
        return None
    if {-code, code - 128} & _STOP_SIGNALS and stop.wait(_OWN_SIGNAL_S):
        return None
    if code == 3:  # HotSpot's exit status after ExitOnOutOfMemoryError
        return errors.JvmFatalError(
            "Spark's JVM ran out of memory (java.lang.OutOfMemoryError) and exited; raise spark.driver.memory "
            "(and spark.executor.memory) in pipeline.spark_conf, or run fewer partition groups per process")
    return errors.JvmFatalError(f"Spark's JVM exited with status {code} under the running flows")


def _stop_at_once() -> None:
    """A second SIGINT/SIGTERM: end Spark's JVM and this process now (the next start fences the writers)."""
    kill_spark()
    os._exit(130)


EXECUTORS_WAIT_S = 30.0
"""How long a cluster master's first query waits for executors to register before the mirror decides its mode
(Spark's own spark.scheduler.maxRegisteredResourcesWaitingTime)."""


def _first_mode(spark: Any, modes: ModeWatch, master: str, runners: list[FlowRunner], stop: threading.Event) -> None:
    """Real-time mode needs a live task slot for each partition group: a cluster's executors register after the
    application starts, so wait for them (up to :data:`EXECUTORS_WAIT_S`); with too few, start in micro-batches
    (the watch returns to real-time mode when slots come)."""
    if modes.configured != REAL_TIME:
        return
    waited_until = time.monotonic() + (0.0 if is_local(master) else EXECUTORS_WAIT_S)
    slots = live_task_slots(spark)
    while (slots is None or slots < modes.needed) and time.monotonic() < waited_until and not stop.wait(0.25):
        slots = live_task_slots(spark)
    if slots is not None and slots < modes.needed:
        modes.mode = MICRO_BATCH
        log.warning("real-time mode needs a task slot for each of the %d partition groups, and this Spark application "
                    "has %s: running micro-batches until it has them (give the master more cores, or set "
                    "pipeline.partition_groups lower)", modes.needed, _slots(slots))
        for runner in runners:
            runner.run_in(MICRO_BATCH)


def _slots(count: int | None) -> str:
    return f"{count} task slot{'' if count == 1 else 's'}"


def _follow_slots(spark: Any, modes: ModeWatch, runners: list[FlowRunner]) -> None:
    """Executors come and go: with fewer live task slots than real-time mode needs, a lost group's task would wait
    for a slot until its batch ends; run micro-batches on what is left, and real-time mode again once it is back."""
    if modes.configured != REAL_TIME:
        return  # micro-batches share whatever slots there are
    slots = live_task_slots(spark)
    switch = modes.update(slots, time.monotonic())
    if switch == MICRO_BATCH:
        log.warning("the Spark application has %s, %d fewer than real-time mode needs (an executor was lost): running "
                    "micro-batches on what is left until slots are back", _slots(slots), modes.needed - (slots or 0))
    elif switch == REAL_TIME:
        log.warning("the Spark application has %s again: back to real-time mode", _slots(slots))
    if switch is not None:
        for runner in runners:
            runner.run_in(switch)


def _stopping(stop: threading.Event) -> bool:
    """True when a stop was asked for: a Spark call that failed meanwhile failed because of it.

    A service manager stops every process of a service (systemd's default), so Spark's JVM gets
    the same signal and goes away under a start or a tick; that is a stop, not an error (its
    shutdown hook stops the queries, whose writers the next start fences anyway).
    """
    if stop.is_set():
        log.info("Spark's JVM went away after the stop signal; stopping the flows without it")
        return True
    return False

