"""The guard's journal, on the guarded cluster itself: every action, its outcome, and what it said.

Topic ``__geokafka_guard`` (one partition, a replica per DC where possible, min.insync.replicas
1 so the journal stays writable through a DC loss). An action is journaled ``applying`` before
it is made and ``done`` (or ``failed``) after, so a guard restarted between the two still knows
which settings it changed and restores them; ``status`` and ``/metrics`` read the same records.
"""

from __future__ import annotations

import contextlib
import json
import time
import uuid
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer, TopicPartition

from geokafka.control.admin import ClusterAdmin, silent_logger
from geokafka.control.connection import ClusterConnection
from geokafka.control.delivery import drain, is_fatal
from geokafka.errors import KafkaOperationError
from geokafka.guard.model import Action, Broker, Lowered

JOURNAL_TOPIC = "__geokafka_guard"


@dataclass(frozen=True)
class Entry:
    """One journal record."""

    at_ms: int
    status: str
    """``applying``, ``done``, ``failed`` (actions), ``event`` (something the guard said) or ``members``."""
    action: dict[str, Any] | None
    text: str
    id: str

    def encode(self) -> bytes:
        """The record value."""
        return json.dumps({"at_ms": self.at_ms, "status": self.status, "action": self.action, "text": self.text,
                           "id": self.id}).encode()

    @classmethod
    def decode(cls, raw: bytes) -> Entry:
        """From a record value."""
        value = json.loads(raw)
        return cls(int(value["at_ms"]), str(value["status"]), value.get("action"), str(value.get("text", "")),
                   str(value.get("id", "")))


def known_brokers(entries: list[Entry]) -> dict[int, Broker]:
    """The brokers the last ``members`` record lists (a guard restarted during an outage still knows the lost DC)."""
    for entry in reversed(entries):
        if entry.status == "members":
            return {int(b["id"]): Broker(int(b["id"]), str(b["dc"]), str(b["host"]), int(b["port"]))
                    for b in json.loads(entry.text)}
    return {}


def members_text(brokers: dict[int, Broker]) -> str:
    """The ``members`` record's text."""
    return json.dumps([{"id": b.id, "dc": b.dc, "host": b.host, "port": b.port} for b in sorted(
        brokers.values(), key=lambda b: b.id)])


def outstanding(entries: list[Entry]) -> dict[str, Lowered]:
    """Topics whose min.insync.replicas the guard lowered and has not restored (pure)."""
    lowered: dict[str, Lowered] = {}
    for entry in entries:
        action = entry.action or {}
        if entry.status not in ("applying", "done"):
            continue
        topic = str(action.get("topic", ""))
        if action.get("kind") == "lower-min-isr":
            earlier = lowered.get(topic)
            original = earlier.original if earlier else int(action["previous"])
            lowered[topic] = Lowered(topic, str(action["dc"]), original, int(action["value"]), entry.at_ms)
        elif action.get("kind") == "restore-min-isr" and entry.status == "done":
            lowered.pop(topic, None)
    return lowered


class Journal:
    """Appends to and reads the journal topic of one cluster."""

    def __init__(self, conn: ClusterConnection, timeout_s: float = 10.0) -> None:
        self.conn = conn
        self.timeout_s = timeout_s
        self._producer: Producer | None = None

    def ensure(self) -> None:
        """Create the journal topic if it is missing."""
        admin = ClusterAdmin(self.conn, self.timeout_s)
        rf = min(3, max(1, admin.broker_count()))
        admin.create_topic(JOURNAL_TOPIC, 1, rf, {"min.insync.replicas": "1", "retention.ms": str(90 * 86_400_000)})

    def append(self, status: str, action: Action | None = None, text: str = "", entry_id: str | None = None) -> Entry:
        """Write one record and wait for its acknowledgement; returns it."""
        entry = Entry(int(time.time() * 1000), status, action.to_dict() if action else None, text,
                      entry_id or uuid.uuid4().hex[:12])
        if self._producer is None:
            self._producer = Producer(self.conn.librdkafka(**{"acks": "all", "enable.idempotence": True,
                                                              "logger": silent_logger()}))
        failures: list[str] = []
        self._producer.produce(JOURNAL_TOPIC, value=entry.encode(), partition=0,
                               on_delivery=lambda err, _m: failures.append(err.str()) if err else None)
        try:
            left = drain(self._producer, self.timeout_s)
        except KafkaException as exc:
            if is_fatal(exc):  # never usable again: the next append starts a new one
                self._producer = None
            raise KafkaOperationError(f"cluster {self.conn.name}: journal {JOURNAL_TOPIC} not written: {exc}") from exc
        if left or failures:
            raise KafkaOperationError(f"cluster {self.conn.name}: journal {JOURNAL_TOPIC} not written: "
                                      f"{failures[0] if failures else 'timed out'}")
        return entry

    def read(self) -> list[Entry]:
        """Every record, oldest first (none when the topic does not exist yet)."""
        admin = ClusterAdmin(self.conn, self.timeout_s)
        if JOURNAL_TOPIC not in admin.topic_partitions():
            return []  # a first run, or a dry run that never created it: a consumer would wait for it to appear
        consumer = admin.consumer(**{"enable.partition.eof": True})
        entries: list[Entry] = []
        try:
            consumer.assign([TopicPartition(JOURNAL_TOPIC, 0, 0)])
            deadline = time.monotonic() + self.timeout_s
            while time.monotonic() < deadline:
                msg = consumer.poll(0.5)
                if msg is None:
                    continue
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        return entries
                    if err.code() in (KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError._UNKNOWN_PARTITION):
                        return entries
                    raise KafkaException(err)
                value = msg.value()
                if value:
                    entries.append(Entry.decode(value))
            raise KafkaOperationError(f"cluster {self.conn.name}: {JOURNAL_TOPIC} could not be read to its end")
        finally:
            consumer.close()

    def close(self) -> None:
        """Flush and drop the producer."""
        if self._producer is not None:
            with contextlib.suppress(KafkaException):
                drain(self._producer, 1)
            self._producer = None
