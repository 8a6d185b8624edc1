"""Which topics and groups a flow replicates. Internal topics never, whatever the regexes say."""

from __future__ import annotations

import re
from collections.abc import Iterable

from geokafka.control.naming import policy_for
from geokafka.topology.schema import Flow

STATE_TOPIC_PREFIX = "__geokafka"

_INTERNAL = re.compile(
    r"^(__.*|_schemas|_confluent.*|connect-.*|.*-changelog|.*-repartition|mm2-.*|.*\.internal|.*[.-]checkpoints\.internal)$"
)


def is_internal_topic(topic: str) -> bool:
    """Kafka, Connect, Kafka Streams, Schema Registry, MM2 and geokafka internals."""
    return bool(_INTERNAL.match(topic)) or topic.startswith(STATE_TOPIC_PREFIX)


def _full_match(patterns: Iterable[str], name: str) -> bool:
    return any(re.fullmatch(p, name) for p in patterns)


def select_topics(topics: Iterable[str], flow: Flow) -> list[str]:
    """The source topics ``flow`` replicates, sorted.

    A topic is selected when it fully matches an include regex, matches no exclude regex,
    is not internal, and was not itself replicated from the flow's target (that would send
    the target's records back under a new name).
    """
    policy = policy_for(flow)
    chosen = []
    for topic in topics:
        if is_internal_topic(topic) or not _full_match(flow.topics, topic):
            continue
        if _full_match(flow.exclude, topic) or policy.topic_source(topic) == flow.target:
            continue
        chosen.append(topic)
    return sorted(chosen)


def select_groups(groups: Iterable[str], flow: Flow) -> list[str]:
    """Consumer groups whose offsets follow the data, sorted."""
    return sorted(
        g for g in groups
        if _full_match(flow.groups, g) and not _full_match(flow.exclude_groups, g) and not g.startswith("geokafka")
    )
