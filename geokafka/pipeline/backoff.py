"""When a flow's runner tries again after a failed start: exponential delays, back to the first after a success.

Pure: the runner passes its clock's time in, so tests drive it with a fake clock.
"""

from __future__ import annotations

from dataclasses import dataclass


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
