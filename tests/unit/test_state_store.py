"""The state store's typed records: each owns its key and encoding, and reads back as written."""

from __future__ import annotations

import json

import pytest

from geokafka.control.state_records import (
    STATE_TOPIC,
    FailoverRecord,
    GroupCheckpoint,
    Heartbeat,
    HeldGroups,
    Progress,
    Role,
    SourceEnds,
    TopicId,
)
from geokafka.control.state_store import InMemoryStateStore

RECORDS = [
    Progress("nyc-to-atl", "orders", 3, 1_234),
    Heartbeat("nyc-to-atl", "running", 1_000, {"written": 5, "host": "h", "pid": 7}),
    SourceEnds("nyc-to-atl", 2_000, {"orders/3": 1_300}, peak_rate=12.5, failed_at_ms=2_500),
    Role("nyc-to-atl", "failed-over", 3_000, {"kind": "failover"}),
    FailoverRecord("nyc-to-atl", {"flow": "nyc-to-atl", "kind": "failover", "rpo_records": 66}),
    HeldGroups("nyc-to-atl", 4_000, [{"group": "g", "topic": "orders", "partition": 0, "reason": "in use"}]),
    GroupCheckpoint("nyc-to-atl", "billing/v2", {("orders", 3): 1_200}, 5_000, {("nyc.orders", 3): 1_250}),
    TopicId("nyc-to-atl", "orders", "AbCdEf", 6_000),
]


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: type(r).__name__)
def test_every_record_owns_a_key_under_its_kind_and_the_flow(record) -> None:
    assert record.key.startswith(f"{record.KIND}/nyc-to-atl")
    json.dumps(record.encode())  # a plain JSON value


def test_a_snapshot_reads_every_record_back_as_written() -> None:
    store = InMemoryStateStore()
    store.write(*RECORDS)
    snap = store.read()
    assert snap.progress("nyc-to-atl") == {("orders", 3): 1_234}
    assert snap.heartbeat("nyc-to-atl") == RECORDS[1]
    assert snap.source_ends("nyc-to-atl") == RECORDS[2]
    assert snap.role("nyc-to-atl") == "failed-over"
    assert snap.failover_report("nyc-to-atl") == RECORDS[4].report
    assert snap.held_groups("nyc-to-atl") == RECORDS[5]
    assert snap.checkpoints("nyc-to-atl") == {"billing/v2": RECORDS[6]}
    assert snap.topic_ids("nyc-to-atl") == {"orders": "AbCdEf"}


def test_records_of_other_flows_and_the_defaults() -> None:
    store = InMemoryStateStore()
    store.write(Progress("nyc-to-atl-2", "orders", 0, 9), GroupCheckpoint("nyc-to-atl-2", "g", {}, 1))
    snap = store.read()
    assert snap.progress("nyc-to-atl") == {}  # a flow whose name extends another's is not mixed in
    assert snap.checkpoints("nyc-to-atl") == {}
    assert snap.role("nyc-to-atl") == "active"
    assert snap.heartbeat("nyc-to-atl") is None and snap.source_ends("nyc-to-atl") is None


def test_the_latest_value_of_a_key_wins_and_offsets_say_where_it_was_read() -> None:
    store = InMemoryStateStore()
    store.write(Progress("f", "t", 0, 10), Progress("f", "t", 1, 5), Progress("f", "t", 0, 20))
    snap = store.read()
    assert snap.progress("f") == {("t", 0): 20, ("t", 1): 5}
    assert snap.progress_offset("f", "t", 0) == 2 and snap.end_offset == 3


def test_a_snapshot_keeps_what_it_read_while_later_reads_see_the_changes() -> None:
    # decoded values are shared between reads (each decoded once per offset): never across a change
    store = InMemoryStateStore()
    store.write(Progress("f", "t", 0, 10), GroupCheckpoint("f", "g", {("t", 0): 5}, 1), GroupCheckpoint("f", "h", {}, 1))
    before = store.read()
    assert before.progress("f") == {("t", 0): 10} and set(before.checkpoints("f")) == {"g", "h"}
    store.write(Progress("f", "t", 0, 20), GroupCheckpoint("f", "g", {("t", 0): 15}, 2))
    store.delete(GroupCheckpoint.key_of("f", "h"))
    after = store.read()
    assert after.progress("f") == {("t", 0): 20}
    assert after.checkpoints("f")["g"].offsets == {("t", 0): 15} and "h" not in after.checkpoints("f")
    assert before.progress("f") == {("t", 0): 10}  # the earlier snapshot is unchanged
    assert before.checkpoints("f")["g"].offsets == {("t", 0): 5} and "h" in before.checkpoints("f")
    assert store.read().checkpoints("f") == after.checkpoints("f")


def test_set_role_records_the_role_and_shows_it_as_the_flow_state() -> None:
    store = InMemoryStateStore()
    store.set_flow_state("f", "running", written=3)
    store.set_role("f", Role.FAILED_OVER, kind="promote")
    snap = store.read()
    assert snap.role("f") == "failed-over"
    heartbeat = snap.heartbeat("f")
    assert heartbeat is not None and heartbeat.state == "failed-over" and heartbeat.details == {"kind": "promote"}
    store.set_role("f", Role.ACTIVE)
    assert store.read().role("f") == "active"


def test_progress_keys_match_the_jvm_sink() -> None:
    # what earlier sinks wrote and the driver writes outside a query (jvm/.../Progress.java#key builds the same)
    assert Progress("f", "orders.eu", 11, 0).key == "progress/f/orders.eu/11"
    assert STATE_TOPIC == "__geokafka_state"


def test_an_observation_is_packed_by_runs_of_partitions_and_read_back_whole() -> None:
    from geokafka.control.state_records import SourceEnds

    ends = {"orders/0": 41, "orders/1": 38, "orders/2": 40, "orders/5": 7, "pay.eu/0": 3}
    record = SourceEnds("f", 1000, ends, 12.5)
    assert record.encode()["topics"] == {"orders": [[0, 41, 38, 40], [5, 7]], "pay.eu": [[0, 3]]}
    assert SourceEnds.decode("f", record.encode()) == record
    written_before = {"at_ms": 5, "ends": {"orders/0": 1}}  # the form of earlier versions reads too
    assert SourceEnds.decode("f", written_before).ends == {"orders/0": 1}


def test_a_look_that_saw_the_same_ends_again_makes_the_observation_younger_and_nothing_else() -> None:
    from geokafka.control.state_records import SourceEnds, SourceEndsSeen

    store = InMemoryStateStore()
    store.write(SourceEnds("f", 1000, {"orders/0": 5}, 3.0))
    store.write(SourceEndsSeen("f", 4000, 1000))
    seen = store.read().source_ends("f")
    assert seen is not None and (seen.at_ms, seen.ends, seen.peak_rate) == (4000, {"orders/0": 5}, 3.0)
    store.write(SourceEnds("f", 5000, {"orders/0": 9}, 3.0))  # a newer observation: the old confirmation is moot
    newer = store.read().source_ends("f")
    assert newer is not None and (newer.at_ms, newer.ends) == (5000, {"orders/0": 9})


# -- the two partitions ------------------------------------------------------------------------

def _value(state: str) -> bytes:
    return json.dumps({"state": state, "at_ms": 1}).encode()


def test_records_written_in_transactions_go_to_the_data_partition_and_every_other_to_the_control_one() -> None:
    from geokafka.control.state_records import CONTROL_PARTITION, DATA_PARTITION, Reconciled, partition_of

    assert partition_of(Progress("f", "t", 0, 1).key) == DATA_PARTITION
    assert partition_of(Reconciled("f", "t", 0, 5, 7, 2, 1).key) == DATA_PARTITION
    for record in RECORDS:
        if not isinstance(record, Progress):
            assert partition_of(record.key) == CONTROL_PARTITION, record.key


@pytest.mark.parametrize("control_first", [True, False])
def test_the_control_partition_wins_whichever_partition_is_read_first(control_first: bool) -> None:
    from geokafka.control.state_store import StateSnapshot

    snapshot = StateSnapshot()
    old = ("flow/f", _value("running"), 7, 0)  # the first layout kept it in the data partition
    new = ("flow/f", _value("failed-over"), 0, 1)
    for key, value, offset, partition in ([new, old] if control_first else [old, new]):
        snapshot.apply(key, value, offset, partition)
    assert snapshot.heartbeat("f").state == "failed-over"
    assert snapshot.end_offset == 8 and snapshot.control_end_offset == 1  # the data partition's end stays its own


def test_once_the_layout_marker_is_read_control_keys_in_the_data_partition_are_not_state() -> None:
    from geokafka.control.state_store import StateSnapshot

    snapshot = StateSnapshot()
    snapshot.apply("flow/gone", _value("running"), 0, 0)  # first layout, not carried over (deleted since)
    snapshot.apply("flow/f", _value("running"), 1, 0)
    snapshot.apply("progress/f/t/0", json.dumps({"next": 5, "last_timestamp": 9}).encode(), 2, 0)
    assert snapshot.first_layout_control().keys() == {"flow/gone", "flow/f"}
    snapshot.apply("flow/f", _value("running"), 0, 1)  # carried over
    snapshot.apply("layout", json.dumps({"version": 2, "at_ms": 1, "carried": 1}).encode(), 1, 1)
    assert snapshot.layout_seen and snapshot.heartbeat("gone") is None and snapshot.heartbeat("f") is not None
    snapshot.apply("flow/f", None, 2, 1)  # deleted after the upgrade ...
    snapshot.apply("flow/f", _value("stopped"), 3, 0)  # ... and an older writer's record in the data partition
    assert snapshot.heartbeat("f") is None
    assert snapshot.progress("f") == {("t", 0): 5}
    assert snapshot.first_layout_control() == {}


def test_a_value_cached_at_a_data_offset_is_not_served_for_the_same_control_offset() -> None:
    from geokafka.control.state_store import StateSnapshot

    snapshot = StateSnapshot()
    snapshot.apply("flow/f", _value("running"), 4, 0)
    assert snapshot.heartbeat("f").state == "running"  # decoded and cached at its position
    copy = snapshot.copy()
    copy.apply("flow/f", _value("error"), 4, 1)  # same offset number, other partition
    assert copy.heartbeat("f").state == "error"


def test_the_in_memory_store_keeps_the_data_partitions_end_as_kafka_does() -> None:
    store = InMemoryStateStore()
    store.write(Progress("f", "t", 0, 1), Heartbeat("f", "running", 1, {}), Progress("f", "t", 0, 2))
    snapshot = store.read()
    assert snapshot.end_offset == 2 and snapshot.control_end_offset == 1
