"""A task that fails after it committed writes nothing twice, on a local master that retries tasks (``local[N,F]``).

The test hook (``spark.geokafka.test.failAfterCommits``) fails each partition group's first task attempt after 5
commits of a real-time batch, and holds it past the batch's end first (``failStallMs``), as an executor lost
mid-batch holds its task until Spark notices. Spark's retry then reads nothing (its batch is over), so the batch
ends where it started for that group and the driver never hears of the 5 commits; the next batch's task opens
the group's writer anew, and must resume from what the target holds, not from the batch's start.
"""

from __future__ import annotations

import pytest
from kafka_util import create_topic
from mirror_util import PARTITIONS, Mirror, Traffic, assert_exactly_once, caught_up, target_ends, topology_file
from pipeline_util import wait_for

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=90), pytest.mark.timeout(600)]


def test_a_task_that_fails_after_it_committed_writes_nothing_twice_on_a_local_master(
        base_topology, east, west, unique, tmp_path):
    topic = unique("local-task-fails")
    create_topic(east, topic, partitions=PARTITIONS, rf=1)
    target_topic = f"east.{topic}"
    path = topology_file(base_topology, tmp_path, "ltf", topic, "local[2,4]", realtime_batch_s=5,
                         **{"spark.geokafka.test.failAfterCommits": "5", "spark.geokafka.test.failStallMs": "6000"})
    mirror = Mirror(path, "ltf", tmp_path / "mirror.log", json=True)
    try:
        with Traffic(east, topic) as traffic:
            ends = wait_for(lambda: mirror.alive() and min(target_ends(west, target_topic).values()) > 0 and
                            target_ends(west, target_topic), 300, "records flowing")
            # both groups failed once, were retried and ran on: every partition flows past the stalls
            wait_for(lambda: mirror.alive() and all(e > ends[p] + 1_000 for p, e in target_ends(west, target_topic).items()),
                     300, "every partition to flow on after the failed attempts")
        wait_for(lambda: caught_up(mirror, west, target_topic, traffic.sent), 300, "the target to catch up")
    finally:
        mirror.stop()
    summary = mirror.summary("ltf")
    assert summary["restarts"] == 0  # Spark retried the tasks: the query never restarted
    # the next batch's tasks met records the failed attempts had committed, and skipped them
    assert summary["duplicates_skipped"] > 0, summary
    assert_exactly_once(east, topic, west, target_topic)
