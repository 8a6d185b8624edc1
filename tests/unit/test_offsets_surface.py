"""The public surface of geokafka.control.offsets, and checkpoints as stored in the state topic."""

from __future__ import annotations

import geokafka.control.offsets as offsets
from geokafka.control.state_records import GroupCheckpoint, Progress
from geokafka.control.state_store import InMemoryStateStore


def test_all_names_exist_and_are_sorted() -> None:
    assert offsets.__all__ == sorted(offsets.__all__)
    missing = [name for name in offsets.__all__ if not hasattr(offsets, name)]
    assert missing == []


def test_checkpoints_round_trip_through_a_state_snapshot() -> None:
    stored = {("orders", 0): 17, ("orders", 1): 0, ("payments.eu", 3): 123}
    store = InMemoryStateStore()
    store.write(GroupCheckpoint("nyc-to-atl", "billing/v2", stored, 5),
                GroupCheckpoint("other-flow", "billing/v2", {("x", 0): 1}, 6),
                Progress("nyc-to-atl", "orders", 0, 18))
    found = store.read().checkpoints("nyc-to-atl")
    assert list(found) == ["billing/v2"]  # group names may contain '/'
    assert found["billing/v2"].offsets == stored and found["billing/v2"].at_ms == 5
