"""The options geokafka gives its Kafka source for a flow (pure: no Spark, no Kafka)."""

from __future__ import annotations

import json

from geokafka.control.connection import connection
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import Assignment
from geokafka.pipeline.query import hands_over, source_options
from geokafka.topology import parse_topology
from geokafka.topology.schema import Transform

TOPOLOGY = parse_topology("""\
clusters:
  east: {bootstrap: 127.0.0.1:1}
  west: {bootstrap: 127.0.0.1:2}
flows:
  f: {source: east, target: west, topics: [orders], skip_gaps: true}
pipeline:
  max_records_per_batch: 5000
""")


def options() -> dict[str, str]:
    assignment = Assignment([TopicPair("orders", "east.orders", 3)], starting={"orders": {"0": 7, "1": 0, "2": 4}})
    return source_options(connection(TOPOLOGY, "east"), assignment, TOPOLOGY.flows["f"], TOPOLOGY.pipeline)


def test_the_source_reads_committed_records_with_their_headers_from_the_assignment() -> None:
    got = options()
    assert got["kafka.bootstrap.servers"] == "127.0.0.1:1"
    assert got["kafka.isolation.level"] == "read_committed"
    assert json.loads(got["assign"]) == {"orders": [0, 1, 2]}
    assert json.loads(got["startingOffsets"]) == {"orders": {"0": 7, "1": 0, "2": 4}}
    assert "failOnDataLoss" not in got  # the source always stops at a gap; the runner's next start skips it (skip_gaps)
    assert got["maxOffsetsPerTrigger"] == "5000"


def test_the_source_clients_push_no_metrics_to_the_broker() -> None:
    # kafka-clients 3.9.1 (the one on Spark's class path) formats a trace message on every poll while metrics
    # push is on and trace logging off; nothing geokafka talks to collects the metrics
    assert options()["kafka.enable.metrics.push"] == "false"


def test_a_flow_without_a_transform_hands_its_records_over_and_one_with_one_reads_a_row_per_record() -> None:
    assert options()["handOver"] == "true"
    assert hands_over(None) and hands_over(Transform())
    for transform in (Transform(filter="true"), Transform(key="value"), Transform(value="key")):
        assert not hands_over(transform), transform

