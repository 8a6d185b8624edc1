"""Time-based failover: move a group to the first record at or after a wall-clock time.

"Offsets are not identical, but 3pm is 3pm": the broker's time index answers, per partition,
the first offset whose timestamp is >= the time. This gives the same offsets as
``kafka-consumer-groups --reset-offsets --to-datetime`` (``ConsumerGroupCommand``):

* lookups use ``read_uncommitted``, as the tool's AdminClient does;
* a partition with no record at or after the time resumes at its log end offset;
* every partition of the topic is reset, whether the group had an offset there or not;
* the group must have no active members (checked here, and enforced again by the broker).

Datetimes are ISO 8601. One without a zone means UTC, as in Kafka's tool (which appends
``Z``); ``2017-08-22T06:00:33.236``, ``2017-08-22T06:00:33Z`` and
``2017-08-22T08:00:33.236+02:00`` are all accepted. Precision is the millisecond.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from confluent_kafka import KafkaException, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped
from geokafka.control.connection import connection
from geokafka.control.offsets._groups_io import (
    GroupActivity,
    TopicPartitionKey,
    commit_offsets,
    committed_offsets,
    end_offsets,
    group_activity,
)
from geokafka.control.offsets.exceptions import GroupNotEmptyError
from geokafka.errors import KafkaOperationError, MissingTopicError
from geokafka.topology.schema import Topology

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def parse_datetime(text: str) -> int:
    """Milliseconds since the epoch of an ISO 8601 datetime; no zone means UTC. ValueError if malformed."""
    raw = text.strip()
    try:
        moment = datetime.fromisoformat(raw)
    except ValueError:
        raise ValueError(
            f"{text!r} is not an ISO 8601 datetime (e.g. 2017-08-22T06:00:33.236, UTC unless a zone is given)"
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return (moment - _EPOCH) // timedelta(milliseconds=1)


def format_ms(timestamp_ms: int) -> str:
    """``2017-08-22T06:00:33.236Z``."""
    return (_EPOCH + timedelta(milliseconds=timestamp_ms)).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


@dataclass(frozen=True)
class PartitionReset:
    """One partition's new offset and how it was found."""

    topic: str
    partition: int
    new_offset: int
    previous_offset: int | None
    by_time: bool
    """False when no record is at or after the time and the log end offset was used."""


@dataclass
class ResetReport:
    """The outcome of ``reset-offsets --to-datetime``."""

    cluster: str
    group: str
    timestamp_ms: int
    datetime_utc: str
    dry_run: bool
    group_state: str
    group_active: bool
    executed: bool = False
    partitions: list[PartitionReset] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return asdict(self)


def offsets_for_time(
    admin: ClusterAdmin, topics: Sequence[str], timestamp_ms: int
) -> dict[TopicPartitionKey, tuple[int, bool]]:
    """(topic, partition) -> (first offset with timestamp >= ``timestamp_ms``, found); log end if none."""
    counts = admin.topic_partitions()
    for topic in topics:
        if topic not in counts:
            raise MissingTopicError(f"cluster {admin.conn.name}: topic {topic} does not exist")
    tps = [TopicPartition(t, p, timestamp_ms) for t in topics for p in range(counts[t])]
    consumer = admin.consumer(**{"isolation.level": "read_uncommitted"})
    try:
        answer = consumer.offsets_for_times(tps, timeout=admin.timeout_s)
    except KafkaException as exc:
        raise_mapped(admin.conn, f"looking up offsets by time in {', '.join(topics)}", exc)
    finally:
        consumer.close()
    found: dict[TopicPartitionKey, tuple[int, bool]] = {}
    for tp in answer:
        if tp.error is not None:
            raise KafkaOperationError(
                f"cluster {admin.conn.name}: looking up {tp.topic}/{tp.partition} by time: {tp.error.str()}"
            )
        if tp.offset >= 0:
            found[(tp.topic, tp.partition)] = (tp.offset, True)
    missing = [(tp.topic, tp.partition) for tp in tps if (tp.topic, tp.partition) not in found]
    for key, end in end_offsets(admin, missing).items():
        found[key] = (end, False)
    return found


def reset_offsets_to_datetime(
    topology: Topology,
    cluster: str,
    group: str,
    topics: Sequence[str],
    when: str | int,
    *,
    dry_run: bool = False,
    timeout_s: float = 15.0,
) -> ResetReport:
    """Move ``group`` on ``cluster`` to the first record at or after ``when`` in every partition of ``topics``.

    ``when`` is an ISO datetime (naive = UTC) or epoch milliseconds. Raises GroupNotEmptyError
    if the group has members, unless ``dry_run`` (which reports the state and commits nothing).
    ``timeout_s`` bounds each Kafka call.
    """
    timestamp_ms = when if isinstance(when, int) else parse_datetime(when)
    admin = ClusterAdmin(connection(topology, cluster), timeout_s)
    admin.check_reachable()
    activity = group_activity(admin, [group]).get(group, GroupActivity("dead", 0))
    if activity.active and not dry_run:
        raise GroupNotEmptyError(
            f"group {group} on cluster {cluster} is active ({activity.describe()}): stop its consumers before resetting"
        )
    targets = offsets_for_time(admin, list(dict.fromkeys(topics)), timestamp_ms)
    previous = committed_offsets(admin, {group: list(targets)})[group]
    report = ResetReport(
        cluster, group, timestamp_ms, format_ms(timestamp_ms), dry_run, activity.state, activity.active
    )
    report.partitions = [
        PartitionReset(t, p, offset, previous.get((t, p)), by_time)
        for (t, p), (offset, by_time) in sorted(targets.items())
    ]
    if not dry_run:
        refused = commit_offsets(admin, group, {(r.topic, r.partition): r.new_offset for r in report.partitions})
        if refused:
            (t, p), why = sorted(refused.items())[0]
            raise GroupNotEmptyError(f"group {group} on cluster {cluster}: {t}/{p}: {why}")
        report.executed = True
    return report
