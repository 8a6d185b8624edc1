"""Checkpoints: the source offsets of synced groups, kept on the target for when the source is gone.

A failover cannot ask a dead source where its groups were. Every group sync therefore stores
the source offsets it translated under ``checkpoint/<flow>/<group>`` in the target's state
topic (MM2 keeps the same in ``<source>.checkpoints.internal``); failover re-translates them
with the final index, so partitions that caught up after the last sync still land exactly.
Only groups whose offsets changed are written.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.state_store import STATE_TOPIC, StateSnapshot, ensure_state_topic, read_state, write_state

TopicPartitionKey = tuple[str, int]


@dataclass(frozen=True)
class Checkpoint:
    """The committed source offsets of one group, as last seen by a sync."""

    group: str
    offsets: dict[TopicPartitionKey, int]
    at_ms: int


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
            out[group] = Checkpoint(group, _decode(value), int(value.get("at_ms", 0)))
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
    offsets: Mapping[str, Mapping[TopicPartitionKey, int]],
    known: Mapping[str, Checkpoint],
) -> int:
    """Write the checkpoints of groups whose offsets differ from ``known``; returns how many."""
    now = int(time.time() * 1000)
    changed: dict[str, dict[str, Any] | None] = {
        checkpoint_key(flow, group): {"offsets": _encode(by_tp), "at_ms": now}
        for group, by_tp in offsets.items()
        if by_tp and (group not in known or known[group].offsets != dict(by_tp))
    }
    if changed:
        ensure_state_topic(target)
        write_state(target.conn, changed)
    return len(changed)


def _encode(offsets: Mapping[TopicPartitionKey, int]) -> list[list[Any]]:
    return [[topic, partition, offset] for (topic, partition), offset in sorted(offsets.items())]


def _decode(value: Mapping[str, Any]) -> dict[TopicPartitionKey, int]:
    return {(str(t), int(p)): int(o) for t, p, o in value.get("offsets", [])}
