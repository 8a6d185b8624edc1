"""Each periodic job's messages state the interval it really runs at, and which setting it comes from."""

from __future__ import annotations

import logging

import pytest

from geokafka.control.state_store import InMemoryStateStore
from geokafka.pipeline.flow_clients import FlowClients
from geokafka.pipeline.flow_jobs import FlowJobs, FlowSignals
from geokafka.pipeline.scheduler import ManualScheduler
from geokafka.topology import parse_topology

CLUSTERS = "clusters:\n  east: {bootstrap: 127.0.0.1:1}\n  west: {bootstrap: 127.0.0.1:2}\n"


class View:
    name = "f"


def schedule_said(flow: str, caplog: pytest.LogCaptureFixture, pipeline: str = "") -> str:
    topology = parse_topology(CLUSTERS + f"flows:\n  f: {flow}\n" + pipeline)
    jobs = FlowJobs(topology, View, FlowClients(None, None, None, None),  # type: ignore[arg-type]
                    InMemoryStateStore("west"), FlowSignals())
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="geokafka.pipeline.flow_jobs"):
        jobs.schedule(ManualScheduler("flow f", lambda: 0.0))
    return "\n".join(r.getMessage() for r in caplog.records)


def test_the_selection_says_when_partition_sync_makes_it_run_more_often_than_topic_refresh_s(
        caplog: pytest.LogCaptureFixture) -> None:
    """A 30-s topic refresh with partitions synced every 10 s: the selection (topics and partition counts) looks
    every 10 s, and says why."""
    assert schedule_said("{source: east, target: west, sync: [partitions], sync_interval_s: 10}", caplog) == (
        "flow f: jobs run every: heartbeat 5 s, observe 250 ms (rpo.observe_ms), topic-ids 1 s, selection 10 s "
        "(sync_interval_s, as the flow syncs partitions; topic_refresh_s is 30 s), sync 10 s (sync_interval_s)")
    said = schedule_said("{source: east, target: west, sync: [configs], sync_interval_s: 10}", caplog,
                         "pipeline: {topic_refresh_s: 45}\nrpo: {observe_ms: 1500}\n")
    assert "observe 1.5 s (rpo.observe_ms)" in said and "selection 45 s (pipeline.topic_refresh_s)" in said
    said = schedule_said("{source: east, target: west, sync: [partitions], sync_interval_s: 60}", caplog)
    assert "selection 30 s (pipeline.topic_refresh_s)" in said and "sync 60 s (sync_interval_s)" in said


def test_a_long_run_states_the_period_the_job_really_runs_at(caplog: pytest.LogCaptureFixture) -> None:
    """A job whose CPU share stretched its period from 250 ms to 1.5 s says 1.5 s when a run takes long."""
    now, cpu = [0.0], [0.0]

    def slow_costly_look() -> None:
        now[0] += 2.0
        cpu[0] += 0.03

    scheduler = ManualScheduler("flow f", lambda: now[0], cpu_clock=lambda: cpu[0])
    job = scheduler.add("observe", 0.25, slow_costly_look, timeout_s=1.0, cpu_share=0.02)
    with caplog.at_level(logging.WARNING, logger="geokafka.pipeline.scheduler"):
        scheduler.run_due(now[0])
    assert job.period_s == pytest.approx(1.5)
    assert [r.getMessage() for r in caplog.records] == [
        "flow f: job observe took 2.0 s (time-out 1.0 s); it runs every 1.5 s"]
