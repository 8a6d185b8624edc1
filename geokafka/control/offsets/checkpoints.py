"""Checkpoints: what a group sync saw and wrote, kept on the target for when the source is gone.

A failover cannot ask a dead source where its groups were. Every group sync therefore stores
the source offsets it translated under ``checkpoint/<flow>/<group>`` in the target's state
topic (MM2 keeps the same in ``<source>.checkpoints.internal``); failover re-translates them
with the final index, so partitions that caught up after the last sync still land exactly.

The checkpoint also keeps the target offsets the sync itself committed (``synced``). That is
how a sync tells its own position from one that consumers on the target reached: a target
group still where the sync left it may follow its source group backwards (a reset for
reprocessing at the source); one that consumers on the target moved is theirs (MM2 cannot
tell the two apart and never rewinds: KAFKA-14666). Only changed checkpoints are written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import STATE_TOPIC, StateSnapshot, ensure_state_topic, read_state, write_state

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class Checkpoint:
    """One group as last seen by a sync: its committed source offsets and what the sync wrote."""

    group: str
    offsets: dict[TopicPartitionKey, int]
    """(source topic, partition) -> the group's committed offset on the source."""
    at_ms: int
    synced: dict[TopicPartitionKey, int] = field(default_factory=dict)
    """(target topic, partition) -> the offset the sync last committed for the group on the target."""


def checkpoint_key(flow: str, group: str) -> str:
    """State key of one group's checkpoint."""
    return f"checkpoint/{flow}/{group}"


def checkpoints_in(snapshot: StateSnapshot, flow: str) -> dict[str, Checkpoint]:
    """group -> checkpoint of ``flow`` found in a state snapshot."""
    prefix = checkpoint_key(flow, "")
    out: dict[str, Checkpoint] = {}
    for key, value in snapshot.values.items():
        if key.startswith(prefix):
            group = key[len(prefix):]
            out[group] = Checkpoint(group, _decode(value.get("offsets", [])), int(value.get("at_ms", 0)),
                                    _decode(value.get("synced", [])))
    return out


def read_target_state(target: ClusterAdmin) -> StateSnapshot:
    """The target's state (replication progress, checkpoints); empty before the pipeline created it."""
    if STATE_TOPIC not in target.topic_partitions():
        return StateSnapshot()
    return read_state(target.conn)


def load_checkpoints(target: ClusterConnection, flow: str) -> dict[str, Checkpoint]:
    """Every checkpoint of ``flow`` stored on its target."""
    return checkpoints_in(read_target_state(ClusterAdmin(target)), flow)


def store_checkpoints(
    target: ClusterAdmin,
    flow: str,
    checkpoints: Mapping[str, Checkpoint],
    known: Mapping[str, Checkpoint],
) -> int:
    """Write the checkpoints that differ from ``known`` (in offsets or in what was synced); returns how many."""
    changed: dict[str, dict[str, Any] | None] = {
        checkpoint_key(flow, group): {"offsets": _encode(cp.offsets), "synced": _encode(cp.synced), "at_ms": cp.at_ms}
        for group, cp in checkpoints.items()
        if (cp.offsets or cp.synced) and (
            group not in known or known[group].offsets != cp.offsets or known[group].synced != cp.synced)
    }
    if changed:
        ensure_state_topic(target)
        write_state(target.conn, changed)
    return len(changed)


def _encode(offsets: Mapping[TopicPartitionKey, int]) -> list[list[Any]]:
    return [[topic, partition, offset] for (topic, partition), offset in sorted(offsets.items())]


def _decode(rows: list[list[Any]]) -> dict[TopicPartitionKey, int]:
    return {(str(t), int(p)): int(o) for t, p, o in rows}


def now_ms() -> int:
    """The time a checkpoint is taken."""
    return int(time.time() * 1000)
