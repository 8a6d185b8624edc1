"""What a flow needs from its clusters, and the exact ACL that grants each need.

The pure part (:func:`required_permissions`, :func:`acl_command`) knows nothing about Kafka
clients; :func:`check_flow` tries each need on the real clusters with the flow's own
credentials and says OK, MISSING (with the ACL) or UNKNOWN (could not be tried, with why).
Nothing it does is visible to consumers: it writes only inside an aborted transaction and to
a throwaway probe topic it deletes again.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field
from typing import Any, Literal

from geokafka.control.selection import STATE_TOPIC_PREFIX
from geokafka.errors import AuthError, GeokafkaError
from geokafka.topology.schema import Cluster, Flow, Topology

STATE_TOPIC = f"{STATE_TOPIC_PREFIX}_state"
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
    """Every transactional id of a flow starts with this (see pipeline.assignment.transactional_id)."""
    return f"geokafka-{flow_name}-"


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


# -- trying them on the real clusters ---------------------------------------------------------

_DENIED = ("AUTHORIZATION", "not authorized", "Authorization")


def _status_of(exc: BaseException) -> tuple[Status, str]:
    text = str(exc)
    if isinstance(exc, AuthError) or any(d in text for d in _DENIED):
        return "MISSING", text
    return "UNKNOWN", text


def check_flow(topology: Topology, flow_name: str, timeout_s: float = 10.0) -> CheckReport:
    """Try every permission of ``flow_name`` on its clusters; raise only if a cluster is unreachable."""
    from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaException, TopicPartition

    from geokafka.control.admin import _SILENT, ClusterAdmin, raise_mapped
    from geokafka.control.connection import connection
    from geokafka.control.naming import policy_for
    from geokafka.control.selection import select_groups, select_topics

    flow = topology.flow(flow_name)
    src_conn, tgt_conn = connection(topology, flow.source), connection(topology, flow.target)
    src, tgt = ClusterAdmin(src_conn, timeout_s), ClusterAdmin(tgt_conn, timeout_s)
    src.check_reachable()
    tgt.check_reachable()
    topics = select_topics(src.topic_partitions(), flow)
    policy = policy_for(flow)
    target_topics = [policy.remote_topic(flow.source, t) for t in topics]
    groups: list[str] | None = None
    if "group-offsets" in flow.sync:
        from geokafka.control.offsets._groups_io import list_group_ids

        try:
            groups = select_groups(list_group_ids(src), flow)
        except GeokafkaError:
            groups = None
    perms = required_permissions(
        topology, flow_name, topics or None, target_topics if topics and flow.rename == "identity" else None, groups
    )
    report = CheckReport(flow_name, flow.source, flow.target)
    existing_target = tgt.topic_partitions()
    silent: dict[str, Any] = {"logger": _SILENT}

    def attempt(fn: Any) -> tuple[Status, str]:
        try:
            detail = fn()
            return "OK", detail or ""
        except (GeokafkaError, KafkaException) as exc:
            return _status_of(exc)

    def source_describe(t: str) -> str:
        if t == "*":
            return "no topic selected now; the ACL shown covers all"
        src.describe_topic(t)
        return ""

    def source_read(t: str) -> str:
        if t == "*":
            return "no topic selected now"
        consumer = Consumer(src_conn.librdkafka(**{"group.id": f"geokafka-check-{uuid.uuid4().hex[:8]}",
                                                   "enable.auto.commit": False, **silent}))
        try:
            consumer.assign([TopicPartition(t, 0, 0)])
            msg = consumer.poll(min(timeout_s, 3.0))
            if msg is not None and msg.error() is not None and msg.error().code() != -191:
                raise KafkaException(msg.error())
            return ""
        finally:
            consumer.close()

    def source_configs(t: str) -> str:
        if t == "*":
            return "no topic selected now"
        src.topic_configs(t)
        return ""

    # a throwaway topic inside the namespace the ACLs cover (prefix naming: "<source>.")
    probe_topic = f"{flow.source}{flow.separator}geokafka-check-{uuid.uuid4().hex[:6]}"
    created_probe: list[str] = []

    def target_create(t: str) -> str:
        name = t if (t in target_topics and t not in existing_target) else probe_topic
        if t in existing_target:
            return "topic exists"
        tgt.create_topic(name, 1, 1, {})
        created_probe.append(name)
        return "" if name == t else f"created and deleted probe topic {name}"

    def target_describe(t: str) -> str:
        name = t if t in existing_target else (created_probe[0] if created_probe else None)
        if name is None:
            return "nothing to describe yet"
        tgt.describe_topic(name)
        return ""

    def target_write(t: str) -> str:
        name = t if t in existing_target else (created_probe[0] if created_probe else None)
        if name is None:
            return "nothing to write to yet"
        # inside a transaction that is aborted: consumers (read_committed) never see it
        return _txn_probe(tgt_conn, transactional_id_prefix(flow_name) + "check-" + uuid.uuid4().hex[:6],
                          timeout_s, silent, topic=name)

    def target_alter_configs(t: str) -> str:
        name = t if t in existing_target else (created_probe[0] if created_probe else None)
        if name is None:
            return "nothing to alter yet"
        from confluent_kafka.admin import ConfigResource

        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        try:  # validate_only: checks the ACL, changes nothing
            tgt.raw.alter_configs([resource], validate_only=True)[resource].result(timeout=timeout_s)
        except KafkaException as exc:
            raise_mapped(tgt_conn, f"altering configs of {name}", exc)
        return "validate-only"

    def target_alter(t: str) -> str:
        name = t if t in existing_target else (created_probe[0] if created_probe else None)
        if name is None:
            return "nothing to grow yet"
        from confluent_kafka.admin import NewPartitions

        try:  # validate_only: checks the ACL, grows nothing
            parts = tgt.topic_partitions().get(name, 1)
            tgt.raw.create_partitions([NewPartitions(name, parts + 1)], validate_only=True)[name].result(
                timeout=timeout_s)
        except KafkaException as exc:
            raise_mapped(tgt_conn, f"adding partitions to {name}", exc)
        return "validate-only"

    def txn_write() -> str:
        return _txn_probe(tgt_conn, transactional_id_prefix(flow_name) + "check-" + uuid.uuid4().hex[:6],
                          timeout_s, silent, topic=None)

    def state(op: str) -> str:
        from geokafka.control.state_store import ensure_state_topic, read_state

        if op == "Create":
            if STATE_TOPIC in existing_target:
                return "exists"
            ensure_state_topic(tgt)
            return "created"
        if op == "Describe":
            tgt.describe_topic(STATE_TOPIC)
            return ""
        if op == "Read":
            read_state(tgt_conn, timeout_s=timeout_s)
            return ""
        return _txn_probe(tgt_conn, transactional_id_prefix(flow_name) + "check-" + uuid.uuid4().hex[:6],
                          timeout_s, silent, topic=STATE_TOPIC)

    def group_describe(admin: ClusterAdmin, g: str) -> str:
        if g == "*":
            return "no group selected now; the ACL shown covers all"
        from geokafka.control.offsets._groups_io import list_group_ids

        list_group_ids(admin)
        fut = admin.raw.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g]
        fut.result(timeout=timeout_s)
        return ""

    def source_acls() -> str:
        from geokafka.control.acl_sync import describe_topic_acls

        return "no authorizer: nothing to copy" if describe_topic_acls(src) is None else ""

    def target_acls() -> str:
        from geokafka.control.acl_sync import TopicAcl, create_topic_acls, delete_topic_acls, describe_topic_acls

        if describe_topic_acls(tgt) is None:
            return "no authorizer: ACLs are not copied"
        probe = TopicAcl(f"geokafka-check-{uuid.uuid4().hex[:8]}", "LITERAL", "User:geokafka-check", "*", "READ", "DENY")
        create_topic_acls(tgt, [probe])
        delete_topic_acls(tgt, [probe])
        return "created and deleted a probe ACL"

    try:
        for p in perms:
            name = p.name
            if p.key.startswith("source.topic.describe:"):
                st = attempt(lambda: source_describe(name))
            elif p.key.startswith("source.topic.read:"):
                st = attempt(lambda: source_read(name))
            elif p.key.startswith("source.topic.describe-configs:"):
                st = attempt(lambda: source_configs(name))
            elif p.key.startswith("target.topic.create:"):
                st = attempt(lambda: target_create(name))
            elif p.key.startswith("target.topic.describe:"):
                st = attempt(lambda: target_describe(name))
            elif p.key.startswith("target.topic.write:"):
                st = attempt(lambda: target_write(name))
            elif p.key.startswith("target.topic.alter-configs:"):
                st = attempt(lambda: target_alter_configs(name))
            elif p.key.startswith("target.topic.alter:"):
                st = attempt(lambda: target_alter(name))
            elif p.key in ("target.txn.write", "target.txn.describe"):
                st = attempt(txn_write)
            elif p.key.startswith("target.state."):
                st = attempt(lambda: state(p.operation))
            elif p.key.startswith("source.group."):
                st = attempt(lambda: group_describe(src, name))
            elif p.key.startswith("target.group."):
                st = attempt(lambda: group_describe(tgt, name))
            elif p.key == "source.cluster.describe-acls":
                st = attempt(source_acls)
            elif p.key == "target.cluster.alter-acls":
                st = attempt(target_acls)
            else:  # pragma: no cover - every key above is handled
                st = ("UNKNOWN", "not tried")
            report.results.append(CheckResult(p, st[0], st[1]))
    finally:
        if created_probe:
            try:
                tgt.raw.delete_topics(created_probe, operation_timeout=timeout_s)[created_probe[0]].result(timeout=timeout_s)
            except Exception:  # noqa: BLE001 - best effort: a probe topic left behind is harmless
                pass
        src.close()
        tgt.close()
    return report


def _txn_probe(conn: Any, txn_id: str, timeout_s: float, extra: dict[str, Any], topic: str | None) -> str:
    """Init a transaction with a throwaway id, optionally produce one record in it, then abort."""
    from confluent_kafka import KafkaException, Producer

    from geokafka.control.admin import raise_mapped

    producer = Producer(conn.librdkafka(**{"transactional.id": txn_id, "transaction.timeout.ms": 10_000, **extra}))
    try:
        producer.init_transactions(timeout_s)
        if topic is None:
            return ""
        producer.begin_transaction()
        producer.produce(topic, value=b"geokafka check (aborted)")
        producer.flush(timeout_s)
        producer.abort_transaction(timeout_s)
        return "aborted transaction"
    except KafkaException as exc:
        raise_mapped(conn, f"transaction {txn_id}" + (f" on {topic}" if topic else ""), exc)
        return ""
