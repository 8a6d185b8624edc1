"""A source topic deleted and re-created is recognised by its topic ID, whatever its new length,
and the flow stops naming every affected partition (or skips, counted, with skip_gaps)."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import AdminClient
from kafka_util import create_topic, numbered_records, produce, read_all
from pipeline_util import running_mirror, wait_for, with_flows

from geokafka.errors import DataLossError
from geokafka.monitoring.collect import collect_status

pytestmark = pytest.mark.integration

PARTITIONS = 2


def recreate(conn, topic: str, per_partition: int, start: int) -> None:
    """Delete ``topic``, create it again (same partitions) and give each partition new records."""
    admin = AdminClient(conn.librdkafka())
    admin.delete_topics([topic], operation_timeout=30)[topic].result(60)
    deadline = time.monotonic() + 60
    while True:  # the name is free once the deletion went through the controller
        try:
            create_topic(conn, topic, partitions=PARTITIONS, rf=3)
            break
        except Exception:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    produce(conn, topic, numbered_records(per_partition * PARTITIONS, PARTITIONS, start=start, size=20))


def replicate_first_log(base_topology, east, west, topic: str, flow: str, skip_gaps: bool = False):
    create_topic(east, topic, partitions=PARTITIONS, rf=3)
    produce(east, topic, numbered_records(100 * PARTITIONS, PARTITIONS, size=20))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic],
                                                   "skip_gaps": skip_gaps}})
    with running_mirror(topology):
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 100 * PARTITIONS, 120, "the first log")
    return topology


def assert_names_every_partition(error: BaseException, topic: str, exact: bool = True,
                                 new_length: int | None = None) -> None:
    assert isinstance(error, DataLossError), error
    text = str(error)
    assert "re-created" in text or "deleted" in text, text
    for p in range(PARTITIONS):
        # while running, records the new topic got in the second before the check may have been copied
        named = f"{topic}/{p} from offset 100 of the old topic" if exact else f"{topic}/{p} from offset "
        if new_length is not None:  # and what the new topic holds
            named += f" (the new one holds offsets 0..{new_length - 1})"
        assert named in text, text


@pytest.mark.parametrize("new_length", [150, 40], ids=["longer", "shorter"])
def test_recreated_topic_stops_the_flow_at_start(base_topology, east, west, unique, new_length):
    topic, flow = unique("recr"), unique("rc")
    topology = replicate_first_log(base_topology, east, west, topic, flow)
    recreate(east, topic, new_length, start=1000)
    with running_mirror(topology, expect_flow_errors=True) as runners:
        wait_for(lambda: runners.get(flow) and runners[flow].status == "error", 120, "the flow to stop")
        error = runners[flow].error
    assert_names_every_partition(error, topic, new_length=new_length)
    # nothing of the new topic reached the target
    assert len(read_all(west, f"east.{topic}")) == 100 * PARTITIONS
    # status says why the flow stopped and what each topic holds, not lag 0
    status = collect_status(topology, [flow]).flow(flow)
    assert status.state == "error" and status.reason and "re-created" in status.reason
    assert [(p.recreated, p.lag_records) for p in status.partitions] == [(True, None)] * PARTITIONS
    assert status.rpo.records is None and "re-created" in status.rpo.headline
    [line] = status.recreated
    assert f"{topic}/0 up to offset 100" in line
    assert f"the new topic holds {topic}/0 offsets 0..{new_length - 1}, {topic}/1 offsets 0..{new_length - 1}" in line


def test_skip_gaps_replicates_the_new_topic_from_its_start(base_topology, east, west, unique):
    topic, flow = unique("recr"), unique("rc")
    replicate_first_log(base_topology, east, west, topic, flow)
    recreate(east, topic, 150, start=1000)
    skipping = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic],
                                                   "skip_gaps": True}})
    with running_mirror(skipping):
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 250 * PARTITIONS, 120,
                 "the new topic's records")
    target = read_all(west, f"east.{topic}")
    new = read_all(east, topic)
    for p in range(PARTITIONS):
        got = [r.value for r in target if r.partition == p]
        assert got[100:] == [r.value for r in new if r.partition == p]  # all 150, from its offset 0


def test_recreated_while_running_stops_naming_every_partition(base_topology, east, west, unique):
    topic, flow = unique("recr"), unique("rc")
    create_topic(east, topic, partitions=PARTITIONS, rf=3)
    produce(east, topic, numbered_records(100 * PARTITIONS, PARTITIONS, size=20))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    with running_mirror(topology, expect_flow_errors=True) as runners:
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 100 * PARTITIONS, 120, "the first log")
        recreate(east, topic, 150, start=1000)
        wait_for(lambda: runners[flow].status == "error", 120, "the flow to stop")
        error = runners[flow].error
    assert_names_every_partition(error, topic, exact=False)
