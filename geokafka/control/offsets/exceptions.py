"""Errors of offset translation, group sync and time-based resets.

Both are states that forbid the command, so they sit under :class:`FlowStateError`
(exit code 10)::

    FlowStateError
    ├── NoCommittedOffsetsError   the group has nothing to translate or reset from
    └── GroupNotEmptyError        the group has active members; its offsets are theirs
"""

from __future__ import annotations

from geokafka.errors import FlowStateError


class NoCommittedOffsetsError(FlowStateError):
    """The consumer group has no committed offset where one is needed."""


class GroupNotEmptyError(FlowStateError):
    """The consumer group has active members, so its offsets must not be moved from outside."""
