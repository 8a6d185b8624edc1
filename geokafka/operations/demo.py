"""`geokafka demo`: the whole story on this machine, measured.

Two local sites (nyc: 3 brokers on 3 racks, atl: 1 broker), a prefix flow nyc -> atl on local
Spark, an order stream with acks=all and a consumer group at nyc. Then the nyc site dies
(every broker process killed), `failover` runs, and the group resumes at atl. RPO, RTO and
duplicates are measured by direct comparison of what was acked, replicated and consumed.
"""

from __future__ import annotations

import json
import shutil
import signal
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.failover import FailoverReport, failover
from geokafka.control.state_store import read_state
from geokafka.infra.clusters import local_cluster_specs
from geokafka.infra.local_cluster import kill_node, start_clusters, stop_cluster
from geokafka.operations.traffic import GroupReader, OrderStream
from geokafka.topology import Topology, parse_topology

DEMO_TOPOLOGY = """
clusters:
  nyc:
    bootstrap: 127.0.0.1:17092
    local: {{brokers: 3, racks: [nyc-a, nyc-b, nyc-c], heap_mb: 384}}
  atl:
    bootstrap: 127.0.0.1:18092
    local: {{brokers: 1, heap_mb: 384}}
flows:
  nyc-to-atl:
    source: nyc
    target: atl
    topics: ["orders"]
    rename: prefix
    groups: ["fulfillment"]
    sync: [configs, partitions, group-offsets]
    sync_interval_s: 2
pipeline:
  master: "local[2]"
  state_dir: {state_dir}
  trigger_ms: 200
  max_records_per_batch: 6000
"""
FLOW, TOPIC, GROUP = "nyc-to-atl", "orders", "fulfillment"


def demo_topology(state_dir: Path) -> Topology:
    """The embedded demo topology."""
    return parse_topology(DEMO_TOPOLOGY.format(state_dir=state_dir), "<demo topology>")


@dataclass
class DemoResult:
    """What the demo measured; printed and written as JSON from this one object."""

    produced_acked: int = 0
    replicated: int = 0
    rpo_records_measured: int = 0
    rpo_records_reported: int = 0
    rpo_seconds_reported: float = 0.0
    acked_after_last_observation: int = 0
    rto_seconds: float = 0.0
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


def run_demo(state_dir: Path, say: Say, watch: Watch, traffic_s: float = 20.0, rate: float = 300.0,
             keep: bool = False) -> DemoResult:
    """Run the demo; ``say`` narrates, ``watch`` gets a lag sample every second."""
    from geokafka.pipeline.mirror import mirror

    _reset(state_dir)
    topology = demo_topology(state_dir)
    specs = {s.name: s for s in local_cluster_specs(topology)}
    nyc, atl = connection(topology, "nyc"), connection(topology, "atl")
    result = DemoResult()
    say("starting two sites: nyc (3 brokers, racks nyc-a/b/c) and atl (1 broker)")
    start_clusters(list(specs.values()), timeout_s=180)
    stop_mirror = threading.Event()
    mirror_thread = threading.Thread(target=lambda: mirror(topology, [FLOW], stop_event=stop_mirror),
                                     name="mirror", daemon=True)
    try:
        ClusterAdmin(nyc).create_topic(TOPIC, 6, 3, {"min.insync.replicas": "2", "retention.ms": "86400000"})
        say(f"topic {TOPIC} on nyc: 6 partitions, RF 3, min.insync.replicas 2; flow {FLOW} on local Spark")
        mirror_thread.start()
        stream = OrderStream(nyc, TOPIC, rate).start()
        reader = GroupReader(nyc, [TOPIC], GROUP, "nyc").start()
        say(f"producing ~{rate:.0f} orders/s with acks=all; group {GROUP} consumes at nyc")
        started = time.monotonic()
        while time.monotonic() - started < traffic_s or _replicated(atl) == 0:
            sample = _sample(topology, stream, reader, started)
            result.timeline.append(sample)
            watch(sample)
            time.sleep(1.0)
            if time.monotonic() - started > traffic_s + 240:
                break
        say("nyc burns down: every nyc broker process is killed (SIGKILL)")
        kill_ms = int(time.time() * 1000)
        for node in specs["nyc"].nodes:
            kill_node(specs["nyc"], node.node_id, signal.SIGKILL)
        reader.stop()
        stream.stop()
        result.timeline.append({**_sample(topology, stream, reader, started), "event": "nyc killed"})
        say(f"running `geokafka failover {FLOW}`")
        report: FailoverReport = failover(topology, FLOW)
        stop_mirror.set()
        mirror_thread.join(60)
        say(f"group {GROUP} resumes at atl on nyc.{TOPIC}")
        resumed = GroupReader(atl, [f"nyc.{TOPIC}"], GROUP, "nyc").start()
        deadline = time.monotonic() + 60
        while resumed.ready_ms is None and time.monotonic() < deadline:
            time.sleep(0.1)
        time.sleep(4.0)  # let it drain what was replicated
        resumed.stop()
        _measure(result, stream, reader, resumed, report, atl, kill_ms)
        return result
    finally:
        stop_mirror.set()
        if not keep:
            for spec in specs.values():
                stop_cluster(spec)


def _reset(state_dir: Path) -> None:
    """Stop what an earlier demo left running and start from empty clusters."""
    if state_dir.exists():
        for spec in local_cluster_specs(demo_topology(state_dir)):
            stop_cluster(spec)
        shutil.rmtree(state_dir)
    state_dir.mkdir(parents=True)


def _replicated(atl: Any) -> int:
    try:
        marks = ClusterAdmin(atl, timeout_s=3).watermarks(f"nyc.{TOPIC}", 6)
    except Exception:  # noqa: BLE001 - not created yet
        return 0
    return sum(high for _, high in marks.values())


def _sample(topology: Topology, stream: OrderStream, reader: GroupReader, started: float) -> dict[str, Any]:
    try:
        state = read_state(connection(topology, "atl"), timeout_s=3)
        replicated = sum(state.progress(FLOW).values())
        ends = state.values.get(f"ends/{FLOW}", {}).get("ends", {})
        lag = max(0, sum(ends.values()) - replicated) if ends else None
    except Exception:  # noqa: BLE001 - a sample is best effort
        replicated, lag = None, None
    return {"t": round(time.monotonic() - started, 1), "acked": len(stream.acked), "replicated": replicated,
            "lag_records": lag, "consumed_at_nyc": len(reader.positions)}


def _measure(result: DemoResult, stream: OrderStream, reader: GroupReader, resumed: GroupReader,
             report: FailoverReport, atl: Any, kill_ms: int) -> None:
    from geokafka.control.provenance import source_position

    consumer = ClusterAdmin(atl).consumer(**{"enable.partition.eof": True})
    replicated: set[tuple[int, int]] = set()
    from confluent_kafka import TopicPartition

    consumer.assign([TopicPartition(f"nyc.{TOPIC}", p, 0) for p in range(6)])
    eof: set[int] = set()
    while len(eof) < 6:
        msg = consumer.poll(2.0)
        if msg is None:
            break
        if msg.error():
            eof.add(msg.partition())
            continue
        src = source_position(msg.headers())
        if src is not None:
            replicated.add((src.partition, src.offset))
    consumer.close()
    before, after = reader.positions, resumed.positions
    result.produced_acked = len(stream.acked)
    result.replicated = len(replicated)
    result.rpo_records_measured = len(stream.acked - replicated)
    result.rpo_records_reported = report.rpo_records
    result.rpo_seconds_reported = round(report.rpo_seconds, 3)
    result.failover_command_s = round(report.duration_s, 3)
    # RTO: from the kill until the group is assigned its partitions at atl and consuming.
    result.rto_seconds = round((resumed.ready_ms - kill_ms) / 1000, 3) if resumed.ready_ms else float("nan")
    # records acked between the mirror's last look at nyc and the kill: no failover can know them
    result.acked_after_last_observation = result.rpo_records_measured - report.rpo_records
    result.consumed_at_source = len(before)
    result.consumed_at_target = len(after)
    result.duplicates = len(set(before) & set(after)) + (len(after) - len(set(after)))
    result.missing_for_consumer = len(replicated - set(before) - set(after))
    result.failover_report = report.to_dict()


def write_result(result: DemoResult, out: Path) -> Path:
    """Write the JSON report and return its path."""
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result.to_dict(), indent=2, default=str))
    return out
