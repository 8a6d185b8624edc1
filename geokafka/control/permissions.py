"""What a flow needs from its clusters, and the exact ACL that grants each need.

The pure part (:func:`required_permissions`, :func:`acl_command`) knows nothing about Kafka
clients; :func:`check_flow` tries each need on the real clusters with the flow's own
credentials and says OK, MISSING (with the ACL) or UNKNOWN (could not be tried, with why).
Nothing it does is visible to consumers: it writes only inside an aborted transaction and to
a throwaway probe topic it deletes again.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from geokafka import contract
from geokafka.control.state_records import STATE_TOPIC
from geokafka.topology.schema import Cluster, Flow, Topology

ResourceType = Literal["Topic", "Group", "TransactionalId", "Cluster"]
Status = Literal["OK", "MISSING", "UNKNOWN"]

_RESOURCE_FLAG = {"Topic": "--topic", "Group": "--group", "TransactionalId": "--transactional-id", "Cluster": "--cluster"}


@dataclass(frozen=True)
class Permission:
    """One ACL a flow needs: ``operation`` on ``resource_type`` ``name`` of cluster ``cluster``."""

    key: str  # stable id of the check, e.g. "source.topic.read"
    role: Literal["source", "target"]
    cluster: str
    principal: str
    resource_type: ResourceType
    name: str  # "kafka-cluster" for the Cluster resource
    operation: str  # Kafka ACL operation: Read, Write, Create, Describe, DescribeConfigs, AlterConfigs, Alter
    prefixed: bool = False
    why: str = ""


@dataclass
class CheckResult:
    """The outcome of trying one permission."""

    permission: Permission
    status: Status
    detail: str = ""

    def to_dict(self) -> dict[str, Any]:
        p = self.permission
        return {
            "check": p.key, "cluster": p.cluster, "resource": f"{p.resource_type}:{p.name}{'*' if p.prefixed else ''}",
            "operation": p.operation, "status": self.status, "detail": self.detail,
            "acl": None if self.status == "OK" else acl_command(p),
        }


@dataclass
class CheckReport:
    """Every permission of one flow and what the clusters said."""

    flow: str
    source: str
    target: str
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.status == "OK" for r in self.results)

    def to_dict(self) -> dict[str, Any]:
        return {"flow": self.flow, "source": self.source, "target": self.target, "ok": self.ok,
                "checks": [r.to_dict() for r in self.results]}


def principal_of(cluster: Cluster) -> str:
    """The Kafka principal the cluster will see: ``User:<sasl username>``, else a placeholder."""
    if cluster.security.username:
        return f"User:{cluster.security.username}"
    if cluster.security.cert_file:
        return "User:<CN of the client certificate>"
    return "User:<principal>"


def transactional_id_prefix(flow_name: str) -> str:
    """Every transactional id of a flow starts with this (the contract's, see :mod:`geokafka.contract`)."""
    return contract.transactional_id_prefix(flow_name)


def acl_command(p: Permission, bootstrap: str = "<bootstrap>") -> str:
    """The ``kafka-acls`` command line that grants ``p``."""
    parts = ["kafka-acls", "--bootstrap-server", bootstrap, "--add", "--allow-principal", p.principal,
             "--operation", p.operation]
    if p.resource_type == "Cluster":
        parts.append("--cluster")
    else:
        parts += [_RESOURCE_FLAG[p.resource_type], _quote(p.name)]
    if p.prefixed:
        parts += ["--resource-pattern-type", "prefixed"]
    return " ".join(parts)


def _quote(name: str) -> str:
    return f"'{name}'" if any(c in name for c in "*?[]$ ") else name


def required_permissions(
    topology: Topology, flow_name: str, source_topics: list[str] | None = None,
    target_topics: list[str] | None = None, groups: list[str] | None = None,
) -> list[Permission]:
    """The least-privilege ACLs the flow needs, in the order `geokafka check` tries them.

    ``source_topics``/``target_topics``/``groups``: the names selected now; when None (the
    source could not be listed) the ACLs fall back to prefixes/wildcards.
    """
    flow: Flow = topology.flow(flow_name)
    src, tgt = topology.clusters[flow.source], topology.clusters[flow.target]
    sp, tp = principal_of(src), principal_of(tgt)
    out: list[Permission] = []

    def add(key: str, role: Literal["source", "target"], rtype: ResourceType, name: str, op: str,
            prefixed: bool = False, why: str = "") -> None:
        cluster, principal = (flow.source, sp) if role == "source" else (flow.target, tp)
        out.append(Permission(key, role, cluster, principal, rtype, name, op, prefixed, why))

    src_names = source_topics if source_topics else ["*"]
    for t in src_names:
        add(f"source.topic.describe:{t}", "source", "Topic", t, "Describe", why="list and describe selected topics")
        add(f"source.topic.read:{t}", "source", "Topic", t, "Read", why="read records")
        if "configs" in flow.sync:
            add(f"source.topic.describe-configs:{t}", "source", "Topic", t, "DescribeConfigs",
                why="copy topic configs to the target")
    if flow.rename == "prefix" and target_topics is None:
        tgt_names, tgt_prefixed = [f"{flow.source}{flow.separator}"], True
    else:
        tgt_names, tgt_prefixed = (target_topics or ["*"]), False
    for t in tgt_names:
        add(f"target.topic.create:{t}", "target", "Topic", t, "Create", tgt_prefixed, "create target topics")
        add(f"target.topic.describe:{t}", "target", "Topic", t, "Describe", tgt_prefixed, "compare partitions")
        add(f"target.topic.write:{t}", "target", "Topic", t, "Write", tgt_prefixed, "write records")
        if "configs" in flow.sync:
            add(f"target.topic.alter-configs:{t}", "target", "Topic", t, "AlterConfigs", tgt_prefixed,
                "apply source configs")
        if "partitions" in flow.sync:
            add(f"target.topic.alter:{t}", "target", "Topic", t, "Alter", tgt_prefixed, "grow partitions")
    txn = transactional_id_prefix(flow_name)
    add("target.txn.write", "target", "TransactionalId", txn, "Write", True, "exactly-once transactions")
    add("target.txn.describe", "target", "TransactionalId", txn, "Describe", True, "fence dead writers")
    for op, why in (("Create", "create the state topic once"), ("Describe", "find the state topic"),
                    ("Read", "read progress and flow state"), ("Write", "commit progress with each batch")):
        add(f"target.state.{op.lower()}", "target", "Topic", STATE_TOPIC, op, why=why)
    if "acls" in flow.sync:
        add("source.cluster.describe-acls", "source", "Cluster", "kafka-cluster", "Describe",
            why="read topic ACLs to copy (no authorizer: nothing to copy)")
        add("target.cluster.alter-acls", "target", "Cluster", "kafka-cluster", "Alter",
            why="create the copied topic ACLs")
    if "group-offsets" in flow.sync:
        names = groups if groups else ["*"]
        for g in names:
            add(f"source.group.describe:{g}", "source", "Group", g, "Describe", why="read committed offsets")
            add(f"target.group.read:{g}", "target", "Group", g, "Read", why="commit translated offsets")
            add(f"target.group.describe:{g}", "target", "Group", g, "Describe", why="check the group is empty")
    return out
