"""The Python side of the Python-Java contract (``geokafka/contract.json``): what the driver writes and
reads, checked against the file read here on its own, so a name changed in the code (or in the file
without the code following) fails. ``jvm/src/test/.../ContractTest.java`` is the Java side."""

from __future__ import annotations

import json
from pathlib import Path

from geokafka.contract import CONTRACT_FILE
from geokafka.control.connection import connection
from geokafka.control.permissions import transactional_id_prefix
from geokafka.control.provenance import ORIGIN_HEADER, SOURCE_HEADER, SourcePosition
from geokafka.control.state_records import STATE_TOPIC, Progress
from geokafka.control.state_store import InMemoryStateStore
from geokafka.control.topic_sync import TopicPair
from geokafka.pipeline.assignment import Assignment
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
