"""Consumer offsets across clusters: exact translation, group sync with guards, time-based resets.

Layout (one concept per module):

* ``translate``   -- :class:`OffsetMapping`, the pure source->target offset mapping and its rule
* ``index``       -- :class:`TargetIndex`, mappings read incrementally from target topics' ``gk.src``
* ``groups``      -- :func:`translate_group`: where one group resumes on a flow's target
* ``sync``        -- :func:`sync_group_offsets`: commit translations on the target, MM2's guards
* ``checkpoints`` -- last seen source offsets, kept on the target for failover
* ``by_time``     -- :func:`reset_offsets_to_datetime`: "3pm is 3pm" failover
"""

from geokafka.control.offsets.by_time import (
    PartitionReset,
    ResetReport,
    offsets_for_time,
    parse_datetime,
    reset_offsets_to_datetime,
)
from geokafka.control.offsets.checkpoints import load_checkpoints
from geokafka.control.offsets.exceptions import GroupNotEmptyError, NoCommittedOffsetsError
from geokafka.control.offsets.groups import GroupTranslation, PartitionTranslation, translate_group
from geokafka.control.offsets.index import PartitionIndex, TargetIndex
from geokafka.control.offsets.sync import (
    Decision,
    OffsetAction,
    SyncMemory,
    SyncReport,
    decide_commit,
    sync_group_offsets,
)
from geokafka.control.offsets.translate import OffsetMapping, SourcePartition, Translation, translate_offset
from geokafka.control.state_records import GroupCheckpoint

__all__ = [
    "Decision",
    "GroupCheckpoint",
    "GroupNotEmptyError",
    "GroupTranslation",
    "NoCommittedOffsetsError",
    "OffsetAction",
    "OffsetMapping",
    "PartitionIndex",
    "PartitionReset",
    "PartitionTranslation",
    "ResetReport",
    "SourcePartition",
    "SyncMemory",
    "SyncReport",
    "TargetIndex",
    "Translation",
    "decide_commit",
    "load_checkpoints",
    "offsets_for_time",
    "parse_datetime",
    "reset_offsets_to_datetime",
    "sync_group_offsets",
    "translate_group",
    "translate_offset",
]
