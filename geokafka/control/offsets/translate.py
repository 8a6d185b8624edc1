"""Exact offset translation: where a group that committed offset N on the source resumes on the target.

The pipeline stamps every replicated record with ``gk.src`` (its coordinates on the source),
so the target log itself is the offset mapping: no sparse offset syncs, no guessing.
:class:`OffsetMapping` holds that mapping for one source partition inside one target
partition, as MM2's ``OffsetSyncStore`` does for its syncs, but with every record.

Example: source partition ``east/orders/0`` has a commit marker at 3 (a gap); the target
partition interleaves local writes (``L``) and its own transaction markers (``m``)::

    source  offset   0    1    2   (3)   4    5
    target  offset   0    1    2    3    4    5    6    7    8
            record   s0   s1   L    s2   m    L    s4   s5   m

    committed N=3 -> the first replicated record with source offset >= 3 is s4, at target 6:
                     the group has read s0..s2 and resumes exactly before s4.

Invariants (kept by :meth:`OffsetMapping.add`, relied on by :meth:`OffsetMapping.translate`):

1. Pairs are added in target order, so target offsets strictly increase.
2. Source offsets strictly increase along the target log. If the pipeline ever writes a source
   offset again (a topic replayed from scratch), pairs at or beyond it are dropped first: the
   newest copy wins and (1) and (2) still hold.
3. Pairs are stored as runs ``(source start, target start, length)`` where both offsets advance
   by one, so a partition replicated in transactions costs one run per transaction, not per record.

Translation rule, for committed offset N:

* a replicated record with source offset >= N exists: the answer is the target offset of the
  first such record. It is exact: every record of this source partition before it has a
  source offset < N (already consumed), every one at or after it has one >= N.
  ``caught_up`` is true.
* none exists yet: the answer is one past the last replicated record of this source partition
  or, if none was replicated, ``resume_at`` (where replication will continue: the end of the
  target partition as read). Nothing of this source at or after N is skipped, but records
  < N that are not replicated yet will be read on the target when they arrive although the
  group read them on the source (duplicates, never loss): ``caught_up`` is true
  only if the pipeline's progress (``replicated_next``, read *before* the target was indexed)
  says every source record below N has been replicated.

Records from other origins or written directly on the target are not this source's: the
answer positions them only by their place in the target log (see the interleaved example).
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple


class SourcePartition(NamedTuple):
    """A partition on the cluster records were copied from (the ``gk.src`` prefix); a tuple, to hash fast."""

    cluster: str
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.cluster}/{self.topic}/{self.partition}"


@dataclass(frozen=True)
class Translation:
    """The target offset of one committed source offset."""

    source_offset: int
    """The group's committed offset on the source (the next record it would read)."""
    target_offset: int
    """Where the group resumes on the target."""
    caught_up: bool
    """True when the answer is final: nothing below ``source_offset`` is still to be replicated."""
    matched_source_offset: int | None
    """Source offset of the record at ``target_offset`` (> ``source_offset`` on a gap); None if not replicated yet."""


class OffsetMapping:
    """Source offset -> target offset of one source partition in one target partition (see module doc)."""

    __slots__ = ("_count", "_last_target", "_len", "_src", "_tgt")

    def __init__(self) -> None:
        self._src = array("q")
        self._tgt = array("q")
        self._len = array("q")
        self._last_target = -1
        self._count = 0

    def __len__(self) -> int:
        """Replicated records in the mapping."""
        return self._count

    @property
    def runs(self) -> int:
        """Stored runs (a measure of memory use)."""
        return len(self._src)

    @property
    def last_source_offset(self) -> int | None:
        """Source offset of the newest replicated record."""
        return self._src[-1] + self._len[-1] - 1 if self._src else None

    @property
    def last_target_offset(self) -> int | None:
        """Target offset of the newest replicated record."""
        return self._tgt[-1] + self._len[-1] - 1 if self._src else None

    def add(self, source_offset: int, target_offset: int) -> None:
        """Record that source ``source_offset`` was written at ``target_offset`` (target order)."""
        if source_offset < 0 or target_offset <= self._last_target:
            raise ValueError(
                f"pair {source_offset}->{target_offset} is out of target order (last target {self._last_target})"
            )
        self._last_target = target_offset
        last = self.last_source_offset
        if last is not None and source_offset <= last:
            self._truncate_from(source_offset)  # invariant 2: the newest copy wins
        self._count += 1
        if self._src:
            end = len(self._src) - 1
            run_len = self._len[end]
            if source_offset == self._src[end] + run_len and target_offset == self._tgt[end] + run_len:
                self._len[end] = run_len + 1
                return
        self._src.append(source_offset)
        self._tgt.append(target_offset)
        self._len.append(1)

    def _truncate_from(self, source_offset: int) -> None:
        """Drop every pair whose source offset is >= ``source_offset``."""
        i = bisect_right(self._src, source_offset) - 1
        if i >= 0 and source_offset > self._src[i]:
            self._len[i] = min(self._len[i], source_offset - self._src[i])
            i += 1
        keep = max(i, 0)
        del self._src[keep:], self._tgt[keep:], self._len[keep:]
        self._count = sum(self._len)

    def first_at_or_after(self, source_offset: int) -> tuple[int, int] | None:
        """(source offset, target offset) of the first replicated record with source offset >= ``source_offset``."""
        i = bisect_right(self._src, source_offset) - 1
        if i >= 0 and source_offset < self._src[i] + self._len[i]:
            return source_offset, self._tgt[i] + (source_offset - self._src[i])
        j = i + 1
        if j < len(self._src):
            return self._src[j], self._tgt[j]
        return None

    def first_target_at_or_after(self, target_offset: int) -> tuple[int, int] | None:
        """(source offset, target offset) of the first replicated record at target offset >= ``target_offset``."""
        i = bisect_right(self._tgt, target_offset) - 1
        if i >= 0 and target_offset < self._tgt[i] + self._len[i]:
            k = target_offset - self._tgt[i]
            return self._src[i] + k, target_offset
        j = i + 1
        if j < len(self._tgt):
            return self._src[j], self._tgt[j]
        return None

    def translate(self, committed: int, *, resume_at: int, replicated_next: int | None = None) -> Translation:
        """Target offset for a group that committed ``committed`` on the source (module doc has the rule)."""
        if committed < 0:
            raise ValueError(f"committed offset {committed} is negative")
        found = self.first_at_or_after(committed)
        if found is not None:
            return Translation(committed, found[1], True, found[0])
        last_target = self.last_target_offset
        target = last_target + 1 if last_target is not None else resume_at
        caught_up = replicated_next is not None and replicated_next >= committed
        return Translation(committed, target, caught_up, None)

    def check_invariants(self) -> None:
        """Raise AssertionError unless invariants 1-3 hold (runs sorted, disjoint and non-empty on both sides)."""
        for k in range(len(self._src)):
            assert self._len[k] >= 1, f"run {k} is empty"
            if k:
                assert self._src[k] >= self._src[k - 1] + self._len[k - 1], f"source offsets overlap at run {k}"
                assert self._tgt[k] >= self._tgt[k - 1] + self._len[k - 1], f"target offsets overlap at run {k}"
        assert self._count == sum(self._len), "record count is off"

    def pairs(self) -> list[tuple[int, int]]:
        """Every (source, target) pair, in order (for tests and debugging; O(records))."""
        return [
            (s + k, t + k) for s, t, n in zip(self._src, self._tgt, self._len, strict=True) for k in range(n)
        ]


def translate_offset(
    mapping: OffsetMapping | None, committed: int, *, resume_at: int, replicated_next: int | None = None
) -> Translation:
    """:meth:`OffsetMapping.translate`, also for a source partition nothing was replicated from yet."""
    if mapping is None:
        mapping = OffsetMapping()
    return mapping.translate(committed, resume_at=resume_at, replicated_next=replicated_next)

