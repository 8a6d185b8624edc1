"""Site-wide failover, promote and failback: every flow of the site, one report, one exit code (pure)."""

from __future__ import annotations

import threading

import pytest

from geokafka import errors
from geokafka.failover.site import flows_of_site, run_for_site
from geokafka.topology import parse_topology

TOPOLOGY = parse_topology("""\
clusters:
  nyc: {bootstrap: 127.0.0.1:1}
  atl: {bootstrap: 127.0.0.1:2}
  chi: {bootstrap: 127.0.0.1:3}
flows:
  nyc-to-atl: {source: nyc, target: atl, topics: [orders]}
  nyc-to-chi: {source: nyc, target: chi, topics: [orders]}
  nyc-pay-to-atl: {source: nyc, target: atl, topics: [pay]}
  atl-to-nyc: {source: atl, target: nyc, topics: [stock]}
""")


class Report:
    def __init__(self, flow: str) -> None:
        self.flow = flow

    def to_dict(self) -> dict:
        return {"flow": self.flow}


def test_every_flow_the_site_sources_runs_side_by_side_in_one_report() -> None:
    barrier = threading.Barrier(3, timeout=5)  # all three must be under way at once

    def run(flow: str) -> Report:
        barrier.wait()
        return Report(flow)

    report = run_for_site(TOPOLOGY, "nyc", "failover", run)
    assert [o.flow for o in report.outcomes] == ["nyc-pay-to-atl", "nyc-to-atl", "nyc-to-chi"]
    assert report.exit_code == 0 and not report.failed
    assert report.to_dict()["flows"][2] == {"flow": "nyc-to-chi", "source": "nyc", "target": "chi",
                                            "duration_s": report.outcomes[2].to_dict()["duration_s"],
                                            "done_before": None, "error": None, "report": {"flow": "nyc-to-chi"}}


def test_a_partial_failure_names_the_flows_and_a_second_run_finishes_the_rest_changing_nothing_done() -> None:
    failed_over: set[str] = set()
    down = {"nyc-to-chi"}

    def run(flow: str) -> Report:
        if flow in failed_over:
            raise errors.AlreadyFailedOverError(f"flow {flow} is already failed over")
        if flow in down:
            raise errors.ClusterUnreachableError("cluster chi did not answer")
        failed_over.add(flow)
        return Report(flow)

    first = run_for_site(TOPOLOGY, "nyc", "failover", run)
    assert [o.flow for o in first.failed] == ["nyc-to-chi"] and first.exit_code == 4
    down.clear()
    second = run_for_site(TOPOLOGY, "nyc", "failover", run)
    assert second.exit_code == 0
    assert {o.flow: (o.done_before is not None, o.report is not None) for o in second.outcomes} == {
        "nyc-pay-to-atl": (True, False), "nyc-to-atl": (True, False), "nyc-to-chi": (False, True)}


def test_failback_counts_a_flow_back_at_its_source_as_done_and_runs_one_flow_after_another() -> None:
    running: list[str] = []

    def run(flow: str) -> Report:
        running.append(flow)
        assert len(running) == 1, running  # one at a time
        running.remove(flow)
        if flow == "nyc-to-chi":
            raise errors.NotFailedOverError(f"flow {flow} is not failed over")
        return Report(flow)

    report = run_for_site(TOPOLOGY, "nyc", "failback", run, parallel=False)
    assert report.exit_code == 0 and [o.done_before is not None for o in report.outcomes] == [False, False, True]


def test_a_site_that_is_no_cluster_or_sources_no_flow_is_a_one_line_error() -> None:
    with pytest.raises(errors.TopologyError, match="no cluster of that name"):
        flows_of_site(TOPOLOGY, "lon")
    with pytest.raises(errors.TopologyError, match="no flow has chi as its source"):
        flows_of_site(TOPOLOGY, "chi")
