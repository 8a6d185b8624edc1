"""Faults the pipeline must ride out without loss or duplicates: broker crashes, a target outage."""

from __future__ import annotations

import signal
import time

import pytest
from kafka_util import assert_same_records, create_topic, numbered_records, produce, read_all
from pipeline_util import running_mirror, wait_for, wait_progress_at, with_flows

from geokafka.infra.local_cluster import kill_node, start_node, stop_node, wait_until_ready

CLUSTERS = ("east", "west")  # south is not used here: not started

pytestmark = [pytest.mark.integration, pytest.mark.slow]



def test_broker_restarts_and_a_target_down_for_60s(base_topology, local_clusters, east, west, unique):
    topic = unique("survive")
    create_topic(east, topic, partitions=3, rf=3)
    topology = with_flows(base_topology, sv={"source": "east", "target": "west", "topics": [topic]})
    east_spec, west_spec = local_clusters["east"], local_clusters["west"]
    with running_mirror(topology) as runners:
        produce(east, topic, numbered_records(3000, 3))
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) >= 1000, 90, "replication to start")
        kill_node(east_spec, 2, signal.SIGKILL)  # a source broker crashes (RF 3)
        produce(east, topic, numbered_records(2000, 3, start=3000))
        start_node(east_spec, 2)
        wait_until_ready(east_spec, 120)
        stop_node(west_spec, 1)  # the whole target cluster is down for 60 s
        produce(east, topic, numbered_records(2000, 3, start=5000))
        time.sleep(60)
        start_node(west_spec, 1)
        wait_until_ready(west_spec, 120)
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=20)) >= 7000, 240, "catch-up after the outage")
        wait_progress_at(runners, "sv", topic, {0: 2334, 1: 2333, 2: 2333})  # 7000 records, i % 3
    assert_same_records(read_all(east, topic), read_all(west, f"east.{topic}"))
