"""RPO bounds from the mirror's observations: the lower bound is what was seen, the upper bound
adds the peak write rate until the source was seen gone."""

from __future__ import annotations

from geokafka.control.rpo import peak_rate, rpo_bounds
from geokafka.control.state_records import SourceEnds


def test_peak_rate_is_the_fastest_step_between_observations() -> None:
    assert peak_rate([(0, 0)]) is None
    assert peak_rate([(0, 0), (1000, 300), (2000, 900), (3000, 1000)]) == 600.0
    assert peak_rate([(0, 50), (1000, 10)]) is None  # a re-created topic's ends went down: no rate


def test_lower_bound_is_observed_minus_replicated() -> None:
    obs = SourceEnds("f", 10_000, {"orders/0": 100, "orders/1": 40}, peak_rate=200.0)
    bounds = rpo_bounds(obs, {("orders", 0): 90, ("orders", 1): 40}, now_ms=12_500)
    assert bounds.lower_records == 10
    assert bounds.observation_age_s == 2.5
    assert bounds.upper_records is None  # nobody saw the source gone yet
    assert any("lower bound" in note for note in bounds.notes)


def test_upper_bound_adds_the_peak_rate_until_a_look_failed() -> None:
    obs = SourceEnds("f", 10_000, {"orders/0": 100}, peak_rate=200.0, failed_at_ms=11_500)
    bounds = rpo_bounds(obs, {("orders", 0): 90}, now_ms=20_000)
    assert (bounds.lower_records, bounds.upper_records) == (10, 10 + 300)
    # failover's own probe found it gone earlier than the mirror did: the earlier time bounds it
    earlier = rpo_bounds(obs, {("orders", 0): 90}, now_ms=20_000, gone_at_ms=10_500)
    assert earlier.upper_records == 10 + 100


def test_peak_rate_takes_the_mirror_s_deque() -> None:
    from collections import deque

    assert peak_rate(deque([(0, 0), (500, 100)], maxlen=60)) == 200.0
