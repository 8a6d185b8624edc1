"""The drill's real stretched cluster: one local KRaft cluster, ``broker.rack`` = DC.

Nodes keep the plan's ids (brokers 1.., see :mod:`geokafka.planning.layout`). To stay light on
a shared machine, a DC's controllers run inside its brokers (KRaft combined mode) as long as
there are brokers to host them; the rest, like a tie-breaker site's, are controller-only
processes with the plan's controller ids. Losing a DC kills both kinds alike, so DC-loss
verdicts are unchanged. Observer brokers are not started: Apache Kafka has no observers.

Every process is found through its PID file under the drill's home, never by name.
"""

from __future__ import annotations

import shutil
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from confluent_kafka import ElectionType, KafkaError, KafkaException, TopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
    ResourceType,
)

from geokafka.control.admin import kafka_error_code
from geokafka.drills.stretch.traffic import quiet_client
from geokafka.errors import ClusterUnreachableError, KafkaOperationError, NodeExitedError
from geokafka.infra.local_cluster import (
    LocalClusterSpec,
    NodeSpec,
    kill_node,
    port_is_free,
    ports_of,
    running_nodes,
    start_clusters,
    start_node,
    wait_until_ready,
)
from geokafka.infra.processes import signal_process
from geokafka.planning.layout import Layout
from geokafka.planning.placement import TopicPlacement

BROKER_CONFIG = {
    # small and quiet: the drill shares two cores with other work
    "num.network.threads": "2",
    "num.io.threads": "2",
    "background.threads": "2",
    # A stop is either a DC's death (SIGKILL) or the manual steps' restart of a survivor while
    # the quorum is gone, when a controlled shutdown would wait 60 s for a controller that
    # never answers, then be killed (unclean).
    "controlled.shutdown.enable": "false",
}


@dataclass(frozen=True)
class DrillCluster:
    """The running cluster: its spec and which DC every node belongs to."""

    spec: LocalClusterSpec
    dc_of: dict[int, str]
    controller_host: dict[int, int]
    """plan controller id -> node id of the process running it."""

    def nodes_in(self, dc: str) -> list[int]:
        """Node ids of every process of ``dc``."""
        return sorted(n for n, d in self.dc_of.items() if d == dc)

    def brokers_outside(self, dc: str) -> list[NodeSpec]:
        """Brokers of the other DCs."""
        return [n for n in self.spec.brokers if self.dc_of[n.node_id] != dc]

    def bootstrap_outside(self, dc: str) -> str:
        """Bootstrap string of the brokers that survive the loss of ``dc``."""
        return ",".join(f"127.0.0.1:{n.broker_port}" for n in self.brokers_outside(dc))


def cluster_spec(layout: Layout, name: str, home: Path, base_port: int, heap_mb: int) -> DrillCluster:
    """Nodes and ports of the drill cluster: broker ``i`` on ``base_port+i-1``, controllers from ``base_port+100``."""
    nodes: list[NodeSpec] = []
    dc_of: dict[int, str] = {}
    host: dict[int, int] = {}
    cport = base_port + 100
    for dc in layout.dcs:
        combined = dict(zip(dc.controllers, dc.brokers, strict=False))
        for b in dc.brokers:
            is_controller = b in combined.values()
            nodes.append(NodeSpec(b, True, is_controller, dc.name, base_port + b - 1, cport if is_controller else None))
            cport += 1 if is_controller else 0
            dc_of[b] = dc.name
        for c in dc.controllers:
            if c in combined:
                host[c] = combined[c]
                continue
            nodes.append(NodeSpec(c, False, True, dc.name, None, cport))
            cport += 1
            dc_of[c] = dc.name
            host[c] = c
    spec = LocalClusterSpec(name=name, home=home, nodes=tuple(nodes), heap_mb=heap_mb,
                            broker_config=dict(BROKER_CONFIG))
    return DrillCluster(spec, dc_of, host)


def cluster_on_free_ports(layout: Layout, name: str, home: Path, base_port: int, heap_mb: int) -> DrillCluster:
    """:func:`cluster_spec` at ``base_port``, or shifted by 20, 40, 60 or 80 when one of its ports is taken.

    A loopback port in the ephemeral range can be held for minutes by any client connection on
    this machine that happened to get it as its source port; the drill then moves aside (the
    report lists the ports used) instead of failing. Shifts stay inside the layout's block.
    """
    kill_leftovers(home)
    for shift in (0, 20, 40, 60, 80):
        cluster = cluster_spec(layout, name, home, base_port + shift, heap_mb)
        if all(port_is_free(p) for p in ports_of(cluster.spec)):
            return cluster
    return cluster_spec(layout, name, home, base_port, heap_mb)


def kill_leftovers(home: Path) -> int:
    """SIGKILL every process recorded under ``home`` (a previous drill that did not finish); return how many."""
    killed = 0
    for pid_file in sorted(home.glob("node-*/kafka.pid")):
        killed += signal_process(pid_file, signal.SIGKILL)
    return killed


def fresh_start(cluster: DrillCluster, timeout_s: float) -> None:
    """Kill leftovers, wipe the home, start every node and wait until all brokers serve.

    A node that dies during start-up (typically: its port taken for a moment by a TCP
    self-connect of some client on this machine, or by sockets of a drill killed moments ago)
    gets one more try; the error then quotes the dead node's last log error.
    """
    for attempt in (1, 2):
        home = cluster.spec.home
        kill_leftovers(home)
        if home.exists():
            shutil.rmtree(home)
        home.mkdir(parents=True)
        deadline = time.monotonic() + 30
        while not all(port_is_free(p) for p in ports_of(cluster.spec)) and time.monotonic() < deadline:
            time.sleep(0.5)
        try:
            start_clusters([cluster.spec], timeout_s=timeout_s)
            return
        except ClusterUnreachableError as exc:
            causes = [c for c in (_last_error(cluster.spec, n) for n in cluster.spec.nodes) if c]
            kill_leftovers(home)
            if attempt == 2 or not isinstance(exc, NodeExitedError):
                detail = f" (last error: {causes[0]})" if causes else ""
                raise ClusterUnreachableError(f"{exc}{detail}") from exc
        except BaseException:
            kill_leftovers(home)
            raise


def _last_error(spec: LocalClusterSpec, node: NodeSpec) -> str | None:
    """The last ERROR/FATAL line of a node's log, shortened."""
    try:
        lines = (spec.node_dir(node.node_id) / "logs" / "server.log").read_text(errors="replace").splitlines()
    except OSError:
        return None
    bad = [line for line in lines if " ERROR " in line or " FATAL " in line or "Exception:" in line]
    return f"node {node.node_id}: {bad[-1][:240]}" if bad else None


def kill_dc(cluster: DrillCluster, dc: str) -> list[int]:
    """SIGKILL every process of ``dc`` (a DC lost at once); return the node ids killed."""
    killed = []
    for node_id in cluster.nodes_in(dc):
        if kill_node(cluster.spec, node_id, signal.SIGKILL):
            killed.append(node_id)
    return killed


def create_topics(cluster: DrillCluster, topics: tuple[TopicPlacement, ...], timeout_s: float = 60.0) -> None:
    """Create every topic with the plan's assignment and wait until every ISR is complete."""
    admin = AdminClient(quiet_client(cluster.spec.bootstrap, "admin"))
    new = [
        NewTopic(t.name, len(t.partitions), replica_assignment=[list(p.replicas) for p in t.partitions], config={
            "min.insync.replicas": str(t.config.min_insync_replicas),
            "unclean.leader.election.enable": str(t.config.unclean_leader_election).lower(),
        })
        for t in topics
    ]
    for name, future in admin.create_topics(new, operation_timeout=30, request_timeout=40).items():
        try:
            future.result(timeout=60)
        except Exception as exc:
            raise KafkaOperationError(f"creating drill topic {name!r} failed: {exc}") from exc
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        meta = admin.list_topics(timeout=10).topics
        if all(_complete(meta.get(t.name), t) for t in topics):
            return
        time.sleep(0.3)
    raise ClusterUnreachableError(f"drill topics not fully in sync after {timeout_s:.0f}s")


def _complete(meta: object, topic: TopicPlacement) -> bool:
    if meta is None or getattr(meta, "error", None) is not None:
        return False
    parts = meta.partitions  # type: ignore[attr-defined]
    return len(parts) == len(topic.partitions) and all(
        parts[p.partition].leader == p.leader and set(parts[p.partition].isrs) == set(p.replicas)
        for p in topic.partitions
    )


@dataclass
class QuorumProbe:
    """Whether the cluster committed a metadata change, and if not, the last refusal seen."""

    writable: bool
    attempts: int
    last_error: str | None = None


def metadata_writable(bootstrap: str, probe_topic: str, broker: int, timeout_s: float = 10.0) -> QuorumProbe:
    """Whether the cluster commits a metadata change within ``timeout_s``: creating a probe topic on ``broker``.

    Without a KRaft quorum the controller cannot commit anything, so every attempt times out.
    Attempts repeat until the deadline, since a new active controller may still be being elected.
    Each attempt uses a new client: librdkafka sends CreateTopics to the controller id of its
    cached metadata, and a client that learned it right after the kill keeps a dead broker there
    (a drill saw every attempt fail for 70 s while the guard's own new client changed a topic
    config at 20 s).
    """
    deadline = time.monotonic() + timeout_s
    attempts, last = 0, None
    while time.monotonic() < deadline:
        left = max(1.0, deadline - time.monotonic())
        attempts += 1
        admin = AdminClient(quiet_client(bootstrap, "probe"))
        futures = admin.create_topics([NewTopic(probe_topic, 1, replica_assignment=[[broker]])],
                                      operation_timeout=min(3.0, left), request_timeout=min(4.0, left + 1))
        try:
            futures[probe_topic].result(timeout=min(6.0, left + 2))
            return QuorumProbe(True, attempts)
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            if kafka_error_code(exc) == KafkaError.TOPIC_ALREADY_EXISTS:
                return QuorumProbe(True, attempts)  # an earlier attempt was committed after its request timed out
            last = f"{type(exc).__name__}: {exc}"
            time.sleep(0.5)
    return QuorumProbe(False, attempts, last)


def restart_with_survivors(cluster: DrillCluster, lost_dc: str, timeout_s: float,
                           notes: list[str] | None = None, kill_brokers: bool = False) -> DrillCluster:
    """Restore the quorum without ``lost_dc``: restart the surviving controllers with a voter set of survivors only.

    The KRaft analog of the seed's "remove the lost DC's ZooKeepers from the configuration and
    restart ZooKeeper". Only controller processes restart (killed, not stopped: a controlled
    shutdown needs the very quorum that is missing); broker-only survivors keep running, so
    they stay eligible leaders (Kafka 4.1's eligible leader replicas, KIP-966, drop a broker
    that restarts) and the new quorum leader keeps them in the ISRs.

    A broker-only survivor may keep following the quorum leader that died with its DC and never
    find the new quorum (seen in about 1 drill run in 8: "brokers [4] not in the metadata").
    Then, and only then, it is stopped cleanly and started with the new voter set (its cached
    quorum state removed: a leader outside the new voter set stops it at start), and ``notes``
    says so: it comes back registered, but may no longer be an eligible leader.
    With ``kill_brokers`` every broker-only survivor is killed and started that way too (the
    surviving site lost power as well): each comes back from an unclean shutdown, which takes it
    out of the ISR and the eligible leader replicas (Kafka 4.1, KIP-966).
    """
    survivors = tuple(n for n in cluster.spec.nodes if cluster.dc_of[n.node_id] != lost_dc)
    reduced = LocalClusterSpec(name=cluster.spec.name, home=cluster.spec.home, nodes=survivors,
                               heap_mb=cluster.spec.heap_mb, broker_config=dict(cluster.spec.broker_config))
    controllers = [n for n in survivors if n.is_controller]
    for node in controllers:
        kill_node(cluster.spec, node.node_id, signal.SIGKILL)
    _start_until_ready(reduced, controllers, min(timeout_s, 60.0), allow_missing=True)
    registered = set() if kill_brokers else registered_brokers(reduced)
    missing = [n for n in survivors if not n.is_controller and n.node_id not in registered]
    for node in missing:
        if notes is not None:
            how = "killed and" if kill_brokers else "kept following the dead quorum leader;"
            notes.append(f"broker {node.node_id} {how} restarted with the survivors' voter set")
        if kill_brokers:
            kill_node(cluster.spec, node.node_id, signal.SIGKILL)
        else:
            stop_node_cleanly(cluster.spec, node.node_id, timeout_s=60.0)
        (cluster.spec.node_dir(node.node_id) / "data" / "__cluster_metadata-0" / "quorum-state").unlink(missing_ok=True)
    _start_until_ready(reduced, missing, timeout_s)
    dc_of = {n.node_id: cluster.dc_of[n.node_id] for n in survivors}
    return DrillCluster(reduced, dc_of, {c: h for c, h in cluster.controller_host.items() if h in dc_of})


def start_nodes(cluster: DrillCluster, node_ids: list[int], timeout_s: float) -> None:
    """Start killed nodes of ``cluster`` again (each once its ports are free) and wait until it is ready."""
    wanted = set(node_ids)
    _start_until_ready(cluster.spec, [n for n in cluster.spec.nodes if n.node_id in wanted], timeout_s)


def _start_until_ready(spec: LocalClusterSpec, nodes: list[NodeSpec], timeout_s: float,
                       allow_missing: bool = False) -> None:
    """Start ``nodes`` (again if one exits while starting) and wait until every broker of ``spec``
    is registered; with ``allow_missing``, return quietly after ``timeout_s`` instead."""
    for attempt in range(3):
        for node in nodes:
            if node.node_id not in running_nodes(spec):
                _start_when_ports_free(spec, node)
        try:
            wait_until_ready(spec, timeout_s)
            return
        except NodeExitedError:
            # a port can stay taken for a moment after SIGKILL (threads still exiting), or be
            # borrowed as an ephemeral client port: start the node again
            if attempt == 2:
                raise
        except ClusterUnreachableError:
            if allow_missing:
                return
            raise


def registered_brokers(spec: LocalClusterSpec) -> set[int]:
    """Broker ids in the cluster's metadata now (empty when it does not answer)."""
    admin = AdminClient(quiet_client(spec.bootstrap, "registered"))
    try:
        return set(admin.list_topics(timeout=10).brokers)
    except Exception:  # noqa: BLE001 - an unanswered question is "none"
        return set()


def stop_node_cleanly(spec: LocalClusterSpec, node_id: int, timeout_s: float) -> float:
    """SIGTERM one node and wait for it to exit (SIGKILL after ``timeout_s``); returns the seconds it took."""
    started = time.monotonic()
    kill_node(spec, node_id, signal.SIGTERM)
    while node_id in running_nodes(spec) and time.monotonic() - started < timeout_s:
        time.sleep(0.2)
    if node_id in running_nodes(spec):
        kill_node(spec, node_id, signal.SIGKILL)
    return time.monotonic() - started


def _start_when_ports_free(spec: LocalClusterSpec, node: NodeSpec, timeout_s: float = 30.0) -> None:
    ports = [p for p in (node.broker_port, node.controller_port) if p is not None]
    deadline = time.monotonic() + timeout_s
    while not all(port_is_free(p) for p in ports) and time.monotonic() < deadline:
        time.sleep(0.2)
    start_node(spec, node.node_id)


def wait_for_leaders(bootstrap: str, partitions: set[tuple[str, int]], live: set[int], timeout_s: float) -> bool:
    """True once every partition in ``partitions`` has a leader among ``live`` brokers."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if not leaderless(bootstrap, partitions, live, timeout_s=5):
            return True
        time.sleep(0.5)
    return False


def leaderless(bootstrap: str, partitions: set[tuple[str, int]], live: set[int],
               timeout_s: float = 10.0) -> set[tuple[str, int]]:
    """The partitions of ``partitions`` without a leader among ``live`` brokers now (all of them if
    the cluster does not answer within ``timeout_s``)."""
    admin = AdminClient(quiet_client(bootstrap, "leaders"))
    try:
        topics = admin.list_topics(timeout=timeout_s).topics
    except Exception:  # noqa: BLE001 - an unanswered question is "all"
        return set(partitions)
    return {(t, p) for t, p in partitions
            if t not in topics or p not in topics[t].partitions or topics[t].partitions[p].leader not in live}


def elect_unclean(bootstrap: str, partitions: set[tuple[str, int]], timeout_s: float = 30.0) -> dict[tuple[str, int], str]:
    """Run an unclean leader election on ``partitions``; return each one's error, if it has one.

    The controller elects the first live replica of each partition's replica list (Kafka 4.1's
    ``PartitionChangeBuilder``), with an ISR of just that replica: records it lacks are lost.
    Retried until ``timeout_s`` while the controller refuses the request as a whole.
    """
    admin = AdminClient(quiet_client(bootstrap, "election"))
    wanted = [TopicPartition(t, p) for t, p in sorted(partitions)]
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            # no request_timeout/operation_timeout: confluent-kafka 2.16's binding rejects them
            # (SystemError "more argument specifiers than keyword list entries"); the result's
            # time-out bounds the wait instead
            results = admin.elect_leaders(ElectionType.UNCLEAN, wanted).result(timeout=15)
            break
        except (KafkaException, TimeoutError) as exc:
            if time.monotonic() > deadline:
                raise KafkaOperationError(f"unclean leader election of {len(wanted)} partitions failed: {exc}") from exc
            time.sleep(0.5)
    errors: dict[tuple[str, int], str] = {}
    for tp, error in results.items():
        # ELECTION_NOT_NEEDED: a leader was elected meanwhile, which is what the step wants
        if error is not None and kafka_error_code(error) != KafkaError.ELECTION_NOT_NEEDED:
            errors[(tp.topic, tp.partition)] = str(error)
    return errors


def lower_min_isr(bootstrap: str, values: dict[str, int], timeout_s: float = 30.0) -> None:
    """Set min.insync.replicas of each topic, retrying until the controller accepts it."""
    admin = AdminClient(quiet_client(bootstrap, "configs"))
    resources = [
        ConfigResource(ResourceType.TOPIC, topic, incremental_configs=[
            ConfigEntry("min.insync.replicas", str(n), incremental_operation=AlterConfigOpType.SET)])
        for topic, n in values.items()
    ]
    deadline = time.monotonic() + timeout_s
    last: Exception | None = None
    while time.monotonic() < deadline:
        try:
            for future in admin.incremental_alter_configs(resources, request_timeout=10).values():
                future.result(timeout=15)
            return
        except Exception as exc:  # noqa: BLE001 - retried until the deadline
            last = exc
            time.sleep(0.5)
    raise KafkaOperationError(f"lowering min.insync.replicas to {values} failed: {last}")
