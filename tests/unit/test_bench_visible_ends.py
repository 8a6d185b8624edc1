"""The bench's watch on the target's ends: when every partition reached its share of a backlog, and how often it
looks over many partitions (no Kafka: the partitions and ends as the admin client returns them)."""

from __future__ import annotations

from geokafka.bench.watch import ENDS_EVERY_S, ends_every_s, every_share_reached


def test_each_partition_must_reach_its_share_of_records_written_in_turn() -> None:
    parts = [("t.000", 0), ("t.000", 1), ("t.001", 0), ("t.001", 1)]
    # 10 records in turn over 4 partitions: 3, 3, 2, 2
    assert every_share_reached(parts, {("t.000", 0): 3, ("t.000", 1): 3, ("t.001", 0): 2, ("t.001", 1): 2}, 10)
    assert not every_share_reached(parts, {("t.000", 0): 3, ("t.000", 1): 2, ("t.001", 0): 3, ("t.001", 1): 2}, 10)
    assert not every_share_reached(parts, {("t.000", 0): 9, ("t.000", 1): 9, ("t.001", 0): 9}, 10)  # one missing
    # a transaction's markers count too: an end past its share is reached
    assert every_share_reached(parts, {tp: 5 for tp in parts}, 10)
    assert not every_share_reached([], {}, 10)


def test_many_partitions_are_looked_at_less_often() -> None:
    assert ends_every_s(12) == ENDS_EVERY_S
    assert ends_every_s(2_000) == 0.2 and ends_every_s(5_000) == 0.5
