"""The mirror's looks at its source's end offsets: written to the target, the peak rate over the last
minute, and the first failed look marked once (no Kafka: a reader function and an in-memory store)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from geokafka import errors
from geokafka.control.source_ends import RateWindow, SourceEndsWatch, pair_partitions
from geokafka.control.state_records import SourceEnds, StateRecord
from geokafka.control.state_store import InMemoryStateStore
from geokafka.control.topic_sync import TopicPair


class Source:
    """End offsets that grow by ``step`` per look per partition, until it is ``down``."""

    def __init__(self, step: int) -> None:
        self.step, self.looks, self.down = step, 0, False
        self.asked: list[list[tuple[str, int]]] = []

    def __call__(self, partitions: Sequence[tuple[str, int]]) -> dict[tuple[str, int], int]:
        self.asked.append(list(partitions))
        if self.down:
            raise errors.ClusterUnreachableError("cluster east is not reachable")
        self.looks += 1
        return {tp: self.looks * self.step for tp in partitions}


class Clock:
    def __init__(self) -> None:
        self.ms = 1_000_000

    def __call__(self) -> int:
        return self.ms


PAIRS = [TopicPair("orders", "east.orders", 2), TopicPair("pay", "east.pay", 1)]


def test_one_look_asks_every_partition_at_once_and_keeps_it_on_the_target() -> None:
    source, clock, store = Source(step=25), Clock(), InMemoryStateStore()
    watch = SourceEndsWatch("f", source, store, clock=clock)
    for _ in range(5):
        watch.observe(PAIRS)
        clock.ms += 250
    assert source.asked[0] == pair_partitions(PAIRS) == [("orders", 0), ("orders", 1), ("pay", 0)]
    last = store.read().source_ends("f")
    assert last is not None and last == watch.last
    assert last.ends == {"orders/0": 125, "orders/1": 125, "pay/0": 125}
    assert last.at_ms == 1_000_000 + 4 * 250 and last.failed_at_ms is None
    assert last.peak_rate == pytest.approx(300.0)  # 75 records a look, 4 looks a second


def test_the_first_failed_look_marks_the_last_observation_once() -> None:
    source, clock, store = Source(step=10), Clock(), InMemoryStateStore()
    watch = SourceEndsWatch("f", source, store, clock=clock)
    watch.observe(PAIRS)
    seen = watch.last
    source.down = True
    clock.ms += 250
    marked = watch.observe(PAIRS)
    assert marked is not None and marked.failed_at_ms == clock.ms and marked.ends == seen.ends  # type: ignore[union-attr]
    writes = len(store.log)
    clock.ms += 250
    assert watch.observe(PAIRS) is None and len(store.log) == writes  # later failures change nothing
    source.down = False
    back = watch.observe(PAIRS)
    assert back is not None and back.failed_at_ms is None  # the source answers again: a fresh observation


def test_a_failed_look_before_any_observation_writes_nothing() -> None:
    source = Source(step=1)
    source.down = True
    store = InMemoryStateStore()
    assert SourceEndsWatch("f", source, store).observe(PAIRS) is None and store.log == []


def test_a_write_that_fails_is_skipped_and_the_next_look_writes_afresh() -> None:
    class Flaky(InMemoryStateStore):
        fail = True

        def write(self, *records: StateRecord, timeout_s: float = 15.0) -> None:
            if self.fail:
                raise errors.ClusterUnreachableError("west is down")
            super().write(*records, timeout_s=timeout_s)

    store = Flaky()
    watch = SourceEndsWatch("f", Source(step=5), store)
    assert watch.observe(PAIRS) is None and watch.last is None
    store.fail = False
    written = watch.observe(PAIRS)
    assert isinstance(written, SourceEnds) and store.read().source_ends("f") == written


def test_a_flow_without_topics_observes_nothing_without_asking() -> None:
    source, store = Source(step=5), InMemoryStateStore()
    observation = SourceEndsWatch("f", source, store).observe([])
    assert observation is not None and observation.ends == {} and source.asked == []


def test_the_rate_window_keeps_a_minute_and_starts_afresh_when_the_ends_go_down() -> None:
    window = RateWindow(span_ms=60_000)
    for i in range(300):  # 75 s of looks every 250 ms, 100 records/s, then a 2-s burst at 400/s
        window.add(i * 250, i * 25)
    assert window.samples[0][0] == 299 * 250 - 60_000 and window.peak() == pytest.approx(100.0)
    for i in range(1, 9):
        window.add(299 * 250 + i * 250, 299 * 25 + i * 100)
    assert window.peak() == pytest.approx(400.0)
    window.add(400 * 250, 3)  # a re-created topic: the totals went down
    assert list(window.samples) == [(100_000, 3)] and window.peak() is None


def test_an_idle_source_is_seen_again_in_a_small_record_and_its_failure_dated_from_the_last_look() -> None:
    source, clock, store = Source(step=0), Clock(), InMemoryStateStore()  # nothing is written at the source
    watch = SourceEndsWatch("f", source, store, clock=clock)
    first = watch.observe(PAIRS)
    for _ in range(3):
        clock.ms += 250
        assert watch.observe(PAIRS) == first  # the same ends
    assert [key for key, _ in store.log] == ["ends/f", "ends-seen/f", "ends-seen/f", "ends-seen/f"]
    seen = store.read().source_ends("f")
    assert seen is not None and seen.at_ms == clock.ms and seen.ends == first.ends  # type: ignore[union-attr]
    last_look = clock.ms
    source.down = True
    clock.ms += 250
    marked = watch.observe(PAIRS)
    assert marked is not None and marked.at_ms == last_look and marked.failed_at_ms == clock.ms


def test_a_look_that_finds_one_partition_moved_after_idle_ones_writes_every_end_again() -> None:
    clock, store = Clock(), InMemoryStateStore()
    ends = {("orders", 0): 5, ("orders", 1): 7, ("pay", 0): 0}
    watch = SourceEndsWatch("f", lambda partitions: dict(ends), store, clock=clock)
    watch.observe(PAIRS)
    clock.ms += 250
    watch.observe(PAIRS)
    ends[("pay", 0)] = 1
    clock.ms += 250
    moved = watch.observe(PAIRS)
    assert [key for key, _ in store.log] == ["ends/f", "ends-seen/f", "ends/f"]
    assert moved is not None and moved.ends == {"orders/0": 5, "orders/1": 7, "pay/0": 1} and moved.at_ms == clock.ms
    clock.ms += 250
    assert watch.observe(PAIRS) == moved and store.log[-1][0] == "ends-seen/f"  # idle again: seen again
