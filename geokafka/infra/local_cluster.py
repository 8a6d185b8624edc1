"""Real Apache Kafka clusters in KRaft mode on this machine, started from the fetched jars.

A :class:`LocalClusterSpec` lists nodes (broker, controller or both) with their racks and
loopback ports. :func:`start_cluster` writes each node's ``server.properties``, formats its
storage once (so a restart keeps the data), launches the JVMs detached, and waits until the
cluster metadata shows every broker. A cluster with ``netns`` set runs its nodes inside that
network namespace (see :mod:`geokafka.infra.netns`), listening on ``host`` there.
"""

from __future__ import annotations

import base64
import os
import signal
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from geokafka.artifacts import jars
from geokafka.errors import AuthError, ClusterUnreachableError, EnvironmentError_, NodeExitedError, refusal_reason
from geokafka.infra import kafka_class_archive, storage_format
from geokafka.infra.broker_security import BrokerAuth, ListenerSecurity, broker_auth
from geokafka.infra.processes import (
    extra_jvm_options,
    running_pid,
    signal_process,
    start_process,
    stop_process,
    stop_processes,
)

_LOG4J = Path(__file__).with_name("log4j2.properties")
HOST = "127.0.0.1"


@dataclass(frozen=True)
class NodeSpec:
    """One Kafka process."""

    node_id: int
    is_broker: bool
    is_controller: bool
    rack: str | None
    broker_port: int | None
    controller_port: int | None


@dataclass(frozen=True)
class LocalClusterSpec:
    """A local cluster: its nodes, where it keeps its files, extra broker settings, client listener security."""

    name: str
    home: Path
    nodes: tuple[NodeSpec, ...]
    heap_mb: int = 384
    broker_config: dict[str, str] = field(default_factory=dict)
    security: ListenerSecurity = field(default_factory=ListenerSecurity)
    quick_jit: bool = False  # the quick compiler only (topology `jit: quick`)
    netns: str | None = None  # run the nodes in this network namespace (it must exist)
    host: str = HOST  # the address every listener binds and advertises

    @property
    def brokers(self) -> list[NodeSpec]:
        """Nodes that serve clients."""
        return [n for n in self.nodes if n.is_broker]

    @property
    def controllers(self) -> list[NodeSpec]:
        """Nodes in the KRaft quorum."""
        return [n for n in self.nodes if n.is_controller]

    @property
    def bootstrap(self) -> str:
        """Every broker address, comma-separated."""
        return ",".join(f"{self.host}:{n.broker_port}" for n in self.brokers)

    def node_dir(self, node_id: int) -> Path:
        """Folder of one node: config, data, log, PID file."""
        return self.home / f"node-{node_id}"

    def node(self, node_id: int) -> NodeSpec:
        """The node with this id."""
        return next(n for n in self.nodes if n.node_id == node_id)


def ports_of(spec: LocalClusterSpec) -> list[int]:
    """Every port the cluster binds."""
    return [p for n in spec.nodes for p in (n.broker_port, n.controller_port) if p is not None]


def server_properties(spec: LocalClusterSpec, node: NodeSpec, auth: BrokerAuth | None = None) -> dict[str, str]:
    """The ``server.properties`` of one node (``auth``: the client listener's TLS/SASL settings)."""
    voters = ",".join(f"{c.node_id}@{spec.host}:{c.controller_port}" for c in spec.controllers)
    brokers = len(spec.brokers)
    roles = [r for r, on in (("broker", node.is_broker), ("controller", node.is_controller)) if on]
    client = spec.security.listener_name  # PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL
    listeners = []
    if node.is_broker:
        listeners.append(f"{client}://{spec.host}:{node.broker_port}")
    if node.is_controller:
        listeners.append(f"CONTROLLER://{spec.host}:{node.controller_port}")
    props = {
        "process.roles": ",".join(roles),
        "node.id": str(node.node_id),
        "controller.quorum.voters": voters,
        "controller.listener.names": "CONTROLLER",
        "listeners": ",".join(listeners),
        "listener.security.protocol.map": f"{client}:{spec.security.protocol},CONTROLLER:PLAINTEXT",
        "log.dirs": str(spec.node_dir(node.node_id) / "data"),
        "num.partitions": "1",
        "auto.create.topics.enable": "false",
        "offsets.topic.replication.factor": str(min(3, brokers)),
        "offsets.topic.num.partitions": "10",
        "transaction.state.log.replication.factor": str(min(3, brokers)),
        "transaction.state.log.min.isr": str(min(2, brokers)),
        "transaction.state.log.num.partitions": "10",
        "group.initial.rebalance.delay.ms": "0",
        "share.coordinator.state.topic.replication.factor": str(min(3, brokers)),
        "log.segment.bytes": str(64 * 1024 * 1024),
        # Kafka preallocates each partition's offset and time index as a sparse file of this size and maps it. At
        # its default 10 MB, on a disk that reads ahead 8 MB (this project's VMs), each page fault on an index read
        # ahead a window of holes and zero-filled it; over thousands of partitions those windows exceed RAM and were
        # filled again and again: 57% of a source broker's CPU at 2,000 partitions under 2,000 records/s (kernel
        # memset under filemap_fault; a fresh partition's first index entry had cost 11 ms). 256 KB holds the
        # 16,384 entries of a 64 MB segment at Kafka's 4 KB index interval.
        "log.index.size.max.bytes": str(256 * 1024),
        "message.max.bytes": str(8 * 1024 * 1024),
        "replica.fetch.max.bytes": str(8 * 1024 * 1024),
    }
    if node.is_broker:
        props["advertised.listeners"] = f"{client}://{spec.host}:{node.broker_port}"
        props["inter.broker.listener.name"] = client
        props["replica.selector.class"] = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
        if node.rack:
            props["broker.rack"] = node.rack
        if auth is not None:
            props.update(auth.server_properties())
    props.update(spec.broker_config)
    return props


def start_cluster(spec: LocalClusterSpec, timeout_s: float = 90.0) -> dict[int, str | None]:
    """Start every node that is not running, wait until all brokers are in the metadata.

    Returns broker id -> rack as the cluster's own metadata reports it. Raises
    :class:`EnvironmentError_` naming the port when one is taken by another process; in that
    case nothing is started.
    """
    return start_clusters([spec], timeout_s)[spec.name]


def start_clusters(specs: list[LocalClusterSpec], timeout_s: float = 90.0) -> dict[str, dict[int, str | None]]:
    """Start several clusters at once (JVMs boot in parallel); cluster -> broker id -> rack."""
    plans = [(spec, [n for n in spec.nodes if running_pid(_pid_file(spec, n)) is None]) for spec in specs]
    for spec, to_start in plans:
        in_namespace = _namespace_ports(spec, spec.netns) if spec.netns and to_start else set()
        for node in to_start:
            for port in (node.broker_port, node.controller_port):
                if port is not None and (port in in_namespace if spec.netns else not port_is_free(port)):
                    raise EnvironmentError_(
                        f"cluster {spec.name}: port {port} (node {node.node_id}) is already in use by another process"
                    )
    classpath = jars.kafka_classpath()
    auths = {spec.name: broker_auth(spec.security, spec.home, spec.name) for spec, _ in plans}
    _prepare_nodes([(spec, node, auths[spec.name]) for spec, to_start in plans for node in to_start], classpath)
    for spec, to_start in plans:
        for node in to_start:
            _launch_node(spec, node, classpath)
    racks: dict[str, dict[int, str | None]] = {}
    try:
        for spec, _ in plans:
            racks[spec.name] = wait_until_ready(spec, timeout_s, auths[spec.name])
    except (ClusterUnreachableError, AuthError):
        for spec, to_start in plans:
            if to_start:
                stop_cluster(spec)
        raise
    return racks


def start_node(spec: LocalClusterSpec, node_id: int) -> None:
    """(Re)start one node that was stopped or killed."""
    node = spec.node(node_id)
    if running_pid(_pid_file(spec, node)) is None:
        classpath = jars.kafka_classpath()
        _prepare_nodes([(spec, node, broker_auth(spec.security, spec.home, spec.name))], classpath)
        _launch_node(spec, node, classpath)


def stop_cluster(spec: LocalClusterSpec) -> int:
    """Stop every node (brokers first, then controllers); return how many were running.

    Each group is signalled at once: stopped one by one, the last KRaft voters have no quorum
    left to approve their controlled shutdown and hang until killed. A voter still running
    after the majority has gone cannot finish either, so it is killed after a short grace.
    """
    brokers_only = [_pid_file(spec, n) for n in spec.nodes if not n.is_controller]
    controllers = [_pid_file(spec, n) for n in spec.nodes if n.is_controller]
    majority = len(controllers) // 2 + 1
    return stop_processes(brokers_only) + stop_processes(controllers, quorum=majority)


def stop_node(spec: LocalClusterSpec, node_id: int) -> bool:
    """Stop one node cleanly."""
    return stop_process(_pid_file(spec, spec.node(node_id)))


def kill_node(spec: LocalClusterSpec, node_id: int, sig: signal.Signals = signal.SIGKILL) -> bool:
    """Send ``sig`` to one node (SIGKILL: a crash; SIGSTOP/SIGCONT: a pause)."""
    return signal_process(_pid_file(spec, spec.node(node_id)), sig)


def running_nodes(spec: LocalClusterSpec) -> dict[int, int]:
    """node id -> PID of the nodes running now."""
    pids = {n.node_id: running_pid(_pid_file(spec, n)) for n in spec.nodes}
    return {node_id: pid for node_id, pid in pids.items() if pid is not None}


def port_is_free(port: int) -> bool:
    """True if nothing listens on ``port`` on the loopback address."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return False
    return True


def listening_ports(netns: str | None = None) -> set[int] | None:
    """TCP ports in LISTEN state on this machine (or in network namespace ``netns``), from
    ``/proc/net`` (None where it is absent)."""
    if netns is not None:
        from geokafka.infra.netns import listening_tables

        return _listening(listening_tables(netns))
    ports: set[int] = set()
    readable = False
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            rows = Path(table).read_text(encoding="ascii").splitlines()[1:]
        except OSError:
            continue
        readable = True
        ports |= _listening(rows)
    return ports if readable else None


def _listening(rows: list[str]) -> set[int]:
    """Local ports of the LISTEN rows of a ``/proc/net/tcp`` table (header rows do not match)."""
    ports: set[int] = set()
    for row in rows:
        fields = row.split()
        if len(fields) > 3 and fields[3] == "0A":  # 0A = TCP_LISTEN
            ports.add(int(fields[1].rpartition(":")[2], 16))
    return ports


def _namespace_ports(spec: LocalClusterSpec, name: str) -> set[int]:
    """Ports listening in namespace ``name``, where the cluster is to start; a missing namespace
    or a TLS listener is an error (the generated broker certificate names 127.0.0.1 only)."""
    from geokafka.infra import netns

    if spec.security.tls:
        raise EnvironmentError_(f"cluster {spec.name}: TLS listeners are not supported inside a network namespace")
    if name not in netns.namespaces():
        raise EnvironmentError_(f"cluster {spec.name}: network namespace {name} does not exist")
    return listening_ports(name) or set()


def wait_until_ready(spec: LocalClusterSpec, timeout_s: float, auth: BrokerAuth | None = None) -> dict[int, str | None]:
    """Wait until the metadata of the cluster lists every broker and each partition it holds (a restart keeps its
    topics) is served by its leader; return broker id -> rack.

    A restarted broker is in the metadata, and its partitions' leaders are named there, before it has taken up their
    leadership: until then a read of them is refused (UNKNOWN_LEADER_EPOCH). The bench's two brokers restarted with
    about 2,000 partitions each still refused 684 and 238 of them when listed, for up to 2.7 s, and a mirror started
    on them said its target was not reachable. So every partition with a leader must answer a ListOffsets (one
    request per broker) before the cluster counts as up.

    The probe connects like a client (TLS/SASL of the cluster's listener); if the brokers
    refuse its credentials, that is an :class:`AuthError` at once, not a time-out.
    """
    from confluent_kafka import KafkaError
    from confluent_kafka.admin import AdminClient  # local import: keeps `geokafka --help` fast


    if auth is None:
        auth = broker_auth(spec.security, spec.home, spec.name)
    expected = {n.node_id for n in spec.brokers}
    deadline = time.monotonic() + timeout_s
    admin = None
    seen: set[int] = set()
    unserved: list[str] = []
    refused: list[str] = []

    def on_error(err: KafkaError) -> None:
        if err.code() in (KafkaError._AUTHENTICATION, KafkaError.SASL_AUTHENTICATION_FAILED):
            refused.append(refusal_reason(err.str()))

    while time.monotonic() < deadline:
        if refused:
            raise AuthError(f"cluster {spec.name}: the brokers refused geokafka's credentials: {refused[-1]}")
        dead = [n.node_id for n in spec.nodes if running_pid(_pid_file(spec, n)) is None]
        if dead:
            log = spec.node_dir(dead[0]) / "logs" / "server.log"
            raise NodeExitedError(f"cluster {spec.name}: node {dead[0]} exited during start-up (see {log})")
        if admin is None:
            # Connecting to a loopback port nobody listens on yet can pick that very port as
            # the ephemeral source port (a TCP self-connect), which then keeps the broker from
            # binding it. So no client connects before every broker port is listening.
            listening = listening_ports(spec.netns)
            if listening is not None and any(n.broker_port not in listening for n in spec.brokers):
                time.sleep(0.2)
                continue
            settings: dict[str, Any] = {"bootstrap.servers": spec.bootstrap, "log_level": 0,
                                        "logger": quiet_client_logger(), "error_cb": on_error, **auth.client_settings()}
            admin = AdminClient(settings)
        try:
            described = admin.describe_cluster(request_timeout=3).result(timeout=4)
            seen = {node.id for node in described.nodes}
            if seen >= expected:
                unserved = unserved_partitions(admin)
                if not unserved:
                    return {node.id: node.rack for node in described.nodes}
        except Exception:  # noqa: BLE001 - not up yet; retried until the deadline
            admin.poll(0)  # serves the error callback: a refused login shows there
        time.sleep(0.5)
    if seen >= expected and unserved:
        raise ClusterUnreachableError(f"cluster {spec.name}: {len(unserved)} partitions not served by their leaders "
                                      f"after {timeout_s:.0f}s ({', '.join(unserved[:3])})")
    raise ClusterUnreachableError(
        f"cluster {spec.name}: brokers {sorted(expected - seen)} not in the metadata after {timeout_s:.0f}s"
    )


def unserved_partitions(admin: Any, timeout_s: float = 3.0) -> list[str]:
    """``topic/partition`` of every partition whose leader, named in the metadata, does not serve it yet (any other
    answer, a refusal included, is served); partitions without a leader are not asked."""
    from concurrent.futures import TimeoutError as FutureTimeout

    from confluent_kafka import KafkaError, KafkaException, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    not_yet = {KafkaError.NOT_LEADER_FOR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE, KafkaError.UNKNOWN_LEADER_EPOCH,
               KafkaError.FENCED_LEADER_EPOCH, KafkaError.REPLICA_NOT_AVAILABLE, KafkaError.UNKNOWN_TOPIC_OR_PART,
               KafkaError._TIMED_OUT}  # what a leader answers until it has taken up the partition
    metadata = admin.list_topics(timeout=timeout_s)
    request = {TopicPartition(topic, p.id): OffsetSpec.latest() for topic, described in metadata.topics.items()
               for p in described.partitions.values() if p.leader >= 0}
    if not request:
        return []
    unserved: list[str] = []
    for tp, answer in admin.list_offsets(request, request_timeout=timeout_s).items():
        try:
            answer.result(timeout=timeout_s + 1)
        except FutureTimeout:
            unserved.append(f"{tp.topic}/{tp.partition}")
        except KafkaException as exc:
            error = exc.args[0] if exc.args and isinstance(exc.args[0], KafkaError) else None
            if error is None or error.code() in not_yet:
                unserved.append(f"{tp.topic}/{tp.partition}")
    return sorted(unserved)


def _pid_file(spec: LocalClusterSpec, node: NodeSpec) -> Path:
    return spec.node_dir(node.node_id) / "kafka.pid"


def _cluster_id(spec: LocalClusterSpec) -> str:
    path = spec.home / "cluster.id"
    if path.exists():
        return path.read_text().strip()
    spec.home.mkdir(parents=True, exist_ok=True)
    candidate = _kafka_uuid()
    path.write_text(candidate + "\n")
    return candidate


def _kafka_uuid() -> str:
    """A random id as Kafka writes one (``Uuid.randomUuid``): URL-safe base64 without padding, not starting with
    a dash (the tools would read it as an option)."""
    while True:
        candidate = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()
        if not candidate.startswith("-"):
            return candidate


def _prepare_nodes(nodes: list[tuple[LocalClusterSpec, NodeSpec, BrokerAuth]], classpath: str) -> None:
    """Write each node's config and format its storage if new: Kafka's tool runs for the first node of each kind
    (the runs in parallel), and the others of that kind get a copy of its checkpoint
    (:mod:`~geokafka.infra.storage_format`)."""
    runs: list[_Format] = []
    later: list[tuple[LocalClusterSpec, NodeSpec, BrokerAuth]] = []
    for spec, node, auth in nodes:
        outcome = _prepare_node(spec, node, classpath, auth, busy={run.key for run in runs if run.key is not None})
        if isinstance(outcome, _Format):
            runs.append(outcome)
        elif outcome == "later":
            later.append((spec, node, auth))
    for run in runs:
        _await_format(run)
    for spec, node, auth in later:
        outcome = _prepare_node(spec, node, classpath, auth, busy=set())
        if isinstance(outcome, _Format):  # no checkpoint kept after all (the cache folder was removed meanwhile)
            _await_format(outcome)


def _prepare_node(
    spec: LocalClusterSpec, node: NodeSpec, classpath: str, auth: BrokerAuth, busy: set[str]
) -> _Format | Literal["formatted", "later"]:
    """Write the node's config; format its storage if new: from a kept checkpoint of its kind when there is one,
    "later" when the tool is already formatting a node of its kind (in ``busy``), else by starting Kafka's tool
    (see :func:`_await_format`).

    The config can hold the listener's secrets, so it is readable by its owner only.
    """
    node_dir = spec.node_dir(node.node_id)
    (node_dir / "logs").mkdir(parents=True, exist_ok=True)
    config = node_dir / "server.properties"
    properties = server_properties(spec, node, auth)
    text = "".join(f"{k}={properties_escape(v)}\n" for k, v in properties.items())
    fd = os.open(config, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        os.fchmod(out.fileno(), 0o600)  # also when an older, wider file is rewritten
        out.write(text)
    data_dirs = properties["log.dirs"].split(",")  # the node's own, unless its broker_config says otherwise
    data_dir = Path(data_dirs[0])
    if (data_dir / storage_format.META).exists():
        return "formatted"
    format_args = auth.format_args()
    copyable = not format_args and len(data_dirs) == 1 and "metadata.log.dir" not in properties
    key = storage_format.template_key(jars.KAFKA_VERSION, properties) if copyable else None
    cluster_id = _cluster_id(spec)
    if key is not None and storage_format.format_from_template(key, data_dir, node.node_id, cluster_id, _kafka_uuid()):
        return "formatted"
    if key in busy:
        return "later"
    proc = subprocess.Popen(
        ["java", *_SHORT_RUN, *kafka_class_archive.java_options(), "-cp", _with_plugins(classpath), *_jvm_logging(node_dir),
         "kafka.tools.StorageTool", "format", "-t", cluster_id, "-c", str(config), "--ignore-formatted", *format_args],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True,
    )
    return _Format(spec.name, node.node_id, proc, key, data_dir)


@dataclass(frozen=True)
class _Format:
    """A run of Kafka's storage tool for one node; ``key``: the kind of node whose checkpoint it makes (None: not
    one to copy)."""

    cluster: str
    node_id: int
    proc: subprocess.Popen[str]
    key: str | None
    data_dir: Path


def _await_format(run: _Format) -> None:
    """Wait for a format started by :func:`_prepare_node`; keep its checkpoint for the next node of its kind."""
    output, _ = run.proc.communicate()
    if run.proc.returncode != 0:
        tail = output.strip().splitlines()[-1:] or ["?"]
        raise EnvironmentError_(f"cluster {run.cluster}: formatting node {run.node_id} failed: {tail[0]}")
    if run.key is not None:
        storage_format.keep_template(run.key, run.data_dir)


def properties_escape(value: str) -> str:
    """Escape a value for a Java properties file (read as ISO-8859-1, backslash escapes)."""
    out = []
    for i, ch in enumerate(value):
        if ch == "\\":
            out.append("\\\\")
        elif ch in "\n\r\t\f":
            out.append({"\n": "\\n", "\r": "\\r", "\t": "\\t", "\f": "\\f"}[ch])
        elif ch == " " and i == 0:
            out.append("\\ ")  # a leading space would be dropped
        elif ord(ch) < 0x20 or ord(ch) > 0x7E:
            out.extend(f"\\u{unit:04x}" for unit in _utf16_units(ch))
        else:
            out.append(ch)
    return "".join(out)


def _utf16_units(ch: str) -> list[int]:
    data = ch.encode("utf-16-be")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


def _launch_node(spec: LocalClusterSpec, node: NodeSpec, classpath: str) -> None:
    node_dir = spec.node_dir(node.node_id)
    config = node_dir / "server.properties"
    prefix = ["ip", "netns", "exec", spec.netns] if spec.netns else []  # ip execs java: the PID stays
    cmd = [
        *prefix, "java", f"-Xms{spec.heap_mb}m", f"-Xmx{spec.heap_mb}m", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
        "-XX:+ExitOnOutOfMemoryError", "-Djava.awt.headless=true",
        *kafka_class_archive.java_options(), *extra_jvm_options(spec.quick_jit, LOCAL_JVM_OPTIONS_ENV),
        *_jvm_logging(node_dir),
        "-cp", _with_plugins(classpath), "kafka.Kafka", str(config),
    ]
    start_process(cmd, _pid_file(spec, node), node_dir / "logs" / "stdout.log", str(config), node_dir)


def _with_plugins(classpath: str) -> str:
    """The broker's classpath, and after it what :data:`LOCAL_CLASSPATH_ENV` names (the storage format reads the
    broker's config too, plugin class names included)."""
    extra = os.environ.get(LOCAL_CLASSPATH_ENV, "").strip()
    return f"{classpath}{os.pathsep}{extra}" if extra else classpath


_SHORT_RUN = ["-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC", "-Xmx256m"]
"""JVM options of a tool that runs for a second (storage format): the quick compiler only, one GC
thread, a small heap; a JVM's defaults are tuned for long runs and cost more CPU than the work."""

LOCAL_CLASSPATH_ENV = "GEOKAFKA_LOCAL_CLASSPATH"
"""Classpath entries appended to a local Kafka node's own, read as each node starts: a broker plugin (a create-topic
policy, an authorizer of one's own) that ``broker_config`` then names. The tests start a cluster with a policy so."""

LOCAL_JVM_OPTIONS_ENV = "GEOKAFKA_LOCAL_JVM_OPTS"
"""Extra JVM options for every local Kafka node (space-separated). The test suite uses it to start
its many short-lived brokers in less CPU; a real local cluster needs none. Nodes run G1: options
that select another collector stop the JVM."""


def _jvm_logging(node_dir: Path) -> list[str]:
    return [f"-Dlog4j2.configurationFile={_LOG4J}", f"-Dkafka.logs.dir={node_dir / 'logs'}"]


def quiet_client_logger():  # type: ignore[no-untyped-def]
    """A logger that drops everything: a client of a node that is still starting logs nothing."""
    import logging

    logger = logging.getLogger("geokafka.librdkafka.startup")
    logger.addHandler(logging.NullHandler())
    logger.propagate = False
    return logger
