"""`geokafka offsets translate`: output, --json, and one-line errors, against real clusters."""

from __future__ import annotations

import json
import socket
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner, Result
from confluent_kafka import Consumer, TopicPartition
from kafka_util import commit_retrying, create_topic, produce

from geokafka.cli.main import cli
from geokafka.control.connection import ClusterConnection
from geokafka.control.provenance import SOURCE_HEADER, SourcePosition
from geokafka.topology.schema import Cluster, Flow, Topology

pytestmark = pytest.mark.integration


def write_topology(path: Path, topology: Topology) -> Path:
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_none=True)))
    return path


def invoke(topology_file: Path, *args: str) -> Result:
    return CliRunner().invoke(cli, ["-f", str(topology_file), *args], env={"COLUMNS": "200"})


@pytest.fixture
def flow_file(
    east: ClusterConnection, west: ClusterConnection, base_topology: Topology, unique: Callable[[str], str],
    tmp_path: Path,
) -> tuple[Path, str, str]:
    """Flow ``f`` east -> west (prefix naming) over one topic, replicated by hand; returns (file, topic, group)."""
    topic, group = unique("orders"), unique("billing")
    create_topic(east, topic, 2)
    create_topic(west, f"east.{topic}", 2)
    produce(east, topic, [{"value": f"v{i}".encode(), "partition": i % 2} for i in range(8)])
    produce(west, f"east.{topic}", [
        {"value": f"v{i}".encode(), "partition": i % 2,
         "headers": [(SOURCE_HEADER, SourcePosition("east", topic, i % 2, i // 2).encode())]}
        for i in range(8)
    ] + [{"value": b"local", "partition": 0}])
    consumer = Consumer(east.librdkafka(**{"group.id": group, "enable.auto.commit": False}))
    commit_retrying(consumer, [TopicPartition(topic, 0, 3), TopicPartition(topic, 1, 4)])
    consumer.close()
    flows = {"f": Flow(source="east", target="west", topics=[topic], groups=["billing-.*"])}
    return write_topology(tmp_path / "geokafka.yaml", base_topology.model_copy(update={"flows": flows})), topic, group


def test_translate_json_and_table(flow_file: tuple[Path, str, str]) -> None:
    path, topic, group = flow_file
    result = invoke(path, "offsets", "translate", "f", "--group", group, "--json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    assert (data["group"], data["source"], data["target"], data["offsets_from"]) == (group, "east", "west", "source")
    rows = {p["partition"]: p for p in data["partitions"]}
    assert rows[0]["target_topic"] == f"east.{topic}"
    assert (rows[0]["source_offset"], rows[0]["target_offset"], rows[0]["caught_up"]) == (3, 3, True)
    assert (rows[1]["source_offset"], rows[1]["target_offset"], rows[1]["caught_up"]) == (4, 4, False)

    table = invoke(path, "offsets", "translate", "f", "-g", group)
    assert table.exit_code == 0, table.output
    assert "TARGET-OFFSET" in table.stdout and f"east.{topic}" in table.stdout


def test_translate_errors_are_one_line_with_exit_codes(
    flow_file: tuple[Path, str, str], base_topology: Topology, unique: Callable[[str], str], tmp_path: Path,
) -> None:
    path, _topic, _group = flow_file
    unknown = invoke(path, "offsets", "translate", "nope", "--group", "g")
    assert unknown.exit_code == 2
    assert unknown.stderr == "TopologyError: unknown flow 'nope' (known: f)\n"

    stranger = unique("stranger")
    empty = invoke(path, "offsets", "translate", "f", "--group", stranger)
    assert empty.exit_code == 10
    assert empty.stderr == (
        f"NoCommittedOffsetsError: group {stranger} has no committed offsets on east for topics of flow f\n"
    )

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    topology = base_topology.model_copy(update={
        "clusters": {**base_topology.clusters, "west": Cluster(bootstrap=f"127.0.0.1:{dead_port}")},
        "flows": {"f": Flow(source="east", target="west", topics=["x"])},
    })
    gone_file = write_topology(tmp_path / "gone.yaml", topology)
    gone = invoke(gone_file, "offsets", "translate", "f", "-g", "g", "--timeout", "2")
    assert gone.exit_code == 4
    assert gone.stderr.startswith(f"ClusterUnreachableError: cluster west (127.0.0.1:{dead_port}) is not reachable")
    assert gone.stderr.count("\n") == 1
