"""Consumer-group calls on one cluster (list, committed offsets, state, commit), errors mapped.

Each call is issued for every group at once (AdminClient futures) and answered per group, so
one failing group never hides the others.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Any

from confluent_kafka import ConsumerGroupTopicPartitions, KafkaError, KafkaException, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped
from geokafka.control.state_records import TopicPartitionKey

"""(topic, partition)."""

_IDLE_STATES = frozenset({"empty", "dead"})
_COORDINATOR_BUSY = frozenset({
    KafkaError.NOT_COORDINATOR, KafkaError.COORDINATOR_LOAD_IN_PROGRESS, KafkaError.COORDINATOR_NOT_AVAILABLE,
})
_GROUP_ACTIVE = frozenset({
    KafkaError.UNKNOWN_MEMBER_ID, KafkaError.REBALANCE_IN_PROGRESS, KafkaError.ILLEGAL_GENERATION,
})


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


def _gather(
    admin: ClusterAdmin, groups: list[str], submit: Callable[[list[str]], Mapping[str, Future[Any]]]
) -> dict[str, Any]:
    """group -> result (or the KafkaException) of a per-group admin call.

    Groups whose coordinator is busy (just elected, still loading) are asked again until
    ``admin.timeout_s`` has passed, as the Java admin client does.
    """
    results: dict[str, Any] = {}
    pending, deadline = groups, time.monotonic() + admin.timeout_s
    while pending:
        retry = []
        for group, future in submit(pending).items():
            try:
                results[group] = future.result()
            except KafkaException as exc:
                if _code(exc) in _COORDINATOR_BUSY and time.monotonic() < deadline:
                    retry.append(group)
                else:
                    results[group] = exc
        pending = retry
        if pending:
            time.sleep(0.2)
    return results


def _code(exc: KafkaException) -> int | None:
    err = exc.args[0] if exc.args else None
    return err.code() if isinstance(err, KafkaError) else None


def committed_offsets(
    admin: ClusterAdmin, requests: Mapping[str, Iterable[TopicPartitionKey] | None]
) -> dict[str, dict[TopicPartitionKey, int]]:
    """group -> (topic, partition) -> committed offset, for the partitions asked (None: all the group has).

    Partitions without a committed offset are left out; a group that does not exist has none.
    """
    wanted = {g: None if tps is None else [TopicPartition(t, p) for t, p in tps] for g, tps in requests.items()}

    def submit(groups: list[str]) -> dict[str, Future[Any]]:
        return {
            g: admin.raw.list_consumer_group_offsets(
                [ConsumerGroupTopicPartitions(g, wanted[g])], request_timeout=admin.timeout_s
            )[g]
            for g in groups
        }

    answers = _gather(admin, [g for g, tps in wanted.items() if tps != []], submit)
    out: dict[str, dict[TopicPartitionKey, int]] = {group: {} for group in requests}
    for group, answer in answers.items():
        if isinstance(answer, KafkaException):
            if _code(answer) == KafkaError.GROUP_ID_NOT_FOUND:
                continue
            raise_mapped(admin.conn, f"reading committed offsets of group {group}", answer)
        out[group] = {
            (tp.topic, tp.partition): tp.offset
            for tp in answer.topic_partitions or []
            if tp.error is None and tp.offset >= 0
        }
    return out


def group_activity(admin: ClusterAdmin, groups: Iterable[str]) -> dict[str, GroupActivity]:
    """group -> state and member count; groups that do not exist are :data:`ABSENT`."""

    def submit(names: list[str]) -> dict[str, Future[Any]]:
        return dict(admin.raw.describe_consumer_groups(names, request_timeout=admin.timeout_s))

    out: dict[str, GroupActivity] = {}
    for group, desc in _gather(admin, list(groups), submit).items():
        if isinstance(desc, KafkaException):
            if _code(desc) == KafkaError.GROUP_ID_NOT_FOUND:
                out[group] = ABSENT
                continue
            raise_mapped(admin.conn, f"describing group {group}", desc)
        state = desc.state.name.lower() if desc.state is not None else "unknown"
        out[group] = GroupActivity(state, len(desc.members or []))
    return out


class Refusal(str):
    """Why the broker refused a partition's commit; ``group_active`` when the group had members."""

    group_active: bool = False


def _refusal(text: str, group_active: bool) -> Refusal:
    refusal = Refusal(text)
    refusal.group_active = group_active
    return refusal


def commit_offsets(
    admin: ClusterAdmin, group: str, offsets: Mapping[TopicPartitionKey, int]
) -> dict[TopicPartitionKey, Refusal]:
    """Commit ``offsets`` for ``group``; returns the partitions the broker refused, with why.

    The broker itself refuses commits from outside to a group with active members, which
    closes the race between checking the group's state and committing.
    """
    tps = [TopicPartition(t, p, o) for (t, p), o in sorted(offsets.items())]

    def submit(groups: list[str]) -> dict[str, Future[Any]]:
        request = [ConsumerGroupTopicPartitions(group, tps)]
        return {group: admin.raw.alter_consumer_group_offsets(request, request_timeout=admin.timeout_s)[group]}

    answer = _gather(admin, [group], submit)[group]
    if isinstance(answer, KafkaException):
        if _code(answer) in _GROUP_ACTIVE:
            text = f"broker refused the commit ({answer.args[0].name()}): the group became active"
            return {key: _refusal(text, True) for key in offsets}
        raise_mapped(admin.conn, f"committing offsets of group {group}", answer)
    return {
        (tp.topic, tp.partition): _refusal(f"broker refused the commit: {tp.error.str()}",
                                           tp.error.code() in _GROUP_ACTIVE)
        for tp in answer.topic_partitions or []
        if tp.error is not None
    }


def end_offsets(
    admin: ClusterAdmin, partitions: Iterable[TopicPartitionKey], *, committed_only: bool = False
) -> dict[TopicPartitionKey, int]:
    """(topic, partition) -> end offset, in one request per broker.

    The high watermark by default (what ``kafka-consumer-groups`` calls the log end offset);
    the last stable offset with ``committed_only`` (the end a read_committed consumer sees).
    """
    wanted = sorted(set(partitions))
    if not wanted:
        return {}
    return admin.offsets(wanted, committed=committed_only)
