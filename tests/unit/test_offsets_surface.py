"""The public surface of geokafka.control.offsets, and checkpoints as stored in the state topic."""

from __future__ import annotations

import geokafka.control.offsets as offsets
from geokafka.control.offsets.checkpoints import _encode, checkpoint_key, checkpoints_in
from geokafka.control.state_store import StateSnapshot


def test_all_names_exist_and_are_sorted() -> None:
    assert offsets.__all__ == sorted(offsets.__all__)
    missing = [name for name in offsets.__all__ if not hasattr(offsets, name)]
    assert missing == []


def test_checkpoints_round_trip_through_a_state_snapshot() -> None:
    stored = {("orders", 0): 17, ("orders", 1): 0, ("payments.eu", 3): 123}
    snapshot = StateSnapshot(values={
        checkpoint_key("nyc-to-atl", "billing/v2"): {"offsets": _encode(stored), "at_ms": 5},
        checkpoint_key("other-flow", "billing/v2"): {"offsets": _encode({("x", 0): 1}), "at_ms": 6},
        "progress/nyc-to-atl/orders/0": {"next": 18},
    })
    found = checkpoints_in(snapshot, "nyc-to-atl")
    assert list(found) == ["billing/v2"]  # group names may contain '/'
    assert found["billing/v2"].offsets == stored and found["billing/v2"].at_ms == 5
