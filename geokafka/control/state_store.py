"""geokafka's durable state, kept in a compacted topic on each target cluster.

``__geokafka_state`` (one partition, compacted) holds, by key:

* ``progress/<flow>/<topic>/<partition>`` -> ``{"next": N, ...}``: the next source offset to
  replicate. The pipeline writes it *in the same Kafka transaction* as the records it covers,
  so after any crash the committed progress and the committed data agree exactly.
* ``flow/<flow>`` -> ``{"state": "running"|"stopped"|"failed-over"|"error", ...}``.
* ``ends/<flow>`` -> ``{"at_ms": T, "ends": {"<topic>/<partition>": end offset}}``: the source's
  end offsets as last observed by the running mirror (about every second). After a source
  site dies, this last observation is what tells how much was not replicated.
* ``role/<flow>`` -> ``{"role": "failed-over"|"active", ...}``: set by failover, promote and
  failback only. A mirror checks it and stops replicating a failed-over flow; it is kept
  apart from ``flow/<flow>`` so a heartbeat can never overwrite it.
* ``report/<flow>`` -> the last failover report.

It lives on the target because the target is what survives a source-site disaster.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from geokafka.control.admin import ClusterAdmin, raise_mapped
from geokafka.control.connection import ClusterConnection
from geokafka.control.rpo import observation_key as ends_key  # noqa: F401 - public here too
from geokafka.control.state_keys import STATE_TOPIC, progress_key  # noqa: F401 - public here too
from geokafka.errors import KafkaOperationError

_STATE_CONFIGS = {
    "cleanup.policy": "compact",
    "min.cleanable.dirty.ratio": "0.1",
    "segment.ms": "600000",
    "message.timestamp.type": "CreateTime",
}


@dataclass
class StateSnapshot:
    """The latest value of every key, and the offset each was read at."""

    values: dict[str, dict[str, Any]] = field(default_factory=dict)
    offsets: dict[str, int] = field(default_factory=dict)
    end_offset: int = 0

    def progress(self, flow: str) -> dict[tuple[str, int], int]:
        """(source topic, partition) -> next source offset, for one flow."""
        prefix = f"progress/{flow}/"
        out: dict[tuple[str, int], int] = {}
        for key, value in self.values.items():
            if key.startswith(prefix):
                topic, _, partition = key[len(prefix):].rpartition("/")
                out[(topic, int(partition))] = int(value["next"])
        return out


def ensure_state_topic(admin: ClusterAdmin) -> None:
    """Create the state topic on a target cluster if it is missing."""
    rf = min(3, max(1, admin.broker_count()))
    configs = dict(_STATE_CONFIGS)
    if rf > 1:
        configs["min.insync.replicas"] = "2"
    admin.create_topic(STATE_TOPIC, 1, rf, configs)


def read_state(conn: ClusterConnection, from_offset: int = 0, timeout_s: float = 60.0) -> StateSnapshot:
    """Read the committed state from ``from_offset`` to the current end."""
    admin = ClusterAdmin(conn, timeout_s)
    consumer = admin.consumer()
    snapshot = StateSnapshot()
    tp = TopicPartition(STATE_TOPIC, 0)
    try:
        _, end = consumer.get_watermark_offsets(tp, timeout=timeout_s)
        snapshot.end_offset = end
        if end <= from_offset:
            return snapshot
        consumer.assign([TopicPartition(STATE_TOPIC, 0, from_offset)])
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            msgs = consumer.consume(1000, timeout=0.5)
            for msg in msgs:
                if msg.error():
                    if msg.error().code() == KafkaError._PARTITION_EOF:
                        continue
                    raise KafkaException(msg.error())
                key = msg.key().decode() if msg.key() else ""
                if msg.value() is None:
                    snapshot.values.pop(key, None)
                else:
                    snapshot.values[key] = json.loads(msg.value())
                snapshot.offsets[key] = msg.offset()
            position = consumer.position([tp])[0].offset
            if position >= end:
                return snapshot
        # A partial read would resume from stale positions: better to stop than to duplicate.
        raise KafkaOperationError(
            f"cluster {conn.name}: {STATE_TOPIC} could not be read to its end ({end}) within {timeout_s:.0f}s; "
            "an open transaction of a dead writer may hold it (it expires after transaction.timeout.ms)"
        )
    except KafkaException as exc:
        if exc.args and exc.args[0].code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
            return snapshot  # no state topic yet: nothing replicated, nothing decided
        raise_mapped(conn, f"reading {STATE_TOPIC}", exc)
        return snapshot
    finally:
        consumer.close()


def write_state(conn: ClusterConnection, entries: dict[str, dict[str, Any] | None], timeout_s: float = 15.0) -> None:
    """Write state entries (None deletes a key) and wait for the acks."""
    producer = _state_producer(conn)
    errors: list[str] = []

    def on_delivery(err: KafkaError | None, _msg: object) -> None:
        if err is not None:
            errors.append(err.str())

    for key, value in entries.items():
        payload = None if value is None else json.dumps(value).encode()
        producer.produce(STATE_TOPIC, key=key.encode(), value=payload, partition=0, on_delivery=on_delivery)
    remaining = producer.flush(timeout_s)
    if remaining or errors:
        reason = errors[0] if errors else "timed out"
        raise_mapped(conn, f"writing {STATE_TOPIC}", KafkaException(KafkaError(KafkaError._TIMED_OUT, reason)))


_PRODUCERS: dict[tuple[str, str], Producer] = {}


def _state_producer(conn: ClusterConnection) -> Producer:
    """One idempotent producer per cluster for state writes (heartbeats come every second)."""
    key = (conn.bootstrap, repr(sorted(conn.security.items())))
    if key not in _PRODUCERS:
        _PRODUCERS[key] = Producer(conn.librdkafka(**{"enable.idempotence": True, "acks": "all", "linger.ms": 0}))
    return _PRODUCERS[key]


def release_state_producers() -> None:
    """Close the cached state producers (a mirror that ended): a producer left behind keeps
    reconnecting, and logging, long after its cluster is gone. Writes are flushed by
    ``write_state`` itself, so nothing is pending here."""
    while _PRODUCERS:
        _, producer = _PRODUCERS.popitem()
        producer.flush(1)


def set_flow_state(conn: ClusterConnection, flow: str, state: str, **details: Any) -> None:
    """Record a flow's state (running, stopped, failed-over, error) on its target."""
    write_state(conn, {f"flow/{flow}": {"state": state, "at_ms": int(time.time() * 1000), **details}})


def held_groups_key(flow: str) -> str:
    """Key of the groups a flow's offset sync leaves alone because they are in use on the target."""
    return f"held-groups/{flow}"


def role_key(flow: str) -> str:
    """Key of a flow's role, as set by failover/promote/failback."""
    return f"role/{flow}"


def set_flow_role(conn: ClusterConnection, flow: str, role: str, **details: Any) -> None:
    """Record a failover decision (``failed-over`` or ``active``), and show it as the flow's state."""
    now = int(time.time() * 1000)
    write_state(conn, {
        role_key(flow): {"role": role, "at_ms": now, **details},
        f"flow/{flow}": {"state": "failed-over" if role == "failed-over" else "stopped", "at_ms": now, **details},
    })


def flow_role(state: StateSnapshot, flow: str) -> str:
    """``failed-over`` or ``active``."""
    return str(state.values.get(role_key(flow), {}).get("role", "active"))
