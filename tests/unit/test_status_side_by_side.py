"""`status` reads its flows side by side: a dead source's time-out is no other flow's wait (in-memory reads).

The dead flow's source read does not return until every healthy flow has been read: were the flows read one
after another (the dead one sorts first), the healthy reads would never start and the dead read would give up.
"""

from __future__ import annotations

import threading
import time

import pytest

from geokafka.control.state_store import StateSnapshot
from geokafka.errors import GeokafkaError
from geokafka.monitoring import collect
from geokafka.topology import parse_topology

TOPOLOGY = parse_topology("""\
clusters:
  east: {bootstrap: 127.0.0.1:1}
  north: {bootstrap: 127.0.0.1:2}
  south: {bootstrap: 127.0.0.1:3}
  west: {bootstrap: 127.0.0.1:4}
flows:
  east-west: {source: east, target: west, topics: [orders]}
  north-west: {source: north, target: west, topics: [orders]}
  south-west: {source: south, target: west, topics: [orders]}
""")


class InMemoryReads:
    """Stands in for the collector's Kafka reads: every target's state is empty and current."""

    def __init__(self, *_: object) -> None:
        self.closed = False

    def state(self, cluster: str) -> tuple[StateSnapshot, None]:
        return StateSnapshot(), None

    def close(self) -> None:
        self.closed = True


def test_a_dead_source_s_read_waits_for_no_healthy_flow(monkeypatch: pytest.MonkeyPatch) -> None:
    healthy_read = {"north-west": threading.Event(), "south-west": threading.Event()}
    read_at: dict[str, int] = {}

    def source_read(io: object, name: str, flow: object, state: StateSnapshot,
                    as_of_ms: int | None = None) -> tuple[list, str | None, None, int]:
        if name == "east-west":  # the dead source: its time-out ends only once the others were read
            both = all(event.wait(10) for event in healthy_read.values())
            read_at[name] = int(time.time() * 1000)
            return [], ("timed out" if both else "the healthy flows were never read beside this one"), None, read_at[name]
        read_at[name] = int(time.time() * 1000)
        healthy_read[name].set()
        return [], None, None, read_at[name]

    monkeypatch.setattr(collect, "ClusterReads", InMemoryReads)
    monkeypatch.setattr(collect, "flow_partitions", source_read)
    with collect.StatusCollector(TOPOLOGY) as collector:
        report = collector.collect()
    dead = report.flow("east-west")
    assert dead.source_error is not None and dead.source_error.startswith("timed out"), dead.source_error
    for name in healthy_read:
        flow = report.flow(name)
        assert flow.source_reachable and flow.source_error is None
        assert read_at[name] <= read_at["east-west"]  # answered while the dead read still waited


def test_a_heartbeat_is_as_old_as_when_the_state_was_read_not_when_the_source_answered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The source is read after the state: its seconds (a loaded machine, a slow link) are not the heartbeat's.
    A failed state read shows its older snapshot, whose heartbeat ages to now."""
    from geokafka.control.state_store import InMemoryStateStore

    store = InMemoryStateStore()
    store.set_flow_state("north-west", "running")
    failed: list[bool] = [False]

    class Reads(InMemoryReads):
        def state(self, cluster: str) -> tuple[StateSnapshot, Exception | None]:  # type: ignore[override]
            snapshot = store.read()
            return snapshot, (GeokafkaError("west: timed out") if failed[0] else None)

    def slow_source(io: object, name: str, flow: object, state: StateSnapshot,
                    as_of_ms: int | None = None) -> tuple[list, None, None, int]:
        return [], None, None, state.read_at_ms + 4_000  # the source answered 4 s after the state was read

    monkeypatch.setattr(collect, "ClusterReads", Reads)
    monkeypatch.setattr(collect, "flow_partitions", slow_source)
    with collect.StatusCollector(TOPOLOGY, ["north-west"]) as collector:
        fresh = collector.collect().flow("north-west")
        failed[0] = True
        stale = collector.collect().flow("north-west")
    assert fresh.state == "running" and fresh.heartbeat_age_s is not None and fresh.heartbeat_age_s < 1.0
    assert stale.heartbeat_age_s is not None and stale.heartbeat_age_s >= 4.0


def test_a_lag_is_counted_to_when_the_progress_was_read_not_to_when_the_source_answered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The flow replicates on while its source is read: a source that answers 4 s after the state was read (a
    loaded machine, a dead flow's time-out beside it) adds nothing to the lag status shows. A failed state read's
    older progress ages to now."""
    from geokafka.control.state_records import Progress
    from geokafka.control.state_store import InMemoryStateStore
    from geokafka.monitoring import status_io

    store = InMemoryStateStore()
    failed: list[bool] = [False]
    oldest: dict[str, int] = {}

    class Reads(InMemoryReads):
        source_timeout_s = 2.0

        def state(self, cluster: str) -> tuple[StateSnapshot, Exception | None]:  # type: ignore[override]
            snapshot = store.read()
            # the first record the progress has not replicated was written 300 ms before the state was read
            oldest.setdefault("ms", snapshot.read_at_ms - 300)
            return snapshot, (GeokafkaError("west: timed out") if failed[0] else None)

        def admin(self, cluster: str) -> object:
            return object()

    real = time

    class FourSecondsLater:
        """status_io's clock: every source read answers 4 s after the state read before it."""

        monotonic = staticmethod(real.monotonic)

        @staticmethod
        def time() -> float:
            return real.time() + 4.0

    store.write(Progress("north-west", "orders", 0, 10, 0))
    monkeypatch.setattr(collect, "ClusterReads", Reads)
    monkeypatch.setattr(status_io, "time", FourSecondsLater)
    monkeypatch.setattr(status_io, "source_offsets", lambda admin, flow: {("orders", 0): (0, 12)})
    monkeypatch.setattr(status_io, "first_committed", lambda admin, positions, timeout_s: {
        tp: (offset, oldest["ms"]) for tp, offset in positions.items()})
    with collect.StatusCollector(TOPOLOGY, ["north-west"]) as collector:
        fresh = collector.collect().flow("north-west")
        failed[0] = True
        stale = collector.collect().flow("north-west")
    [part] = fresh.partitions
    assert part.lag_records == 2 and part.lag_seconds is not None and 0.3 <= part.lag_seconds < 1.0, part
    [part] = stale.partitions
    assert part.lag_seconds is not None and part.lag_seconds >= 4.3, part
