"""Target topics: created like their source before data arrives, and kept in step.

Partition counts match (partition numbers are preserved), and topic configs are copied,
except the few that describe the target cluster rather than the data
(:data:`NOT_REPLICATED_CONFIGS`) and those a flow's ``config_exclude`` names. The sync makes a
target topic's other configs equal the source's: it sets what differs and removes overrides
the source does not have.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from confluent_kafka.admin import NewTopic

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


def ensure_target_topics(
    source: ClusterAdmin, target: ClusterAdmin, names: Mapping[str, str], grow: bool,
    config_exclude: Sequence[str] = (),
) -> list[TopicPair]:
    """Create each target topic of ``names`` (source topic -> target topic) like its source, or grow it; return
    the pairs, in the order of ``names``. One request of each kind for all of them (source metadata and configs,
    target metadata, CreateTopics, CreatePartitions) and one wait for all their leaders: the cost of a start
    follows the round trips, not the number of topics.

    Raises :class:`PartitionMismatchError` when a target has fewer partitions and ``grow`` (the flow's
    ``partitions`` sync) is off: partition p must exist on both sides.
    """
    if not names:
        return []
    infos: dict[str, TopicInfo] = source.describe_topics(list(names))
    existing = target.topic_partitions()
    missing: list[NewTopic] = []
    growing: dict[str, int] = {}
    brokers = None
    for source_topic, target_topic in names.items():
        info = infos[source_topic]
        have = existing.get(target_topic)
        if have is None:
            brokers = target.broker_count() if brokers is None else brokers
            rf = min(info.replication_factor, max(1, brokers), 3)
            missing.append(NewTopic(target_topic, info.partitions, rf,
                                    config=target_configs(info.configs, config_exclude)))
        elif have < info.partitions:
            if not grow:
                raise PartitionMismatchError(
                    f"target topic {target_topic} on {target.conn.name} has {have} partitions, "
                    f"source {source_topic} on {source.conn.name} has {info.partitions}; "
                    "add partitions or enable `sync: [partitions]`"
                )
            growing[target_topic] = info.partitions
    target.create_topics(missing)
    target.grow_topics(growing)
    return [TopicPair(s, t, infos[s].partitions) for s, t in names.items()]


class TopicConfigLook(Protocol):
    """Where a sync reads topic configs: a :class:`ClusterAdmin`, or a cheaper look at the same cluster that
    answers alike."""

    def many_topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        """topic -> the configs set on the topic itself (not inherited from the broker)."""


def sync_topic_configs(source: ClusterAdmin, target: ClusterAdmin, pairs: Sequence[TopicPair],
                       config_exclude: Sequence[str] = (),
                       looks: tuple[TopicConfigLook, TopicConfigLook] | None = None) -> dict[str, dict[str, str | None]]:
    """Bring each target topic's configs in line with its source's; return what changed, by target topic.
    One DescribeConfigs request per side for all of them (through ``looks``, the source's and the target's, when
    given), an alter only where something differs."""
    source_look, target_look = looks or (source, target)
    wanted = source_look.many_topic_configs([p.source for p in pairs])
    current = target_look.many_topic_configs([p.target for p in pairs])
    changed: dict[str, dict[str, str | None]] = {}
    for pair in pairs:
        changes = config_changes(wanted[pair.source], current[pair.target], config_exclude)
        if changes:
            target.set_topic_configs(pair.target, changes)
            changed[pair.target] = changes
    return changed
