"""The accounting of `reconcile` (no Kafka): stranded ranges, the groups that had not processed them,
where a replay resumes, the headers of a replayed record and the export file."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest
from confluent_kafka import Message

from geokafka.control.state_records import Reconciled
from geokafka.errors import OutputError
from geokafka.failover.stranded import (
    StrandedPartition,
    StrandedRange,
    group_backlogs,
    loss_span_s,
    processed_by,
)
from geokafka.failover.stranded_export import export_path, write_export
from geokafka.failover.stranded_replay import replay_headers, replay_plan

FAILOVER_MS = 1_700_000_100_000


def stranded(topic: str, partition: int, next_: int, end: int, stamps: dict[int, int], log_start: int = 0,
             high: int | None = None) -> StrandedPartition:
    part = StrandedPartition(StrandedRange(topic, partition, f"east.{topic}", next_, log_start, end,
                                           end if high is None else high))
    for offset in sorted(stamps):
        part.add(offset, stamps[offset], FAILOVER_MS)
    return part


def message(offset: int, headers: list[tuple[str, bytes | None]] | None = None, value: bytes | None = b"v") -> Message:
    return Message(topic="orders", partition=0, offset=offset, key=b"k", value=value, headers=headers,
                   timestamp=(1, 1_700_000_000_000 + offset))


def test_a_range_starts_at_the_replicated_position_or_the_log_start_and_counts_what_it_cannot_read() -> None:
    r = StrandedRange("orders", 0, "east.orders", 100, 40, 180, 185)
    assert (r.start, r.deleted, r.undecided) == (100, 0, 5)
    gone = StrandedRange("orders", 0, "east.orders", 100, 130, 180, 180)
    assert (gone.start, gone.deleted) == (130, 30)


def test_stranded_records_give_the_exact_rpo_in_records_and_seconds() -> None:
    p0 = stranded("orders", 0, 100, 104, {100: 1_000, 101: 1_200, 103: 1_900})  # 102: an aborted record
    p1 = stranded("orders", 1, 50, 52, {50: 1_100, 51: FAILOVER_MS + 5})  # written after the failover
    assert (p0.records, p0.first_offset, p0.last_offset, p0.first_ms, p0.last_ms) == (3, 100, 103, 1_000, 1_900)
    assert (p1.after_failover, p1.stranded, p1.last_late_offset) == (1, 1, 51)
    # a late write (after the failover: a split brain) is listed apart, no part of the failover's loss or its span
    assert loss_span_s([p0, p1]) == (1_900 - 1_000) / 1000
    assert loss_span_s([stranded("orders", 2, 0, 0, {})]) is None
    assert p0.to_dict()["records"] == 3 and "offsets" not in p0.to_dict()


def test_late_writes_are_counted_apart_and_count_as_handled_once_replayed_past_the_last_of_them() -> None:
    from geokafka.failover.reconcile import ReconcileReport

    report = ReconcileReport("f", "nyc", "atl", FAILOVER_MS, "failover", FAILOVER_MS + 60_000)
    report.partitions = [stranded("orders", 0, 100, 103, {100: 1_000, 101: FAILOVER_MS + 1, 102: FAILOVER_MS + 2}),
                         stranded("orders", 1, 50, 51, {50: 1_100})]
    assert (report.records, report.stranded_records, report.late_records) == (4, 2, 2)
    assert report.rpo.records_lower == report.rpo.records_upper == 2 and report.account().records == 2
    assert report.unreplayed_late_records({}) == 2
    assert report.unreplayed_late_records({("orders", 0): 102}) == 2  # the replay has not passed offset 102 yet
    assert report.unreplayed_late_records({("orders", 0): 103}) == 0
    assert report.to_dict()["late_records"] == 2


def test_groups_that_had_not_processed_stranded_records_are_listed_with_their_committed_offsets() -> None:
    p0 = stranded("orders", 0, 100, 110, {o: o for o in range(100, 110)})
    p1 = stranded("orders", 1, 20, 20, {})
    committed = {"billing": {("orders", 0): 104}, "audit": {("orders", 0): 110}, "idle": {("orders", 1): 3},
                 "other": {}}
    rows = group_backlogs([p0, p1], committed, synced={"billing"})
    assert [(g.group, g.committed, g.not_processed, g.processed, g.synced) for g in rows] == [
        ("audit", 110, 0, 10, False), ("billing", 104, 6, 4, True)]
    assert processed_by(committed, {"billing", "audit"}, "orders", 0, 103) == ["audit", "billing"]
    assert processed_by(committed, {"billing", "audit"}, "orders", 0, 104) == ["audit"]


def test_a_replay_resumes_after_what_an_earlier_run_committed() -> None:
    p0 = stranded("orders", 0, 100, 110, {o: o for o in range(100, 110)})
    p1 = stranded("orders", 1, 20, 25, {o: o for o in range(20, 25)})
    empty = stranded("orders", 2, 7, 7, {})
    plan = replay_plan([p0, p1, empty], {("orders", 0): Reconciled("f", "orders", 0, 106, 110, 6, 0)})
    assert [(p.partition, p.start, p.pending) for p in plan] == [(0, 106, 4), (1, 20, 5)]


def test_a_replayed_record_says_where_it_was_stranded_and_keeps_its_origin() -> None:
    headers = replay_headers(message(7, [("trace", b"x"), ("gk.src", b"nyc/orders/0/3"), ("nul", None)]),
                             "east", FAILOVER_MS, ["billing"])
    assert headers == [("trace", b"x"), ("nul", None), ("gk.origin", b"east"), ("gk.stranded", b"east/orders/0/7"),
                       ("gk.stranded.failover", str(FAILOVER_MS).encode()), ("gk.stranded.processed-by", b"billing")]
    kept = replay_headers(message(8, [("gk.origin", b"nyc")]), "east", FAILOVER_MS, [])
    assert kept[0] == ("gk.origin", b"nyc") and ("gk.origin", b"east") not in kept


def test_an_export_is_whole_never_overwrites_and_stops_at_its_size(tmp_path: Path) -> None:
    path = export_path(tmp_path / "out", "f", FAILOVER_MS)
    assert path.name == "f-stranded-20231114T221500Z.jsonl"
    result = write_export(path, [message(1, [("h", b"\x00\xff")]), message(2, value=None)])
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert result.records == 2 and result.bytes == path.stat().st_size
    assert lines[0]["offset"] == 1 and base64.b64decode(lines[0]["headers"][0][1]) == b"\x00\xff"
    assert lines[0]["key"] == base64.b64encode(b"k").decode() and lines[1]["value"] is None
    assert lines[1]["timestamp"] == 1_700_000_000_002
    with pytest.raises(OutputError, match="exists and an export never overwrites"):
        export_path(tmp_path / "out", "f", FAILOVER_MS)
    with pytest.raises(OutputError, match="more than --max-export-bytes"):
        write_export(tmp_path / "small" / "f.jsonl", (message(o) for o in range(100)), max_bytes=500)
    assert os.listdir(tmp_path / "small") == []  # nothing half-written, no temporary file left
    (tmp_path / "file").write_text("x")
    with pytest.raises(OutputError, match="not a directory"):
        export_path(tmp_path / "file", "f", FAILOVER_MS)


def test_a_skip_list_holds_text_keys_and_raw_ones_in_base64_and_names_a_bad_line() -> None:
    from geokafka.failover.stranded_replay import read_skip_keys

    assert read_skip_keys("customer-1\n\n# retried at atl\nbase64:AAEC\ncustomer-2\r\n") == {
        b"customer-1", b"\x00\x01\x02", b"customer-2"}
    with pytest.raises(ValueError, match="line 2: not base64"):
        read_skip_keys("ok\nbase64:%%%\n")


def test_a_replay_passes_over_records_on_the_skip_list_and_moves_past_them() -> None:
    from geokafka.failover.stranded_replay import ReplayPartition, _commit

    class Producer:
        def __init__(self) -> None:
            self.sent: list[tuple[str, object]] = []
            self.state: dict[bytes, dict] = {}

        def begin_transaction(self) -> None: ...

        def commit_transaction(self, _timeout: float) -> None: ...

        def produce(self, topic: str, **kwargs: object) -> None:
            self.sent.append((topic, kwargs["key"]))
            if topic == "__geokafka_state":
                self.state[bytes(kwargs["key"])] = json.loads(kwargs["value"])  # type: ignore[arg-type]

    part = ReplayPartition("orders", 0, "east.orders", 10, 13, 3)
    chunk = [Message(topic="orders", partition=0, offset=o, key=k, value=b"v", timestamp=(1, 1_700_000_000_000))
             for o, k in ((10, b"a"), (11, b"retried"), (12, b"retried"))]
    producer = Producer()
    total = _commit(producer, "f", "east", part, chunk, 0, FAILOVER_MS, lambda _m: [], 5.0,  # type: ignore[arg-type]
                    skip=lambda m: m.key() == b"retried")
    assert [k for t, k in producer.sent if t == "east.orders"] == [b"a"]
    assert (total, part.produced, part.skipped) == (1, 1, 2)
    # the replayed position and the flow's progress move past the records passed over: never copied later either
    assert producer.state[b"reconciled/f/orders/0"]["next"] == 13 and producer.state[b"progress/f/orders/0"]["next"] == 13
