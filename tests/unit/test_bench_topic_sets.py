"""The bench's topic sets: many topics of 10 partitions select, subscribe and escape as the one-topic runs do."""

from __future__ import annotations

import re
from pathlib import Path

from geokafka.bench.mm2 import mm2_properties
from geokafka.bench.setup import TopicSet, as_set, bench_topology_text
from geokafka.control.selection import select_topics
from geokafka.topology import parse_topology


def test_a_set_names_its_topics_and_its_patterns_match_exactly_them() -> None:
    many = TopicSet("bench.scale.200x10", 200, 10)
    assert many.names[0] == "bench.scale.200x10.000" and many.names[-1] == "bench.scale.200x10.199"
    assert many.total_partitions == 2000 and len(set(many.names)) == 200
    assert all(re.fullmatch(many.pattern, name) for name in many.names)
    for other in ("bench.scale.200x10", "bench.scale.200x10.0001", "bench.scale.200x100.000", "benchXscale.200x10.000"):
        assert not re.fullmatch(many.pattern, other), other
    # a consumer subscribes to the replicas with a ^ pattern (no \d: librdkafka's own regex engine reads it too)
    assert many.target("src.") == r"^src\.bench\.scale\.200x10\.[0-9][0-9][0-9]$" and "\\d" not in many.target("x")
    assert re.match(many.target("src."), "src.bench.scale.200x10.042")
    assert many.targets("mm2src.")[1] == "mm2src.bench.scale.200x10.001"
    one = as_set("bench.1k", 12)
    assert (one.names, one.total_partitions, one.target("src.")) == (["bench.1k"], 12, "src.bench.1k")


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
