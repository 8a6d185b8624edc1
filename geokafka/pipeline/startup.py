"""How a flow's first start spent its time, step by step, counted from its process's own start."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path


def process_age_s() -> float:
    """Seconds since this process started (Linux /proc; 0.0 where that cannot be read)."""
    try:
        started_ticks = int(Path("/proc/self/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()[19])
        uptime_s = float(Path("/proc/uptime").read_text(encoding="ascii").split()[0])
    except (OSError, IndexError, ValueError):
        return 0.0
    return max(0.0, uptime_s - started_ticks / os.sysconf("SC_CLK_TCK"))


@dataclass
class StartupTimeline:
    """Steps (how long each took) and milestones (when, from the process start) of a first start.

    Only the first occurrence of each counts: a restart after a failure does not overwrite them.
    """

    clock: Callable[[], float] = time.monotonic
    origin: float = 0.0
    """``clock()`` at the process start."""
    steps: dict[str, float] = field(default_factory=dict)
    milestones: dict[str, float] = field(default_factory=dict)

    @classmethod
    def of_process(cls) -> StartupTimeline:
        """A timeline whose origin is this process's start."""
        return cls(origin=time.monotonic() - process_age_s())

    @contextmanager
    def step(self, name: str) -> Iterator[None]:
        """Time the block as step ``name`` (when it completes, the first time only)."""
        start = self.clock()
        yield
        self.steps.setdefault(name, round(self.clock() - start, 3))

    def took(self, name: str, seconds: float) -> None:
        """Record a step timed elsewhere (the first time only)."""
        self.steps.setdefault(name, round(seconds, 3))

    def reached(self, milestone: str) -> bool:
        """Record ``milestone`` now; True the first time."""
        if milestone in self.milestones:
            return False
        self.milestones[milestone] = round(self.clock() - self.origin, 3)
        return True

    def summary(self) -> str:
        """One line: milestones in order, then the steps, e.g. ``first records 9.1 s after the process
        started (query started 6.0 s, ...; steps: Spark session 3.2 s, ...)``."""
        marks = ", ".join(f"{name} {at:.1f} s" for name, at in sorted(self.milestones.items(), key=lambda kv: kv[1]))
        steps = ", ".join(f"{name} {took:.1f} s" for name, took in self.steps.items())
        return f"from the process start: {marks or 'nothing yet'}; steps: {steps or 'none timed'}"

    def as_dict(self) -> dict[str, dict[str, float]]:
        """For JSON output: ``{"milestones_s": ..., "steps_s": ...}``."""
        return {"milestones_s": dict(self.milestones), "steps_s": dict(self.steps)}
