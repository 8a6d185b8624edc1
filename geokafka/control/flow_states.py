"""The words for a flow's state: what its mirror records (:class:`FlowState`) and what `status` shows
(:class:`HeadlineState`).

One vocabulary for the mirror that writes heartbeats, the state store, `status`, the metrics, the
dashboard, `failover` and `failback`: each imports the values from here, never spells them.
"""

from __future__ import annotations

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

    @property
    def live(self) -> bool:
        """A mirror in this state writes heartbeats: an old one means it died."""
        return self in LIVE_STATES


LIVE_STATES = frozenset({FlowState.STARTING, FlowState.RUNNING, FlowState.RETRYING})
"""Recorded states of a mirror that keeps writing heartbeats (a StrEnum's members equal their strings)."""


class HeadlineState(StrEnum):
    """The state `status` shows for a flow: a recorded :class:`FlowState`, or what `status` concludes itself."""

    STARTING = FlowState.STARTING.value
    RUNNING = FlowState.RUNNING.value
    RETRYING = FlowState.RETRYING.value
    STOPPED = FlowState.STOPPED.value
    ERROR = FlowState.ERROR.value
    FAILED_OVER = FlowState.FAILED_OVER.value
    DOWN = "down"
    """A live state whose heartbeat is too old: the mirror died."""
    SOURCE_UNREACHABLE = "source-unreachable"
    NOT_STARTED = "not-started"
    """No heartbeat was ever recorded."""
    STATE_UNAVAILABLE = "state-unavailable"
    """The target's state topic could not be read."""


UNHEALTHY_STATES = frozenset({HeadlineState.ERROR, HeadlineState.DOWN, HeadlineState.SOURCE_UNREACHABLE,
                              HeadlineState.STATE_UNAVAILABLE})
"""States a person has to look at: `status` exits non-zero when a flow shows one."""
