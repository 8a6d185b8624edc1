"""The /metrics text: names, labels and values, parsed back with the Prometheus parser (no broker)."""

from __future__ import annotations

from prometheus_client.parser import text_string_to_metric_families

from geokafka.monitoring.metrics import render_metrics
from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport, Throughput


def sample_report() -> StatusReport:
    running = FlowStatus(
        "east-to-west", "east", "west", "running", "running", heartbeat_age_s=2.0, written=1234, bytes=56789,
        partitions=[PartitionStatus("orders", 0, "east.orders", 110, 100, 10, 4.5),
                    PartitionStatus("orders", 1, "east.orders", 50, 50, 0, 0.0)],
        rpo=Rpo(10, 4.5, "live"), throughput=Throughput(2.0, 20.0, 2000.0, 25.0, "test"),
    )
    dead = FlowStatus(
        "south-to-west", "south", "west", "source-unreachable", "stopped", source_reachable=False,
        partitions=[PartitionStatus("pay", 0, "south.pay", None, 7, None, None)], rpo=Rpo(None, None, "unknown"),
    )
    return StatusReport(1_700_000_000_000, [running, dead])


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def test_metrics_parse_and_carry_the_status_figures():
    got = samples(render_metrics(sample_report()))
    part0 = (("flow", "east-to-west"), ("partition", "0"), ("topic", "orders"))
    assert got[("geokafka_replication_lag_records", part0)] == 10
    assert got[("geokafka_replication_lag_seconds", part0)] == 4.5
    assert got[("geokafka_source_end_offset", part0)] == 110
    assert got[("geokafka_replicated_offset", part0)] == 100
    flow = (("flow", "east-to-west"),)
    assert got[("geokafka_replicated_records_total", flow)] == 1234
    assert got[("geokafka_replicated_bytes_total", flow)] == 56789
    assert got[("geokafka_flow_up", flow)] == 1
    assert got[("geokafka_flow_rpo_records", flow)] == 10
    assert got[("geokafka_flow_rpo_seconds", flow)] == 4.5
    assert got[("geokafka_flow_throughput_records_per_second", flow)] == 20
    assert got[("geokafka_flow_state", (("flow", "east-to-west"), ("state", "running")))] == 1
    assert got[("geokafka_flow_state", (("flow", "east-to-west"), ("state", "stopped")))] == 0


def test_counter_is_typed_as_counter():
    types = {f.name: f.type for f in text_string_to_metric_families(render_metrics(sample_report()))}
    assert types["geokafka_replicated_records"] == "counter"
    assert types["geokafka_replication_lag_records"] == "gauge"


def test_unknown_figures_are_left_out_and_dead_flows_are_down():
    got = samples(render_metrics(sample_report()))
    dead = (("flow", "south-to-west"),)
    assert got[("geokafka_flow_up", dead)] == 0
    assert got[("geokafka_flow_source_up", dead)] == 0
    assert ("geokafka_flow_rpo_records", dead) not in got
    assert not any(name == "geokafka_replication_lag_records" and ("flow", "south-to-west") in labels
                   for name, labels in got)


def test_no_report_yet_renders_a_valid_empty_exposition():
    assert list(text_string_to_metric_families(render_metrics(None))) == []


def test_label_values_are_escaped():
    report = sample_report()
    report.flows[0].partitions[0].topic = 'we"ird\\topic'
    got = samples(render_metrics(report))
    assert any(dict(labels).get("topic") == 'we"ird\\topic' for _, labels in got)
