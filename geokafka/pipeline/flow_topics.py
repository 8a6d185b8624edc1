"""A flow's topics on both sides: which source topics it replicates, their target topics created or grown,
and their configs and ACLs synced (each best effort where a failure must never stop replication)."""

from __future__ import annotations

import logging

from geokafka.control.acl_sync import sync_topic_acls
from geokafka.control.admin import ClusterAdmin
from geokafka.control.naming import ReplicationPolicy, policy_for
from geokafka.control.selection import select_topics
from geokafka.control.topic_sync import TopicConfigLook, TopicPair, ensure_target_topics, sync_topic_configs
from geokafka.topology.schema import Flow

log = logging.getLogger(__name__)


def selected_pairs(flow: Flow, source: ClusterAdmin) -> list[TopicPair]:
    """The selected source topics, each with its target topic's name and the source's partition count, as the
    source lists them now (nothing created)."""
    policy = policy_for(flow)
    current = source.topic_partitions()
    return [TopicPair(t, policy.remote_topic(flow.source, t), current[t]) for t in select_topics(current, flow)]


def target_pairs(flow: Flow, source: ClusterAdmin, target: ClusterAdmin) -> list[TopicPair]:
    """The selected source topics, each with its target topic (created, or grown when partitions are synced)."""
    names = {pair.source: pair.target for pair in selected_pairs(flow, source)}
    return ensure_target_topics(source, target, names, "partitions" in flow.sync, flow.config_exclude)


def selection_changed(flow: Flow, source: ClusterAdmin, pairs: list[TopicPair]) -> bool:
    """True when the source's topics that the flow selects (or their partition counts) are not ``pairs``'."""
    return {p.source: p.partitions for p in selected_pairs(flow, source)} != {p.source: p.partitions for p in pairs}


def sync_topic_metadata(name: str, flow: Flow, source: ClusterAdmin, target: ClusterAdmin,
                        pairs: list[TopicPair], looks: tuple[TopicConfigLook, TopicConfigLook] | None = None) -> None:
    """Topic configs and topic ACLs, source to target, as the flow's ``sync`` says (the configs read through
    ``looks`` when given: :func:`~geokafka.control.topic_sync.sync_topic_configs`); raises on a failure."""
    policy: ReplicationPolicy = policy_for(flow)
    if "configs" in flow.sync:
        for topic, changed in sync_topic_configs(source, target, pairs, flow.config_exclude, looks).items():
            log.info("flow %s: %s configs synced: %s", name, topic, sorted(changed))
    if "acls" in flow.sync:
        created = sync_topic_acls(source, target, [p.source for p in pairs],
                                  lambda topic: policy.remote_topic(flow.source, topic))
        if created:
            log.info("flow %s: %d topic ACLs copied to %s", name, len(created), flow.target)
