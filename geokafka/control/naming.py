"""Replication policies: how a replicated topic is named on the target, in one place.

As MirrorMaker 2's ``ReplicationPolicy``: three methods, everything else derived.
"""

from __future__ import annotations

from typing import Protocol

from geokafka.topology.schema import Flow


class ReplicationPolicy(Protocol):
    """Naming of remote topics."""

    def remote_topic(self, source_cluster: str, topic: str) -> str:
        """Name on the target of ``topic`` replicated from ``source_cluster``."""
        ...

    def topic_source(self, topic: str) -> str | None:
        """The cluster a remote topic came from, if the name says so."""
        ...

    def upstream_topic(self, topic: str) -> str | None:
        """The topic's name on the cluster it came from, if the name says so."""
        ...


class PrefixPolicy:
    """``<source><sep><topic>``: safe for active/active, each origin gets its own topic."""

    def __init__(self, separator: str = ".") -> None:
        self.separator = separator

    def remote_topic(self, source_cluster: str, topic: str) -> str:
        return f"{source_cluster}{self.separator}{topic}"

    def topic_source(self, topic: str) -> str | None:
        head, sep, _ = topic.partition(self.separator)
        return head if sep and head else None

    def upstream_topic(self, topic: str) -> str | None:
        head, sep, rest = topic.partition(self.separator)
        return rest if sep and head and rest else None


class IdentityPolicy:
    """Same name on both sides; origins are told apart by provenance headers only."""

    def remote_topic(self, source_cluster: str, topic: str) -> str:
        return topic

    def topic_source(self, topic: str) -> str | None:
        return None

    def upstream_topic(self, topic: str) -> str | None:
        return None


def policy_for(flow: Flow) -> ReplicationPolicy:
    """The policy a flow declares with ``rename``."""
    return PrefixPolicy(flow.separator) if flow.rename == "prefix" else IdentityPolicy()


def source_topic_of(flow: Flow, target_topic: str) -> str:
    """The source topic that ``target_topic`` of this flow mirrors."""
    policy = policy_for(flow)
    if isinstance(policy, IdentityPolicy):
        return target_topic
    if policy.topic_source(target_topic) != flow.source:
        raise ValueError(f"{target_topic!r} is not a topic of flow {flow.source}->{flow.target}")
    return policy.upstream_topic(target_topic) or target_topic
