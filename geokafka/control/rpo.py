"""What a failover of a flow loses (its RPO), as an interval from the mirror's last observation of the source.

The running mirror looks at the source's end offsets every ``rpo.observe_ms`` and keeps the
last look on the target (``ends/<flow>``, :mod:`geokafka.control.source_ends`) with the peak
write rate of the last minute and, once a look fails, when it failed. With ``E`` the observed
end and ``P`` the replicated progress of a partition, and ``W`` the records the source took
after the look until it died::

    lost = W + sum(E - P)        (E - P is negative where replication passed the look)
    W   >= sum(max(0, P - E))    (records replicated past the look were written after it)
    W   <= rate x max(1 s, time from the look until a look failed)

The rate is the peak of the last minute of looks, or, when it is higher, the rate the records
replicated past the look show: they were written within the span from the look to the newest
one's timestamp, so some second after the look took at least ``sum(max(0, P - E)) / max(1 s,
span)`` of them (a source that got busier after the look, e.g. when a stalled mirror freed the
CPU its producers share, is not bounded by its calmer past).

So the **lower bound** is ``sum(max(0, E - P))`` (seen and not replicated) and the **upper
bound** ``sum(E - P) + W_max``. A lower bound of 0 proves nothing (the look may simply be older
than the replicated position: the source kept writing after it), so it is shown as *unknown*
with the look's age, never as "0 lost". Without a failed look (the mirror stopped too) there is
no upper bound. The upper bound assumes the source never took more records in a second after
the look than in the busiest second it was seen to take.

**Seconds** are the span of the lost writes, from the oldest lost record's timestamp to the
newest's. The oldest is no older than the last replicated record of a partition with seen
losses, and no older than the look elsewhere (anything lost there was written after it); the
newest no newer than the failed look. Their lower bound is 0 unless the loss is exact.

Offsets are counted, so a transactional source's markers count as records (a bound stays a bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from typing import Any

from geokafka import contract
from geokafka.control.state_records import Progress, SourceEnds, TopicPartitionKey

RATE_SPAN_MS = 1000
"""The peak rate is taken over spans of at least this long between observations (shorter ones are jitter)."""

EXACT, OBSERVED, UNKNOWN = "exact", "observed", "unknown"


def peak_rate(samples: Iterable[tuple[int, int]], min_span_ms: int = RATE_SPAN_MS) -> float | None:
    """Highest records/s over spans of at least ``min_span_ms`` between ``(at_ms, total end offset)`` samples.

    Spans shorter than that measure the timing of the looks more than the source; when every
    sample lies within one such span the whole span counts. None without two samples over time.
    A span over which the total went down (a re-created topic) has no rate.
    """
    points = list(samples)
    best: float | None = None
    start = 0
    for j in range(1, len(points)):
        while start + 1 < j and points[j][0] - points[start + 1][0] >= min_span_ms:
            start += 1
        (t0, e0), (t1, e1) = points[start], points[j]
        if t1 - t0 >= min_span_ms and e1 >= e0:
            rate = (e1 - e0) * 1000.0 / (t1 - t0)
            best = rate if best is None else max(best, rate)
    if best is None and len(points) >= 2:
        (t0, e0), (t1, e1) = points[0], points[-1]
        if t1 > t0 and e1 >= e0:
            best = (e1 - e0) * 1000.0 / (t1 - t0)
    return best


def fmt_span(seconds: float | None) -> str:
    """``0.4 s``, ``12 s``, ``3m05s`` or ``?``."""
    if seconds is None:
        return "?"
    if seconds == 0:
        return "0 s"
    if seconds < 10:
        return f"{seconds:.1f} s"
    if seconds < 60:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(int(seconds), 60)
    return f"{minutes}m{rest:02d}s" if minutes < 60 else f"{minutes // 60}h{minutes % 60:02d}m"


@dataclass(frozen=True)
class RpoInterval:
    """Records and seconds lost (or that would be), each between a lower and an upper bound.

    ``basis``: ``exact`` (counted: a reachable source's lag, or the old source's logs read by
    `reconcile`), ``observed`` (bounded from the mirror's last look), ``unknown`` (no look).
    """

    basis: str
    records_lower: int | None
    """Certainly lost; None when nothing is known."""
    records_upper: int | None
    """At most this many; None when unbounded."""
    seconds_lower: float | None
    seconds_upper: float | None
    observed_at_ms: int | None = None
    observation_age_s: float | None = None
    """How old the last look was when the source was found gone (or at the report, if it was not)."""
    gone_at_ms: int | None = None
    """When a look at the source first failed (the mirror's, or the report's own probe)."""
    peak_rate: float | None = None
    """Records/s the upper bound assumes the source took at most after the look."""
    replicated_past_observation: int = 0
    """Records replicated beyond the last look: written after it, so the look is stale."""
    reason: str | None = None
    """Why a bound is missing, in words."""

    @classmethod
    def exact(cls, records: int, seconds: float | None) -> RpoInterval:
        """A counted loss."""
        return cls(EXACT, records, records, seconds, seconds)

    @classmethod
    def unknown(cls, reason: str) -> RpoInterval:
        """Nothing known."""
        return cls(UNKNOWN, None, None, None, None, reason=reason)

    @property
    def is_exact(self) -> bool:
        """Lower and upper bounds are the same count."""
        return self.basis == EXACT

    def headline(self) -> str:
        """The interval in words: ``120 to 410 records, up to 1.4 s (...)``; never "0" for an unseen loss."""
        if self.basis == UNKNOWN or self.records_lower is None:
            return f"unknown: {self.reason or 'nothing observed'}"
        if self.is_exact:
            return f"{self.records_lower:,} records, {fmt_span(self.seconds_lower)}"
        age = "an unknown time" if self.observation_age_s is None else f"{self.observation_age_s:.1f} s"
        when = (f"source last observed {age} before it was found gone" if self.gone_at_ms is not None
                else f"source last observed {age} earlier")
        seconds = "seconds unbounded" if self.seconds_upper is None else f"up to {fmt_span(self.seconds_upper)}"
        if self.records_lower == 0:
            most = (f"at most {self.records_upper:,} records, {seconds}" if self.records_upper is not None
                    else f"no upper bound ({self.reason})")
            stale = ("not ahead of what was replicated" if self.replicated_past_observation == 0
                     else f"behind what was replicated by {self.replicated_past_observation:,} records")
            return f"unknown, {most}: the last observation of the source ({age} old) is {stale}"
        if self.records_upper is None:
            return f"at least {self.records_lower:,} records ({when}); no upper bound: {self.reason}"
        return f"{self.records_lower:,} to {self.records_upper:,} records, {seconds} ({when})"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready, with the headline."""
        data = asdict(self)
        for key in ("seconds_lower", "seconds_upper", "observation_age_s", "peak_rate"):
            if data[key] is not None:
                data[key] = round(data[key], 3)
        data["headline"] = self.headline()
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RpoInterval:
        """From :meth:`to_dict`'s output."""
        def num(key: str, kind: type[int] | type[float]) -> Any:
            value = data.get(key)
            return None if value is None else kind(value)

        return cls(str(data.get("basis", UNKNOWN)), num("records_lower", int), num("records_upper", int),
                   num("seconds_lower", float), num("seconds_upper", float), num("observed_at_ms", int),
                   num("observation_age_s", float), num("gone_at_ms", int), num("peak_rate", float),
                   int(data.get("replicated_past_observation") or 0),
                   None if data.get("reason") is None else str(data["reason"]))


def rpo_interval(observation: SourceEnds | None, progress: Mapping[TopicPartitionKey, Progress],
                 now_ms: int, gone_at_ms: int | None = None) -> RpoInterval:
    """The loss of a failover from the mirror's last look and the replicated progress (pure).

    ``gone_at_ms``: when the caller itself found the source unreachable (failover's probe, a
    status read); the mirror's own failed look counts too, the earlier of the two bounds.
    """
    if observation is None:
        return RpoInterval.unknown("the mirror never observed the source")
    lower = ahead = signed = 0
    oldest_ms: int | None = observation.at_ms  # no lost write is older than this
    newest_ahead_ms: int | None = None  # the newest record replicated past the look
    for key, end in observation.ends.items():
        record = progress.get(contract.parse_partition_key(key))
        nxt, stamp = (record.next, record.last_timestamp) if record is not None else (0, -1)
        signed += end - nxt
        if end > nxt:
            lower += end - nxt
            oldest_ms = None if stamp < 0 or oldest_ms is None else min(oldest_ms, stamp)
        elif nxt > end:
            ahead += nxt - end
            if stamp >= 0:
                newest_ahead_ms = stamp if newest_ahead_ms is None else max(newest_ahead_ms, stamp)
    failed = [t for t in (observation.failed_at_ms, gone_at_ms) if t is not None]
    gone = min(failed) if failed else None
    age = max(0.0, ((gone if gone is not None else now_ms) - observation.at_ms) / 1000)
    upper: int | None = None
    seconds_upper: float | None = None
    reason = None
    rate = observation.peak_rate
    if gone is None:
        reason = "no failed look at the source is known (the source may still be up, or the mirror stopped too)"
    elif observation.peak_rate is None:
        reason = "the mirror saw too few observations to know the source's write rate"
    else:
        rate = max(observation.peak_rate, _rate_after(ahead, observation.at_ms, newest_ahead_ms))
        written_after = max(math.ceil(rate * max(1.0, age)), ahead)
        upper = max(lower, signed + written_after)
        if upper == 0:
            seconds_upper = 0.0
        elif oldest_ms is not None:
            seconds_upper = max(0.0, (gone - oldest_ms) / 1000)
    return RpoInterval(OBSERVED, lower, upper, 0.0, seconds_upper, observation.at_ms, age, gone,
                       rate, ahead, reason)


def _rate_after(ahead: int, look_ms: int, newest_ms: int | None) -> float:
    """Records/s some second after the look took at least: ``ahead`` records replicated past it were written
    between the look and ``newest_ms`` (without a timestamp, within a second is the safe side)."""
    if ahead == 0:
        return 0.0
    span_s = 0.0 if newest_ms is None else (newest_ms - look_ms) / 1000
    return ahead / max(1.0, span_s)
