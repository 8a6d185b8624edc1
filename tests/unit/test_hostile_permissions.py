"""The pure part of `geokafka check`: which ACLs a flow needs, and the kafka-acls line for each."""

from __future__ import annotations

import pytest

from geokafka.control.permissions import (
    STATE_TOPIC,
    CheckResult,
    Permission,
    acl_command,
    principal_of,
    required_permissions,
)
from geokafka.errors import TopologyError
from geokafka.topology import parse_topology

TOPOLOGY = """\
clusters:
  east:
    bootstrap: 10.0.0.1:9092
    security: {protocol: SASL_SSL, sasl_mechanism: SCRAM-SHA-512, username: mirror-east, password: {env: P}}
  west: {bootstrap: 10.0.0.2:9092, security: {protocol: SSL, cert_file: /c.pem, key_file: /k.pem}}
  north: {bootstrap: 10.0.0.3:9092}
flows:
  orders: {source: east, target: west, topics: ["orders.*"], groups: ["billing"],
           sync: [configs, partitions, group-offsets]}
  plain: {source: east, target: north, rename: identity, sync: []}
"""


@pytest.fixture
def topology():  # type: ignore[no-untyped-def]
    return parse_topology(TOPOLOGY)


def _by_key(perms: list[Permission]) -> dict[str, Permission]:
    return {p.key: p for p in perms}


def test_principals_come_from_the_topology(topology) -> None:  # type: ignore[no-untyped-def]
    assert principal_of(topology.clusters["east"]) == "User:mirror-east"
    assert principal_of(topology.clusters["west"]) == "User:<CN of the client certificate>"
    assert principal_of(topology.clusters["north"]) == "User:<principal>"


def test_selected_topics_get_literal_acls_on_the_source(topology) -> None:  # type: ignore[no-untyped-def]
    perms = _by_key(required_permissions(topology, "orders", ["orders-eu"], None, ["billing"]))
    read = perms["source.topic.read:orders-eu"]
    assert (read.cluster, read.resource_type, read.name, read.operation, read.prefixed) == (
        "east", "Topic", "orders-eu", "Read", False)
    assert "source.topic.describe-configs:orders-eu" in perms
    assert acl_command(read, "10.0.0.1:9092") == (
        "kafka-acls --bootstrap-server 10.0.0.1:9092 --add --allow-principal User:mirror-east "
        "--operation Read --topic orders-eu"
    )


def test_prefix_naming_grants_the_target_a_prefix(topology) -> None:  # type: ignore[no-untyped-def]
    perms = _by_key(required_permissions(topology, "orders", ["orders-eu"], None, ["billing"]))
    create = perms["target.topic.create:east."]
    assert create.prefixed and create.cluster == "west"
    assert acl_command(create).endswith("--operation Create --topic east. --resource-pattern-type prefixed")
    assert {"target.topic.alter-configs:east.", "target.topic.alter:east.", "target.topic.write:east."} <= set(perms)


def test_transactional_ids_and_state_topic(topology) -> None:  # type: ignore[no-untyped-def]
    perms = _by_key(required_permissions(topology, "orders", ["orders-eu"]))
    txn = perms["target.txn.write"]
    assert (txn.resource_type, txn.name, txn.prefixed, txn.operation) == (
        "TransactionalId", "geokafka-orders-", True, "Write")
    assert "--transactional-id geokafka-orders- --resource-pattern-type prefixed" in acl_command(txn)
    for op in ("create", "describe", "read", "write"):
        p = perms[f"target.state.{op}"]
        assert p.name == STATE_TOPIC == "__geokafka_state" and not p.prefixed


def test_groups_only_when_group_offsets_are_synced(topology) -> None:  # type: ignore[no-untyped-def]
    with_groups = _by_key(required_permissions(topology, "orders", ["orders-eu"], None, ["billing"]))
    assert with_groups["target.group.read:billing"].operation == "Read"
    assert with_groups["source.group.describe:billing"].cluster == "east"
    plain = required_permissions(topology, "plain", ["t1"], ["t1"])
    assert not [p for p in plain if p.resource_type == "Group"]
    assert not [p for p in plain if p.operation in ("DescribeConfigs", "AlterConfigs", "Alter")]


def test_identity_naming_and_no_topics_fall_back_to_wildcards(topology) -> None:  # type: ignore[no-untyped-def]
    perms = _by_key(required_permissions(topology, "plain", None, None))
    assert "source.topic.read:*" in perms
    assert "--topic '*'" in acl_command(perms["source.topic.read:*"])
    assert "target.topic.write:*" in perms


def test_unknown_flow_is_a_topology_error(topology) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(TopologyError, match="unknown flow 'nope'"):
        required_permissions(topology, "nope")


def test_missing_result_carries_its_acl_and_ok_does_not(topology) -> None:  # type: ignore[no-untyped-def]
    p = required_permissions(topology, "orders", ["orders-eu"])[0]
    assert CheckResult(p, "OK").to_dict()["acl"] is None
    missing = CheckResult(p, "MISSING", "Broker: Topic authorization failed").to_dict()
    assert missing["acl"].startswith("kafka-acls ") and missing["status"] == "MISSING"


def test_cluster_resource_acl() -> None:
    p = Permission("x", "target", "west", "User:u", "Cluster", "kafka-cluster", "IdempotentWrite")
    assert acl_command(p) == ("kafka-acls --bootstrap-server <bootstrap> --add --allow-principal User:u "
                              "--operation IdempotentWrite --cluster")


@pytest.mark.parametrize("flow", ["orders", "plain"])
@pytest.mark.parametrize("selected", [True, False], ids=["names-known", "fallback-wildcards"])
def test_every_required_permission_has_a_probe_in_check(topology, flow: str, selected: bool) -> None:  # type: ignore[no-untyped-def]
    from geokafka.control.permission_check import probe_for

    perms = required_permissions(topology, flow, ["orders-eu"] if selected else None,
                                 ["orders-eu"] if selected and flow == "plain" else None,
                                 ["billing"] if selected else None)
    assert perms and [p.key for p in perms if probe_for(p.key) is None] == []
