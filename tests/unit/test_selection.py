"""Which topics and groups a flow replicates."""

from __future__ import annotations

from typing import Any

import pytest

from geokafka.control.selection import is_internal_topic, select_groups, select_topics
from geokafka.topology.schema import Flow

INTERNAL = [
    "__consumer_offsets",
    "__transaction_state",
    "__share_group_state",
    "__cluster_metadata",
    "__geokafka_state",
    "__geokafka-offsets.west",
    "_schemas",
    "_confluent-license",
    "connect-offsets",
    "connect-configs",
    "connect-status",
    "app-store-changelog",
    "app-x-repartition",
    "mm2-offset-syncs.west.internal",
    "west.checkpoints.internal",
    "heartbeats.internal",
]

USER = ["orders", "payments.eu", "payments-eu", "_orders", "connect", "changelog", "my-connect-offsets", "geokafka"]


def flow(**overrides: Any) -> Flow:
    return Flow.model_validate({"source": "east", "target": "west", **overrides})


@pytest.mark.parametrize("topic", INTERNAL)
def test_internal_topics_are_recognised(topic: str) -> None:
    assert is_internal_topic(topic)


@pytest.mark.parametrize("topic", USER)
def test_user_topics_are_not_internal(topic: str) -> None:
    assert not is_internal_topic(topic)


@pytest.mark.parametrize("include", [[".*"], ["_.*", "__.*", ".*-changelog", ".*"], INTERNAL])
@pytest.mark.parametrize("rename", ["prefix", "identity"])
def test_internal_topics_are_never_selected_whatever_the_regex(include: list[str], rename: str) -> None:
    selected = select_topics(INTERNAL + USER, flow(topics=include, rename=rename))
    assert not set(selected) & set(INTERNAL)


def test_include_regexes_match_the_whole_name() -> None:
    topics = ["orders", "orders-eu", "old-orders", "payments.eu", "paymentsXeu"]
    assert select_topics(topics, flow(topics=["orders"])) == ["orders"]
    assert select_topics(topics, flow(topics=["orders.*"])) == ["orders", "orders-eu"]
    assert select_topics(topics, flow(topics=["payments\\..*"])) == ["payments.eu"]


def test_exclude_wins_over_include() -> None:
    topics = ["orders", "orders-test", "payments", "payments-test", "audit"]
    chosen = select_topics(topics, flow(topics=["orders.*", "payments.*"], exclude=[".*-test"]))
    assert chosen == ["orders", "payments"]


def test_several_exclude_regexes() -> None:
    topics = ["a", "b", "c", "tmp-1"]
    assert select_topics(topics, flow(exclude=["b", "tmp-.*"])) == ["a", "c"]


def test_result_is_sorted() -> None:
    assert select_topics(["zeta", "alpha", "mid"], flow()) == ["alpha", "mid", "zeta"]


def test_topics_that_came_from_the_target_are_not_sent_back() -> None:
    # On east, flow west->east created west.orders; flow east->west must not copy it back.
    on_east = ["orders", "west.orders", "west.payments.eu", "south.orders", "westward"]
    assert select_topics(on_east, flow()) == ["orders", "south.orders", "westward"]


def test_topics_that_came_from_the_target_with_a_custom_separator() -> None:
    on_east = ["orders", "west_orders", "west.orders"]
    assert select_topics(on_east, flow(separator="_")) == ["orders", "west.orders"]


def test_identity_naming_cannot_tell_origins_apart_by_name() -> None:
    # With identity naming the origin is in the gk.origin header, not in the name.
    assert select_topics(["orders", "west.orders"], flow(rename="identity")) == ["orders", "west.orders"]


def test_groups_follow_include_and_exclude() -> None:
    groups = ["billing", "billing-test", "shipping", "geokafka-east-to-west", "geokafka"]
    assert select_groups(groups, flow(groups=[".*"], exclude_groups=[".*-test"])) == ["billing", "shipping"]
    assert select_groups(groups, flow(groups=["bill.*"])) == ["billing", "billing-test"]


def test_no_group_follows_by_default() -> None:
    assert select_groups(["billing", "shipping"], flow()) == []


def test_geokafka_groups_never_follow() -> None:
    assert select_groups(["geokafka-mirror", "geokafka"], flow(groups=["geokafka.*"])) == []
