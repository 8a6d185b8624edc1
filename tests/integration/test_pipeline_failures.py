"""Failures the pipeline must survive, and the ones that must stop a flow loudly."""

from __future__ import annotations

import os
import time

import pytest
from confluent_kafka import TopicPartition
from confluent_kafka.admin import AdminClient
from kafka_util import create_topic, numbered_records, produce, read_all, throttle_producer
from pipeline_util import running_mirror, wait_for, with_flows

from geokafka.errors import DataLossError, RecordTooLargeError

pytestmark = pytest.mark.integration



def test_oversize_record_stops_the_flow_naming_it(base_topology, east, west, unique):
    topic = unique("big")
    create_topic(east, topic, partitions=2, rf=3)
    create_topic(west, f"east.{topic}", partitions=2, rf=1, config={"max.message.bytes": "2000"})
    produce(east, topic, numbered_records(10, 2, size=20))
    # incompressible: the writer compresses with lz4, and the broker checks the compressed size
    produce(east, topic, [{"key": b"huge", "value": os.urandom(50_000), "partition": 1}])
    produce(east, topic, numbered_records(10, 2, start=100, size=20))
    topology = with_flows(base_topology, big={"source": "east", "target": "west", "topics": [topic],
                                              "sync": ["partitions"]})
    with running_mirror(topology, expect_flow_errors=True) as runners:
        wait_for(lambda: runners.get("big") and runners["big"].status == "error", 120, "the flow to stop")
        error = runners["big"].error
    assert isinstance(error, RecordTooLargeError)
    assert f"{topic}/1 offset 5" in str(error) and "max.message.bytes" in str(error)
    target = [r.value for r in read_all(west, f"east.{topic}") if r.partition == 1]
    before = [r.value for r in read_all(east, topic) if r.partition == 1 and r.offset < 5]
    # partition 1 holds at most what came before the oversize record (its batch's transaction
    # was aborted whole), never the record itself or anything after it, never a gap
    assert target == before[: len(target)]


def test_truncated_source_stops_unless_gaps_are_skipped(base_topology, east, west, unique):
    topic = unique("trunc")
    create_topic(east, topic, partitions=1, rf=3)
    produce(east, topic, numbered_records(100, 1, size=20))
    topology = with_flows(base_topology, tr={"source": "east", "target": "west", "topics": [topic]})
    with running_mirror(topology):
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 100, 90, "first 100")
    produce(east, topic, numbered_records(100, 1, start=100, size=20))
    admin = AdminClient(east.librdkafka())
    admin.delete_records([TopicPartition(topic, 0, 150)])[TopicPartition(topic, 0, 150)].result(30) \
        if hasattr(admin, "delete_records") else pytest.fail("delete_records unavailable")
    with running_mirror(topology, expect_flow_errors=True) as runners:
        wait_for(lambda: runners.get("tr") and runners["tr"].status == "error", 90, "the flow to stop")
        error = runners["tr"].error
    assert isinstance(error, DataLossError)
    assert f"{topic}/0 offsets 100..149" in str(error)
    skipping = with_flows(base_topology, tr={"source": "east", "target": "west", "topics": [topic], "skip_gaps": True})
    with running_mirror(skipping) as runners:
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 150, 90, "records after the gap")
        # the records can land before the mirror's first tick reports its runner
        wait_for(lambda: runners.get("tr") and runners["tr"].gaps_skipped == 50, 30, "50 skipped records counted")
    values = [r.value for r in read_all(west, f"east.{topic}")]
    assert values == [r["value"] for r in numbered_records(100, 1, size=20)] + [r.value for r in read_all(east, topic)]


def _truncate_while_replicating(base_topology, east, west, topic: str, skip_gaps: bool, mode: str):
    """Replicate 20,000 records slowly and delete the source's first 15,000 while the flow is still far
    behind; returns the flow's runner and the target's values. Micro-batches are kept small and slow; in
    real-time mode, where a group's task reads as fast as it can write, the target throttles the writer's
    producer (a broker quota on its client id) and its buffer is small, so the reader waits for it."""
    create_topic(east, topic, partitions=1, rf=3)
    produce(east, topic, numbered_records(20_000, 1, size=1000))
    client_id = f"{topic}-writer"
    slow = base_topology.model_copy(update={"pipeline": base_topology.pipeline.model_copy(update={
        "mode": mode, "max_records_per_batch": 500, "trigger_ms": 1000,
        # uncompressed: the quota counts the bytes sent, and these padded records compressed would pass it far faster
        "producer_config": {"client.id": client_id, "buffer.memory": "1048576", "batch.size": "65536",
                            "compression.type": "none"}})})
    if mode == "real-time":
        throttle_producer(west, client_id, 500_000)
    topology = with_flows(slow, live={"source": "east", "target": "west", "topics": [topic], "skip_gaps": skip_gaps})
    with running_mirror(topology, expect_flow_errors=not skip_gaps) as runners:
        wait_for(lambda: read_all(west, f"east.{topic}", timeout_s=5), 90, "the first records")
        admin = AdminClient(east.librdkafka())
        admin.delete_records([TopicPartition(topic, 0, 15_000)])[TopicPartition(topic, 0, 15_000)].result(30)
        if skip_gaps:
            last = numbered_records(20_000, 1, size=1000)[-1]["value"]
            wait_for(lambda: [r.value for r in read_all(west, f"east.{topic}", timeout_s=5)][-1:] == [last], 120,
                     "the source's last record after the gap")
        else:
            wait_for(lambda: runners.get("live") and runners["live"].status == "error", 90, "the flow to stop")
        runner = runners["live"]
    return runner, [r.value for r in read_all(west, f"east.{topic}")]


@pytest.mark.parametrize("mode", ["real-time", "micro-batch"])
def test_source_truncated_while_replicating_stops_the_flow_without_a_gap(base_topology, east, west, unique, mode):
    topic = unique("trunc-live")
    runner, target = _truncate_while_replicating(base_topology, east, west, topic, skip_gaps=False, mode=mode)
    # the flow stops on a data loss named from the replicated position, never replicating past it
    assert isinstance(runner.error, DataLossError)
    assert f"{topic}/0 offsets {len(target)}..14999" in str(runner.error) and "skip_gaps" in str(runner.error)
    assert 0 < len(target) < 15_000
    assert target == [r["value"] for r in numbered_records(20_000, 1, size=1000)][: len(target)]


def test_source_truncated_while_replicating_is_skipped_and_counted_with_skip_gaps(base_topology, east, west, unique):
    topic = unique("trunc-skip")
    runner, target = _truncate_while_replicating(base_topology, east, west, topic, skip_gaps=True, mode="real-time")
    values = [r["value"] for r in numbered_records(20_000, 1, size=1000)]
    before = len(target) - 5_000  # what was replicated before the gap, then everything from 15,000
    assert 0 < before < 15_000
    assert target == values[:before] + values[15_000:]
    assert runner.gaps_skipped == 15_000 - before and runner.error is None


def test_transform_filters_and_masks(base_topology, east, west, unique):
    topic = unique("pii")
    create_topic(east, topic, partitions=1, rf=3)
    now = int(time.time() * 1000)
    produce(east, topic, [
        {"key": f"k{i}".encode(), "value": f'{{"email":"u{i}@x.io","n":{i}}}'.encode(), "timestamp": now + i,
         "headers": [("classification", b"secret" if i % 4 == 0 else b"public")]}
        for i in range(40)
    ])
    transform = {
        "filter": "NOT exists(headers, h -> h.key = 'classification' AND CAST(h.value AS STRING) = 'secret')",
        "value": "to_json(named_struct('email', sha2(get_json_object(CAST(value AS STRING), '$.email'), 256), "
                 "'n', CAST(get_json_object(CAST(value AS STRING), '$.n') AS INT)))",
    }
    topology = with_flows(base_topology, tf={"source": "east", "target": "west", "topics": [topic],
                                             "transform": transform})
    with running_mirror(topology) as runners:
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 30, 90, "30 public records")
        wait_for(lambda: runners["tf"].progress[(topic, 0)].next_offset == 40, 30, "progress past the filtered tail")
    target = read_all(west, f"east.{topic}")
    assert all(b"@x.io" not in r.value for r in target)
    assert [int(r.value.split(b'"n":')[1].rstrip(b"}")) for r in target] == [i for i in range(40) if i % 4]


def test_an_out_of_memory_jvm_ends_the_mirror_naming_it_and_status_shows_the_flow_down(base_topology, east, west, unique,
                                                                                       tmp_path):
    """A producer batch larger than Spark's heap (batch.size 400 MB, a 512 MB driver): the JVM runs out of
    memory as the first records are written. The mirror exits non-zero with one line naming it and the setting
    to raise; status shows the flow in error with that reason, never running."""
    import json
    import subprocess
    import sys

    import yaml

    topic, flow = unique("oom"), unique("oom")
    create_topic(east, topic, partitions=2, rf=3)
    produce(east, topic, numbered_records(200, 2, size=1000))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    topology = topology.model_copy(update={"pipeline": topology.pipeline.model_copy(update={
        "spark_conf": {"spark.driver.memory": "512m"},
        # uncompressed: a compressed writer's batch is capped at the target topics' max.message.bytes
        "producer_config": {"batch.size": "400000000", "buffer.memory": "1000000000", "compression.type": "none"}})})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    geokafka = [sys.executable, "-m", "geokafka", "-f", str(path)]
    run = subprocess.run([*geokafka, "mirror", flow, "--duration", "300"], capture_output=True, text=True, timeout=420)
    said = run.stdout + run.stderr
    assert run.returncode == 13, said[-3000:]
    last = [line for line in said.splitlines() if line.strip()][-1]
    assert last.startswith("JvmFatalError:") and "OutOfMemoryError" in last and "spark.driver.memory" in last, said[-3000:]
    assert "Traceback" not in said

    def shown() -> dict:
        status = subprocess.run([*geokafka, "--json", "status", flow], capture_output=True, text=True, timeout=120)
        return json.loads(status.stdout)["flows"][0]

    # status reads the state topic to its stable end: a transaction open there (another test's writer on the
    # session's shared west) can hold the mirror's last record back until it ends; never running meanwhile
    seen: list[dict] = []
    before = ("not-started", "starting")
    wait_for(lambda: seen.append(shown()) or seen[-1]["state"] not in before, 90, "status past the flow's start")
    assert all(s["state"] in (*before, "error") for s in seen), seen
    assert seen[-1]["state"] == "error" and "OutOfMemoryError" in seen[-1]["reason"], seen[-1]
