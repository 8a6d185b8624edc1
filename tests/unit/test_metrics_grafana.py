"""The Grafana dashboard in the repo queries only metrics that /metrics exposes (no broker)."""

from __future__ import annotations

import json
import re
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from geokafka.monitoring.metrics import render_metrics
from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport, Throughput

DASHBOARD = Path(__file__).resolve().parents[2] / "grafana" / "geokafka-dashboard.json"


def exposed_names() -> set[str]:
    flow = FlowStatus("f", "a", "b", "running", "running", heartbeat_age_s=1.0, written=1, bytes=1,
                      partitions=[PartitionStatus("t", 0, "a.t", 5, 4, 1, 1.0)], rpo=Rpo(1, 1.0, "live"),
                      throughput=Throughput(1.0, 1.0, 1.0, 1.0, "x"))
    text = render_metrics(StatusReport(0, [flow]))
    return {s.name for family in text_string_to_metric_families(text) for s in family.samples}


def test_dashboard_is_valid_json_with_a_datasource_input_and_unique_panel_ids():
    dash = json.loads(DASHBOARD.read_text())
    assert dash["__inputs"][0]["pluginId"] == "prometheus"
    ids = [p["id"] for p in dash["panels"]]
    assert len(ids) == len(set(ids)) >= 8


def test_every_queried_metric_is_exposed():
    dash = json.loads(DASHBOARD.read_text())
    exprs = [t["expr"] for p in dash["panels"] for t in p["targets"]]
    used = {name for expr in exprs for name in re.findall(r"geokafka_[a-z_]+", expr)}
    assert used and used <= exposed_names(), used - exposed_names()
    required = {"geokafka_replication_lag_records", "geokafka_replication_lag_seconds", "geokafka_replicated_records_total",
                "geokafka_flow_up", "geokafka_flow_rpo_records", "geokafka_flow_rpo_seconds"}
    assert required <= used
