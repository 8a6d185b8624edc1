"""A connected-cluster DR drill: traffic, a dead source site, failover, measured recovery.

An order stream with acks=all and a consumer group, written with geokafka's client library, run at
the flow's source while the flow replicates on Spark; at the chosen moment every broker process of
the source site is killed and `failover` runs: the application is never restarted, its group
resumes on the target from the translated offsets and its producer writes there. RPO, RTO and
duplicates are measured by direct comparison of what was acked, replicated and consumed; with
``reconcile_after``, the source site then comes back and `reconcile` counts the stranded records.
"""

from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection, connection
from geokafka.control.naming import policy_for
from geokafka.control.state_store import KafkaStateStore
from geokafka.drills.orders import GroupReader, OrderStream
from geokafka.errors import DrillFailedError, GeokafkaError, TopologyError
from geokafka.failover.failover import FailoverReport, failover
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import LocalClusterSpec, kill_node, start_cluster
from geokafka.infra.threads import in_thread
from geokafka.topology import Topology


@dataclass
class DrillResult:
    """What the demo measured; printed and written as JSON from this one object."""

    produced_acked: int = 0
    replicated: int = 0
    rpo_records_measured: int = 0
    rpo_records_reported: int = 0
    rpo_records_reported_upper: int | None = None
    rpo_seconds_reported: float | None = 0.0
    """The upper bound of the reported span of lost writes (None: unbounded)."""
    rpo_reported: str = ""
    """The failover report's RPO interval in words."""
    acked_after_last_observation: int = 0
    stranded_counted: int | None = None
    """Stranded records `reconcile` counted once the source site was back (None: not run)."""
    late_writes_counted: int | None = None
    rto_seconds: float = 0.0
    """From the kill until the application, never restarted, consumed at the target."""
    switch_seconds: float | None = None
    """From the kill until the application's consumer switched to the target."""
    acked_at_target: int = 0
    """Orders the application's producer wrote to the target after it followed the failover."""
    consumed_new_at_target: int = 0
    mirror_start_s: float = 0.0
    failover_command_s: float = 0.0
    consumed_at_source: int = 0
    consumed_at_target: int = 0
    duplicates: int = 0
    missing_for_consumer: int = 0
    timeline: list[dict[str, Any]] = field(default_factory=list)
    failover_report: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form."""
        return dict(self.__dict__)


Say = Callable[[str], None]
Watch = Callable[[dict[str, Any]], None]


def run_connected_drill(topology: Topology, flow_name: str, say: Say, watch: Watch, *, topic: str = "orders",
                        group: str = "fulfillment", traffic_s: float = 20.0, rate: float = 300.0,
                        partitions: int = 6, reconcile_after: bool = False) -> DrillResult:
    """Run the drill on running clusters; the flow's source must be a ``local:`` cluster.

    ``say`` narrates, ``watch`` gets a replication sample every second. ``reconcile_after``: start the source
    site again at the end and count the stranded records with `reconcile`.
    """
    from geokafka.pipeline.mirror import mirror

    flow = topology.flow(flow_name)
    specs = {s.name: s for s in local_cluster_specs(topology)}
    if flow.source not in specs:
        raise TopologyError(f"flow {flow_name}: source {flow.source} has no local: block, so the drill cannot kill it")
    source, target = connection(topology, flow.source), connection(topology, flow.target)
    replica = policy_for(flow).remote_topic(flow.source, topic)
    result = DrillResult()
    stop_mirror = threading.Event()
    running = threading.Event()

    def on_tick(runners: list[Any]) -> None:
        # running, and its query's writers open: producers open, code generated (several seconds of a
        # fresh JVM's start that would otherwise fall into the first seconds of traffic)
        if all(r.writing for r in runners):
            running.set()

    mirroring: Future[Any] | None = None
    samples = KafkaStateStore(target)  # the drill's own reader of the target's state, closed at the end
    try:
        source_admin = ClusterAdmin(source)
        rf = min(3, source_admin.broker_count())
        configs = {"min.insync.replicas": str(min(2, rf)), "retention.ms": "86400000"}
        source_admin.create_topic(topic, partitions, rf, configs)
        say(f"topic {topic} on {flow.source}: {partitions} partitions, RF {rf}; starting flow {flow_name} on Spark")
        # A DR setup replicates before the disaster: traffic starts once the flow replicates, so
        # the RPO measured at the kill is the steady state's, not the time Spark takes to start.
        mirror_started = time.monotonic()
        mirroring = in_thread(lambda: mirror(topology, [flow_name], on_tick=on_tick, stop_event=stop_mirror), "mirror")
        while not running.wait(0.5):
            if mirroring.done():
                mirroring.result()  # the mirror's own error, if it failed
                raise DrillFailedError(f"flow {flow_name} stopped before it replicated")
            if time.monotonic() - mirror_started > 300:
                raise DrillFailedError(f"flow {flow_name} did not start within {time.monotonic() - mirror_started:.0f}s")
        result.mirror_start_s = round(time.monotonic() - mirror_started, 1)
        say(f"flow {flow_name} replicating after {result.mirror_start_s:.1f}s (its writers open)")
        stream = OrderStream(topology, flow_name, topic, rate).start()
        reader = GroupReader(topology, flow_name, group, topic).start()
        say(f"producing ~{rate:.0f} orders/s with acks=all; group {group} consumes at {flow.source} "
            "(both with geokafka.client: they follow a failover on their own)")
        started = time.monotonic()
        while time.monotonic() - started < traffic_s or _replicated(target, replica, partitions) == 0:
            sample = _sample(samples, flow_name, stream, reader, started)
            result.timeline.append(sample)
            watch(sample)
            time.sleep(1.0)
            if time.monotonic() - started > traffic_s + 240:
                break
        say(f"{flow.source} burns down: every {flow.source} process is killed (SIGKILL)")
        kill_ms = int(time.time() * 1000)
        kill_t = round(time.monotonic() - started, 1)
        for node in specs[flow.source].nodes:
            kill_node(specs[flow.source], node.node_id, signal.SIGKILL)
        say(f"running `geokafka failover {flow_name}`")
        report: FailoverReport = failover(topology, flow_name)
        stop_mirror.set()  # failover fenced its writers; its runner would also stop on its own
        deadline = time.monotonic() + 60
        while reader.first_at_target_ms is None and time.monotonic() < deadline:
            time.sleep(0.1)
        say(f"the application followed on its own: group {group} consumes at {flow.target} ({replica} from the "
            f"translated offsets, then {topic}), its producer writes to {flow.target}")
        result.timeline.append({**_sample(samples, flow_name, stream, reader, started),
                                "t": kill_t, "event": f"{flow.source} killed"})
        time.sleep(4.0)  # the application runs on at the target: it drains what was replicated, writes new orders
        stream.stop()
        reader.stop()
        wait([mirroring], timeout=60)
        _measure(result, stream, reader, report, target, replica, partitions, kill_ms)
        if reconcile_after:
            _reconcile(topology, flow_name, specs[flow.source], result, say)
        return result
    finally:
        stop_mirror.set()
        if mirroring is not None:
            wait([mirroring], timeout=60)
        samples.close()


def _replicated(target: ClusterConnection, replica: str, partitions: int) -> int:
    try:
        marks = ClusterAdmin(target, timeout_s=3).watermarks(replica, partitions)
    except Exception:  # noqa: BLE001 - not created yet
        return 0
    return sum(high for _, high in marks.values())


def _sample(store: KafkaStateStore, flow_name: str, stream: OrderStream, reader: GroupReader,
            started: float) -> dict[str, Any]:
    try:
        state = store.read(timeout_s=3)
        replicated = sum(state.progress(flow_name).values())
        observed = state.source_ends(flow_name)
        ends = observed.ends if observed else {}
        lag = max(0, sum(ends.values()) - replicated) if ends else None
    except Exception:  # noqa: BLE001 - a sample is best effort
        replicated, lag = None, None
    return {"t": round(time.monotonic() - started, 1), "acked": len(stream.acked), "replicated": replicated,
            "lag_records": lag, "consumed_at_source": len(reader.positions)}


def _reconcile(topology: Topology, flow_name: str, source: LocalClusterSpec, result: DrillResult, say: Say) -> None:
    """The lost site comes back: `reconcile` counts, exactly, what the failover stranded there."""
    from geokafka.failover.reconcile import reconcile

    say(f"{source.name} comes back: `geokafka reconcile {flow_name}` counts the records it stranded")
    start_cluster(source, timeout_s=180)
    deadline = time.monotonic() + 60
    while True:
        try:
            counted = reconcile(topology, flow_name)
            break
        except GeokafkaError as exc:  # leaders of a site that just came back still catching up (retriable)
            if not exc.retriable or time.monotonic() > deadline:
                raise
            time.sleep(1.0)
    result.stranded_counted, result.late_writes_counted = counted.stranded_records, counted.late_records
    say(f"reconcile: {counted.stranded_records:,} records stranded at {source.name} (measured: "
        f"{result.rpo_records_measured:,} acked and never replicated), {counted.late_records:,} late writes")


def _measure(result: DrillResult, stream: OrderStream, reader: GroupReader,
             report: FailoverReport, target: ClusterConnection, replica: str, partitions: int, kill_ms: int) -> None:
    from confluent_kafka import TopicPartition

    from geokafka.control.provenance import source_position

    consumer = ClusterAdmin(target).consumer(**{"enable.partition.eof": True})
    replicated: set[tuple[int, int]] = set()
    consumer.assign([TopicPartition(replica, p, 0) for p in range(partitions)])
    eof: set[int] = set()
    while len(eof) < partitions:
        msg = consumer.poll(2.0)
        if msg is None:
            break
        partition = msg.partition()
        if msg.error():
            if partition is not None:
                eof.add(partition)
            continue
        src = source_position(msg.headers())
        if src is not None:
            replicated.add((src.partition, src.offset))
    consumer.close()
    before, after = reader.at_source, reader.at_target
    result.produced_acked = len(stream.acked)
    result.replicated = len(replicated)
    result.rpo_records_measured = len(stream.acked - replicated)
    result.rpo_records_reported = report.rpo_records
    result.rpo_records_reported_upper = report.rpo_records_upper
    seconds = report.rpo_seconds
    result.rpo_seconds_reported = None if seconds is None else round(seconds, 3)
    result.rpo_reported = report.rpo.headline()
    result.failover_command_s = round(report.duration_s, 3)
    # RTO: from the kill until the application, never restarted, consumed at the target.
    first = reader.first_at_target_ms
    result.rto_seconds = round((first - kill_ms) / 1000, 3) if first else float("nan")
    result.switch_seconds = None if reader.switched_ms is None else round((reader.switched_ms - kill_ms) / 1000, 3)
    result.acked_at_target = stream.acked_elsewhere
    result.consumed_new_at_target = reader.new_at_target
    # records acked between the mirror's last look at nyc and the kill: no failover can know them
    result.acked_after_last_observation = result.rpo_records_measured - report.rpo_records
    result.consumed_at_source = len(before)
    result.consumed_at_target = len(after)
    result.duplicates = len(set(before) & set(after)) + (len(after) - len(set(after)))
    result.missing_for_consumer = len(replicated - set(before) - set(after))
    result.failover_report = report.to_dict()


def write_result(result: DrillResult, out: Path) -> Path:
    """Write the JSON report and return its path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result.to_dict(), indent=2, default=str))
    return out


def plot_timeline(result: DrillResult, out: Path, title: str) -> Path:
    """PNG timeline: acked, replicated and consumed records over time, with the kill marked."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    points = [p for p in result.timeline if p.get("replicated") is not None]
    fig, ax = plt.subplots(figsize=(9, 4))
    ax.plot([p["t"] for p in result.timeline], [p["acked"] for p in result.timeline], label="acked at source")
    ax.plot([p["t"] for p in points], [p["replicated"] for p in points], label="replicated to target")
    ax.plot([p["t"] for p in result.timeline], [p["consumed_at_source"] for p in result.timeline],
            label="consumed at source")
    kill = next((p for p in result.timeline if p.get("event")), None)
    if kill is not None:
        ax.axvline(kill["t"], color="red", linestyle="--", label=kill["event"])
    ax.set_xlabel("seconds")
    ax.set_ylabel("records")
    ax.set_title(f"{title}: RPO {result.rpo_records_measured} records, RTO {result.rto_seconds:.1f} s")
    ax.legend(loc="upper left")
    fig.tight_layout()
    fig.savefig(out, dpi=100)
    plt.close(fig)
    return out
