"""The bench's new-topic figure: a topic that cannot be written is the figure's failure, not the contender's row."""

from __future__ import annotations

from typing import Any

import pytest

from geokafka.bench import new_topic


class NoCounter:
    """A target counter that never sees the record (no cluster in a unit test)."""

    done_at = None

    def __init__(self, *args: Any) -> None:
        self.stopped = False

    def start(self) -> NoCounter:
        return self

    def wait(self, timeout_s: float) -> bool:
        return False

    def stop(self) -> None:
        self.stopped = True


def test_a_topic_that_cannot_be_created_gives_no_figure_and_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any) -> None:
        raise RuntimeError("topic authorization failed")

    monkeypatch.setattr(new_topic, "TargetCounter", NoCounter)
    monkeypatch.setattr(new_topic, "create_topic", refuse)
    result = new_topic.new_topic_pickup("bench.scale.6x10.gk.999", "src.bench.scale.6x10.gk.999", 10, timeout_s=1.0)
    assert result["picked_up_s"] is None
    assert result["error"] == "RuntimeError: topic authorization failed"
