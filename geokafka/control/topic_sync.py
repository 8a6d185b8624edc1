"""Target topics: created like their source before data arrives, and kept in step.

Partition counts match (partition numbers are preserved), and topic configs are copied,
except the few that describe the target cluster rather than the data.
"""

from __future__ import annotations

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


def target_configs(source_configs: dict[str, str]) -> dict[str, str]:
    """The configs a target topic gets from its source's configs."""
    configs = {k: v for k, v in source_configs.items() if k not in NOT_REPLICATED_CONFIGS}
    configs.update(FORCED_TARGET_CONFIGS)
    return configs


@dataclass(frozen=True)
class TopicPair:
    """A source topic and the target topic it is replicated to."""

    source: str
    target: str
    partitions: int


def ensure_target_topic(
    source: ClusterAdmin, target: ClusterAdmin, source_topic: str, target_topic: str, grow: bool
) -> TopicPair:
    """Create the target topic like the source (or grow it); return the pair.

    Raises :class:`PartitionMismatchError` when the target has fewer partitions and ``grow``
    (the flow's ``partitions`` sync) is off: partition p must exist on both sides.
    """
    info: TopicInfo = source.describe_topic(source_topic)
    existing = target.topic_partitions().get(target_topic)
    if existing is None:
        rf = min(info.replication_factor, max(1, target.broker_count()), 3)
        target.create_topic(target_topic, info.partitions, rf, target_configs(info.configs))
    elif existing < info.partitions:
        if not grow:
            raise PartitionMismatchError(
                f"target topic {target_topic} on {target.conn.name} has {existing} partitions, "
                f"source {source_topic} on {source.conn.name} has {info.partitions}; "
                "add partitions or enable `sync: [partitions]`"
            )
        target.add_partitions(target_topic, info.partitions)
    return TopicPair(source_topic, target_topic, info.partitions)


def sync_topic_configs(source: ClusterAdmin, target: ClusterAdmin, pair: TopicPair) -> dict[str, str | None]:
    """Bring the target topic's configs in line with the source; return what changed."""
    wanted = target_configs(source.topic_configs(pair.source))
    current = target.topic_configs(pair.target)
    changes: dict[str, str | None] = {k: v for k, v in wanted.items() if current.get(k) != v}
    changes.update({k: None for k in current if k not in wanted and k not in NOT_REPLICATED_CONFIGS})
    if changes:
        target.set_topic_configs(pair.target, changes)
    return changes
