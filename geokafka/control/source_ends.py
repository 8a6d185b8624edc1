"""The running mirror's looks at a flow's source end offsets: what bounds the RPO if the source dies.

Every ``rpo.observe_ms`` the mirror asks the source for the end offset of every partition of
the flow in **one ListOffsets request per broker** (``AdminClient.list_offsets`` with
``OffsetSpec.latest()``; librdkafka groups the partitions by leader), with a short time-out,
and writes the answer to the target's state topic (``ends/<flow>``,
:class:`~geokafka.control.state_records.SourceEnds`) with the peak write rate of the last
minute. After the first failed look it marks the last observation with when it failed, and
:mod:`geokafka.control.rpo` turns both into the RPO interval.

The ends are read **read_committed** (the last stable offset): the flow's source reads
read_committed too, so its progress is comparable, and a record of a transaction still open
is not acknowledged to its producer yet; counting it would let the lower bound ("seen and
not replicated") exceed what was acked if that transaction is then aborted. Records of an
open transaction become visible at the next look after its commit.
"""

from __future__ import annotations

import logging
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace

from geokafka import contract
from geokafka.control.admin import ClusterAdmin
from geokafka.control.rpo import peak_rate
from geokafka.control.state_records import SourceEnds, SourceEndsSeen, TopicPartitionKey
from geokafka.control.state_store import StateStore
from geokafka.control.topic_sync import TopicPair
from geokafka.errors import GeokafkaError

log = logging.getLogger(__name__)

OBSERVE_TIMEOUT_S = 1.0
"""A look the source does not answer within this long has failed (a dead site answers at once)."""

RATE_WINDOW_MS = 60_000
"""The peak write rate is taken over the last minute of looks."""


def pair_partitions(pairs: Iterable[TopicPair]) -> list[TopicPartitionKey]:
    """Every (source topic, partition) of a flow's topic pairs, in order."""
    return [(pair.source, p) for pair in pairs for p in range(pair.partitions)]


def end_offsets(admin: ClusterAdmin, partitions: Sequence[TopicPartitionKey],
                timeout_s: float = OBSERVE_TIMEOUT_S) -> dict[TopicPartitionKey, int]:
    """(topic, partition) -> last stable offset, in one ListOffsets request per broker.

    Raises a :class:`~geokafka.errors.GeokafkaError` when any partition has no answer within
    ``timeout_s`` (a partition without a leader, a broker that is gone): a look is whole or failed.
    """
    return admin.offsets(partitions, timeout_s=timeout_s)


@dataclass
class RateWindow:
    """``(at_ms, total end offset)`` of the looks of the last ``span_ms``, and their peak rate."""

    span_ms: int = RATE_WINDOW_MS
    samples: deque[tuple[int, int]] = field(default_factory=deque)

    def add(self, at_ms: int, total: int) -> None:
        """One more look (a total lower than the last one, e.g. a re-created topic, starts afresh)."""
        if self.samples and total < self.samples[-1][1]:
            self.samples.clear()
        self.samples.append((at_ms, total))
        while self.samples and self.samples[0][0] < at_ms - self.span_ms:
            self.samples.popleft()

    def peak(self) -> float | None:
        """Records/s at most over a second of the window (see :func:`geokafka.control.rpo.peak_rate`)."""
        return peak_rate(self.samples)


EndsReader = Callable[[Sequence[TopicPartitionKey]], Mapping[TopicPartitionKey, int]]
"""Reads the end offsets of partitions (raises a GeokafkaError when it cannot)."""


class SourceEndsWatch:
    """One flow's looks at its source's end offsets, each kept on the target as ``ends/<flow>``.

    ``source`` is the source's admin client (with a time-out of :data:`OBSERVE_TIMEOUT_S` per
    look) or any :data:`EndsReader`; ``clock`` gives wall-clock milliseconds (tests pass their own).
    """

    def __init__(self, flow: str, source: ClusterAdmin | EndsReader, store: StateStore,
                 clock: Callable[[], int] | None = None) -> None:
        self.flow = flow
        # an admin client is not callable; a stand-in of one (tests) reads through its ``offsets`` as the real one does
        self.read_ends: EndsReader = source if callable(source) else (lambda partitions: end_offsets(source, partitions))
        self.store = store
        self.rates = RateWindow()
        self.last: SourceEnds | None = None
        """The last observation written to the target."""
        self.seen_at_ms = 0
        """When a look last found :attr:`last`'s ends unchanged."""
        self._last_read: Mapping[TopicPartitionKey, int] | None = None
        """The ends :attr:`last` was made of, as read: an unchanged look is told without keying every partition."""
        self._clock = clock or (lambda: int(time.time() * 1000))

    def observe(self, pairs: Sequence[TopicPair]) -> SourceEnds | None:
        """Look once and write what was seen; returns the record written (None if nothing was).

        A failed look writes the last observation again, marked with when the look failed,
        once: it is what bounds the RPO from above. A write that fails is skipped (debug log):
        the next look writes afresh.
        """
        at_ms = self._clock()
        try:
            ends = self.read_ends(pair_partitions(pairs)) if pairs else {}
        except GeokafkaError as exc:
            log.debug("flow %s: source ends not observed: %s", self.flow, exc)
            if self.last is None or self.last.failed_at_ms is not None:
                return None
            # the last look that found the source answering: the full observation, or a later one that saw it again
            return self._write(replace(self.last, at_ms=max(self.last.at_ms, self.seen_at_ms), failed_at_ms=self._clock()))
        self.rates.add(at_ms, sum(ends.values()))
        last = self.last
        if last is not None and last.failed_at_ms is None and ends == self._last_read:
            # nothing moved: say only when it was seen again (a few bytes, not every partition's end again)
            try:
                self.store.write(SourceEndsSeen(self.flow, at_ms, last.at_ms), timeout_s=5.0)
            except GeokafkaError as exc:
                log.debug("flow %s: source observation not written: %s", self.flow, exc)
                return None
            self.seen_at_ms = at_ms
            return last
        observed = {contract.partition_key(t, p): end for (t, p), end in ends.items()}
        return self._write(SourceEnds(self.flow, at_ms, observed, self.rates.peak()), ends)

    def _write(self, observation: SourceEnds, read: Mapping[TopicPartitionKey, int] | None = None) -> SourceEnds | None:
        try:
            self.store.write(observation, timeout_s=5.0)
        except GeokafkaError as exc:
            log.debug("flow %s: source observation not written: %s", self.flow, exc)
            return None
        self.last = observation
        self._last_read = read
        return observation
