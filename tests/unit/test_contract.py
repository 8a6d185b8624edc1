"""The Python side of the Python-Java contract (``geokafka/contract.json``): what the driver writes and
reads, checked against the file read here on its own, so a name changed in the code (or in the file
without the code following) fails. ``jvm/src/test/.../ContractTest.java`` is the Java side."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from geokafka.contract import CONTRACT_FILE, option_shape, parse_partition_key, partition_key
from geokafka.control.connection import connection
from geokafka.control.permissions import transactional_id_prefix
from geokafka.control.provenance import ORIGIN_HEADER, SOURCE_HEADER, SourcePosition
from geokafka.control.state_records import (
    DATA_PARTITION,
    STATE_TOPIC,
    PackedProgress,
    Progress,
    flow_prefix,
    partition_of,
)
from geokafka.control.state_store import InMemoryStateStore, StateSnapshot
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import Assignment, Expected, plan_assignment
from geokafka.pipeline.failures import KINDS, failure_error
from geokafka.pipeline.flow_clients import FlowClients
from geokafka.pipeline.groups import plan_generation, split_into_groups
from geokafka.pipeline.query import sink_options, source_options
from geokafka.pipeline.runner import FlowRunner
from geokafka.pipeline.scheduler import ManualScheduler
from geokafka.topology import parse_topology

SPEC = json.loads(Path(CONTRACT_FILE).read_text(encoding="utf-8"))
TOPOLOGY = parse_topology("""\
clusters:
  east: {bootstrap: 127.0.0.1:1}
  west: {bootstrap: 127.0.0.1:2}
flows:
  f: {source: east, target: west, topics: [orders]}
""")


def test_the_jar_carries_the_same_file() -> None:
    pom = (Path(CONTRACT_FILE).parents[1] / "jvm" / "pom.xml").read_text(encoding="utf-8")
    assert "<include>contract.json</include>" in pom and "<targetPath>geokafka</targetPath>" in pom


def test_the_progress_record_is_the_contracts() -> None:
    record = Progress("nyc-to-atl", "orders.eu", 7, 42, 1700)
    assert STATE_TOPIC == SPEC["state_topic"]
    assert record.key == SPEC["progress"]["key"].format(flow="nyc-to-atl", topic="orders.eu", partition=7)
    fields = SPEC["progress"]["fields"]
    assert record.encode() == {fields["next"]: 42, fields["last_timestamp"]: 1700}
    assert Progress.decode("nyc-to-atl", "orders.eu/7", {fields["next"]: 42}).next == 42


def test_the_packed_progress_record_is_the_contracts() -> None:
    spec = SPEC["packed_progress"]
    record = PackedProgress("nyc-to-atl", 3, 1, spec["snapshot_slot"],
                            (Progress("nyc-to-atl", "orders.eu", 7, 42, 1700), Progress("nyc-to-atl", "pay", 0, 5, -1),
                             Progress("nyc-to-atl", "orders.eu", 9, 8, 3)))
    assert record.key == spec["key"].format(flow="nyc-to-atl", generation=3, group=1, slot=spec["snapshot_slot"])
    assert record.key.startswith(flow_prefix(PackedProgress.KIND, "nyc-to-atl"))  # what the store reads a flow's by
    assert not record.key.startswith(flow_prefix(PackedProgress.KIND, "nyc"))
    assert partition_of(record.key) == DATA_PARTITION
    value = record.encode()
    assert value == {spec["fields"]["topics"]: {"orders.eu": [7, 42, 1700, 9, 8, 3], "pay": [0, 5, -1]}}
    assert PackedProgress.decode_entries("nyc-to-atl", value) == (
        Progress("nyc-to-atl", "orders.eu", 7, 42, 1700), Progress("nyc-to-atl", "orders.eu", 9, 8, 3),
        Progress("nyc-to-atl", "pay", 0, 5, -1))
    assert spec["delta_slots"] > 1


def test_the_provenance_headers_are_the_contracts() -> None:
    assert (ORIGIN_HEADER, SOURCE_HEADER) == (SPEC["headers"]["origin"], SPEC["headers"]["source"])
    value = SPEC["headers"]["source_value"].format(cluster="nyc", topic="orders", partition=3, offset=99)
    assert SourcePosition.decode(value.encode()) == SourcePosition("nyc", "orders", 3, 99)
    assert SourcePosition("nyc", "orders", 3, 99).encode() == value.encode()


def test_transactional_ids_are_the_contracts_and_carry_the_prefix_acls_grant() -> None:
    ids = SPEC["transactional_id"]
    prefix = ids["prefix"].format(flow="f")
    assert transactional_id_prefix("f") == prefix
    pairs = [TopicPair("orders", "east.orders", 3)]
    plan = plan_generation("f", split_into_groups(pairs, 2), None, legacy=pairs)
    assert plan.writer_ids == [ids["group"].format(flow="f", generation=0, group=g) for g in range(2)]
    assert ids["legacy_partition"].format(flow="f", topic="orders", partition=2) in plan.fence
    assert all(txn.startswith(prefix) for txn in plan.fence)


def test_every_failure_kind_has_its_error_class_and_the_fields_are_read() -> None:
    assert set(KINDS) == set(SPEC["failure"]["kinds"])
    fields = SPEC["failure"]["fields"]
    error = failure_error({fields["kind"]: "KAFKA", fields["kafka_code"]: 40, fields["retriable"]: False,
                           fields["message"]: "INVALID_CONFIG"}, auth=False, message="")
    assert (str(error), error.kafka_code, error.retriable) == ("INVALID_CONFIG", 40, False)


def test_every_option_is_named_as_the_contract_says() -> None:
    flow, pipeline = TOPOLOGY.flows["f"], TOPOLOGY.pipeline
    assignment = Assignment([TopicPair("orders", "east.orders", 2)], groups=[{"orders": [0, 1]}])
    source = source_options(connection(TOPOLOGY, "east"), assignment, flow, pipeline)
    roles = dict(SPEC["source_options"])
    prefix = roles.pop("client_prefix")
    assert set(roles.values()) <= set(source) and f"{prefix}bootstrap.servers" in source
    sink = sink_options("q", "f", flow, pipeline, connection(TOPOLOGY, "west"), assignment, {"orders": "east.orders"}, {})
    assert set(sink) == set(SPEC["sink_options"].values())


def _key(topic: str, partition: int) -> str:
    return str(SPEC["partition_key"]).format(topic=topic, partition=partition)


def test_the_partition_key_is_the_contracts_where_the_driver_builds_the_sinks_expectations() -> None:
    assert partition_key("orders.eu", 7) == _key("orders.eu", 7)
    assert parse_partition_key(_key("orders.eu", 7)) == ("orders.eu", 7)
    with pytest.raises(ValueError, match="not a partition key"):
        parse_partition_key("orders")
    pairs = [TopicPair("orders", "east.orders", 2)]
    assignment = plan_assignment("f", "earliest", False, pairs, _Source(), StateSnapshot())  # type: ignore[arg-type]
    assert set(assignment.expected) == {_key("orders", 0), _key("orders", 1)}
    flow, pipeline = TOPOLOGY.flows["f"], TOPOLOGY.pipeline
    sink = sink_options("q", "f", flow, pipeline, connection(TOPOLOGY, "west"), assignment, {"orders": "east.orders"}, {})
    expected = json.loads(sink[SPEC["sink_options"]["expected"]])
    assert {parse_partition_key(key) for key in expected} == {("orders", 0), ("orders", 1)}


def test_the_sinks_expectations_carry_each_partitions_last_mention() -> None:
    """Position, state offset and last timestamp, from a group's packed progress record written after the
    partition's own record; a partition with no progress is unknown from the state's end on."""
    store = InMemoryStateStore()
    store.write(Progress("f", "orders", 0, 5, 1500))
    store.write(PackedProgress("f", 0, 0, "1", (Progress("f", "orders", 0, 7, 1700),)))
    state = store.read()
    pairs = [TopicPair("orders", "east.orders", 2)]
    assignment = plan_assignment("f", "earliest", False, pairs, _Source(), state)  # type: ignore[arg-type]
    assert assignment.expected == {_key("orders", 0): Expected(7, 1, 1700), _key("orders", 1): Expected(-1, 2)}
    flow, pipeline = TOPOLOGY.flows["f"], TOPOLOGY.pipeline
    sink = sink_options("q", "f", flow, pipeline, connection(TOPOLOGY, "west"), assignment, {"orders": "east.orders"}, {})
    assert json.loads(sink[SPEC["sink_options"]["expected"]]) == {_key("orders", 0): [7, 1, 1700],
                                                                  _key("orders", 1): [-1, 2, -1]}


def _is_long(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_partitions(value: Any) -> bool:
    return isinstance(value, dict) and all(
        isinstance(t, str) and isinstance(ps, list) and all(_is_long(p) for p in ps) for t, ps in value.items())


_JSON_SHAPES: dict[str, Callable[[Any], bool]] = {
    "json_strings": lambda v: isinstance(v, dict) and all(isinstance(x, str) for x in v.values()),
    "json_longs": lambda v: isinstance(v, dict) and all(_is_long(x) for x in v.values()),
    "json_partitions": _is_partitions,
    "json_groups": lambda v: isinstance(v, list) and all(_is_partitions(g) for g in v),
    "json_starting": lambda v: isinstance(v, dict) and all(
        isinstance(ps, dict) and all(p.isdigit() and _is_long(o) for p, o in ps.items()) for ps in v.values()),
    "json_expected": lambda v: isinstance(v, dict) and all(
        parse_partition_key(k) and isinstance(x, list) and len(x) == 3 and all(_is_long(n) for n in x)
        for k, x in v.items()),
}


def _of_shape(shape: str, value: str) -> bool:
    if shape == "string":
        return isinstance(value, str)
    if shape == "long":
        return re.fullmatch(r"-?[0-9]+", value) is not None
    if shape == "bool":
        return value in ("true", "false")
    return _JSON_SHAPES[shape](json.loads(value))


def test_every_option_has_a_declared_shape_and_the_driver_writes_it_so() -> None:
    shapes = SPEC["option_shapes"]
    assert set(shapes["shapes"]) == {"string", "long", "bool", *_JSON_SHAPES}
    for section in ("source_options", "sink_options"):
        assert set(shapes[section]) == set(SPEC[section]), section
        assert all(option_shape(section, role) == shape for role, shape in shapes[section].items())
    flow, pipeline = TOPOLOGY.flows["f"], TOPOLOGY.pipeline
    assignment = Assignment([TopicPair("orders", "east.orders", 2)], groups=[{"orders": [0]}, {"orders": [1]}])
    assignment.starting = {"orders": {"0": 5, "1": -2}}
    assignment.expected = {_key("orders", 0): Expected(5, 0, 1700), _key("orders", 1): Expected(-1, 0)}
    source = source_options(connection(TOPOLOGY, "east"), assignment, flow, pipeline)
    sink = sink_options("q", "f", flow, pipeline, connection(TOPOLOGY, "west"), assignment, {"orders": "east.orders"},
                        {"east.orders": 1_000_000}, ("127.0.0.1:5", "token"))
    prefix = SPEC["source_options"]["client_prefix"]
    for name, value in source.items():
        if name.startswith(prefix):
            assert _of_shape(shapes["source_options"]["client_prefix"], value), name
    for section, options in (("source_options", source), ("sink_options", sink)):
        for role, shape in shapes[section].items():
            name = SPEC[section][role]
            if role != "client_prefix":
                assert _of_shape(shape, options[name]), f"{section}.{role} = {options[name]!r} is not {shape}"


class _Source:
    """A source cluster's admin whose partitions all start at 0 and end at 10, never re-created."""

    class conn:  # stands for ClusterAdmin.conn
        name = "east"

    def log_ranges(self, partitions: dict[str, int]) -> dict[str, dict[int, tuple[int, int]]]:
        return {topic: {p: (0, 10) for p in range(count)} for topic, count in partitions.items()}

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        return {}


def test_the_runner_reads_commit_reports_by_the_contracts_names() -> None:
    names = SPEC["commit_summary"]
    admin = _NoAdmin()
    runner = FlowRunner(TOPOLOGY, "f", clients=FlowClients(admin, admin, admin, admin),  # type: ignore[arg-type]
                        store=InMemoryStateStore(), scheduler=ManualScheduler("flow f", lambda: 0.0))
    report = {names["topic"]: "orders", names["partition"]: 1, names["group"]: 0, names["next_offset"]: 12,
              names["state_offset"]: 3, names["written"]: 5, names["duplicates_skipped"]: 0, names["cycle_skipped"]: 0,
              names["filtered"]: 0, names["bytes"]: 500, names["last_timestamp"]: 1700}
    runner._record_batch(1, [report])
    entry = runner.progress[("orders", 1)]
    assert (entry.next_offset, entry.written, entry.bytes, entry.last_timestamp) == (12, 5, 500, 1700)


class _NoAdmin:
    """A flow's clients that are never called here."""

    def close(self) -> None:
        pass
