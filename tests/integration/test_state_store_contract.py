"""The state store contract: one suite over both stores, the in-memory one the unit tests use and the Kafka one
(the shared ``west``'s real ``__geokafka_state``), as quix-streams runs one suite over its backends.

What each case pins: a read sees every control write made before it and a settled read every progress write too
(progress shares its partition with the data transactions; incremental reads included), each record reads back
as written, a tombstone removes a key for good, a store whose clients were dropped reads the same state again, a
second store (another process) sees the first one's writes, a partition's progress is its last mention in a
progress record of its own or a group's packed one, a settled read with no open transaction is a read,
and the data partition's end is kept apart from the control partition's. What only Kafka can show (an open
transaction hiding the data partition and never the control one; a topic of the first layout upgraded; a
re-created topic) is in ``private/test_failover.py`` and ``test_restart_unblocks_readers.py``, on clusters of
their own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from geokafka.control.state_records import GroupCheckpoint, Heartbeat, PackedProgress, Progress, Role
from geokafka.control.state_store import (
    CONTROL_BASE,
    InMemoryStateStore,
    KafkaStateStore,
    StateStore,
    ensure_state_topic,
)

pytestmark = pytest.mark.integration

Stores = Callable[[], StateStore]
"""A new store over the same state (a second process's view)."""


@pytest.fixture(params=["memory", "kafka"])
def stores(request: pytest.FixtureRequest) -> Iterator[Stores]:
    made: list[StateStore] = []
    if request.param == "memory":
        shared = InMemoryStateStore()

        def new() -> StateStore:
            view = InMemoryStateStore()
            view.log = shared.log  # one log, as one topic
            return view
    else:
        from geokafka.control.admin import ClusterAdmin

        west = request.getfixturevalue("west")
        ensure_state_topic(ClusterAdmin(west))

        def new() -> StateStore:
            store = KafkaStateStore(west)
            made.append(store)
            return store
    yield new
    for store in made:
        store.close()


@pytest.fixture
def flow(unique: Callable[[str], str]) -> str:
    return unique("contract")


def test_a_read_sees_every_write_before_it_and_reads_incrementally(stores: Stores, flow: str) -> None:
    """Control records: any read. Progress shares its partition with the data transactions (on the shared ``west``
    another test's writer may hold one open): a settled read, what a start uses, sees it."""
    store = stores()
    store.write(Progress(flow, "orders", 0, 10), Heartbeat(flow, "running", 1_000, {"written": 10}))
    assert store.read(30).heartbeat(flow).state == "running"
    first = store.read_settled(60)
    assert first.progress(flow) == {("orders", 0): 10} and first.heartbeat(flow).state == "running"
    store.write(Progress(flow, "orders", 0, 25), Progress(flow, "orders", 1, 3), Heartbeat(flow, "retrying", 2_000, {}))
    assert store.read(30).heartbeat(flow).state == "retrying"
    second = store.read_settled(60)
    assert second.progress(flow) == {("orders", 0): 25, ("orders", 1): 3}
    assert second.heartbeat(flow).state == "retrying"
    assert first.progress(flow) == {("orders", 0): 10}  # an earlier snapshot stays as it was read


def test_each_record_reads_back_as_written(stores: Stores, flow: str) -> None:
    store = stores()
    checkpoint = GroupCheckpoint(flow, "billing", {("orders", 0): 7}, 3_000, {("east.orders", 0): 9})
    role = Role(flow, Role.FAILED_OVER, 4_000, {"kind": "failover"})
    store.write(checkpoint, role)
    state = store.read(30)
    assert state.checkpoints(flow) == {"billing": checkpoint}
    assert state.record(Role, flow) == role and state.role(flow) == Role.FAILED_OVER


def test_a_tombstone_removes_a_key_for_good(stores: Stores, flow: str) -> None:
    store = stores()
    checkpoint = GroupCheckpoint(flow, "gone", {("orders", 0): 1}, 1, {})
    store.write(checkpoint)
    assert "gone" in store.read(30).checkpoints(flow)
    store.delete(checkpoint.key)
    assert "gone" not in store.read(30).checkpoints(flow)
    assert "gone" not in stores().read(30).checkpoints(flow)  # read from scratch too


def test_dropped_clients_read_the_same_state_again(stores: Stores, flow: str) -> None:
    store = stores()
    store.write(Progress(flow, "orders", 2, 5), Heartbeat(flow, "running", 1, {}))
    before = store.read_settled(60)  # progress: see the test above
    store.close()
    after = store.read_settled(60)
    assert after.progress(flow) == before.progress(flow) == {("orders", 2): 5}
    assert after.heartbeat(flow) == before.heartbeat(flow)


def test_another_store_sees_the_writes_and_a_settled_read_with_nothing_open_is_a_read(stores: Stores,
                                                                                      flow: str) -> None:
    writer, reader = stores(), stores()
    reader.read(30)
    writer.write(Progress(flow, "orders", 0, 40), Heartbeat(flow, "stopped", 9, {}))
    settled = reader.read_settled(60)
    assert settled.progress(flow) == {("orders", 0): 40} and settled.heartbeat(flow).state == "stopped"


def test_progress_is_read_from_the_data_partition_and_every_other_record_from_the_control_one(stores: Stores,
                                                                                            flow: str) -> None:
    store = stores()
    heartbeat, progress = Heartbeat(flow, "running", 1, {}), Progress(flow, "orders", 0, 1)
    store.write(heartbeat, progress)
    state = store.read_settled(60)
    assert state.offsets[heartbeat.key] >= CONTROL_BASE > state.offsets[progress.key]
    assert state.end_offset > state.offsets[progress.key]  # a start's progress floor is the data partition's end
    assert state.control_end_offset > state.offsets[heartbeat.key] - CONTROL_BASE


def test_a_partitions_progress_is_its_last_mention_in_either_kind_of_record(stores: Stores, flow: str) -> None:
    """The sink writes packed records of a group's partitions; earlier versions and the driver outside a query
    write one partition's. Whichever mentions a partition last holds its position (and its state offset)."""
    store = stores()

    def packed(slot: str, *entries: tuple[int, int, int]) -> PackedProgress:
        return PackedProgress(flow, 2, 0, slot, tuple(Progress(flow, "orders", p, n, t) for p, n, t in entries))

    store.write(Progress(flow, "orders", 0, 10, 100), Progress(flow, "orders", 1, 5, 50))
    store.write(packed("all", (0, 12, 120), (1, 5, 50), (2, 7, 70)))
    store.write(packed("1", (2, 9, 90)))
    store.write(Progress(flow, "orders", 2, 4, -1))  # a skipped gap reset by the driver
    store.write(packed("2", (0, 15, 150)))
    snapshot = store.read_settled(60)
    assert snapshot.progress(flow) == {("orders", 0): 15, ("orders", 1): 5, ("orders", 2): 4}
    assert snapshot.progress_records(flow)[("orders", 0)].last_timestamp == 150
    offsets = {p: snapshot.progress_offset(flow, "orders", p) for p in range(3)}
    assert offsets[1] is not None and offsets[2] is not None and offsets[0] is not None
    assert offsets[1] < offsets[2] < offsets[0]  # the snapshot, then the driver's record, then the last delta
    assert snapshot.progress_offset(flow, "orders", 3) is None
    store.write(packed("all", (0, 16, 160), (1, 6, 60), (2, 5, 51)))
    assert store.read_settled(60).progress(flow) == {("orders", 0): 16, ("orders", 1): 6, ("orders", 2): 5}
    assert snapshot.progress(flow)[("orders", 0)] == 15  # an earlier snapshot stays as it was read
