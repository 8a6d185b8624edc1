"""Which mode a mirror's flows run in as task slots come and go (pure)."""

from __future__ import annotations

from geokafka.pipeline.slots import ModeWatch


def test_fewer_slots_than_groups_switch_to_micro_batches_at_once_and_real_time_returns_once_slots_stayed() -> None:
    watch = ModeWatch("real-time", needed=2, settle_s=5.0)
    assert watch.update(2, 0.0) is None and watch.mode == "real-time"
    assert watch.update(1, 1.0) == "micro-batch"  # an executor was lost
    assert watch.update(1, 2.0) is None
    assert watch.update(2, 3.0) is None  # back, but not yet for long
    assert watch.update(1, 4.0) is None  # gone again: the wait starts over
    assert watch.update(2, 5.0) is None
    assert watch.update(2, 9.9) is None
    assert watch.update(2, 10.0) == "real-time" and watch.mode == "real-time"
    assert watch.update(3, 11.0) is None


def test_unknown_slots_and_a_configured_micro_batch_mode_never_switch() -> None:
    watch = ModeWatch("real-time", needed=2)
    assert watch.update(None, 0.0) is None and watch.mode == "real-time"
    micro = ModeWatch("micro-batch", needed=8)
    assert micro.update(1, 0.0) is None and micro.update(100, 100.0) is None and micro.mode == "micro-batch"
