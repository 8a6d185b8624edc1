"""Active/active, fan-in and fan-out from one topology file and one mirror process."""

from __future__ import annotations

import time
from collections import Counter

import pytest
from kafka_util import create_topic, produce, read_all
from pipeline_util import running_mirror, sentinels_through, wait_for, wait_job_runs, with_flows

from geokafka.control.provenance import ORIGIN_HEADER, header_value, user_headers

pytestmark = pytest.mark.integration


def _batch(tag: str, n: int, partitions: int) -> list[dict]:
    now = int(time.time() * 1000)
    return [{"key": f"{tag}-{i}".encode(), "value": f"{tag}:{i}".encode(), "partition": i % partitions,
             "headers": [("site", tag.encode())], "timestamp": now + i} for i in range(n)]


def test_active_active_identity_never_loops(base_topology, east, west, unique):
    topic = unique("aa")
    create_topic(east, topic, partitions=3, rf=3)
    create_topic(west, topic, partitions=3, rf=1)
    topology = with_flows(
        base_topology,
        **{"east-west": {"source": "east", "target": "west", "topics": [topic], "rename": "identity"},
           "west-east": {"source": "west", "target": "east", "topics": [topic], "rename": "identity"}},
    )
    produce(east, topic, _batch("east", 300, 3))
    produce(west, topic, _batch("west", 200, 3))
    with running_mirror(topology):
        wait_for(lambda: len(read_all(east, topic, timeout_s=10)) >= 500 and len(read_all(west, topic, timeout_s=10)) >= 500,
                 120, "both clusters to hold both sites' records")
        produce(west, topic, _batch("west2", 100, 3))
        wait_for(lambda: len(read_all(east, topic, timeout_s=10)) >= 600, 60, "a second wave east")
        # every copy went through both flows before these did: a loop would show up as extra copies now
        sentinels = sentinels_through(east, topic, west, topic, 3) | sentinels_through(west, topic, east, topic, 3)
    for conn in (east, west):
        records = [r for r in read_all(conn, topic) if r.value not in sentinels]
        values = Counter(r.value for r in records)
        assert len(records) == 600
        assert all(count == 1 for count in values.values()), "a record appears twice"
    # each replicated record says where it started
    east_copies = [r for r in read_all(east, topic)
                   if header_value(list(r.headers), ORIGIN_HEADER) == b"west" and r.value not in sentinels]
    assert len(east_copies) == 300 and all(r.value.startswith(b"west") for r in east_copies)


def test_active_active_prefix_topics(base_topology, east, west, unique):
    topic = unique("aap")
    create_topic(east, topic, partitions=2, rf=3)
    create_topic(west, topic, partitions=2, rf=1)
    topology = with_flows(
        base_topology,
        **{"e2w": {"source": "east", "target": "west", "topics": [topic, f"west\\.{topic}"]},
           "w2e": {"source": "west", "target": "east", "topics": [topic, f"east\\.{topic}"]}},
    )
    produce(east, topic, _batch("east", 50, 2))
    produce(west, topic, _batch("west", 40, 2))
    with running_mirror(topology) as runners:
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 50
                 and len(read_all(east, f"west.{topic}", timeout_s=10)) == 40, 120, "both prefixed copies")
        for flow in ("e2w", "w2e"):  # each flow looked at its source's topics twice since the copies exist
            wait_job_runs(runners, flow, "selection")
    from geokafka.control.admin import ClusterAdmin

    assert f"west.east.{topic}" not in ClusterAdmin(west).topic_partitions()
    assert f"east.west.{topic}" not in ClusterAdmin(east).topic_partitions()


def test_fan_in_prefix_and_identity_aggregate(base_topology, east, west, south, unique):
    topic = unique("agg")
    create_topic(east, topic, partitions=2, rf=3)
    create_topic(west, topic, partitions=2, rf=1)
    produce(east, topic, _batch("east", 120, 2))
    produce(west, topic, _batch("west", 80, 2))
    topology = with_flows(
        base_topology,
        **{"east-agg": {"source": "east", "target": "south", "topics": [topic]},
           "west-agg": {"source": "west", "target": "south", "topics": [topic]},
           "east-all": {"source": "east", "target": "south", "topics": [topic], "rename": "identity"},
           "west-all": {"source": "west", "target": "south", "topics": [topic], "rename": "identity"}},
    )
    with running_mirror(topology):
        wait_for(lambda: len(read_all(south, topic, timeout_s=10)) == 200, 150, "the aggregate topic")
        wait_for(lambda: len(read_all(south, f"east.{topic}", timeout_s=10)) == 120
                 and len(read_all(south, f"west.{topic}", timeout_s=10)) == 80, 60, "per-site topics")
    aggregate = read_all(south, topic)
    by_origin = Counter(header_value(list(r.headers), ORIGIN_HEADER) for r in aggregate)
    assert by_origin == {b"east": 120, b"west": 80}  # every record traceable to its site
    for site, conn, n in (("east", east, 120), ("west", west, 80)):
        source = read_all(conn, topic)
        assert len(source) == n
        copies = [r for r in aggregate if header_value(list(r.headers), ORIGIN_HEADER) == site.encode()]
        assert [(r.partition, r.key, r.value) for r in copies] == [(r.partition, r.key, r.value) for r in source]
        assert [tuple(user_headers(r.headers)) for r in copies] == [r.headers for r in source]


def test_fan_out_one_source_two_targets(base_topology, east, west, south, unique):
    topic = unique("fanout")
    create_topic(east, topic, partitions=3, rf=3)
    produce(east, topic, _batch("hub", 150, 3))
    topology = with_flows(
        base_topology,
        **{"to-west": {"source": "east", "target": "west", "topics": [topic]},
           "to-south": {"source": "east", "target": "south", "topics": [topic], "rename": "identity"}},
    )
    with running_mirror(topology):
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 150
                 and len(read_all(south, topic, timeout_s=10)) == 150, 120, "both spokes")
    source = [(r.partition, r.key, r.value, r.timestamp) for r in read_all(east, topic)]
    for conn, name in ((west, f"east.{topic}"), (south, topic)):
        assert [(r.partition, r.key, r.value, r.timestamp) for r in read_all(conn, name)] == source
