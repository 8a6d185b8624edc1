"""The bench's topic sets: many topics of 10 partitions select, subscribe and escape as the one-topic runs do."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from geokafka.bench.mm2 import mm2_properties
from geokafka.bench.setup import TopicSet, as_set, bench_topology_text, topic_refresh_s
from geokafka.control.selection import select_topics
from geokafka.topology import parse_topology


def test_a_set_names_its_topics_and_its_patterns_match_exactly_them() -> None:
    many = TopicSet("bench.scale.200x10", 200, 10)
    assert many.names[0] == "bench.scale.200x10.000" and many.names[-1] == "bench.scale.200x10.199"
    assert many.total_partitions == 2000 and len(set(many.names)) == 200
    assert all(re.fullmatch(many.pattern, name) for name in many.names)
    for other in ("bench.scale.200x10", "bench.scale.200x10.0001", "bench.scale.200x100.000", "benchXscale.200x10.000"):
        assert not re.fullmatch(many.pattern, other), other
    assert many.targets("mm2src.")[1] == "mm2src.bench.scale.200x10.001"
    assert re.fullmatch(many.pattern, many.newcomer) and many.newcomer not in many.names
    one = as_set("bench.1k", 12)
    assert (one.names, one.total_partitions, one.targets("src.")) == (["bench.1k"], 12, ["src.bench.1k"])


def test_the_bench_flow_selects_a_set_and_a_topic_and_nothing_else() -> None:
    many = TopicSet("bench.scale.lat.6x10.geokafka", 6, 10)
    text = bench_topology_text(Path("/tmp/state"), ["bench.1k"], patterns=[many.pattern])
    flow = next(iter(parse_topology(text, "<bench>").flows.values()))
    candidates = [*many.names, "bench.1k", "bench.1k0", "bench.scale.lat.6x10.geokafka", "bench.scale.lat.6x10.mm2.000"]
    assert select_topics(candidates, flow) == sorted([*many.names, "bench.1k"])


def test_mm2_reads_the_patterns_once_the_properties_file_unescapes_them() -> None:
    many = TopicSet("bench.scale.6x10", 6, 10)
    line = next(line for line in mm2_properties([many.pattern, re.escape("bench.lat")], 2).splitlines()
                if line.startswith("mm2src->dst.topics"))
    # a .properties value turns each \\ into \ : Java's regex then gets the pattern as Python wrote it
    value = line.split(" = ", 1)[1].replace("\\\\", "\\")
    assert value == f"{many.pattern}|{re.escape('bench.lat')}"


class _Listed:
    def __init__(self, partitions: int) -> None:
        self.error, self.partitions = None, dict.fromkeys(range(partitions))


class _Consumer:
    """Stands in for a confluent-kafka consumer: the topics a replicator created so far, and what was assigned."""

    def __init__(self) -> None:
        self.topics: dict[str, _Listed] = {}
        self.assigned: list[tuple[str, int, int]] = []
        self.looks = 0

    def list_topics(self, timeout: float) -> _Listed:
        self.looks += 1
        listed = _Listed(0)
        listed.topics = dict(self.topics)  # type: ignore[attr-defined]
        return listed

    def incremental_assign(self, partitions: list) -> None:  # type: ignore[type-arg]
        self.assigned += [(tp.topic, tp.partition, tp.offset) for tp in partitions]


def test_the_watchers_assign_each_replica_once_from_the_start_as_it_appears() -> None:
    """At offset 0, not the logical beginning, which librdkafka looks up with a request per partition."""
    from geokafka.bench.watch import PartitionFollower

    consumer = _Consumer()
    many = TopicSet("bench.scale.3x2", 2, 2)
    follow = PartitionFollower(consumer, many.targets("src."), every_s=0.0)
    follow.assign_new()
    assert consumer.assigned == []  # nothing created yet
    consumer.topics = {"src.bench.scale.3x2.000": _Listed(2), "src.other": _Listed(4)}
    follow.assign_new()
    consumer.topics["src.bench.scale.3x2.001"] = _Listed(2)
    follow.assign_new()
    assert not follow.missing and consumer.looks == 3
    follow.assign_new()
    assert consumer.looks == 3  # every topic assigned: no more metadata requests
    assert consumer.assigned == [("src.bench.scale.3x2.000", 0, 0), ("src.bench.scale.3x2.000", 1, 0),
                                 ("src.bench.scale.3x2.001", 0, 0), ("src.bench.scale.3x2.001", 1, 0)]
    single = _Consumer()
    single.topics = {"src.bench.1k": _Listed(3), "src.bench.1k0": _Listed(1)}
    one = PartitionFollower(single, "src.bench.1k", every_s=0.0)
    one.assign_new()
    one.assign_new()
    assert [(t, p) for t, p, _ in single.assigned] == [("src.bench.1k", 0), ("src.bench.1k", 1), ("src.bench.1k", 2)]


def test_a_metadata_request_that_times_out_is_looked_at_again_not_raised() -> None:
    from confluent_kafka import KafkaError, KafkaException

    from geokafka.bench.watch import PartitionFollower

    class Slow(_Consumer):
        def __init__(self) -> None:
            super().__init__()
            self.timeouts = 1

        def list_topics(self, timeout: float) -> _Listed:
            if self.timeouts:  # a broker busy creating 2,000 partitions (seen: > 5 s)
                self.timeouts -= 1
                raise KafkaException(KafkaError(KafkaError._TIMED_OUT))
            return super().list_topics(timeout)

    consumer = Slow()
    consumer.topics = {"src.bench.1k": _Listed(1)}
    follow = PartitionFollower(consumer, "src.bench.1k", every_s=0.0)
    follow.assign_new()
    assert consumer.assigned == []
    follow.assign_new()
    assert [(t, p) for t, p, _ in consumer.assigned] == [("src.bench.1k", 0)]


def test_a_newcomer_needs_a_set_of_many_topics() -> None:
    with pytest.raises(ValueError, match="bench.1k"):
        _ = as_set("bench.1k", 12).newcomer


def test_mm2_refreshes_its_topics_as_often_as_the_bench_flow_looks_for_new_ones() -> None:
    text = bench_topology_text(Path("/tmp/state"), ["bench.1k"])
    topology = parse_topology(text, "<bench>")
    flow = next(iter(topology.flows.values()))
    # the bench flow syncs partitions, so its selection follows every sync_interval_s (shorter than topic_refresh_s)
    assert "partitions" in flow.sync and flow.sync_interval_s < topology.pipeline.topic_refresh_s
    assert topic_refresh_s() == round(flow.sync_interval_s)
    lines = mm2_properties([re.escape("bench.1k")], 2).splitlines()
    assert f"refresh.topics.interval.seconds = {topic_refresh_s()}" in lines


def test_mm2s_exactly_once_is_set_for_its_target_cluster_where_mirrormaker_reads_it() -> None:
    # MirrorMaker 2's dedicated mode reads exactly.once.source.support per target cluster; a top-level one left
    # the bench's exactly-once contender writing plain batches (test_bench checks the batches themselves)
    eos = mm2_properties([re.escape("bench.1k")], 2, exactly_once=True).splitlines()
    assert "dst.exactly.once.source.support = enabled" in eos
    assert not any(line.startswith("exactly.once.source.support") for line in eos)
    assert not any("exactly.once" in line for line in mm2_properties([re.escape("bench.1k")], 2).splitlines())
