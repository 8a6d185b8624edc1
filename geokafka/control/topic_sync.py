"""Target topics: created like their source before data arrives, and kept in step.

Partition counts match (partition numbers are preserved), and topic configs are copied,
except the few that describe the target cluster rather than the data
(:data:`NOT_REPLICATED_CONFIGS`) and those a flow's ``config_exclude`` names. The sync makes a
target topic's other configs equal the source's: it sets what differs and removes overrides
the source does not have.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from geokafka.control.admin import ClusterAdmin, TopicInfo
from geokafka.errors import PartitionMismatchError

# Configs that belong to the target cluster's own layout, or that would break fidelity.
NOT_REPLICATED_CONFIGS = frozenset({
    "min.insync.replicas",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
    "unclean.leader.election.enable",
    "message.timestamp.type",
    "remote.storage.enable",
})
# Record timestamps are written by geokafka and must be kept as written.
FORCED_TARGET_CONFIGS = {"message.timestamp.type": "CreateTime"}


def _excluded(name: str, exclude: Sequence[str]) -> bool:
    return name in NOT_REPLICATED_CONFIGS or any(re.fullmatch(pattern, name) for pattern in exclude)


def target_configs(source_configs: dict[str, str], exclude: Sequence[str] = ()) -> dict[str, str]:
    """The configs a target topic gets from its source's configs."""
    configs = {k: v for k, v in source_configs.items() if not _excluded(k, exclude)}
    configs.update(FORCED_TARGET_CONFIGS)
    return configs


def config_changes(source_configs: dict[str, str], current: dict[str, str],
                   exclude: Sequence[str] = ()) -> dict[str, str | None]:
    """What the sync sets (value) or removes (None) on a target topic (pure)."""
    wanted = target_configs(source_configs, exclude)
    changes: dict[str, str | None] = {k: v for k, v in wanted.items() if current.get(k) != v}
    changes.update({k: None for k in current if k not in wanted and not _excluded(k, exclude)})
    return changes


@dataclass(frozen=True)
class TopicPair:
    """A source topic and the target topic it is replicated to."""

    source: str
    target: str
    partitions: int


def ensure_target_topic(
    source: ClusterAdmin, target: ClusterAdmin, source_topic: str, target_topic: str, grow: bool,
    config_exclude: Sequence[str] = (),
) -> TopicPair:
    """Create the target topic like the source (or grow it); return the pair.

    Raises :class:`PartitionMismatchError` when the target has fewer partitions and ``grow``
    (the flow's ``partitions`` sync) is off: partition p must exist on both sides.
    """
    info: TopicInfo = source.describe_topic(source_topic)
    existing = target.topic_partitions().get(target_topic)
    if existing is None:
        rf = min(info.replication_factor, max(1, target.broker_count()), 3)
        target.create_topic(target_topic, info.partitions, rf, target_configs(info.configs, config_exclude))
    elif existing < info.partitions:
        if not grow:
            raise PartitionMismatchError(
                f"target topic {target_topic} on {target.conn.name} has {existing} partitions, "
                f"source {source_topic} on {source.conn.name} has {info.partitions}; "
                "add partitions or enable `sync: [partitions]`"
            )
        target.add_partitions(target_topic, info.partitions)
    return TopicPair(source_topic, target_topic, info.partitions)


def sync_topic_configs(source: ClusterAdmin, target: ClusterAdmin, pair: TopicPair,
                       config_exclude: Sequence[str] = ()) -> dict[str, str | None]:
    """Bring the target topic's configs in line with the source; return what changed."""
    changes = config_changes(source.topic_configs(pair.source), target.topic_configs(pair.target), config_exclude)
    if changes:
        target.set_topic_configs(pair.target, changes)
    return changes
