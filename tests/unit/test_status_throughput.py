"""Throughput from two observations and the bounded history (no broker)."""

from __future__ import annotations

import pytest

from geokafka.monitoring.status import FlowStatus, PartitionStatus, Rpo, StatusReport
from geokafka.monitoring.throughput import History, annotate, mean_record_bytes

T0 = 1_700_000_000_000


def report(at_ms: int, nexts: list[int], ends: list[int], written: int = 0, nbytes: int = 0, pid: int = 7,
           reachable: bool = True) -> StatusReport:
    parts = [PartitionStatus("t", i, "east.t", e, n, e - n, 0.0, resume_offset=n) for i, (n, e) in enumerate(zip(nexts, ends))]
    flow = FlowStatus("f", "east", "west", "running", "running", partitions=parts, written=written, bytes=nbytes,
                      pid=pid, host="h", source_reachable=reachable,
                      rpo=Rpo(sum(p.lag_records or 0 for p in parts), 0.0, "live"))
    return StatusReport(at_ms, [flow])


def test_rates_count_replicated_offsets_over_the_real_window():
    newer = annotate(report(T0, [0, 100], [10, 100]), report(T0 + 2000, [50, 130], [60, 140]))
    tput = newer.flows[0].throughput
    assert tput is not None
    assert tput.window_s == 2.0
    assert tput.records_per_s == pytest.approx(40.0)  # (50 + 30) / 2
    assert tput.produced_per_s == pytest.approx(45.0)  # (50 + 40) / 2
    assert [p.records_per_s for p in newer.flows[0].partitions] == [25.0, 15.0]
    assert "2.0 s" in tput.basis


def test_bytes_from_heartbeat_delta_of_the_same_mirror():
    older, newer = report(T0, [0], [0], written=100, nbytes=10_000), report(T0 + 1000, [10], [10], 110, 12_000)
    assert mean_record_bytes(older.flows[0], newer.flows[0]) == 200.0
    tput = annotate(older, newer).flows[0].throughput
    assert tput is not None and tput.bytes_per_s == pytest.approx(2000.0)


def test_bytes_fall_back_to_cumulative_mean_after_a_mirror_restart():
    older, newer = report(T0, [0], [0], 100, 10_000, pid=1), report(T0 + 1000, [10], [10], 10, 500, pid=2)
    assert mean_record_bytes(older.flows[0], newer.flows[0]) == 50.0


def test_progress_going_back_counts_as_zero_and_unreachable_source_has_no_produce_rate():
    newer = annotate(report(T0, [100], [100]), report(T0 + 1000, [40], [100], reachable=False))
    tput = newer.flows[0].throughput
    assert tput is not None and tput.records_per_s == 0 and tput.produced_per_s is None


def test_history_uses_the_oldest_observation_within_the_window_and_forgets_old_ones():
    history = History(max_age_s=10, window_s=4)
    for i in range(8):
        history.add(report(T0 + i * 2000, [i * 10], [i * 10]))
    latest = history.latest
    assert latest is not None and latest.flows[0].throughput is not None
    assert latest.flows[0].throughput.window_s == 4.0
    assert latest.flows[0].throughput.records_per_s == pytest.approx(5.0)
    assert len(history) == 6  # 10 s of history at one sample every 2 s, both ends included
    series = history.series()["f"]
    assert [p["t"] for p in series][0] == T0 + 4000
    assert series[0]["records_per_s"] is None and series[-1]["records_per_s"] == pytest.approx(5.0)


def test_a_partition_replicated_for_the_first_time_counts_from_where_it_started():
    older = report(T0, [0], [100])
    older.flows[0].partitions[0].replicated = None  # no progress yet; resume_offset is the log start (0)
    newer = annotate(older, report(T0 + 2000, [30], [100]))
    tput = newer.flows[0].throughput
    assert tput is not None and tput.records_per_s == pytest.approx(15.0)


def test_a_latest_flow_without_progress_has_no_base_to_count_from():
    older = report(T0, [0], [100])
    older.flows[0].partitions[0].replicated = older.flows[0].partitions[0].resume_offset = None
    tput = annotate(older, report(T0 + 2000, [100], [110])).flows[0].throughput
    assert tput is not None and tput.records_per_s == 0
