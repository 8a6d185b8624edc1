"""The terminal table and the JSON shape of a status report (no broker)."""

from __future__ import annotations

import json

from rich.console import Console

from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport, Throughput
from geokafka.monitoring.status_render import fmt_seconds, render_report


def text_of(report: StatusReport) -> str:
    console = Console(width=140, record=True, color_system=None)
    console.print(render_report(report))
    return console.export_text()


def test_table_shows_state_rpo_throughput_and_partitions():
    flow = FlowStatus(
        "nyc-to-atl", "nyc", "atl", "running", "running", heartbeat_age_s=3.2,
        partitions=[PartitionStatus("orders", 0, "nyc.orders", 1200, 1150, 50, 2.5, records_per_s=480.0)],
        rpo=Rpo(50, 2.5, "live"), throughput=Throughput(2.0, 480.0, 96_000.0, 500.0, "x"),
    )
    text = text_of(StatusReport(0, [flow]))
    assert "nyc-to-atl" in text and "nyc → atl" in text and "running (heartbeat 3.2 s ago)" in text
    assert "RPO if the source died now: 50 records, 2.5 s" in text
    assert "throughput over the last 2.0 s: 480 rec/s, 96.0 kB/s" in text
    assert "1,200" in text and "1,150" in text


def test_unreachable_source_says_so_and_labels_the_end_as_last_seen():
    flow = FlowStatus(
        "f", "east", "west", "source-unreachable", "stopped", source_reachable=False,
        source_error="cluster east (127.0.0.1:1) is not reachable: listing topics: timed out",
        partitions=[PartitionStatus("t", 0, "east.t", 30, 20, 10, 4.0)], rpo=Rpo(10, 4.0, "last-observed", 0, "note"),
    )
    text = text_of(StatusReport(0, [flow]))
    assert "source-unreachable" in text and "is not reachable" in text and "last seen end" in text
    assert "mirror last recorded stopped" in text


def test_json_shape_is_plain_data():
    flow = FlowStatus("f", "a", "b", "stopped", "stopped", partitions=[PartitionStatus("t", 0, "a.t", 5, 5, 0, 0.0)])
    data = json.loads(json.dumps(StatusReport(1, [flow]).to_dict()))
    assert data["flows"][0]["partitions"][0]["lag_records"] == 0
    assert data["flows"][0]["rpo"]["basis"] == "unknown"


def test_seconds_format():
    assert [fmt_seconds(v) for v in (None, 0, 3.44, 125, 3725)] == ["-", "0 s", "3.4 s", "2m05s", "1h02m"]


def test_records_lost_at_the_source_are_shown_per_partition_and_for_the_flow():
    flow = FlowStatus(
        "f", "east", "west", "error", "error", reason="gap at orders/0: progress 40, log start 100",
        partitions=[PartitionStatus("orders", 0, "orders", 150, 40, 50, 9.0, lost_records=60)],
        rpo=Rpo(50, 9.0, "live", lost_records=60),
    )
    text = text_of(StatusReport(0, [flow]))
    assert "LOST: 60 records deleted at the source before they were replicated" in text
    assert "lost" in text.splitlines()[[i for i, line in enumerate(text.splitlines()) if "topic" in line][0]]


def test_a_flow_of_thousands_of_partitions_shows_its_topics_and_most_lagging_partitions_unless_asked_for_all():
    parts = [PartitionStatus(f"t{t}", p, f"nyc.t{t}", 1000, 1000 - (7 if (t, p) == (3, 17) else 0),
                             7 if (t, p) == (3, 17) else 0, 1.5 if (t, p) == (3, 17) else 0.0, records_per_s=2.0)
             for t in range(5) for p in range(400)]
    flow = FlowStatus("nyc-to-atl", "nyc", "atl", "running", "running", heartbeat_age_s=1.0, partitions=parts,
                      rpo=Rpo(7, 1.5, "live"))
    text = text_of(StatusReport(0, [flow]))
    lines = text.splitlines()
    assert len(lines) < 40, len(lines)  # not 2,000 rows
    assert "the 1 most-lagging of 2,000 partitions" in text
    row = next(line for line in lines if line.lstrip("│ ").startswith("t3 ") and "17" in line)
    assert "7" in row and "1.5 s" in row
    topic_row = next(line for line in lines if line.lstrip("│ ").startswith("t3 ") and "400" in line)
    assert "400,000" in topic_row and "399,993" in topic_row and "800" in topic_row  # sums per topic, rec/s
    assert "--partitions` shows every row" in text
    console = Console(width=140, record=True, color_system=None)
    console.print(render_report(StatusReport(0, [flow]), every_partition=True))
    assert len(console.export_text().splitlines()) > 2000
