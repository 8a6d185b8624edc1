"""Run a topology's flows in one Spark application until stopped (SIGINT/SIGTERM or a deadline)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack

from geokafka.control.state_store import release_state_producers
from geokafka.errors import GeokafkaError
from geokafka.infra.signals import stop_on_signals
from geokafka.pipeline.runner import FlowRunner
from geokafka.pipeline.schedule import FlowState
from geokafka.pipeline.slots import groups_per_flow, master_with_slots, task_slots
from geokafka.pipeline.spark_session import get_spark
from geokafka.topology.schema import Topology

TickCallback = Callable[[list[FlowRunner]], None]

log = logging.getLogger(__name__)


def mirror(
    topology: Topology,
    flow_names: list[str] | None = None,
    duration_s: float | None = None,
    on_tick: TickCallback | None = None,
    stop_event: threading.Event | None = None,
) -> list[FlowRunner]:
    """Run flows (all when ``flow_names`` is empty) until stopped; return their final runners.

    Raises the first flow's error when every flow stopped on an error.
    """
    names = flow_names or sorted(topology.flows)
    for name in names:
        topology.flow(name)  # an unknown name fails here, before Spark starts
    pipeline = topology.pipeline
    slots = task_slots(pipeline.master, pipeline.spark_conf)
    groups = groups_per_flow(pipeline.groups, slots, len(names))
    master = pipeline.master
    if pipeline.mode == "real-time":
        master = master_with_slots(master, groups * len(names))
        if slots is not None and slots < groups * len(names) and master == pipeline.master:
            log.warning("real-time mode runs %d tasks at once (%d flows x %d groups) but %s has %d task slots: "
                        "groups without a slot wait for a batch's end", groups * len(names), len(names), groups,
                        master, slots)
    runners = [FlowRunner(None, topology, name, group_count=groups) for name in names]
    for runner in runners:
        runner.startup.reached("command started")
    deadline = None if duration_s is None else time.monotonic() + duration_s
    # Ctrl-C and SIGTERM both stop the flows cleanly, so both end with the same summary; a second
    # one while they stop is ignored (our handlers stay until the runners have stopped).
    with ExitStack() as on_signals:
        stop = on_signals.enter_context(stop_on_signals(stop_event))
        try:
            for runner in runners:
                runner.status = FlowState.RETRYING  # first start goes through the same retry/fatal handling
            # The control plane's half of each start (fencing first: a killed writer's open
            # transaction blocks read_committed readers of the target until it is aborted) runs
            # while Spark starts, which takes most of a start's time.
            with ThreadPoolExecutor(max_workers=min(4, len(runners)) or 1, thread_name_prefix="prepare") as pool:
                prepared = [pool.submit(runner.try_prepare) for runner in runners]
                spark_start = time.monotonic()
                try:
                    spark = get_spark(master, "geokafka-mirror", pipeline.spark_conf,
                                      quick_jit=pipeline.jit == "quick")
                except Exception:
                    if not _stopping(stop):
                        raise
                    spark = None
                for runner in runners:
                    runner.startup.took("Spark session", time.monotonic() - spark_start)
                # PySpark's SparkContext put its own SIGINT handler in place of ours: ours again
                on_signals.enter_context(stop_on_signals(stop))
                for future in prepared:
                    future.result()
            if spark is not None and not _enough_slots(spark, topology, groups * len(names)):
                micro = topology.model_copy(update={"pipeline": pipeline.model_copy(update={"mode": "micro-batch"})})
                for runner in runners:
                    runner.topology = micro
            for runner in runners:
                runner.spark = spark
            while spark is not None and not stop.is_set() and (deadline is None or time.monotonic() < deadline):
                for runner in runners:
                    try:
                        runner.tick()
                    except Exception:
                        if not _stopping(stop):
                            raise
                if on_tick is not None:
                    on_tick(runners)
                if all(r.status.final for r in runners):
                    break
                stop.wait(0.5)
        finally:
            for runner in runners:
                runner.stop()
            release_state_producers()
    if all(r.status == FlowState.ERROR for r in runners):
        first = runners[0].error
        if isinstance(first, GeokafkaError):
            raise first
    return runners


def _enough_slots(spark: object, topology: Topology, needed: int) -> bool:
    """False when real-time mode would have fewer task slots than partition groups (a Spark application shared
    with other work, a cluster with fewer cores than configured): a group's task would wait for a whole batch,
    so the mirror runs micro-batches instead, and says so once."""
    if topology.pipeline.mode != "real-time":
        return True
    try:
        slots = int(spark.sparkContext.defaultParallelism)  # type: ignore[attr-defined]
    except Exception:  # noqa: BLE001 - a JVM that went away: the start fails on its own
        return True
    if slots >= needed:
        return True
    log.warning("real-time mode needs a task slot for each of the %d partition groups, and this Spark application "
                "has %d: running micro-batches instead (give the master more cores, or set pipeline.groups lower)",
                needed, slots)
    return False


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
