"""Consumer-group calls on one cluster (list, committed offsets, state, commit), errors mapped.

Each call is issued for every group at once (AdminClient futures) and answered per group, so
one failing group never hides the others.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped

TopicPartitionKey = tuple[str, int]
"""(topic, partition)."""

_IDLE_STATES = frozenset({"empty", "dead"})


@dataclass(frozen=True)
class GroupActivity:
    """What a cluster says about one group: may its offsets be written from outside?"""

    state: str
    members: int

    @property
    def active(self) -> bool:
        """True if consumers are in the group (offsets must not be moved under them)."""
        return self.members > 0 or self.state not in _IDLE_STATES

    def describe(self) -> str:
        """``state 'stable', 2 members``."""
        return f"state {self.state!r}, {self.members} member{'s' if self.members != 1 else ''}"


ABSENT = GroupActivity("dead", 0)


def list_group_ids(admin: ClusterAdmin) -> list[str]:
    """Every consumer group on the cluster."""
    try:
        result = admin.raw.list_consumer_groups(request_timeout=admin.timeout_s).result()
    except KafkaException as exc:
        raise_mapped(admin.conn, "listing consumer groups", exc)
    return sorted(g.group_id for g in result.valid)


def committed_offsets(
    admin: ClusterAdmin, requests: Mapping[str, Iterable[TopicPartitionKey] | None]
) -> dict[str, dict[TopicPartitionKey, int]]:
    """group -> (topic, partition) -> committed offset, for the partitions asked (None: all the group has).

    Partitions without a committed offset are left out; a group that does not exist has none.
    """
    futures = {}
    for group, wanted in requests.items():
        tps = None if wanted is None else [TopicPartition(t, p) for t, p in wanted]
        if tps == []:
            continue
        futures[group] = admin.raw.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, tps)], request_timeout=admin.timeout_s
        )[group]
    out: dict[str, dict[TopicPartitionKey, int]] = {group: {} for group in requests}
    for group, future in futures.items():
        try:
            answer = future.result()
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                continue
            raise_mapped(admin.conn, f"reading committed offsets of group {group}", exc)
        out[group] = {
            (tp.topic, tp.partition): tp.offset
            for tp in answer.topic_partitions or []
            if tp.error is None and tp.offset >= 0
        }
    return out


def group_activity(admin: ClusterAdmin, groups: Iterable[str]) -> dict[str, GroupActivity]:
    """group -> state and member count; groups that do not exist are :data:`ABSENT`."""
    groups = list(groups)
    if not groups:
        return {}
    futures = admin.raw.describe_consumer_groups(groups, request_timeout=admin.timeout_s)
    out: dict[str, GroupActivity] = {}
    for group, future in futures.items():
        try:
            desc = future.result()
        except KafkaException as exc:
            if exc.args and exc.args[0].code() == KafkaError.GROUP_ID_NOT_FOUND:
                out[group] = ABSENT
                continue
            raise_mapped(admin.conn, f"describing group {group}", exc)
        state = desc.state.name.lower() if desc.state is not None else "unknown"
        out[group] = GroupActivity(state, len(desc.members or []))
    return out


def commit_offsets(admin: ClusterAdmin, group: str, offsets: Mapping[TopicPartitionKey, int]) -> dict[TopicPartitionKey, str]:
    """Commit ``offsets`` for ``group``; returns the partitions the broker refused, with why.

    The broker itself refuses commits from outside to a group with active members, which
    closes the race between checking the group's state and committing.
    """
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]
    future = admin.raw.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, tps)], request_timeout=admin.timeout_s
    )[group]
    try:
        answer = future.result()
    except KafkaException as exc:
        err = exc.args[0] if exc.args else None
        code = err.code() if isinstance(err, KafkaError) else None
        if code in {KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION}:
            text = f"broker refused the commit ({err.name() if isinstance(err, KafkaError) else exc}): group became active"
            return {key: text for key in offsets}
        raise_mapped(admin.conn, f"committing offsets of group {group}", exc)
    return {
        (tp.topic, tp.partition): f"broker refused the commit: {tp.error.str()}"
        for tp in answer.topic_partitions or []
        if tp.error is not None
    }


def end_offsets(admin: ClusterAdmin, partitions: Iterable[TopicPartitionKey]) -> dict[TopicPartitionKey, int]:
    """(topic, partition) -> log end offset (high watermark, as ``kafka-consumer-groups`` sees it)."""
    consumer = admin.consumer(**{"isolation.level": "read_uncommitted"})
    try:
        return {
            (t, p): int(consumer.get_watermark_offsets(TopicPartition(t, p), timeout=admin.timeout_s, cached=False)[1])
            for t, p in partitions
        }
    except KafkaException as exc:
        raise_mapped(admin.conn, "reading end offsets", exc)
        return {}
    finally:
        consumer.close()
