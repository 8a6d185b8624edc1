"""What a failover of a flow loses (its RPO), bounded from the mirror's observations of the source.

The running mirror looks at the source's end offsets about every second and keeps the last
look on the target (``ends/<flow>``), with the peak append rate of the last minute and, once a
look fails, when it failed. Records below an observed end offset were acknowledged before the
look; those at or past it were written after the mirror's last look and nobody can count them
once the source is gone. So:

* the **lower bound** is what the last observation shows and the target does not have;
* the **upper bound** adds what the source could have taken at its peak observed rate from the
  last observation until the first failed one (the source was certainly gone then). Without a
  failed observation (the mirror itself stopped) there is no upper bound.

Offsets are counted, so a transactional source's markers count as records (a bound stays a bound).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from geokafka.control.state_records import SourceEnds

RATE_WINDOW = 60
"""Observations (about one a second) the peak append rate is taken over."""


def peak_rate(samples: Iterable[tuple[int, int]]) -> float | None:
    """Highest records/s between consecutive ``(at_ms, total end offset)`` samples (None with fewer than two)."""
    best: float | None = None
    points = list(samples)
    for (t0, e0), (t1, e1) in zip(points, points[1:]):
        if t1 > t0 and e1 >= e0:
            rate = (e1 - e0) * 1000.0 / (t1 - t0)
            best = rate if best is None else max(best, rate)
    return best


@dataclass(frozen=True)
class RpoBounds:
    """Unreplicated records if the source died now (or when it did)."""

    lower_records: int
    """Observed and not on the target: certainly lost."""
    upper_records: int | None
    """Lower bound plus what the source could have taken after the last look (None: unbounded)."""
    observed_at_ms: int | None
    observation_age_s: float | None
    """How old the last look was at ``now``."""
    notes: list[str] = field(default_factory=list)


def rpo_bounds(observation: SourceEnds | None, progress: Mapping[tuple[str, int], int], now_ms: int,
               gone_at_ms: int | None = None) -> RpoBounds:
    """Bounds on the records a failover loses now (pure).

    ``progress``: (topic, partition) -> next source offset committed on the target.
    ``gone_at_ms``: when the caller itself found the source unreachable (failover's probe).
    """
    if observation is None:
        return RpoBounds(0, None, None, None, ["the mirror never observed the source: nothing is known"])
    lower = 0
    for key, end in observation.ends.items():
        topic, _, partition = key.rpartition("/")
        lower += max(0, end - progress.get((topic, int(partition)), 0))
    age = max(0.0, (now_ms - observation.at_ms) / 1000)
    notes = [f"lower bound: records written after the last observation ({age:.1f} s old) are not counted"]
    upper: int | None = None
    failed = [t for t in (observation.failed_at_ms, gone_at_ms) if t is not None]
    if not failed:
        notes.append("no upper bound: no failed look at the source is known")
    elif observation.peak_rate is None:
        notes.append("no upper bound: the mirror saw too few observations to know the source's write rate")
    else:
        window = max(0.0, (min(failed) - observation.at_ms) / 1000)
        upper = lower + math.ceil(observation.peak_rate * window)
        notes.append(f"upper bound: the peak rate of {observation.peak_rate:.0f} records/s for the {window:.1f} s "
                     "from the last observation until a look at the source failed")
    return RpoBounds(lower, upper, observation.at_ms, age, notes)
