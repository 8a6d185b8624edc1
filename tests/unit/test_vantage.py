"""The mirror's view beside the operator's: a source the mirror still reaches is not a lost site (pure)."""

from __future__ import annotations

from geokafka.control.state_records import Heartbeat, SourceEnds
from geokafka.control.state_store import InMemoryStateStore
from geokafka.failover.vantage import mirror_still_reaches, mirror_view


class Clock:
    def __init__(self, now: float) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_a_mirror_whose_looks_keep_coming_still_reaches_the_source() -> None:
    store, clock = InMemoryStateStore("atl"), Clock(1000.0)
    store.write(SourceEnds("f", 999_600, {"orders/0": 5}), Heartbeat("f", "running", 998_000))

    def read():  # the mirror looks again while failover waits
        if clock.now >= 1000.4:
            store.write(SourceEnds("f", int(clock.now * 1000), {"orders/0": 6}))
        return store.read()

    view = mirror_still_reaches(read, "f", clock=clock, sleep=clock.sleep)
    assert view is not None and view.observed_age_s is not None and view.observed_age_s < 0.5
    assert view.describe("nyc").startswith("the mirror last reached nyc 0.")


def test_a_last_look_that_is_not_followed_by_another_is_a_lost_site_after_the_wait() -> None:
    store, clock = InMemoryStateStore("atl"), Clock(1000.0)
    store.write(SourceEnds("f", 999_500, {"orders/0": 5}), Heartbeat("f", "running", 998_000))  # the last look
    assert mirror_still_reaches(store.read, "f", clock=clock, sleep=clock.sleep) is None
    assert 1004.9 <= clock.now <= 1005.5  # it waited for the next look, and only that long


def test_an_old_look_a_failed_look_or_none_decide_at_once() -> None:
    clock = Clock(1000.0)
    alive = Heartbeat("f", "running", 998_000)
    for records in ([SourceEnds("f", 985_000, {"orders/0": 5}), alive],
                    [SourceEnds("f", 999_900, {"orders/0": 5}, failed_at_ms=999_950), alive],
                    [SourceEnds("f", 999_900, {"orders/0": 5}), Heartbeat("f", "running", 950_000)],  # a dead mirror
                    [SourceEnds("f", 999_900, {"orders/0": 5}), Heartbeat("f", "stopped", 999_000)],
                    []):
        store = InMemoryStateStore("atl")
        if records:
            store.write(*records)
        started = clock.now
        assert mirror_still_reaches(store.read, "f", clock=clock, sleep=clock.sleep) is None
        assert clock.now == started


def test_the_view_says_what_it_saw() -> None:
    store = InMemoryStateStore("atl")
    store.write(SourceEnds("f", 1_000, {"orders/0": 5}, failed_at_ms=4_000), Heartbeat("f", "running", 9_000))
    view = mirror_view(store.read(), "f", 10_000)
    assert view.lost_source and view.describe("nyc") == "the mirror lost nyc 6.0 s ago"
    assert view.to_dict()["heartbeat_age_s"] == 1.0
    assert mirror_view(InMemoryStateStore("atl").read(), "f", 10_000).describe("nyc") == (
        "the mirror has recorded no look at nyc")
