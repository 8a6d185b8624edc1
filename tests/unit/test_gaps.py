"""Where a flow cannot continue from its progress: every partition named, re-creation by topic ID."""

from __future__ import annotations

from geokafka.control.topic_identity import Recreation, recreations
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import data_loss_error, find_gaps


def test_every_gapped_partition_is_named_in_one_error() -> None:
    pairs = [TopicPair("orders", "east.orders", 3)]
    marks = {"orders": {0: (150, 300), 1: (0, 40), 2: (0, 500)}}
    gaps = find_gaps(pairs, marks, {("orders", 0): 100, ("orders", 1): 100, ("orders", 2): 100}, [])
    assert [(g.partition, g.first, g.last) for g in gaps] == [(0, 100, 149), (1, 40, 99)]
    text = str(data_loss_error("f", "east", gaps))
    assert "orders/0 offsets 100..149" in text and "orders/1 offsets 40..99" in text
    assert "skip_gaps" in text


def test_a_recreated_topic_gaps_every_replicated_partition_whatever_its_length() -> None:
    pairs = [TopicPair("orders", "east.orders", 2)]
    again = recreations({"orders": "A"}, {"orders": "B"}, {"orders"})
    assert again == [Recreation("orders", "A", "B")]
    # the new log is longer than the old progress: offsets alone would not notice
    gaps = find_gaps(pairs, {"orders": {0: (0, 150), 1: (0, 0)}}, {("orders", 0): 100, ("orders", 1): 100}, again)
    assert [(g.partition, g.first, g.last, g.records) for g in gaps] == [(0, 100, None, 0), (1, 100, None, 0)]
    text = str(data_loss_error("f", "east", gaps))
    # the old topic's position and the new topic's range, per partition
    assert ("orders/0 from offset 100 of the old topic (the new one holds offsets 0..149), "
            "orders/1 from offset 100 of the old topic (the new one holds no records)") in text
    assert "topic id A -> B" in text


def test_recreations_need_progress_and_a_recorded_id() -> None:
    assert recreations({"a": "1"}, {"a": "2"}, set()) == []  # never replicated: nothing lost
    assert recreations({}, {"a": "2"}, {"a"}) == []  # no recorded id (older state): not decidable
    assert recreations({"a": "1"}, {}, {"a"}) == []
    assert recreations({"a": "1"}, {}, {"a"}, include_deleted=True) == [Recreation("a", "1", None)]
