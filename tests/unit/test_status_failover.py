"""`status` of a failed-over flow and of a re-created source topic (no broker): what the failover lost,
bounded or exact, and the ranges of both topics instead of lag 0."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from geokafka.control.rpo import RpoInterval
from geokafka.control.topic_identity import Recreation
from geokafka.monitoring.metrics import render_metrics
from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport, failover_rpo, recreation_problem
from geokafka.monitoring.status_render import render_report

BOUNDED = RpoInterval("observed", 120, 410, 0.0, 1.4, 1_000, 0.3, 1_300, 290.0).to_dict()


def text_of(flow: FlowStatus) -> str:
    console = Console(width=400, record=True, color_system=None)
    console.print(render_report(StatusReport(0, [flow])))
    return console.export_text()


def failed_over(report: dict, loss: dict | None) -> FlowStatus:
    flow = FlowStatus("f", "east", "west", "failed-over", "failed-over")
    flow.failover, flow.rpo = failover_rpo(report, 5_000, loss)
    return flow


def test_a_failed_over_flow_shows_the_interval_its_failover_reported_until_reconcile_counts_it() -> None:
    flow = failed_over({"started_ms": 2_000, "kind": "failover", "rpo": BOUNDED}, None)
    assert flow.failover is not None and not flow.failover.exact and flow.failover.at_ms == 2_000
    assert (flow.rpo.records_lower, flow.rpo.records_upper, flow.rpo.basis) == (120, 410, "failover")
    text = text_of(flow)
    assert "failed over to west at" in text and "RPO: 120 to 410 records, up to 1.4 s" in text
    assert "`geokafka reconcile f` once east answers again" in text
    assert "if the source died now" not in text


def test_a_count_by_reconcile_for_this_failover_makes_it_exact() -> None:
    loss = {"at_ms": 9_000, "failover_at_ms": 2_000, "records": 312, "seconds": 1.04}
    flow = failed_over({"started_ms": 2_000, "kind": "failover", "rpo": BOUNDED}, loss)
    assert flow.failover is not None and flow.failover.exact and flow.failover.counted_at_ms == 9_000
    assert (flow.rpo.records, flow.rpo.records_upper, flow.rpo.seconds, flow.rpo.exact) == (312, 312, 1.04, True)
    assert "RPO, exact (counted in east's logs at" in text_of(flow) and "312 records, 1.0 s" in text_of(flow)
    older = failed_over({"started_ms": 3_000, "rpo": BOUNDED}, loss)  # a count of an earlier failover
    assert not older.rpo.exact and older.rpo.records_upper == 410
    legacy = failed_over({"started_ms": 2_000, "rpo_records": 10}, None)
    assert (legacy.rpo.records, legacy.rpo.records_upper) == (10, None)
    assert failed_over({}, None).rpo.headline.startswith("unknown")


def test_metrics_carry_the_interval_and_the_conservative_figure() -> None:
    bounded = failed_over({"started_ms": 2_000, "rpo": BOUNDED}, None)
    live = FlowStatus("g", "east", "west", "running", "running", rpo=Rpo(7, 0.5, "live"))
    got = {(s.name, s.labels["flow"]): s.value for family in text_string_to_metric_families(
        render_metrics(StatusReport(0, [bounded, live]))) for s in family.samples if "rpo" in s.name}
    assert got[("geokafka_flow_rpo_records", "f")] == 410  # what a dashboard alerts on: at most
    assert (got[("geokafka_flow_rpo_records_lower", "f")], got[("geokafka_flow_rpo_exact", "f")]) == (120, 0)
    assert got[("geokafka_flow_rpo_seconds_upper", "f")] == 1.4
    assert got[("geokafka_flow_rpo_records", "g")] == got[("geokafka_flow_rpo_records_lower", "g")] == 7
    assert got[("geokafka_flow_rpo_exact", "g")] == 1


def test_a_recreated_topic_names_how_far_the_old_one_went_and_what_the_new_one_holds() -> None:
    parts = [PartitionStatus("orders", 0, "east.orders", 150, 100, None, None, source_start=0, recreated=True),
             PartitionStatus("orders", 1, "east.orders", 0, 98, None, None, source_start=0, recreated=True)]
    line = recreation_problem(Recreation("orders", "AAA", "BBB"), parts)
    assert "topic deleted and re-created (topic id AAA -> BBB)" in line
    assert "orders/0 up to offset 100, orders/1 up to offset 98 of the old topic" in line
    assert "the new topic holds orders/0 offsets 0..149, orders/1 no records" in line
    flow = FlowStatus("f", "east", "west", "error", "error", reason="flow f: source records ... gone",
                      partitions=parts, recreated=[line])
    flow.rpo.set_interval(RpoInterval.unknown("source topic orders was re-created since it was replicated"))
    text = text_of(flow)
    assert "RPO if the source died now: unknown: source topic orders was re-created" in text
    assert "orders/0 offsets 0..149" in text and " 0 records" not in text
    assert text.count("re-created │") == 2  # the lag column, not 0
