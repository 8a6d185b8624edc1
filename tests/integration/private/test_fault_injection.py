"""Fault injection while replicating: a paused (SIGSTOP) target broker and a killed target
broker (RF 3). Afterwards the target equals the source record for record. And a probe of a cluster
whose one broker is paused (SIGSTOP) still finds the cluster there.

A killed source broker and a 60 s target outage: test_pipeline_faults.py. A link between
"DCs" cut for 60 s (the target cluster in its own network namespace, its veth link down; no
netem needed): test_link_cut.py, which shares this module's record helpers.
"""

from __future__ import annotations

import signal
import time

import pytest
from kafka_util import assert_same_records, create_topic, numbered_records, produce, read_all
from pipeline_util import running_mirror, wait_for, wait_progress_at, with_flows

from geokafka.control.admin import ClusterAdmin
from geokafka.infra.local_cluster import kill_node, start_node, wait_until_ready

CLUSTERS = ("east", "west")  # south is not used here: not started

pytestmark = [pytest.mark.integration, pytest.mark.slow]




def test_paused_source_broker_and_killed_target_broker(base_topology, local_clusters, east, west, unique):
    """west -> east, the target topic pre-created with RF 3 on east; then faults on east: one
    broker SIGSTOPped for 30 s (the pipeline's target side), one killed and restarted."""
    topic = unique("inject")
    create_topic(west, topic, partitions=3)
    create_topic(east, f"west.{topic}", partitions=3, rf=3, config={"min.insync.replicas": "1"})
    topology = with_flows(base_topology, fi={"source": "west", "target": "east", "topics": [topic]})
    east_spec = local_clusters["east"]
    with running_mirror(topology) as runners:
        produce(west, topic, numbered_records(2000, 3, headers=True))
        wait_for(lambda: len(read_all(east, f"west.{topic}", timeout_s=10)) >= 500, 120, "replication to start")
        kill_node(east_spec, 3, signal.SIGSTOP)  # a target broker hangs: no crash, no answer
        try:
            produce(west, topic, numbered_records(2000, 3, start=2000, headers=True))
            time.sleep(30)
        finally:
            kill_node(east_spec, 3, signal.SIGCONT)
        kill_node(east_spec, 2, signal.SIGKILL)  # a target broker crashes (RF 3)
        produce(west, topic, numbered_records(2000, 3, start=4000, headers=True))
        time.sleep(10)
        start_node(east_spec, 2)
        wait_until_ready(east_spec, 120)
        wait_for(lambda: len(read_all(east, f"west.{topic}", timeout_s=20)) >= 6000, 300, "catch-up after the faults")
        wait_progress_at(runners, "fi", topic, {p: 2000 for p in range(3)})
    assert_same_records(read_all(west, topic), read_all(east, f"west.{topic}"))


def test_a_probe_finds_a_cluster_whose_one_broker_is_paused(local_clusters, east):
    """A probe asks a new client for DescribeCluster, which librdkafka sends to the broker the metadata named as the
    controller (in KRaft a random live one). For ~9 s a paused broker is still live in the metadata: a probe that
    trusted DescribeCluster alone would call the cluster unreachable whenever that broker was named, while two
    others answer."""
    admin = ClusterAdmin(east, timeout_s=5.0)
    kill_node(local_clusters["east"], 3, signal.SIGSTOP)  # bootstrap is node 1: only the named controller can be 3
    try:
        paused = time.monotonic()
        looks = []
        while time.monotonic() - paused < 6.0:  # the broker's session (9 s) has not ended: it is still named
            looks.append(admin.probe(3.0))
    finally:
        kill_node(local_clusters["east"], 3, signal.SIGCONT)
    assert len(looks) >= 6 and all(looks), looks
