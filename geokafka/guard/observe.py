"""Reading a stretched cluster for the guard: registered brokers, TCP reachability, ISRs, min.insync.replicas."""

from __future__ import annotations

import socket
import time
from concurrent.futures import ThreadPoolExecutor

from confluent_kafka import KafkaException
from confluent_kafka.admin import AdminClient, ConfigResource, ResourceType

from geokafka.control.admin import cluster_nodes, raise_mapped, silent_logger
from geokafka.control.connection import ClusterConnection
from geokafka.errors import ClusterUnreachableError, TopologyError
from geokafka.guard.model import Broker, ClusterView, PartitionView

_CONFIG_REFRESH_S = 10.0


def reachable(host: str, port: int, timeout_s: float = 0.5) -> bool:
    """True if something accepts a TCP connection at ``host:port``."""
    try:
        with socket.create_connection((host, port), timeout=timeout_s):
            return True
    except OSError:
        return False


class ClusterReader:
    """One admin client for the guard's observations (a read of every broker's port, once a tick)."""

    def __init__(self, conn: ClusterConnection, timeout_s: float = 5.0) -> None:
        self.conn = conn
        self.timeout_s = timeout_s
        self._admin = AdminClient(conn.librdkafka(logger=silent_logger()))
        self._min_isr: dict[str, int] = {}
        self._min_isr_at = 0.0
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="guard-probe")

    def registered_brokers(self) -> dict[int, Broker]:
        """Brokers the controller has registered and not fenced, with their rack as DC."""
        try:
            nodes = cluster_nodes(self._admin, self.timeout_s)
        except (KafkaException, TimeoutError):
            # librdkafka sends DescribeCluster to the broker its cached metadata names as the
            # controller (in KRaft, some live broker) and only refreshes that every 5 minutes: when
            # the named broker died with its DC, it waits for it forever. A metadata request names
            # a live one; failing that, a new client asks a live bootstrap broker from scratch.
            try:
                self._admin.list_topics(timeout=self.timeout_s)
                nodes = cluster_nodes(self._admin, self.timeout_s)
            except (KafkaException, TimeoutError):
                self._admin = AdminClient(self.conn.librdkafka(logger=silent_logger()))
                try:
                    nodes = cluster_nodes(self._admin, self.timeout_s)
                except (KafkaException, TimeoutError) as exc:
                    raise_mapped(self.conn, "describing the cluster", exc)
                    return {}
        missing = sorted(n.id for n in nodes if not n.rack)
        if missing:
            raise TopologyError(f"cluster {self.conn.name}: brokers {missing} have no broker.rack; the guard needs "
                                "broker.rack set to each broker's DC")
        return {n.id: Broker(n.id, n.rack, n.host, n.port) for n in nodes}

    def observe(self, known: dict[int, Broker], refresh_configs: bool = False) -> ClusterView:
        """One observation; raises ClusterUnreachableError when no broker answers."""
        at_ms, elapsed_ms = int(time.time() * 1000), int(time.monotonic() * 1000)
        probes = {b.id: self._pool.submit(reachable, b.host, b.port) for b in known.values()}
        try:  # first: it also refreshes which broker answers DescribeCluster
            metadata = self._admin.list_topics(timeout=self.timeout_s)
        except KafkaException as exc:
            raise_mapped(self.conn, "listing topics", exc)
            raise
        live = frozenset(self.registered_brokers())
        partitions = tuple(
            PartitionView(name, p.id, tuple(p.replicas), tuple(p.isrs), p.leader)
            for name, topic in sorted(metadata.topics.items()) if topic.error is None
            for p in sorted(topic.partitions.values(), key=lambda q: q.id)
        )
        topics = sorted({p.topic for p in partitions})
        if refresh_configs or time.monotonic() - self._min_isr_at > _CONFIG_REFRESH_S or set(topics) - set(self._min_isr):
            self._min_isr = self._read_min_isr(topics)
            self._min_isr_at = time.monotonic()
        up = frozenset(b for b, future in probes.items() if future.result())
        return ClusterView(at_ms, elapsed_ms, live, up, partitions, {t: v for t, v in self._min_isr.items() if t in topics})

    def _read_min_isr(self, topics: list[str]) -> dict[str, int]:
        resources = [ConfigResource(ResourceType.TOPIC, t) for t in topics]
        if not resources:
            return {}
        out: dict[str, int] = {}
        for resource, future in self._admin.describe_configs(resources, request_timeout=self.timeout_s).items():
            try:
                entry = future.result(timeout=self.timeout_s).get("min.insync.replicas")
            except KafkaException:
                continue  # a topic deleted meanwhile
            except TimeoutError as exc:
                raise_mapped(self.conn, "reading min.insync.replicas", exc)
            if entry is not None and entry.value is not None:
                out[resource.name] = int(entry.value)
        return out

    def close(self) -> None:
        """Stop the probe threads."""
        self._pool.shutdown(wait=False)


def wait_for_brokers(reader: ClusterReader, timeout_s: float) -> dict[int, Broker]:
    """The registered brokers, once the cluster answers (the guard must start on a healthy cluster)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            brokers = reader.registered_brokers()
            if brokers:
                return brokers
        except ClusterUnreachableError:
            if time.monotonic() > deadline:
                raise
        if time.monotonic() > deadline:
            raise ClusterUnreachableError(f"cluster {reader.conn.name}: no broker registered")
        time.sleep(0.5)
