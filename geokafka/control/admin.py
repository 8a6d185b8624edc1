"""Admin operations on one cluster, with errors that say what was being attempted.

A thin layer over confluent-kafka's AdminClient: results per resource, Kafka errors mapped to
geokafka's exception tree (unreachable, auth, missing topic, ...).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, IsolationLevel, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource, NewPartitions, NewTopic, OffsetSpec
from confluent_kafka.cimpl import _AdminClientImpl

from geokafka.control.client_threads import CLIENT_THREADS, named_threads, thread_cpu_s, thread_ids
from geokafka.control.connection import LIBRDKAFKA_LOG, ClusterConnection
from geokafka.control.kafka_errors import classify
from geokafka.errors import (
    AuthError,
    ClusterUnreachableError,
    GeokafkaError,
    KafkaOperationError,
    MissingTopicError,
    refusal_reason,
)

_SILENT = LIBRDKAFKA_LOG

LIST_OFFSETS_CHUNK = 250
"""Partitions per ListOffsets call: librdkafka's cost per call grows with the square of its partitions (2,000
partitions cost 25 ms of CPU in one call, 6,000 cost 190 ms; in calls of 250, 11 and 30 ms)."""


def _list_offsets(admin: AdminClient, request: list[TopicPartition], level: IsolationLevel,
                  timeout_s: float) -> dict[TopicPartition, Any]:
    """TopicPartition -> ListOffsetsResultInfo or KafkaError for ``request`` (each TopicPartition's offset is
    the OffsetSpec's value): the C call of ``AdminClient.list_offsets``, in calls of at most
    :data:`LIST_OFFSETS_CHUNK` partitions issued together, each with one future for the whole call instead of
    one per partition (a lock, a condition and a callback each)."""
    calls: list[Future[dict[TopicPartition, Any]]] = []
    for start in range(0, len(request), LIST_OFFSETS_CHUNK):
        done: Future[dict[TopicPartition, Any]] = Future()
        done.set_running_or_notify_cancel()
        _AdminClientImpl.list_offsets(admin, request[start:start + LIST_OFFSETS_CHUNK], done,
                                      isolation_level_value=level.value, request_timeout=timeout_s)
        calls.append(done)
    deadline = time.monotonic() + timeout_s + 1
    results: dict[TopicPartition, Any] = {}
    for done in calls:
        results.update(done.result(timeout=max(0.0, deadline - time.monotonic())))
    return results


def silent_logger() -> logging.Logger:
    """The logger librdkafka's own log lines go to: dropped (geokafka says what happened in its words)."""
    return _SILENT


_UNREACHABLE = {KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN, KafkaError._TIMED_OUT, KafkaError._RESOLVE}
_AUTH = {
    KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._SSL,
    KafkaError.TOPIC_AUTHORIZATION_FAILED, KafkaError.CLUSTER_AUTHORIZATION_FAILED,
    KafkaError.GROUP_AUTHORIZATION_FAILED, KafkaError.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
}
# A refused SASL login or TLS handshake only shows as "transport failure" on the request;
# the reason comes through the client's error callback, remembered here per cluster.
_REFUSED = {KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED, KafkaError._SSL}
_refusals: dict[tuple[str, str, str], str] = {}
_admins: weakref.WeakSet[ClusterAdmin] = weakref.WeakSet()
_admins_lock = threading.Lock()


@dataclass(frozen=True)
class TopicInfo:
    """Partition count and non-default configs of a topic."""

    name: str
    partitions: int
    replication_factor: int
    configs: dict[str, str]
    topic_id: str | None = None


def kafka_error_code(exc: BaseException) -> int | None:
    """The Kafka error code a confluent-kafka exception (or a geokafka error) carries, if any."""
    if isinstance(exc, GeokafkaError):
        return exc.kafka_code
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    return err.code() if isinstance(err, KafkaError) else None


def is_authorization_failure(exc: BaseException) -> bool:
    """A refused login, TLS handshake or ACL, by type or Kafka error code."""
    return isinstance(exc, AuthError) or kafka_error_code(exc) in _AUTH


def raise_mapped(conn: ClusterConnection, what: str, exc: BaseException) -> None:
    """Re-raise a Kafka exception (or a future's time-out) as the geokafka error that fits it.

    A cluster that does not answer because its brokers refused geokafka's credentials or
    TLS handshake is an :class:`AuthError` with the brokers' reason, not "unreachable".
    """
    err = exc.args[0] if isinstance(exc, KafkaException) and exc.args else None
    code = err.code() if isinstance(err, KafkaError) else None
    if isinstance(exc, FutureTimeout) or code in _UNREACHABLE:
        refusal = refusal_of(conn)
        if refusal is not None:
            raise AuthError(f"cluster {conn.name}: {what}: the brokers refused the connection: {refusal}") from None
    if isinstance(exc, FutureTimeout):
        raise ClusterUnreachableError(f"cluster {conn.name} ({conn.bootstrap}) did not answer: {what}") from None
    text = err.str() if isinstance(err, KafkaError) else str(exc)
    if code in _UNREACHABLE:
        raise ClusterUnreachableError(f"cluster {conn.name} ({conn.bootstrap}) is not reachable: {what}: {text}",
                                      kafka_code=code) from None
    if code in _AUTH:
        raise AuthError(f"cluster {conn.name}: {what}: {text}", kafka_code=code) from None
    if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
        raise MissingTopicError(f"cluster {conn.name}: {what}: topic does not exist", kafka_code=code) from None
    classified = classify(exc)
    if not classified.retriable:
        hint = f"; {classified.hint}" if classified.hint else ""
        raise KafkaOperationError(f"cluster {conn.name}: {what}: {text} ({classified.name}, not retriable{hint})",
                                  kafka_code=code, retriable=False) from None
    raise KafkaOperationError(f"cluster {conn.name}: {what}: {text}", kafka_code=code) from None


def refusal_of(conn: ClusterConnection) -> str | None:
    """Why the brokers of ``conn`` last refused a client of this process (SASL or TLS), if they did."""
    with _admins_lock:
        admins = [a for a in _admins if _key(a.conn) == _key(conn)]
    for admin in admins:
        admin.raw.poll(0)  # serves pending error callbacks (admin results come on their own thread)
    return _refusals.get(_key(conn))


def _key(conn: ClusterConnection) -> tuple[str, str, str]:
    """A cluster and the credentials used for it (as a digest: the key holds no secret)."""
    digest = hashlib.sha256(repr(sorted(conn.security.items())).encode()).hexdigest()
    return conn.name, conn.bootstrap, digest


def cluster_nodes(client: AdminClient, timeout_s: float) -> list[Any]:
    """The brokers the cluster lists (confluent-kafka ``Node``s), asked with DescribeCluster: an answer of the same
    size whatever the cluster holds, where a metadata request for every topic cost the broker ~25 ms and the client
    ~6 ms of CPU at 5,000 partitions (measured on a 1-node cluster). librdkafka sends it to the one broker its
    metadata last named as the controller, which may since have died or stopped: no answer proves nothing (a
    metadata request, which any broker serves, asks again and refreshes that name)."""
    return list(client.describe_cluster(request_timeout=timeout_s).result(timeout=timeout_s).nodes)


def _refusal_recorder(conn: ClusterConnection) -> Callable[[KafkaError], None]:
    """An ``error_cb`` that remembers refused logins and handshakes of ``conn``'s cluster."""
    key = _key(conn)

    def on_error(err: KafkaError) -> None:
        if err.code() in _REFUSED:
            _refusals[key] = refusal_reason(err.str())

    return on_error


def _security_settings_refused(conn: ClusterConnection) -> bool:
    """Whether librdkafka takes the client settings once the TLS/SASL ones are left out (then those were refused)."""
    security = ("security.protocol", "ssl.", "sasl.")
    rest = {k: v for k, v in conn.librdkafka(logger=_SILENT).items() if not k.startswith(security)}
    try:
        AdminClient(rest)
    except KafkaException:
        return False
    return True


class ClusterAdmin:
    """Admin calls against one cluster."""

    def __init__(self, conn: ClusterConnection, timeout_s: float = 15.0) -> None:
        self.conn = conn
        self.timeout_s = timeout_s
        for setting, key in (("ssl.ca.location", "ca_file"), ("ssl.certificate.location", "cert_file"),
                             ("ssl.key.location", "key_file")):
            path = conn.security.get(setting)
            if path and not os.path.isfile(path):
                raise AuthError(f"cluster {conn.name}: security.{key} {path} is not a readable file")
        threads_before = thread_ids()
        try:
            self._admin = AdminClient(conn.librdkafka(logger=_SILENT, error_cb=_refusal_recorder(conn)))
        except KafkaException as exc:  # settings librdkafka refuses up front, e.g. a PEM it cannot parse
            text = exc.args[0].str() if exc.args and isinstance(exc.args[0], KafkaError) else str(exc)
            cls = AuthError if _security_settings_refused(conn) else KafkaOperationError
            raise cls(f"cluster {conn.name}: client settings rejected: {text}", kafka_code=kafka_error_code(exc)) from None
        self._started_threads = frozenset(thread_ids() - threads_before)
        """The threads started while the client was made: its own, and any another client made meanwhile."""
        self._client_threads = named_threads(self._started_threads)
        """Where the client builds its requests, parses the answers and turns them into Python objects (those
        told apart from another client's)."""
        self._reader: Consumer | None = None
        with _admins_lock:
            _admins.add(self)

    def background_cpu_s(self) -> float:
        """CPU seconds the client's own threads have used (``rdk:main`` and ``rdk:bg``; 0.0 for a thread not told
        apart): what a call costs beyond the calling thread's own CPU."""
        if len(self._client_threads) < len(CLIENT_THREADS):  # a thread that had not named itself yet
            self._client_threads = named_threads(self._started_threads)
        return sum(thread_cpu_s(tid) for tid in self._client_threads)

    def check_reachable(self) -> None:
        """Raise ClusterUnreachableError/AuthError unless the cluster answers a metadata request."""
        try:
            self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise_mapped(self.conn, "listing topics", exc)
        _refusals.pop(_key(self.conn), None)  # the credentials work (now)

    def probe(self, timeout_s: float | None = None) -> bool:
        """True if the cluster answers within ``timeout_s``; False as soon as every broker refused
        the connection (a dead site answers at once, not after the time-out). AuthError if the
        brokers refused geokafka's credentials."""
        down = threading.Event()
        record = _refusal_recorder(self.conn)

        def on_error(err: KafkaError) -> None:
            record(err)
            if err.code() == KafkaError._ALL_BROKERS_DOWN:
                down.set()

        client = AdminClient(self.conn.librdkafka(logger=_SILENT, error_cb=on_error))
        deadline = time.monotonic() + (self.timeout_s if timeout_s is None else timeout_s)
        describe = True
        while True:
            wait_s = max(0.05, min(0.25, deadline - time.monotonic()))
            try:
                if describe:
                    cluster_nodes(client, wait_s)
                else:
                    client.list_topics(timeout=wait_s)
                _refusals.pop(_key(self.conn), None)
                return True
            except (KafkaException, FutureTimeout) as exc:
                # DescribeCluster goes to the one broker the metadata named; a metadata request to any that
                # answers: a cluster with one broker paused or dying is still there
                describe = False
                client.poll(0)  # serves the error callback
                refusal = _refusals.get(_key(self.conn))
                if refusal is not None:
                    raise_mapped(self.conn, "listing topics", exc)
                if down.is_set() or time.monotonic() >= deadline:
                    return False

    def topic_partitions(self) -> dict[str, int]:
        """Every topic and its partition count."""
        try:
            md = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise_mapped(self.conn, "listing topics", exc)
        return {name: len(t.partitions) for name, t in md.topics.items() if t.error is None}

    def broker_count(self) -> int:
        """Brokers in the cluster metadata."""
        try:
            return len(self._admin.list_topics(timeout=self.timeout_s).brokers)
        except KafkaException as exc:
            raise_mapped(self.conn, "reading cluster metadata", exc)
        return 0

    def describe_topic(self, topic: str) -> TopicInfo:
        """Partitions, replication factor and dynamic (non-default) configs of ``topic``."""
        try:
            md = self._admin.list_topics(topic, timeout=self.timeout_s).topics.get(topic)
        except KafkaException as exc:
            raise_mapped(self.conn, f"describing topic {topic}", exc)
        if md is None or md.error is not None or not md.partitions:
            raise MissingTopicError(f"cluster {self.conn.name}: topic {topic} does not exist")
        configs = self.topic_configs(topic)
        rf = max(len(p.replicas) for p in md.partitions.values())
        return TopicInfo(topic, len(md.partitions), rf, configs)

    def describe_topics(self, topics: Sequence[str]) -> dict[str, TopicInfo]:
        """:meth:`describe_topic` of many topics: one metadata request and one DescribeConfigs request in all."""
        if not topics:
            return {}
        try:
            metadata = self._admin.list_topics(timeout=self.timeout_s).topics
        except KafkaException as exc:
            raise_mapped(self.conn, f"describing topics {', '.join(topics[:3])}", exc)
        for topic in topics:
            md = metadata.get(topic)
            if md is None or md.error is not None or not md.partitions:
                raise MissingTopicError(f"cluster {self.conn.name}: topic {topic} does not exist")
        configs = self.many_topic_configs(topics)
        return {topic: TopicInfo(topic, len(metadata[topic].partitions),
                                 max(len(p.replicas) for p in metadata[topic].partitions.values()), configs[topic])
                for topic in topics}

    def topic_ids(self, topics: list[str]) -> dict[str, str]:
        """topic -> its topic ID (KIP-516), which changes when a topic is deleted and re-created.

        Topics that do not exist are left out.
        """
        from confluent_kafka import TopicCollection

        if not topics:
            return {}
        futures = self._admin.describe_topics(TopicCollection(sorted(set(topics))), request_timeout=self.timeout_s)
        out: dict[str, str] = {}
        for topic, future in futures.items():
            try:
                out[topic] = str(future.result(timeout=self.timeout_s).topic_id)
            except KafkaException as exc:
                if exc.args and isinstance(exc.args[0], KafkaError) and exc.args[0].code() in (
                        KafkaError.UNKNOWN_TOPIC_OR_PART, KafkaError.UNKNOWN_TOPIC_ID):
                    continue
                raise_mapped(self.conn, f"describing topic {topic}", exc)
            except FutureTimeout as exc:
                raise_mapped(self.conn, f"describing topic {topic}", exc)
        return out

    def topic_configs(self, topic: str) -> dict[str, str]:
        """Configs set on the topic itself (not broker defaults)."""
        return self.many_topic_configs([topic])[topic]

    def many_topic_configs(self, topics: Sequence[str]) -> dict[str, dict[str, str]]:
        """:meth:`topic_configs` of each of ``topics``, in one DescribeConfigs request."""
        resources = {topic: ConfigResource(ConfigResource.Type.TOPIC, topic) for topic in topics}
        futures = self._admin.describe_configs(list(resources.values())) if resources else {}
        out: dict[str, dict[str, str]] = {}
        for topic, resource in resources.items():
            try:
                entries = futures[resource].result(timeout=self.timeout_s)
            except (KafkaException, FutureTimeout) as exc:
                raise_mapped(self.conn, f"describing configs of {topic}", exc)
            out[topic] = {name: entry.value for name, entry in entries.items()
                          if entry.source == 1 and entry.value is not None}  # DYNAMIC_TOPIC_CONFIG
        return out

    def max_message_bytes(self, topics: list[str]) -> dict[str, int]:
        """Each topic's effective ``max.message.bytes`` (its own setting or the broker's), in one request."""
        resources = {t: ConfigResource(ConfigResource.Type.TOPIC, t) for t in topics}
        out: dict[str, int] = {}
        if not resources:
            return out
        futures = self._admin.describe_configs(list(resources.values()))
        for topic, resource in resources.items():
            try:
                entry = futures[resource].result(timeout=self.timeout_s).get("max.message.bytes")
            except (KafkaException, FutureTimeout) as exc:
                raise_mapped(self.conn, f"describing configs of {topic}", exc)
            if entry is not None and entry.value is not None:
                out[topic] = int(entry.value)
        return out

    def create_topic(self, topic: str, partitions: int, replication_factor: int, configs: dict[str, str]) -> bool:
        """Create ``topic``; False if it already existed. Waits until every partition has a leader."""
        return self.create_topics([NewTopic(topic, partitions, replication_factor, config=configs)])[topic]

    def create_topics(self, topics: Sequence[NewTopic]) -> dict[str, bool]:
        """Create ``topics`` in one CreateTopics request: topic -> False for one that already existed. Waits until
        every partition of each has a leader, for all of them together; the first topic refused raises."""
        if not topics:
            return {}
        futures = self._admin.create_topics(list(topics), operation_timeout=self.timeout_s)
        created: dict[str, bool] = {}
        for new in topics:
            try:
                futures[new.topic].result(timeout=self.timeout_s)
                created[new.topic] = True
            except FutureTimeout as exc:
                raise_mapped(self.conn, f"creating topic {new.topic}", exc)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.TOPIC_ALREADY_EXISTS:
                    raise_mapped(self.conn, f"creating topic {new.topic}", exc)
                created[new.topic] = False
        self.wait_for_all_leaders({new.topic: new.num_partitions for new in topics})
        return created

    def add_partitions(self, topic: str, total: int) -> None:
        """Grow ``topic`` to ``total`` partitions."""
        self.grow_topics({topic: total})

    def grow_topics(self, totals: Mapping[str, int]) -> None:
        """Grow each topic to its total partition count in one CreatePartitions request, then wait for leaders."""
        if not totals:
            return
        futures = self._admin.create_partitions([NewPartitions(topic, total) for topic, total in totals.items()])
        for topic in totals:
            try:
                futures[topic].result(timeout=self.timeout_s)
            except FutureTimeout as exc:
                raise_mapped(self.conn, f"adding partitions to {topic}", exc)
            except KafkaException as exc:
                if exc.args[0].code() != KafkaError.INVALID_PARTITIONS:
                    raise_mapped(self.conn, f"adding partitions to {topic}", exc)
        self.wait_for_all_leaders(totals)

    def set_topic_configs(self, topic: str, changes: dict[str, str | None]) -> None:
        """Set (value) or delete (None) topic configs incrementally."""
        from confluent_kafka.admin import AlterConfigOpType, ConfigEntry

        entries = [
            ConfigEntry(name, value or "", incremental_operation=(
                AlterConfigOpType.SET if value is not None else AlterConfigOpType.DELETE))
            for name, value in changes.items()
        ]
        resource = ConfigResource(ConfigResource.Type.TOPIC, topic, incremental_configs=entries)
        try:
            self._admin.incremental_alter_configs([resource])[resource].result(timeout=self.timeout_s)
        except (KafkaException, FutureTimeout) as exc:
            raise_mapped(self.conn, f"altering configs of {topic}", exc)

    def wait_for_leaders(self, topic: str, partitions: int) -> None:
        """Wait until ``topic`` has ``partitions`` partitions, each with a leader."""
        self.wait_for_all_leaders({topic: partitions})

    def wait_for_all_leaders(self, partitions: Mapping[str, int]) -> None:
        """Wait until each topic has its number of partitions, each with a leader: one metadata request a look."""
        deadline = time.monotonic() + self.timeout_s * 2
        waiting = dict(partitions)
        while waiting and time.monotonic() < deadline:
            if len(waiting) == 1:
                topic = next(iter(waiting))
                metadata = self._admin.list_topics(topic, timeout=self.timeout_s).topics
            else:
                metadata = self._admin.list_topics(timeout=self.timeout_s).topics
            for topic, count in list(waiting.items()):
                md = metadata.get(topic)
                if md is not None and md.error is None and len(md.partitions) >= count and all(
                        p.leader >= 0 for p in md.partitions.values()):
                    del waiting[topic]
            if waiting:
                time.sleep(0.1)
        if waiting:
            raise KafkaOperationError(f"cluster {self.conn.name}: topic {sorted(waiting)[0]} has no leader for "
                                      f"every partition" + (f" (nor {len(waiting) - 1} more)" if len(waiting) > 1 else ""))

    def watermarks(self, topic: str, partitions: int) -> dict[int, tuple[int, int]]:
        """partition -> (log start offset, last stable offset) of one topic (see :meth:`log_ranges`)."""
        return self.log_ranges({topic: partitions}).get(topic, {})

    def log_ranges(self, partitions: Mapping[str, int]) -> dict[str, dict[int, tuple[int, int]]]:
        """topic -> partition -> (log start offset, last stable offset) of every partition given: two
        ListOffsets requests per broker in all (librdkafka groups them by leader), never a round trip per
        partition. The end is read_committed's: records of open transactions are not counted yet."""
        keys = [(topic, p) for topic, n in partitions.items() for p in range(n)]
        what = f"reading offsets of {', '.join(sorted(partitions))}"
        starts = self.offsets(keys, earliest=True, what=what)
        ends = self.offsets(keys, what=what)
        out: dict[str, dict[int, tuple[int, int]]] = {topic: {} for topic in partitions}
        for key in keys:
            out[key[0]][key[1]] = (starts[key], ends[key])
        return out

    def offsets(self, partitions: Sequence[tuple[str, int]], *, earliest: bool = False, committed: bool = True,
                timeout_s: float | None = None, what: str | None = None) -> dict[tuple[str, int], int]:
        """(topic, partition) -> log start offset (``earliest``) or end offset, in one ListOffsets request per
        broker. The end is the last stable offset with ``committed`` (what a read_committed reader reaches),
        the high watermark without. Every partition answers, or a GeokafkaError says which did not."""
        if not partitions:
            return {}
        timeout = self.timeout_s if timeout_s is None else timeout_s
        what = what or f"reading {'start' if earliest else 'end'} offsets of {', '.join(sorted({t for t, _ in partitions}))}"
        spec = OffsetSpec.earliest() if earliest else OffsetSpec.latest()
        level = IsolationLevel.READ_COMMITTED if committed else IsolationLevel.READ_UNCOMMITTED
        try:
            results = _list_offsets(self._admin, [TopicPartition(t, p, spec._value) for t, p in partitions], level,
                                    timeout)
        except (KafkaException, FutureTimeout) as exc:
            raise_mapped(self.conn, what, exc)
        found: dict[tuple[str, int], int] = {}
        missing: list[tuple[str, int]] = []
        for tp, info in results.items():
            if isinstance(info, KafkaError):
                raise_mapped(self.conn, what, KafkaException(info))
            found[(tp.topic, tp.partition)] = int(info.offset)
            if info.offset < 0:  # a partition that lost its leader meanwhile
                missing.append((tp.topic, tp.partition))
        missing += [key for key in partitions if key not in found]
        if missing:
            shown = ", ".join(f"{t}/{p}" for t, p in sorted(set(missing))[:5])
            raise KafkaOperationError(f"cluster {self.conn.name}: {what}: no answer for {shown}")
        return found

    def consumer(self, **extra: Any) -> Consumer:
        """A consumer of this cluster for point reads (no group commits)."""
        return Consumer(self.conn.librdkafka(**{
            "group.id": "geokafka-reader", "enable.auto.commit": False, "isolation.level": "read_committed",
            "logger": _SILENT, "error_cb": _refusal_recorder(self.conn), **extra,
        }))

    def close(self) -> None:
        """Release the point-read consumer."""
        if self._reader is not None:
            self._reader.close()
            self._reader = None

    @property
    def raw(self) -> AdminClient:
        """The underlying AdminClient (for the offsets and ACL modules)."""
        return self._admin
