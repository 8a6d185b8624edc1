"""Replication policies: how a topic is named on the target, and how a name is read back."""

from __future__ import annotations

from typing import Any

import pytest

from geokafka.control.naming import IdentityPolicy, PrefixPolicy, ReplicationPolicy, policy_for, source_topic_of
from geokafka.topology.schema import Flow


def flow(**overrides: Any) -> Flow:
    return Flow.model_validate({"source": "east", "target": "west", **overrides})


@pytest.mark.parametrize(("topic", "remote"), [
    ("orders", "east.orders"),
    ("orders.v1", "east.orders.v1"),  # dots in the topic itself
    ("payments-eu_2", "east.payments-eu_2"),
    ("west.orders", "east.west.orders"),  # second hop: the prefixes stack
])
def test_prefix_round_trip(topic: str, remote: str) -> None:
    policy = PrefixPolicy()
    assert policy.remote_topic("east", topic) == remote
    assert policy.topic_source(remote) == "east"
    assert policy.upstream_topic(remote) == topic


@pytest.mark.parametrize(("topic", "source", "upstream"), [
    ("orders", None, None),  # a local topic says nothing about an origin
    (".orders", None, None),  # no cluster before the separator
    ("east.", "east", None),  # a cluster but no topic after it
    ("east.orders", "east", "orders"),
])
def test_prefix_reading_names(topic: str, source: str | None, upstream: str | None) -> None:
    policy = PrefixPolicy()
    assert policy.topic_source(topic) == source
    assert policy.upstream_topic(topic) == upstream


def test_prefix_with_a_custom_separator() -> None:
    policy = PrefixPolicy("__")
    assert policy.remote_topic("east", "orders.v1") == "east__orders.v1"
    assert policy.topic_source("east__orders.v1") == "east"
    assert policy.upstream_topic("east__orders.v1") == "orders.v1"
    assert policy.topic_source("east.orders") is None


@pytest.mark.parametrize("topic", ["orders", "east.orders", "a.b.c"])
def test_identity_keeps_names_and_reads_no_origin_from_them(topic: str) -> None:
    policy = IdentityPolicy()
    assert policy.remote_topic("east", topic) == topic
    assert policy.topic_source(topic) is None
    assert policy.upstream_topic(topic) is None


def test_both_policies_satisfy_the_protocol() -> None:
    policies: list[ReplicationPolicy] = [PrefixPolicy(), IdentityPolicy()]
    assert [p.remote_topic("east", "t") for p in policies] == ["east.t", "t"]


def test_policy_for_follows_the_flow() -> None:
    prefix = policy_for(flow(separator="_"))
    assert isinstance(prefix, PrefixPolicy) and prefix.separator == "_"
    assert prefix.remote_topic("east", "orders") == "east_orders"
    assert isinstance(policy_for(flow(rename="identity")), IdentityPolicy)


def test_source_topic_of_a_prefixed_target_topic() -> None:
    assert source_topic_of(flow(), "east.orders") == "orders"
    assert source_topic_of(flow(), "east.orders.v1") == "orders.v1"
    assert source_topic_of(flow(separator="-"), "east-orders") == "orders"


def test_source_topic_of_an_identity_target_topic() -> None:
    assert source_topic_of(flow(rename="identity"), "orders") == "orders"


@pytest.mark.parametrize("target_topic", ["orders", "south.orders", "west.orders"])
def test_source_topic_of_refuses_topics_of_other_origins(target_topic: str) -> None:
    with pytest.raises(ValueError, match="is not a topic of flow east->west"):
        source_topic_of(flow(), target_topic)
