"""Checkpoints: what a group sync saw and wrote, kept on the target for when the source is gone.

A failover cannot ask a dead source where its groups were. Every group sync therefore stores
the source offsets it translated as a :class:`~geokafka.control.state_records.GroupCheckpoint`
in the target's state topic (MM2 keeps the same in ``<source>.checkpoints.internal``); failover
re-translates them with the final index, so partitions that caught up after the last sync
still land exactly.

The checkpoint also keeps the target offsets the sync itself committed (``synced``). That is
how a sync tells its own position from one that consumers on the target reached: a target
group still where the sync left it may follow its source group backwards (a reset for
reprocessing at the source); one that consumers on the target moved is theirs (MM2 cannot
tell the two apart and never rewinds: KAFKA-14666). Only changed checkpoints are written.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import closing, contextmanager

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.state_records import STATE_TOPIC, GroupCheckpoint
from geokafka.control.state_store import KafkaStateStore, StateSnapshot, StateStore, ensure_state_topic


def read_target_state(target: ClusterAdmin, store: StateStore) -> StateSnapshot:
    """The target's state (replication progress, checkpoints) read by its ``store``; empty before the pipeline
    created it."""
    if STATE_TOPIC not in target.topic_partitions():
        return StateSnapshot()
    return store.read()


@contextmanager
def target_store(target: ClusterConnection, store: StateStore | None) -> Iterator[StateStore]:
    """``store`` (the caller's, left open), or a store of ``target``'s of the block's own, closed at its end."""
    if store is not None:
        yield store
        return
    with closing(KafkaStateStore(target)) as own:
        yield own


def load_checkpoints(target: ClusterConnection, flow: str, store: StateStore | None = None) -> dict[str, GroupCheckpoint]:
    """Every checkpoint of ``flow`` stored on its target (read by ``store``, or a store of its own, closed after)."""
    with target_store(target, store) as reader:
        return read_target_state(ClusterAdmin(target), reader).checkpoints(flow)


def store_checkpoints(
    target: ClusterAdmin,
    store: StateStore,
    checkpoints: Mapping[str, GroupCheckpoint],
    known: Mapping[str, GroupCheckpoint],
) -> int:
    """Write the checkpoints that differ from ``known`` (in offsets or in what was synced); returns how many."""
    changed = [
        cp for group, cp in checkpoints.items()
        if (cp.offsets or cp.synced) and (
            group not in known or known[group].offsets != cp.offsets or known[group].synced != cp.synced)
    ]
    if changed:
        ensure_state_topic(target, store)
        store.write(*changed)
    return len(changed)


def delete_checkpoints(store: StateStore, flow: str, groups: list[str]) -> None:
    """Tombstones for the checkpoints of ``groups``: compaction removes them from the state topic."""
    store.delete(*(GroupCheckpoint.key_of(flow, g) for g in groups))


def now_ms() -> int:
    """The time a checkpoint is taken."""
    return int(time.time() * 1000)
