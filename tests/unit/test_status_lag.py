"""Pure status decisions: lag, heartbeat staleness, headline state and RPO (no broker)."""

from __future__ import annotations

import pytest

from geokafka.monitoring.status import (
    PartitionStatus,
    flow_rpo,
    headline_state,
    lost_offsets,
    mirror_details,
    observed_lag,
    partition_lag,
    raw_lag,
)

NOW = 1_700_000_000_000


def part(lag: int | None, seconds: float | None, p: int = 0) -> PartitionStatus:
    return PartitionStatus("orders", p, "east.orders", 100, None if lag is None else 100 - lag, lag, seconds)


@pytest.mark.parametrize(("end", "nxt", "want"), [(10, 4, 6), (10, 10, 0), (10, 12, 0), (None, 3, None), (5, None, None)])
def test_raw_lag_is_end_minus_next_never_negative(end, nxt, want):
    assert raw_lag(end, nxt) == want


def test_caught_up_partition_has_no_lag_without_a_probe():
    assert partition_lag(50, 50, None, NOW) == (0, 0.0)


def test_lagging_partition_takes_age_of_first_unreplicated_record():
    records, seconds = partition_lag(50, 40, (40, NOW - 12_500), NOW)
    assert records == 10
    assert seconds == pytest.approx(12.5)


def test_only_a_transaction_marker_left_is_not_lag():
    # end 51 counts the commit marker at 50; no committed record exists at/after next=50
    assert partition_lag(51, 50, None, NOW) == (0, 0.0)


def test_leading_markers_or_aborted_records_are_not_counted():
    records, _ = partition_lag(60, 50, (55, NOW), NOW)
    assert records == 5


def test_unknown_probe_keeps_offset_lag_and_unknown_age():
    assert partition_lag(60, 50, "unknown", NOW) == (10, None)


def test_future_timestamps_give_zero_age_not_negative():
    assert partition_lag(60, 50, (50, NOW + 5000), NOW) == (10, 0.0)


def test_observed_lag_bounds_seconds_by_last_replicated_record():
    records, seconds = observed_lag(120, 100, NOW - 30_000, NOW - 10_000)
    assert records == 20
    assert seconds == pytest.approx(20.0)
    assert observed_lag(100, 100, NOW - 30_000, NOW) == (0, 0.0)
    assert observed_lag(120, 100, None, NOW) == (20, None)


def test_running_with_fresh_heartbeat_is_running():
    assert headline_state({"state": "running", "at_ms": NOW - 4000}, NOW, True) == ("running", 4.0)


def test_running_with_stale_heartbeat_is_down():
    state, age = headline_state({"state": "running", "at_ms": NOW - 45_000}, NOW, True)
    assert (state, age) == ("down", 45.0)


def test_stopped_stays_stopped_however_old():
    assert headline_state({"state": "stopped", "at_ms": NOW - 3_600_000}, NOW, True)[0] == "stopped"


def test_unreachable_source_wins_over_mirror_state_but_not_over_failover():
    assert headline_state({"state": "running", "at_ms": NOW}, NOW, False)[0] == "source-unreachable"
    assert headline_state({"state": "failed-over", "at_ms": NOW}, NOW, False)[0] == "failed-over"


def test_failover_role_wins_over_a_heartbeat_left_running():
    state, _ = headline_state({"state": "running", "at_ms": NOW - 600_000}, NOW, False, role="failed-over")
    assert state == "failed-over"
    assert headline_state({"state": "running", "at_ms": NOW}, NOW, True, role="active")[0] == "running"


def test_no_record_means_not_started():
    assert headline_state(None, NOW, True) == ("not-started", None)


def test_error_keeps_its_reason():
    details = mirror_details({"state": "error", "reason": "record too large", "written": 5})
    assert details["reason"] == "record too large" and details["written"] == 5
    assert mirror_details({"state": "error"})["reason"] == "no reason recorded"


def test_rpo_sums_records_and_takes_oldest_age():
    rpo = flow_rpo([part(10, 3.0), part(0, 0.0, 1), part(5, 7.5, 2)], "live")
    assert (rpo.records, rpo.seconds, rpo.basis) == (15, 7.5, "live")


def test_rpo_seconds_unknown_when_a_lagging_partition_has_no_age():
    rpo = flow_rpo([part(10, None), part(5, 2.0, 1)], "live")
    assert rpo.records == 15 and rpo.seconds is None


def test_rpo_unknown_without_any_figure():
    assert flow_rpo([part(None, None)], "unknown").records is None
    assert flow_rpo([], "unknown").basis == "unknown"


def test_rpo_of_flow_without_topics_is_zero_when_source_is_live():
    rpo = flow_rpo([], "live")
    assert (rpo.records, rpo.seconds) == (0, 0.0)


def test_rpo_from_last_observation_says_so():
    rpo = flow_rpo([part(4, 9.0)], "last-observed", NOW)
    assert rpo.records == 4 and rpo.observed_ms == NOW
    assert rpo.note and "last observation" in rpo.note


@pytest.mark.parametrize(("log_start", "nxt", "want"), [(100, 40, 60), (100, 100, 0), (100, 140, 0),
                                                        (None, 40, 0), (100, None, 0)])
def test_lost_offsets_are_those_below_the_log_start_never_replicated(log_start, nxt, want):
    assert lost_offsets(log_start, nxt) == want


def test_rpo_carries_records_already_lost_beside_what_a_failover_would_lose():
    deleted = part(0, 0.0)
    deleted.lost_records = 60
    rpo = flow_rpo([deleted, part(5, 2.0, 1)], "live")
    assert (rpo.records, rpo.lost_records) == (5, 60)
