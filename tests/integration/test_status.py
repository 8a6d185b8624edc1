"""`status` against real clusters: figures equal a direct comparison of offsets, states are right.

Every figure is read from Kafka (the target's ``__geokafka_state`` and the source), never
from the mirror's memory. A dead source is a topology copy whose source bootstrap points at a
closed port: the shared session clusters keep running.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections import Counter

import pytest
import yaml
from confluent_kafka import Producer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka_util import closed_port, create_topic, produce, read_all
from pipeline_util import GEOKAFKA, running_mirror, state_store, wait_for, wait_state_readable, with_flows
from prometheus_client.parser import text_string_to_metric_families
from rich.console import Console

from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import ClusterConnection
from geokafka.control.state_records import FailoverRecord, Heartbeat, Role
from geokafka.control.state_store import ensure_state_topic
from geokafka.monitoring.collect import collect_status
from geokafka.monitoring.metrics import render_metrics
from geokafka.monitoring.status import FlowStatus
from geokafka.monitoring.status_render import render_report
from geokafka.pipeline.flow_jobs import HEARTBEAT_S
from geokafka.topology.schema import Topology

pytestmark = pytest.mark.integration



def with_dead_cluster(topology: Topology, name: str) -> Topology:
    """``topology`` with cluster ``name`` pointing at a closed port (the real one keeps running)."""
    dead = topology.clusters[name].model_copy(update={"bootstrap": f"127.0.0.1:{closed_port()}", "local": None})
    return topology.model_copy(update={"clusters": {**topology.clusters, name: dead}})


def slow_pipeline(topology: Topology, trigger_ms: int, max_records: int) -> Topology:
    """A pipeline that replicates at most ``max_records`` every ``trigger_ms`` (micro-batches): lag that lasts."""
    pipeline = topology.pipeline.model_copy(update={"mode": "micro-batch", "trigger_ms": trigger_ms,
                                                    "max_records_per_batch": max_records})
    return topology.model_copy(update={"pipeline": pipeline})


def source_ends(conn: ClusterConnection, topic: str, partitions: int) -> dict[int, int]:
    admin = ClusterAdmin(conn)
    try:
        return {p: high for p, (_, high) in admin.watermarks(topic, partitions).items()}
    finally:
        admin.close()


def records(n: int, partitions: int, age_s: float) -> list[dict]:
    start = int(time.time() * 1000) - int(age_s * 1000)
    return [{"key": f"k{i}".encode(), "value": f"v{i}".encode() * 10, "partition": i % partitions,
             "timestamp": start + i} for i in range(n)]


def test_stopped_flow_lag_equals_offsets_and_dead_source_keeps_rpo(base_topology, east, west, unique):
    topic, flow = unique("orders"), unique("st")
    create_topic(east, topic, partitions=3, rf=3)
    produce(east, topic, records(90, 3, age_s=300))  # oldest unreplicated record is >= 5 min old
    topology = slow_pipeline(with_flows(base_topology, **{flow: {"source": "east", "target": "west",
                                                                  "topics": [topic]}}), 1000, 3)

    def progressed() -> bool:
        state = state_store(west).read(timeout_s=20)
        nexts = state.progress(flow).values()
        return bool(nexts) and sum(nexts) > 0 and state.source_ends(flow) is not None

    with running_mirror(topology):
        wait_for(progressed, 120, "first replicated batch and an observation of the source")

        def running() -> FlowStatus | None:
            flow_status = collect_status(topology, [flow]).flow(flow)
            return flow_status if flow_status.state == "running" else None

        # the heartbeat that says so is written by its own job: a first batch can land before it (seen under load)
        live = wait_for(running, 6 * HEARTBEAT_S, "status showing the flow running")
        assert live.heartbeat_age_s is not None and live.heartbeat_age_s < 30
        assert live.host and live.pid

    report = collect_status(topology, [flow], sample_s=1.0)
    Console(width=130).print(render_report(report))  # shown by `pytest -rA`
    status = report.flow(flow)
    ends = source_ends(east, topic, 3)
    on_target = Counter(r.partition for r in read_all(west, f"east.{topic}"))
    assert status.state == "stopped" and status.source_reachable
    assert [(p.topic, p.partition, p.target_topic) for p in status.partitions] == \
        [(topic, p, f"east.{topic}") for p in range(3)]
    for part in status.partitions:
        assert part.source_end == ends[part.partition]
        assert (part.replicated or 0) == on_target[part.partition]
        assert part.lag_records == ends[part.partition] - on_target[part.partition]
        assert part.lag_seconds is not None and part.lag_seconds >= 295  # the record timestamps say so
    total_lag = sum(ends.values()) - sum(on_target.values())
    assert 0 < total_lag < 90, "the slow mirror must have replicated some, not all"
    assert (status.rpo.records, status.rpo.basis) == (total_lag, "live")
    assert status.rpo.seconds == max(p.lag_seconds or 0 for p in status.partitions)

    families = {f.name: f for f in text_string_to_metric_families(render_metrics(report))}
    lag_samples = {s.labels["partition"]: s.value for s in families["geokafka_replication_lag_records"].samples}
    assert lag_samples == {str(p): float(ends[p] - on_target[p]) for p in range(3)}
    assert [s.value for s in families["geokafka_flow_up"].samples] == [0.0]
    assert [s.value for s in families["geokafka_flow_rpo_records"].samples] == [float(total_lag)]

    dead = collect_status(with_dead_cluster(topology, "east"), [flow], source_timeout_s=2).flow(flow)
    assert dead.state == "source-unreachable" and not dead.source_reachable and dead.mirror_state == "stopped"
    assert dead.source_error and "not reachable" in dead.source_error
    assert [p.replicated for p in dead.partitions] == [p.replicated for p in status.partitions]
    assert [p.source_end for p in dead.partitions] == [ends[p] for p in range(3)]  # the mirror's last observation
    assert (dead.rpo.records, dead.rpo.basis) == (total_lag, "last-observed")
    assert dead.rpo.observed_ms is not None


def test_transaction_marker_is_not_lag_and_running_flow_reports_throughput(base_topology, east, west, unique):
    topic, flow = unique("txn"), unique("tx")
    create_topic(east, topic, partitions=1, rf=3)
    producer = Producer(east.librdkafka(**{"transactional.id": unique("txn-producer")}))
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(20):
        producer.produce(topic, key=f"k{i}".encode(), value=b"v", partition=0)
    producer.commit_transaction(30)
    # 20 records and the commit marker (the end read_committed sees moves once the marker is written)
    wait_for(lambda: source_ends(east, topic, 1) == {0: 21}, 30, "the commit marker")
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    with running_mirror(topology):
        wait_for(lambda: len(read_all(west, f"east.{topic}", timeout_s=10)) == 20, 120, "20 records on west")
        def heartbeat_counts_them() -> bool:
            shown = collect_status(topology, [flow], source_timeout_s=5).flow(flow)
            return shown.state == "running" and (shown.written or 0) >= 20

        wait_for(heartbeat_counts_them, 60, "a heartbeat counting the 20 records")
        status = collect_status(topology, [flow], sample_s=1.0).flow(flow)
    [part] = status.partitions
    assert part.source_end == 21 and part.replicated is not None and part.replicated >= 20
    assert (part.lag_records, part.lag_seconds) == (0, 0.0)
    assert (status.rpo.records, status.rpo.seconds) == (0, 0.0)
    assert status.state == "running"
    assert status.throughput is not None and status.throughput.window_s >= 1.0
    assert status.throughput.records_per_s == 0  # caught up: nothing replicated in the window
    assert status.written is not None and status.written >= 20


def test_stale_heartbeat_is_down_never_run_is_not_started_and_failover_wins(base_topology, east, west, unique):
    topic, dead_flow, new_flow, moved = unique("hb"), unique("dead"), unique("new"), unique("moved")
    create_topic(east, topic, partitions=2, rf=3)
    produce(east, topic, records(10, 2, age_s=60))
    spec = {"source": "east", "target": "west", "topics": [topic]}
    topology = with_flows(base_topology, **{dead_flow: spec, new_flow: spec, moved: spec})
    admin = ClusterAdmin(west)
    ensure_state_topic(admin)
    admin.close()
    # what a mirror killed with SIGKILL a minute ago leaves behind: a `running` heartbeat that ages
    now_ms = int(time.time() * 1000)
    store = state_store(west)
    store.write(Heartbeat(dead_flow, "running", now_ms - 60_000, {"written": 4, "bytes": 40, "host": "gone", "pid": 1}))
    # what `failover` leaves: the role and the report (the mirror's last heartbeat may still say running)
    store.write(Heartbeat(moved, "running", now_ms - 600_000), Role(moved, Role.FAILED_OVER, now_ms),
                FailoverRecord(moved, {"flow": moved, "kind": "failover", "rpo_records": 10}))
    # the last one written readable, all are
    wait_state_readable(west, lambda state: state.failover_report(moved) is not None, "the records")
    report = collect_status(topology, [dead_flow, new_flow, moved])
    down, fresh = report.flow(dead_flow), report.flow(new_flow)
    assert report.flow(moved).state == "failed-over"
    assert report.flow(moved).last_failover == {"flow": moved, "kind": "failover", "rpo_records": 10}
    assert down.state == "down" and down.mirror_state == "running"
    assert down.heartbeat_age_s is not None and down.heartbeat_age_s >= 60
    assert fresh.state == "not-started" and fresh.mirror_state is None
    assert [p.lag_records for p in fresh.partitions] == [5, 5]  # start: earliest, nothing replicated yet
    assert fresh.rpo.records == 10


def test_unreachable_target_reports_state_unavailable(base_topology, east, unique):
    topic, flow = unique("nt"), unique("nt")
    create_topic(east, topic, partitions=1, rf=3)
    topology = with_dead_cluster(
        with_flows(base_topology, **{flow: {"source": "east", "target": "south", "topics": [topic]}}), "south")
    status = collect_status(topology, [flow], state_timeout_s=2).flow(flow)
    assert status.state == "state-unavailable"
    assert status.state_error and "south" in status.state_error and "not reachable" in status.state_error
    assert [p.lag_records for p in status.partitions] == [0]


def test_cli_status_json_and_prometheus(base_topology, east, west, unique, tmp_path):
    topic, flow = unique("cli"), unique("cli")
    create_topic(east, topic, partitions=2, rf=3)
    produce(east, topic, records(6, 2, age_s=10))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic]}})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    run = subprocess.run([str(GEOKAFKA), "-f", str(path), "status", flow, "--json", "--sample", "0"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    [data] = json.loads(run.stdout)["flows"]
    assert data["name"] == flow and data["state"] == "not-started"
    assert [p["lag_records"] for p in data["partitions"]] == [3, 3]
    run = subprocess.run([str(GEOKAFKA), "-f", str(path), "status", flow, "--prometheus", "--sample", "0"],
                         capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    names = {f.name for f in text_string_to_metric_families(run.stdout)}
    assert {"geokafka_replication_lag_records", "geokafka_flow_rpo_records", "geokafka_flow_up"} <= names
    watch = subprocess.Popen([str(GEOKAFKA), "-f", str(path), "status", flow, "--watch", "--interval", "0.5", "--json"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        observations = [json.loads(watch.stdout.readline()) for _ in range(2)]  # type: ignore[union-attr]
    finally:
        watch.send_signal(signal.SIGINT)
        watch.wait(60)
    assert watch.returncode == 0 and watch.stderr.read() == ""  # type: ignore[union-attr]
    assert observations[0]["flows"][0]["throughput"] is None  # one observation: no rate yet
    assert observations[1]["flows"][0]["throughput"]["window_s"] > 0
    run = subprocess.run([str(GEOKAFKA), "-f", str(path), "status", "nope"], capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 2 and "unknown flow 'nope'" in run.stderr


def test_records_deleted_before_replication_are_lost_and_a_deleted_topic_leaves_the_report(
        base_topology, east, west, unique):
    topic, gone, flow = unique("orders"), unique("gone"), unique("lost")
    for name in (topic, gone):
        create_topic(east, name, partitions=1, rf=3)
        produce(east, name, records(10, 1, age_s=0))
    topology = with_flows(base_topology, **{flow: {"source": "east", "target": "west", "topics": [topic, gone]}})

    def replicated() -> bool:
        return sorted(state_store(west).read(timeout_s=20).progress(flow).values()) == [10, 10]

    with running_mirror(topology):
        wait_for(replicated, 120, "both topics replicated")
    produce(east, topic, records(10, 1, age_s=0))  # offsets 10-19, never replicated: the mirror is stopped
    admin = AdminClient(east.librdkafka())
    for future in admin.delete_records([TopicPartition(topic, 0, 15)]).values():
        future.result(30)  # 10-14 deleted at the source before the mirror saw them
    for future in admin.delete_topics([gone], operation_timeout=30).values():
        future.result(30)
    wait_for(lambda: gone not in admin.list_topics(timeout=10).topics, 60, f"{gone} deleted")

    report = collect_status(topology, [flow])
    Console(width=130).print(render_report(report))  # shown by `pytest -rA`
    status = report.flow(flow)
    assert [(p.topic, p.replicated, p.source_end) for p in status.partitions] == [(topic, 10, 20)]  # no `gone`
    [part] = status.partitions
    assert (part.lost_records, part.lag_records) == (5, 5)
    assert (status.rpo.records, status.rpo.lost_records) == (5, 5)
    lost = {s.labels["topic"]: s.value
            for s in next(f for f in text_string_to_metric_families(render_metrics(report))
                          if f.name == "geokafka_replication_lost_records").samples}
    assert lost == {topic: 5.0}
