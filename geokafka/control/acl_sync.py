"""Topic ACLs follow the data: read access granted on a source topic is granted on its mirror.

As MirrorMaker 2's ``sync.topic.acls``, with a stricter rule about what is copied:

* only ACLs on selected topics: LITERAL ones on a selected topic, PREFIXED ones whose prefix
  covers a selected topic; the resource name is renamed by the flow's naming policy;
* ALLOW entries keep only read-side operations (Read, Describe, DescribeConfigs); ALLOW ALL
  becomes Read + Describe. Write, Create, Delete, Alter and AlterConfigs are never granted
  on a mirror: only geokafka writes there while the flow runs (split-brain protection);
* DENY entries are copied as they are (they only take access away);
* copying is additive: an ACL removed on the source stays on the target until removed by
  hand, as with MM2 (the target may hold grants of its own that geokafka cannot tell apart).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from geokafka.control.admin import ClusterAdmin, raise_mapped

log = logging.getLogger(__name__)

READ_SIDE = ("READ", "DESCRIBE", "DESCRIBE_CONFIGS")
_SECURITY_DISABLED = 54  # the cluster runs without an authorizer: there are no ACLs to copy


@dataclass(frozen=True, order=True)
class TopicAcl:
    """One topic ACL entry, in plain names (``pattern`` LITERAL or PREFIXED; ``permission`` ALLOW or DENY)."""

    name: str
    pattern: str
    principal: str
    host: str
    operation: str
    permission: str


def mirrored_acls(source_acls: Iterable[TopicAcl], selected: Iterable[str],
                  rename: Callable[[str], str]) -> set[TopicAcl]:
    """The ACLs the target should hold for the mirrors of ``selected`` source topics."""
    topics = sorted(set(selected))
    out: set[TopicAcl] = set()
    for acl in source_acls:
        if acl.pattern == "LITERAL":
            if acl.name not in topics:
                continue  # includes the literal wildcard "*": it is not a topic of this flow
        elif acl.pattern == "PREFIXED":
            if not any(t.startswith(acl.name) for t in topics):
                continue
        else:
            continue
        name = rename(acl.name)
        if acl.permission == "DENY":
            out.add(TopicAcl(name, acl.pattern, acl.principal, acl.host, acl.operation, "DENY"))
            continue
        ops = ("READ", "DESCRIBE") if acl.operation == "ALL" else (acl.operation,)
        for op in ops:
            if op in READ_SIDE:
                out.add(TopicAcl(name, acl.pattern, acl.principal, acl.host, op, "ALLOW"))
    return out


def describe_topic_acls(admin: ClusterAdmin) -> list[TopicAcl] | None:
    """Every topic ACL of the cluster; None when it has no authorizer."""
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import (
        AclBindingFilter,
        AclOperation,
        AclPermissionType,
        ResourcePatternType,
        ResourceType,
    )

    # None matches any name, principal and host (confluent-kafka's docs); its stubs say str
    flt = AclBindingFilter(ResourceType.TOPIC, None, ResourcePatternType.ANY, None, None,  # type: ignore[arg-type]
                           AclOperation.ANY, AclPermissionType.ANY)
    try:
        bindings = admin.raw.describe_acls(flt, request_timeout=admin.timeout_s).result(timeout=admin.timeout_s)
    except KafkaException as exc:
        if exc.args and getattr(exc.args[0], "code", lambda: None)() == _SECURITY_DISABLED:
            return None
        raise_mapped(admin.conn, "describing topic ACLs", exc)
        return None
    except Exception as exc:  # noqa: BLE001 - a future's time-out
        raise_mapped(admin.conn, "describing topic ACLs", exc)
        return None
    return [TopicAcl(b.name, b.resource_pattern_type.name, b.principal, b.host, b.operation.name,
                     b.permission_type.name) for b in bindings]


def _binding(cls: Any, acl: TopicAcl) -> Any:
    """``acl`` as a confluent-kafka ``AclBinding`` or (exact) ``AclBindingFilter``."""
    from confluent_kafka.admin import AclOperation, AclPermissionType, ResourcePatternType, ResourceType

    return cls(ResourceType.TOPIC, acl.name, ResourcePatternType[acl.pattern], acl.principal, acl.host,
               AclOperation[acl.operation], AclPermissionType[acl.permission])


def _await_each(admin: ClusterAdmin, futures: dict[Any, Any], verb: str) -> None:
    """Wait for every per-ACL future; the first failure becomes the geokafka error that fits it."""
    for binding, future in futures.items():
        try:
            future.result(timeout=admin.timeout_s)
        except Exception as exc:  # noqa: BLE001 - mapped to a geokafka error
            raise_mapped(admin.conn, f"{verb} ACL on topic {binding.name}", exc)


def create_topic_acls(admin: ClusterAdmin, acls: Iterable[TopicAcl]) -> None:
    """Create ``acls`` on the cluster (existing ones are a no-op for Kafka)."""
    from confluent_kafka.admin import AclBinding

    bindings = [_binding(AclBinding, a) for a in sorted(acls)]
    if bindings:
        _await_each(admin, admin.raw.create_acls(bindings, request_timeout=admin.timeout_s), "creating")


def delete_topic_acls(admin: ClusterAdmin, acls: Iterable[TopicAcl]) -> None:
    """Delete exactly ``acls`` from the cluster."""
    from confluent_kafka.admin import AclBindingFilter

    filters = [_binding(AclBindingFilter, a) for a in acls]
    if filters:
        _await_each(admin, admin.raw.delete_acls(filters, request_timeout=admin.timeout_s), "deleting")


def sync_topic_acls(source: ClusterAdmin, target: ClusterAdmin, selected: Iterable[str],
                    rename: Callable[[str], str]) -> list[TopicAcl]:
    """Copy the selected topics' ACLs to the target; return the ones created now.

    A side without an authorizer has nothing to copy (source) or nowhere to copy to (target):
    both are a no-op, not an error.
    """
    source_acls = describe_topic_acls(source)
    if not source_acls:
        return []
    wanted = mirrored_acls(source_acls, selected, rename)
    present = describe_topic_acls(target)
    if present is None:
        log.info("cluster %s has no authorizer: %d topic ACLs not copied", target.conn.name, len(wanted))
        return []
    missing = sorted(wanted - set(present))
    create_topic_acls(target, missing)
    return missing
