"""`reset-offsets --to-datetime` against real brokers, checked against Kafka's own ConsumerGroupCommand."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from confluent_kafka import Consumer, TopicPartition
from kafka_util import create_topic, produce

from geokafka.artifacts.jars import kafka_classpath
from geokafka.cli.main import cli
from geokafka.control.connection import ClusterConnection
from geokafka.control.offsets import GroupNotEmptyError, reset_offsets_to_datetime
from geokafka.topology.schema import Topology

pytestmark = pytest.mark.integration

TOOL = "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand"
BASE = 1714575600000  # 2024-05-01T15:00:00Z
P0_SECONDS = [0, 1, 2, 3, 7, 4, 5, 6, 8, 9]  # one record out of time order


def kafka_tool_dry_run(conn: ClusterConnection, group: str, topic: str, when: str) -> tuple[dict[int, int], str]:
    """(partition -> NEW-OFFSET, full output) of `kafka-consumer-groups --reset-offsets --to-datetime --dry-run`."""
    cmd = [
        "java", "-Xmx192m", "-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-cp", kafka_classpath(), TOOL,
        "--bootstrap-server", conn.bootstrap, "--group", group, "--topic", topic,
        "--reset-offsets", "--to-datetime", when, "--dry-run",
    ]
    run = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True)
    rows = [line.split() for line in run.stdout.splitlines()]
    offsets = {int(r[2]): int(r[3]) for r in rows if len(r) == 4 and r[0] == group and r[1] == topic}
    return offsets, run.stdout + run.stderr


@pytest.fixture
def timed_topic(west: ClusterConnection, unique: Callable[[str], str]) -> str:
    """p0: records 1 s apart (one out of order); p1: all before the times tested; p2: empty."""
    topic = unique("clicks")
    # the records are from 2024: with the default 7-day retention the broker's retention check
    # (every 5 min) deletes them, and a lookup after it finds every partition empty
    create_topic(west, topic, 3, config={"retention.ms": "-1"})
    records = [{"value": f"p0-{i}".encode(), "partition": 0, "timestamp": BASE + s * 1000}
               for i, s in enumerate(P0_SECONDS)]
    records += [{"value": f"p1-{i}".encode(), "partition": 1, "timestamp": BASE - 10_000 + i} for i in range(5)]
    produce(west, topic, records)
    return topic


def committed(conn: ClusterConnection, topic: str, group: str) -> dict[int, int]:
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    try:
        return {tp.partition: tp.offset for tp in consumer.committed([TopicPartition(topic, p) for p in range(3)])}
    finally:
        consumer.close()


@pytest.mark.parametrize(
    ("when", "expected"),
    [
        ("2024-05-01T15:00:04.500", {0: 4, 1: 5, 2: 0}),  # naive = UTC; p1 has nothing later: its log end
        ("2024-05-01T16:59:50.002+02:00", {0: 0, 1: 2, 2: 0}),  # same instant rules with a zone
    ],
)
def test_same_offsets_as_kafka_consumer_groups_tool(
    west: ClusterConnection, base_topology: Topology, timed_topic: str, unique: Callable[[str], str],
    when: str, expected: dict[int, int],
) -> None:
    group = unique("failover")
    ours = reset_offsets_to_datetime(base_topology, "west", group, [timed_topic], when, dry_run=True)
    assert {p.partition: p.new_offset for p in ours.partitions} == expected
    tool, output = kafka_tool_dry_run(west, group, timed_topic, when)
    assert tool == expected, output
    assert not ours.executed and committed(west, timed_topic, group) == {0: -1001, 1: -1001, 2: -1001}
    assert {p.partition: p.by_time for p in ours.partitions}[2] is False  # empty: fell back to the log end

    done = reset_offsets_to_datetime(base_topology, "west", group, [timed_topic], when)
    assert done.executed and committed(west, timed_topic, group) == expected


def test_refuses_a_group_with_active_members_but_dry_run_reports(
    west: ClusterConnection, base_topology: Topology, timed_topic: str, unique: Callable[[str], str],
) -> None:
    group = unique("busy")
    member = Consumer(west.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    member.subscribe([timed_topic])
    deadline = time.monotonic() + 30
    while not member.assignment() and time.monotonic() < deadline:
        member.poll(0.2)
    try:
        with pytest.raises(GroupNotEmptyError, match=f"group {group} on cluster west is active"):
            reset_offsets_to_datetime(base_topology, "west", group, [timed_topic], "2024-05-01T15:00:00")
        report = reset_offsets_to_datetime(base_topology, "west", group, [timed_topic], "2024-05-01T15:00:00",
                                           dry_run=True)
        assert report.group_active and not report.executed
    finally:
        member.close()


def test_cli_in_process_and_as_subprocess(
    west: ClusterConnection, base_topology: Topology, timed_topic: str, unique: Callable[[str], str],
    tmp_path: Path,
) -> None:
    topology_file = tmp_path / "geokafka.yaml"
    topology_file.write_text(yaml.safe_dump(base_topology.model_dump(mode="json", exclude_none=True)))
    group = unique("cli")
    args = ["reset-offsets", "--cluster", "west", "--group", group, "--topic", timed_topic,
            "--to-datetime", "2024-05-01T15:00:04.500"]

    shown = CliRunner().invoke(cli, ["-f", str(topology_file), *args, "--dry-run"])
    assert shown.exit_code == 0, shown.output
    assert "NEW-OFFSET" in shown.stdout and "would reset" in shown.stdout
    # as kafka-consumer-groups: without --execute it only previews
    preview = CliRunner().invoke(cli, ["-f", str(topology_file), *args, "--json"])
    assert preview.exit_code == 0, preview.output
    assert json.loads(preview.stdout)["executed"] is False
    assert committed(west, timed_topic, group) == {0: -1001, 1: -1001, 2: -1001}
    both = CliRunner().invoke(cli, ["-f", str(topology_file), *args, "--dry-run", "--execute"])
    assert both.exit_code == 2 and "not both" in both.output

    exe = Path(sys.executable).with_name("geokafka")
    run = subprocess.run([str(exe), "-f", str(topology_file), *args, "--execute", "--json"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    data = json.loads(run.stdout)
    assert data["executed"] and data["datetime_utc"] == "2024-05-01T15:00:04.500Z"
    assert {p["partition"]: p["new_offset"] for p in data["partitions"]} == {0: 4, 1: 5, 2: 0}

    missing = CliRunner().invoke(cli, ["-f", str(topology_file), "reset-offsets", "--cluster", "west",
                                       "--group", group, "--topic", unique("nope"), "--to-datetime", "2024-05-01"])
    assert missing.exit_code == 6
    assert missing.stderr.startswith("MissingTopicError: cluster west: topic nope-")
