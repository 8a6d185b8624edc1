"""Where the latency probe's records go when it reads one partition of each topic (pure logic)."""

from __future__ import annotations

from collections import Counter

from geokafka.bench.watch import OnePerTopic


def test_every_partition_of_every_topic_gets_the_same_traffic() -> None:
    spread = OnePerTopic((10, 10, 10, 6))
    placed = Counter(spread.place(n) for n in range(4 * 30 * 10))
    assert set(placed) == {(t, p) for t, count in enumerate((10, 10, 10, 6)) for p in range(count)}
    per_topic = Counter(t for t, _ in placed.elements())
    assert set(per_topic.values()) == {300}  # the topics by turns
    assert {v for (t, _), v in placed.items() if t < 3} == {30} and {v for (t, _), v in placed.items() if t == 3} == {50}


def test_one_partition_of_each_topic_is_read_and_equal_topics_differ() -> None:
    spread = OnePerTopic((10,) * 12)
    read = [spread.read(t) for t in range(12)]
    assert all(0 <= p < 10 for p in read)
    assert len(set(read)) == 10  # twelve topics of ten partitions: every partition number is read somewhere
    sent = [spread.place(n) for n in range(12 * 10 * 5)]
    assert sum(p == spread.read(t) for t, p in sent) == 12 * 5  # a tenth of the records
