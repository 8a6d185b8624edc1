"""Topic metadata follows the data: configs, partition counts and topic ACLs reach the target."""

from __future__ import annotations

import time

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    NewPartitions,
    ResourcePatternType,
    ResourceType,
)
from kafka_util import create_topic, produce, read_all
from pipeline_util import running_mirror, wait_for, with_flows

from geokafka.control.acl_sync import TopicAcl, describe_topic_acls
from geokafka.control.admin import ClusterAdmin

pytestmark = pytest.mark.integration

INTERVAL_S = 5.0


def _topic_config(conn, topic: str, name: str) -> str | None:  # type: ignore[no-untyped-def]
    return ClusterAdmin(conn).topic_configs(topic).get(name)


def _partitions(conn, topic: str) -> int:  # type: ignore[no-untyped-def]
    return ClusterAdmin(conn).topic_partitions().get(topic, 0)


def test_config_change_and_partition_increase_reach_the_target_within_two_intervals(
        base_topology, east, west, unique):
    topic = unique("grow")
    create_topic(east, topic, partitions=3, rf=3, config={"retention.ms": "86400000"})
    topology = with_flows(base_topology, grow={"source": "east", "target": "west", "topics": [topic],
                                               "sync": ["configs", "partitions"], "sync_interval_s": INTERVAL_S})
    now = int(time.time() * 1000)
    with running_mirror(topology):
        produce(east, topic, [{"key": b"k%d" % i, "value": b"v%d" % i, "partition": i % 3, "timestamp": now + i}
                              for i in range(300)])
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=5)) == 300, 120, "the first records")
        assert _topic_config(west, f"east.{topic}", "retention.ms") == "86400000"

        admin = AdminClient(east.librdkafka())
        ClusterAdmin(east).set_topic_configs(topic, {"retention.ms": "3600000"})
        admin.create_partitions([NewPartitions(topic, 5)])[topic].result(timeout=30)
        changed_at = time.monotonic()
        # both at once: the partition increase restarts the flow's query, which must not hold up the config
        wait_for(lambda: _topic_config(west, f"east.{topic}", "retention.ms") == "3600000"
                 and _partitions(west, f"east.{topic}") == 5, 2 * INTERVAL_S, "config and partitions on the target")
        print(f"config and partitions on the target after {time.monotonic() - changed_at:.1f}s")

        # the new partitions replicate too, numbers preserved
        produce(east, topic, [{"key": b"n%d" % i, "value": b"n%d" % i, "partition": 3 + i % 2, "timestamp": now + i}
                              for i in range(100)])
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=5)) == 400, 120, "records of new partitions")
    source, target = read_all(east, topic), read_all(west, f"east.{topic}")
    # in source order per partition (target offsets also hold the transactions' commit markers)
    assert [(r.partition, r.key, r.value) for r in target] == [(r.partition, r.key, r.value) for r in source]


def _acl(name: str, pattern: ResourcePatternType, principal: str, op: AclOperation,
         permission: AclPermissionType = AclPermissionType.ALLOW) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, principal, "*", op, permission)


def test_topic_acls_are_copied_read_only_and_renamed(base_topology, south, west, unique):
    topic = unique("acl")
    other = unique("not-mirrored")
    create_topic(south, topic, partitions=1)
    create_topic(south, other, partitions=1)
    prefix = topic[:6]  # "acl-xx": covers the mirrored topic
    src = AdminClient(south.librdkafka())
    bindings = [
        _acl(topic, ResourcePatternType.LITERAL, "User:alice", AclOperation.ALL),
        _acl(topic, ResourcePatternType.LITERAL, "User:bob", AclOperation.WRITE),
        _acl(topic, ResourcePatternType.LITERAL, "User:bob", AclOperation.DESCRIBE),
        _acl(topic, ResourcePatternType.LITERAL, "User:carol", AclOperation.READ, AclPermissionType.DENY),
        _acl(prefix, ResourcePatternType.PREFIXED, "User:dave", AclOperation.READ),
        _acl(prefix, ResourcePatternType.PREFIXED, "User:dave", AclOperation.CREATE),
        _acl(other, ResourcePatternType.LITERAL, "User:eve", AclOperation.READ),
    ]
    for future in src.create_acls(bindings).values():
        future.result(timeout=30)
    mirror_name, mirror_prefix = f"south.{topic}", f"south.{prefix}"
    expected = {
        TopicAcl(mirror_name, "LITERAL", "User:alice", "*", "READ", "ALLOW"),
        TopicAcl(mirror_name, "LITERAL", "User:alice", "*", "DESCRIBE", "ALLOW"),
        TopicAcl(mirror_name, "LITERAL", "User:bob", "*", "DESCRIBE", "ALLOW"),
        TopicAcl(mirror_name, "LITERAL", "User:carol", "*", "READ", "DENY"),
        TopicAcl(mirror_prefix, "PREFIXED", "User:dave", "*", "READ", "ALLOW"),
    }
    topology = with_flows(base_topology, acl={"source": "south", "target": "west", "topics": [topic],
                                              "sync": ["acls"], "sync_interval_s": INTERVAL_S})

    def copied() -> set[TopicAcl]:
        return {a for a in describe_topic_acls(ClusterAdmin(west)) or []
                if a.name in (mirror_name, mirror_prefix) or a.principal == "User:eve"}

    with running_mirror(topology):
        wait_for(lambda: copied() == expected, 60, "the topic ACLs on the target")
        # a grant made while the flow runs arrives within two sync intervals
        src.create_acls([_acl(topic, ResourcePatternType.LITERAL, "User:frank", AclOperation.READ)])[
            _acl(topic, ResourcePatternType.LITERAL, "User:frank", AclOperation.READ)].result(timeout=30)
        wait_for(lambda: TopicAcl(mirror_name, "LITERAL", "User:frank", "*", "READ", "ALLOW") in copied(),
                 2 * INTERVAL_S + 1, "a new grant on the target")
    final = copied()
    assert not any(a.operation in ("WRITE", "CREATE", "ALTER", "DELETE", "ALL", "ALTER_CONFIGS")
                   and a.permission == "ALLOW" for a in final), final
    assert not any(a.principal == "User:eve" for a in final)
