"""Exact offset translation (pure): OffsetMapping and PartitionIndex, no broker."""

from __future__ import annotations

import random
import time

import pytest

from geokafka.control.offsets import OffsetMapping, PartitionIndex, SourcePartition, translate_offset
from geokafka.control.provenance import SourcePosition

EAST0 = SourcePartition("east", "orders", 0)


def mapping_of(pairs: list[tuple[int, int]]) -> OffsetMapping:
    m = OffsetMapping()
    for src, tgt in pairs:
        m.add(src, tgt)
    return m


def naive(pairs: list[tuple[int, int]], committed: int, resume_at: int) -> int:
    """The rule, written the slow and obvious way (pairs already cleaned of replays)."""
    for src, tgt in pairs:
        if src >= committed:
            return tgt
    return pairs[-1][1] + 1 if pairs else resume_at


def test_contiguous_partition_translates_exactly() -> None:
    m = mapping_of([(s, s + 100) for s in range(10)])
    t = m.translate(4, resume_at=999)
    assert (t.target_offset, t.caught_up, t.matched_source_offset) == (104, True, 4)
    assert m.runs == 1 and len(m) == 10


def test_committed_zero_with_nothing_replicated_resumes_where_replication_continues() -> None:
    t = translate_offset(None, 0, resume_at=57)
    assert (t.target_offset, t.caught_up, t.matched_source_offset) == (57, False, None)
    # the pipeline's progress says nothing below 0 is missing: final
    assert translate_offset(None, 0, resume_at=57, replicated_next=0).caught_up


def test_gap_in_source_offsets_lands_on_next_replicated_record() -> None:
    # source 3 is a commit marker, 7 was compacted away; target has its own markers
    m = mapping_of([(0, 0), (1, 1), (2, 2), (4, 4), (5, 5), (6, 6), (8, 8)])
    assert m.translate(3, resume_at=0).target_offset == 4
    assert m.translate(3, resume_at=0).matched_source_offset == 4
    assert m.translate(7, resume_at=0).target_offset == 8
    assert m.translate(0, resume_at=0).target_offset == 0


def test_module_doc_example() -> None:
    idx = PartitionIndex("orders", 0)
    layout = ["s0", "s1", "L", "s2", None, "L", "s4", "s5", None]  # None: a transaction marker (never read)
    for target, rec in enumerate(layout):
        if rec == "L":
            idx.add(target, None)
        elif rec is not None:
            idx.add(target, SourcePosition("east", "orders", 0, int(rec[1:])))
    idx.advance(len(layout))
    assert idx.translate(EAST0, 3).target_offset == 6
    assert idx.translate(EAST0, 2).target_offset == 3


def test_beyond_last_replicated_is_one_past_last_and_not_caught_up() -> None:
    m = mapping_of([(0, 10), (1, 11), (2, 12)])
    t = m.translate(3, resume_at=50)
    assert (t.target_offset, t.caught_up, t.matched_source_offset) == (13, False, None)
    # beyond the source end (committed past what exists): same position, never caught up by records
    assert m.translate(1000, resume_at=50).target_offset == 13
    assert not m.translate(1000, resume_at=50, replicated_next=3).caught_up
    assert m.translate(3, resume_at=50, replicated_next=3).caught_up


def test_first_replicated_record_after_committed_when_replication_started_later() -> None:
    m = mapping_of([(500, 0), (501, 1)])  # flow started at "latest", or target retention deleted the start
    assert m.translate(10, resume_at=9).target_offset == 0


def test_interleaved_origins_and_local_writes() -> None:
    """Identity fan-in/active-active: east, south and local records share one target partition."""
    rng = random.Random(7)
    idx = PartitionIndex("orders", 0)
    next_src = {"east": 0, "south": 0}
    east_pairs: list[tuple[int, int]] = []
    target = 0
    for _ in range(2000):
        kind = rng.choice(["east", "east", "south", "local", "marker"])
        if kind == "marker":
            target += 1
            continue
        if kind == "local":
            idx.add(target, None)
        else:
            next_src[kind] += rng.choice([1, 1, 1, 2])  # gaps in the source too
            idx.add(target, SourcePosition(kind, "orders", 0, next_src[kind]))
            if kind == "east":
                east_pairs.append((next_src[kind], target))
        target += 1
    idx.advance(target)
    assert idx.sources() == [EAST0, SourcePartition("south", "orders", 0)]
    assert idx.unattributed > 0
    for committed in range(0, next_src["east"] + 3):
        assert idx.translate(EAST0, committed).target_offset == naive(east_pairs, committed, target)


def test_other_topic_or_partition_of_same_cluster_is_not_mixed_in() -> None:
    idx = PartitionIndex("orders", 0)
    idx.add(0, SourcePosition("east", "orders", 1, 0))
    idx.add(1, SourcePosition("east", "payments", 0, 0))
    idx.add(2, SourcePosition("east", "orders", 0, 5))
    assert idx.translate(EAST0, 0).target_offset == 2
    assert idx.translate(EAST0, 6).target_offset == 3


def test_nothing_from_this_source_resumes_at_read_position() -> None:
    idx = PartitionIndex("orders", 0)
    idx.add(0, None)
    idx.add(1, SourcePosition("south", "orders", 0, 0))
    idx.advance(3)
    t = idx.translate(EAST0, 0)
    assert (t.target_offset, t.caught_up) == (3, False)


def test_replayed_source_offsets_keep_the_newest_copy() -> None:
    # src 0..9 at 0..9, then the pipeline replays src 5..9 at 10..14 (e.g. target reset)
    m = mapping_of([(s, s) for s in range(10)] + [(s, s + 5) for s in range(5, 10)])
    m.check_invariants()
    assert m.pairs() == [(s, s) for s in range(5)] + [(s, s + 5) for s in range(5, 10)]
    assert m.translate(7, resume_at=0).target_offset == 12
    assert m.translate(3, resume_at=0).target_offset == 3
    # a replay from the very start drops everything
    m.add(0, 20)
    assert m.pairs() == [(0, 20)]


def test_runs_compress_transactions() -> None:
    m = OffsetMapping()
    target = 0
    for txn in range(100):  # 100 transactions of 50 records, one marker after each
        for k in range(50):
            m.add(txn * 50 + k, target)
            target += 1
        target += 1
    assert m.runs == 100 and len(m) == 5000
    assert m.translate(50, resume_at=0).target_offset == 51
    assert m.last_source_offset == 4999 and m.last_target_offset == 5098


def test_invalid_input_is_rejected() -> None:
    m = mapping_of([(0, 5)])
    with pytest.raises(ValueError, match="out of target order"):
        m.add(1, 5)
    with pytest.raises(ValueError, match="negative"):
        m.translate(-1, resume_at=0)
    idx = PartitionIndex("orders", 0)
    idx.advance(10)
    with pytest.raises(ValueError, match="below read position"):
        idx.add(3, None)


def test_random_sequences_match_the_naive_rule() -> None:
    rng = random.Random(1234)
    for _ in range(300):
        pairs: list[tuple[int, int]] = []
        src, tgt = rng.randrange(0, 5), rng.randrange(0, 5)
        for _ in range(rng.randrange(0, 40)):
            pairs.append((src, tgt))
            src += rng.choice([1, 1, 1, 2, 5])
            tgt += rng.choice([1, 1, 2, 3])
        m = mapping_of(pairs)
        m.check_invariants()
        assert m.pairs() == pairs
        resume_at = (pairs[-1][1] + rng.randrange(1, 4)) if pairs else rng.randrange(0, 9)
        for committed in range(0, src + 3):
            t = m.translate(committed, resume_at=resume_at)
            assert t.target_offset == naive(pairs, committed, resume_at)
            assert t.caught_up == any(s >= committed for s, _ in pairs)


def test_translating_1000_groups_times_12_partitions_is_cheap() -> None:
    """Once indexed, a translation is a dict lookup and a bisect (runtime is printed, not asserted)."""
    indexes = []
    for p in range(12):
        idx = PartitionIndex("orders", p)
        target = 0
        for src in range(0, 60_000, 3):  # 20k records, gaps everywhere: one run per record, worst case
            idx.add(target, SourcePosition("east", "orders", p, src))
            target += 2
        idx.advance(target)
        indexes.append(idx)
    rng = random.Random(5)
    started = time.perf_counter()
    results = [
        indexes[p].translate(SourcePartition("east", "orders", p), rng.randrange(0, 59_998))
        for _group in range(1000)
        for p in range(12)
    ]
    elapsed = time.perf_counter() - started
    assert len(results) == 12_000 and all(r.caught_up for r in results)
    print(f"12,000 translations in {elapsed * 1000:.1f} ms")


def test_record_count_follows_truncation() -> None:
    m = mapping_of([(s, s) for s in range(10)])
    m.add(5, 10)
    assert len(m) == 6 == len(m.pairs())


def test_random_replays_keep_the_invariants() -> None:
    rng = random.Random(99)
    m, target, src = OffsetMapping(), 0, 0
    for _ in range(3000):
        src = max(0, src + rng.choice([1, 1, 1, 2, -3, -40]))  # sometimes the pipeline writes again from earlier
        m.add(src, target)
        target += rng.choice([1, 1, 2])
        m.check_invariants()
    pairs = m.pairs()
    assert [s for s, _ in pairs] == sorted({s for s, _ in pairs})
