"""``geokafka check``: try every permission a flow needs on the real clusters, one probe per kind.

Each permission of :func:`~geokafka.control.permissions.required_permissions` is tried by the
probe its key names (:data:`PROBES`, a table from key prefix to probe). A probe that changes
anything undoes it (a topic it created is deleted, transactions are aborted, alterations run
``validate_only``); a refusal by type or Kafka error code is MISSING, any other failure UNKNOWN.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from contextlib import closing
from typing import Any

from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import ConfigResource, NewPartitions

from geokafka.control.acl_sync import TopicAcl, create_topic_acls, delete_topic_acls, describe_topic_acls
from geokafka.control.admin import _SILENT, ClusterAdmin, is_authorization_failure, raise_mapped
from geokafka.control.connection import ClusterConnection, connection
from geokafka.control.naming import policy_for
from geokafka.control.offsets._groups_io import list_group_ids
from geokafka.control.permissions import (
    CheckReport,
    CheckResult,
    Permission,
    Status,
    required_permissions,
    transactional_id_prefix,
)
from geokafka.control.selection import select_groups, select_topics
from geokafka.control.state_records import STATE_TOPIC
from geokafka.control.state_store import KafkaStateStore, ensure_state_topic
from geokafka.errors import GeokafkaError
from geokafka.topology.schema import Topology


def status_of(exc: BaseException) -> tuple[Status, str]:
    """MISSING for a refusal (by type or Kafka error code), UNKNOWN for anything else."""
    return ("MISSING" if is_authorization_failure(exc) else "UNKNOWN"), str(exc)


class FlowProbes:
    """The probes of one flow's check, sharing its clients and the probe topic they may create."""

    def __init__(self, topology: Topology, flow_name: str, timeout_s: float) -> None:
        self.topology = topology
        self.flow_name = flow_name
        self.flow = topology.flow(flow_name)
        self.timeout_s = timeout_s
        self.src_conn: ClusterConnection = connection(topology, self.flow.source)
        self.tgt_conn: ClusterConnection = connection(topology, self.flow.target)
        self.src, self.tgt = ClusterAdmin(self.src_conn, timeout_s), ClusterAdmin(self.tgt_conn, timeout_s)
        self.silent: dict[str, Any] = {"logger": _SILENT}
        self.existing_target: dict[str, int] = {}
        self.target_topics: list[str] = []
        # a throwaway topic inside the namespace the ACLs cover (prefix naming: "<source>.")
        self.probe_topic = f"{self.flow.source}{self.flow.separator}geokafka-check-{uuid.uuid4().hex[:6]}"
        self.created_probe: list[str] = []

    def permissions(self) -> list[Permission]:
        """Check both clusters answer, then list what the flow needs for the topics and groups there now."""
        self.src.check_reachable()
        self.tgt.check_reachable()
        topics = select_topics(self.src.topic_partitions(), self.flow)
        policy = policy_for(self.flow)
        self.target_topics = [policy.remote_topic(self.flow.source, t) for t in topics]
        groups: list[str] | None = None
        if "group-offsets" in self.flow.sync:
            try:
                groups = select_groups(list_group_ids(self.src), self.flow)
            except GeokafkaError:
                groups = None
        self.existing_target = self.tgt.topic_partitions()
        identity = topics and self.flow.rename == "identity"
        return required_permissions(self.topology, self.flow_name, topics or None,
                                    self.target_topics if identity else None, groups)

    def attempt(self, probe: Callable[[FlowProbes, Permission], str], permission: Permission) -> tuple[Status, str]:
        """Run one probe: OK with its detail, or the status its failure means."""
        try:
            return "OK", probe(self, permission) or ""
        except (GeokafkaError, KafkaException) as exc:
            return status_of(exc)

    def close(self) -> None:
        """Delete the probe topic (best effort) and close the clients."""
        if self.created_probe:
            try:
                self.tgt.raw.delete_topics(self.created_probe, operation_timeout=self.timeout_s)[
                    self.created_probe[0]].result(timeout=self.timeout_s)
            except Exception:  # noqa: BLE001 - best effort: a probe topic left behind is harmless
                pass
        self.src.close()
        self.tgt.close()

    def _target_name(self, t: str) -> str | None:
        """The existing target topic, or the probe topic once created."""
        return t if t in self.existing_target else (self.created_probe[0] if self.created_probe else None)

    def _txn(self, topic: str | None) -> str:
        txn_id = transactional_id_prefix(self.flow_name) + "check-" + uuid.uuid4().hex[:6]
        return txn_probe(self.tgt_conn, txn_id, self.timeout_s, self.silent, topic)

    # -- the probes ------------------------------------------------------------------------

    def source_describe(self, p: Permission) -> str:
        if p.name == "*":
            return "no topic selected now; the ACL shown covers all"
        self.src.describe_topic(p.name)
        return ""

    def source_read(self, p: Permission) -> str:
        if p.name == "*":
            return "no topic selected now"
        consumer = Consumer(self.src_conn.librdkafka(**{"group.id": f"geokafka-check-{uuid.uuid4().hex[:8]}",
                                                        "enable.auto.commit": False, **self.silent}))
        try:
            consumer.assign([TopicPartition(p.name, 0, 0)])
            msg = consumer.poll(min(self.timeout_s, 3.0))
            err = None if msg is None else msg.error()
            if err is not None and err.code() != KafkaError._PARTITION_EOF:
                raise KafkaException(err)
            return ""
        finally:
            consumer.close()

    def source_configs(self, p: Permission) -> str:
        if p.name == "*":
            return "no topic selected now"
        self.src.topic_configs(p.name)
        return ""

    def target_create(self, p: Permission) -> str:
        t = p.name
        if t in self.existing_target:
            return "topic exists"
        name = t if t in self.target_topics else self.probe_topic
        self.tgt.create_topic(name, 1, 1, {})
        self.created_probe.append(name)
        return "" if name == t else f"created and deleted probe topic {name}"

    def target_describe(self, p: Permission) -> str:
        name = self._target_name(p.name)
        if name is None:
            return "nothing to describe yet"
        self.tgt.describe_topic(name)
        return ""

    def target_write(self, p: Permission) -> str:
        name = self._target_name(p.name)
        if name is None:
            return "nothing to write to yet"
        return self._txn(name)  # inside a transaction that is aborted: read_committed consumers never see it

    def target_alter_configs(self, p: Permission) -> str:
        name = self._target_name(p.name)
        if name is None:
            return "nothing to alter yet"
        resource = ConfigResource(ConfigResource.Type.TOPIC, name)
        try:  # validate_only: checks the ACL, changes nothing
            self.tgt.raw.alter_configs([resource], validate_only=True)[resource].result(timeout=self.timeout_s)
        except KafkaException as exc:
            raise_mapped(self.tgt_conn, f"altering configs of {name}", exc)
        return "validate-only"

    def target_alter(self, p: Permission) -> str:
        name = self._target_name(p.name)
        if name is None:
            return "nothing to grow yet"
        try:  # validate_only: checks the ACL, grows nothing
            parts = self.tgt.topic_partitions().get(name, 1)
            self.tgt.raw.create_partitions([NewPartitions(name, parts + 1)], validate_only=True)[name].result(
                timeout=self.timeout_s)
        except KafkaException as exc:
            raise_mapped(self.tgt_conn, f"adding partitions to {name}", exc)
        return "validate-only"

    def txn_write(self, p: Permission) -> str:
        return self._txn(None)

    def state(self, p: Permission) -> str:
        if p.operation == "Create":
            if STATE_TOPIC in self.existing_target:
                return "exists"
            ensure_state_topic(self.tgt)
            return "created"
        if p.operation == "Describe":
            self.tgt.describe_topic(STATE_TOPIC)
            return ""
        if p.operation == "Read":
            with closing(KafkaStateStore(self.tgt_conn)) as store:  # one read: a store of the probe's own
                store.read(timeout_s=self.timeout_s)
            return ""
        return self._txn(STATE_TOPIC)

    def _group_describe(self, admin: ClusterAdmin, g: str) -> str:
        if g == "*":
            return "no group selected now; the ACL shown covers all"
        list_group_ids(admin)
        fut = admin.raw.list_consumer_group_offsets([ConsumerGroupTopicPartitions(g)])[g]
        fut.result(timeout=self.timeout_s)
        return ""

    def source_group(self, p: Permission) -> str:
        return self._group_describe(self.src, p.name)

    def target_group(self, p: Permission) -> str:
        return self._group_describe(self.tgt, p.name)

    def source_acls(self, p: Permission) -> str:
        return "no authorizer: nothing to copy" if describe_topic_acls(self.src) is None else ""

    def target_acls(self, p: Permission) -> str:
        if describe_topic_acls(self.tgt) is None:
            return "no authorizer: ACLs are not copied"
        probe = TopicAcl(f"geokafka-check-{uuid.uuid4().hex[:8]}", "LITERAL", "User:geokafka-check", "*", "READ", "DENY")
        create_topic_acls(self.tgt, [probe])
        delete_topic_acls(self.tgt, [probe])
        return "created and deleted a probe ACL"


PROBES: list[tuple[str, Callable[[FlowProbes, Permission], str]]] = [
    ("source.topic.describe:", FlowProbes.source_describe),
    ("source.topic.read:", FlowProbes.source_read),
    ("source.topic.describe-configs:", FlowProbes.source_configs),
    ("target.topic.create:", FlowProbes.target_create),
    ("target.topic.describe:", FlowProbes.target_describe),
    ("target.topic.write:", FlowProbes.target_write),
    ("target.topic.alter-configs:", FlowProbes.target_alter_configs),
    ("target.topic.alter:", FlowProbes.target_alter),
    ("target.txn.write", FlowProbes.txn_write),
    ("target.txn.describe", FlowProbes.txn_write),
    ("target.state.", FlowProbes.state),
    ("source.group.", FlowProbes.source_group),
    ("target.group.", FlowProbes.target_group),
    ("source.cluster.describe-acls", FlowProbes.source_acls),
    ("target.cluster.alter-acls", FlowProbes.target_acls),
]
"""Permission key prefix -> the probe that tries it (first match wins)."""


def probe_for(key: str) -> Callable[[FlowProbes, Permission], str] | None:
    """The probe of a permission key."""
    return next((probe for prefix, probe in PROBES if key.startswith(prefix)), None)


def check_flow(topology: Topology, flow_name: str, timeout_s: float = 10.0) -> CheckReport:
    """Try every permission of ``flow_name`` on its clusters; raise only if a cluster is unreachable."""
    probes = FlowProbes(topology, flow_name, timeout_s)
    report = CheckReport(flow_name, probes.flow.source, probes.flow.target)
    try:
        for permission in probes.permissions():
            probe = probe_for(permission.key)
            status: tuple[Status, str] = ("UNKNOWN", "not tried") if probe is None else probes.attempt(probe, permission)
            report.results.append(CheckResult(permission, status[0], status[1]))
    finally:
        probes.close()
    return report


def txn_probe(conn: ClusterConnection, txn_id: str, timeout_s: float, extra: dict[str, Any], topic: str | None) -> str:
    """Init a transaction with a throwaway id, optionally produce one record in it, then abort."""
    from confluent_kafka import Producer

    producer = Producer(conn.librdkafka(**{"transactional.id": txn_id, "transaction.timeout.ms": 10_000, **extra}))
    try:
        producer.init_transactions(timeout_s)
        if topic is not None:
            producer.begin_transaction()
            producer.produce(topic, value=b"geokafka check (aborted)")
            producer.flush(timeout_s)
            producer.abort_transaction(timeout_s)
    except KafkaException as exc:
        # not closed: close() after a failure warns on stderr; the client goes with its last reference
        raise_mapped(conn, f"transaction {txn_id}" + (f" on {topic}" if topic else ""), exc)
    producer.close()  # its one record was aborted: nothing to deliver
    return "" if topic is None else "aborted transaction"
