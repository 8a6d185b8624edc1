"""A flow's states and the timers of its runner: when to retry, when each periodic job is due.

Pure: the runner passes its clock's time in, so tests drive them with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum


class FlowState(StrEnum):
    """What a flow's runner is doing; the value is what the heartbeat records and `status` shows."""

    STARTING = "starting"
    RUNNING = "running"
    RETRYING = "retrying"
    STOPPED = "stopped"
    ERROR = "error"
    FAILED_OVER = "failed-over"

    @property
    def final(self) -> bool:
        """Nothing more happens in this process (an error needs a person, a failover a failback)."""
        return self in (FlowState.ERROR, FlowState.FAILED_OVER)


@dataclass
class Every:
    """A job due every ``interval_s``: due at once until it first runs."""

    interval_s: float
    next_at: float = 0.0

    def take(self, now: float, force: bool = False) -> bool:
        """True (and the next run scheduled) when due now or forced."""
        if force or now >= self.next_at:
            self.next_at = now + self.interval_s
            return True
        return False

    def push(self, now: float) -> None:
        """Next due one interval from ``now`` (a fresh start just did the job's work)."""
        self.next_at = now + self.interval_s

    @property
    def ever_run(self) -> bool:
        """Whether the job ran (or was pushed) at least once."""
        return self.next_at > 0


@dataclass
class Backoff:
    """Exponential retry delays: 1, 2, 4 ... ``max_s`` seconds; back to the first after a success."""

    initial_s: float = 1.0
    max_s: float = 30.0
    delay_s: float = 1.0
    retry_at: float = 0.0

    def schedule(self, now: float) -> float:
        """Schedule the next retry; returns its delay."""
        delay = self.delay_s
        self.retry_at = now + delay
        self.delay_s = min(delay * 2, self.max_s)
        return delay

    def due(self, now: float) -> bool:
        """Whether the scheduled retry is due."""
        return now >= self.retry_at

    def reset(self) -> None:
        """After a successful start."""
        self.delay_s = self.initial_s
