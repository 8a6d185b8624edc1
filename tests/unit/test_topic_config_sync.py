"""What the topic config sync sets and removes on a target topic, and what it leaves alone."""

from __future__ import annotations

import pytest

from geokafka.control.topic_sync import config_changes, target_configs
from geokafka.errors import TopologyError
from geokafka.topology import parse_topology

SOURCE = {"retention.ms": "86400000", "cleanup.policy": "delete", "min.insync.replicas": "2"}


def test_the_target_follows_the_source_except_what_describes_the_target_cluster() -> None:
    current = {"retention.ms": "1000", "segment.bytes": "1048576", "min.insync.replicas": "3"}
    changes = config_changes(SOURCE, current)
    assert changes == {"retention.ms": "86400000", "cleanup.policy": "delete",
                       "message.timestamp.type": "CreateTime", "segment.bytes": None}  # min.insync.replicas stays


def test_config_exclude_keeps_target_only_overrides_and_target_values() -> None:
    current = {"max.message.bytes": "8388608", "retention.ms": "1000"}
    assert config_changes(SOURCE, current, ["max\\.message\\.bytes"]).get("max.message.bytes", "kept") == "kept"
    assert "retention.ms" not in config_changes(SOURCE, current, ["retention\\..*"])
    assert "retention.ms" not in target_configs(SOURCE, ["retention\\.ms"])  # nor set when the topic is created
    # full match: a pattern naming a prefix only excludes nothing else
    assert config_changes(SOURCE, current, ["retention"])["retention.ms"] == "86400000"


def test_config_exclude_is_a_list_of_valid_regexes() -> None:
    base = "clusters: {a: {bootstrap: 'h:1'}, b: {bootstrap: 'h:2'}}\nflows:\n  f: {source: a, target: b, config_exclude: "
    assert parse_topology(base + "['max\\.message\\.bytes']}\n").flows["f"].config_exclude == ["max\\.message\\.bytes"]
    with pytest.raises(TopologyError):
        parse_topology(base + "['(']}\n")
