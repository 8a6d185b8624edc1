"""Failover, promote and failback on real clusters: RPO measured exactly, groups resume exactly."""

from __future__ import annotations

import json
import signal
import threading
import time

import pytest
from confluent_kafka import Consumer, Producer
from kafka_util import create_topic, produce, read_all
from pipeline_util import FRESH_HEARTBEAT_S, running_mirror, state_store, wait_for, with_flows

from geokafka.control.provenance import source_position
from geokafka.control.state_records import Role
from geokafka.failover.failback import failback
from geokafka.failover.failover import failover
from geokafka.failover.site_guard import run_site_guard
from geokafka.infra.local_cluster import kill_node, start_cluster
from geokafka.topology.schema import FailoverPolicy

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EAST_BROKERS = 1  # east is only ever a running source here: no broker of it is killed, paused or restarted


def _consume_and_commit(conn, topic: str, group: str, count: int) -> list:
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "auto.offset.reset": "earliest",
                                           "enable.auto.commit": False}))
    consumer.subscribe([topic])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg)
            consumer.commit(msg, asynchronous=False)
    consumer.close()
    assert len(got) == count
    return got


def _drain(conn, topic: str, group: str, idle_s: float = 6.0, commit: bool = False) -> list:
    """Everything group ``group`` reads from its committed position until idle (optionally committed)."""
    consumer = Consumer(conn.librdkafka(**{"group.id": group, "auto.offset.reset": "earliest",
                                           "enable.auto.commit": False}))
    consumer.subscribe([topic])
    got, last = [], time.monotonic()
    while time.monotonic() - last < idle_s:
        msg = consumer.poll(0.5)
        if msg is not None and not msg.error():
            got.append(msg)
            last = time.monotonic()
    if commit and got:
        consumer.commit(asynchronous=False)
    consumer.close()
    return got


class AckedStream:
    """Produces with acks=all until stopped; remembers the (partition, offset) of every ack."""

    def __init__(self, conn, topic: str, partitions: int) -> None:
        self.acked: set[tuple[int, int]] = set()
        self.last_ack_ms = 0
        self._stop = threading.Event()
        self._producer = Producer(conn.librdkafka(**{"acks": "all", "linger.ms": 5, "message.timeout.ms": 5000}))
        self._thread = threading.Thread(target=self._run, args=(topic, partitions), daemon=True)

    def _on_delivery(self, err, msg) -> None:
        if err is None:
            self.acked.add((msg.partition(), msg.offset()))
            self.last_ack_ms = int(time.time() * 1000)

    def _run(self, topic: str, partitions: int) -> None:
        i = 0
        while not self._stop.is_set():
            self._producer.produce(topic, key=f"k{i}".encode(), value=f"order-{i}".encode(),
                                   partition=i % partitions, on_delivery=self._on_delivery)
            self._producer.poll(0)
            i += 1
            time.sleep(0.004)
        self._producer.flush(10)

    def start(self) -> AckedStream:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop producing; return once every record sent was answered (a record still queued when a flush gives
        up is written later, with no poll left to report it)."""
        self._stop.set()
        self._thread.join(30)
        deadline = time.monotonic() + 60
        while len(self._producer) and time.monotonic() < deadline:
            self._producer.flush(1)
        assert not len(self._producer), f"{len(self._producer)} records still unanswered after 60 s"


def test_failover_after_the_source_site_dies(base_topology, local_clusters, south, west, unique):
    topic, group = unique("pay"), unique("billing")
    create_topic(south, topic, partitions=3, rf=1)
    produce(south, topic, [{"key": b"seed", "value": f"seed-{i}".encode(), "partition": i % 3} for i in range(60)])
    consumed = _consume_and_commit(south, topic, group, 25)
    flow = "south-west"
    topology = with_flows(base_topology, **{flow: {
        "source": "south", "target": "west", "topics": [topic], "groups": [group],
        "sync": ["configs", "partitions", "group-offsets"], "sync_interval_s": 1.0}})
    # A slow pipeline (small micro-batches), so that the site dies with records not yet replicated.
    topology = topology.model_copy(update={"pipeline": topology.pipeline.model_copy(
        update={"mode": "micro-batch", "max_records_per_batch": 30, "trigger_ms": 1000})})
    try:
        with running_mirror(topology) as runners:
            wait_for(lambda: len(read_all(west, f"south.{topic}", timeout_s=5)) > 0, 240, "replication to start")
            stream = AckedStream(south, topic, 3).start()
            time.sleep(6)
            stream.stop()
            wait_for(lambda: _observed_at(west, flow) > stream.last_ack_ms,
                     30, "an observation of the source after the last ack")
            # what the site holds when it dies: a record can be written and its ack lost (a produce request
            # that timed out on a loaded machine; CI counted 2 such records the report rightly called lost)
            in_log = {(r.partition, r.offset) for r in read_all(south, topic)}
            for node in local_clusters["south"].nodes:  # the whole site dies
                kill_node(local_clusters["south"], node.node_id, signal.SIGKILL)
            report = failover(topology, flow)
            wait_for(lambda: runners[flow].status == "failed-over", 90, "the running mirror to stop the flow")
        target = read_all(west, f"south.{topic}")
        replicated = {(p.partition, p.offset) for p in (source_position(list(r.headers)) for r in target)}
        seeds = {(p, o) for p in range(3) for o in range(20)}
        acked = stream.acked | seeds
        assert acked <= in_log  # every acked record was on the site when it died
        assert len(replicated) == len(target)  # no duplicates on the target
        assert report.rpo_records == len(in_log - replicated) > 0  # the report equals a direct comparison
        assert report.rpo_seconds > 0
        # the bounds contain the truth, and the report is valid JSON (no NaN)
        assert report.rpo_records_upper is not None
        assert report.rpo_records <= len(in_log - replicated) <= report.rpo_records_upper
        json.dumps(report.to_dict(), allow_nan=False)
        # the group resumes on the target exactly after what it consumed at the source
        done = {(m.partition(), m.offset()) for m in consumed}
        resumed = _drain(west, f"south.{topic}", group)
        resumed_src = [source_position(list(m.headers())) for m in resumed]
        assert not {(p.partition, p.offset) for p in resumed_src} & done  # 0 duplicates
        assert {(p.partition, p.offset) for p in resumed_src} == replicated - done  # 0 missing
    finally:
        start_cluster(local_clusters["south"], timeout_s=120)


class GuardThread:
    """``run_site_guard`` in a thread until stopped; what it said, as it said it."""

    def __init__(self, topology, dry_run: bool = False) -> None:
        self.said: list[str] = []
        self.stop = threading.Event()
        self.watching = threading.Event()
        self.failure: list[BaseException] = []
        self.run = None
        self._thread = threading.Thread(target=self._main, args=(topology, dry_run), daemon=True)
        self._thread.start()
        assert self.watching.wait(60), f"the guard never took its first look: {self.failure}"

    def _main(self, topology, dry_run: bool) -> None:
        try:
            self.run = run_site_guard(topology, dry_run=dry_run, stop=self.stop, say=self.said.append,
                                      watching=self.watching)
        except BaseException as exc:  # noqa: BLE001 - surfaced by close()
            self.failure.append(exc)
            self.watching.set()

    def saying(self, words: str) -> bool:
        return any(words in text for text in list(self.said))

    def close(self) -> None:
        self.stop.set()
        self._thread.join(60)
        assert not self.failure, self.failure


def test_the_site_guard_holds_a_lost_site_over_its_rpo_limit_and_fails_it_over_within_it(
        base_topology, local_clusters, south, west, unique):
    topic = unique("auto")
    create_topic(south, topic, partitions=2, rf=1)
    flow = "south-west-auto"
    topology = with_flows(base_topology, **{flow: {"source": "south", "target": "west", "topics": [topic]}})

    def policy(limit: int):
        return topology.model_copy(update={"failover": FailoverPolicy(automatic=True, confirm_s=5,
                                                                      max_rpo_records=limit)})

    try:
        with running_mirror(topology) as runners:
            stream = AckedStream(south, topic, 2).start()
            wait_for(lambda: len(read_all(west, f"south.{topic}", timeout_s=5)) > 100, 240, "replication to start")
            strict = GuardThread(policy(0))  # any loss is too much: it must wait for a person
            preview = GuardThread(policy(10_000_000), dry_run=True)
            time.sleep(2)  # looks at a healthy site: nothing said but the start line, nothing recorded
            assert len(strict.said) == 1 and state_store(west).read().auto_failover(flow) is None
            for node in local_clusters["south"].nodes:  # the whole site dies
                kill_node(local_clusters["south"], node.node_id, signal.SIGKILL)
            killed = time.monotonic()
            stream.stop()
            wait_for(lambda: strict.saying("waiting for a person") and preview.saying("would fail over"), 60,
                     f"the guards to decide (strict said {strict.said}, the dry run said {preview.said})")
            decided_s = time.monotonic() - killed
            assert decided_s >= 5  # not before confirm_s
            print(f"held {decided_s:.1f} s after the kill: {strict.said[-1]}")
            held = state_store(west).read().auto_failover(flow)
            assert held is not None and held.state == "held" and "could lose up to" in held.reason
            assert state_store(west).read().role(flow) == "active"  # neither the strict guard nor the dry run moved it
            strict.close()
            preview.close()
            assert preview.run.failovers == [] and strict.run.failovers == []
            lenient = GuardThread(policy(10_000_000))
            started = time.monotonic()
            wait_for(lambda: state_store(west).read().role(flow) == "failed-over", 60,
                     f"the guard to fail the flow over (it said {lenient.said})")
            wait_for(lambda: lenient.saying("1 of 1 flows failed over"), 30, "the guard's report")
            print(f"failed over by a guard started {time.monotonic() - killed:.1f} s after the kill, in "
                  f"{time.monotonic() - started:.1f} s: {lenient.said}")
            lenient.close()
            wait_for(lambda: runners[flow].status == "failed-over", 90, "the running mirror to stop the flow")
        state = state_store(west).read()
        assert state.auto_failover(flow).state == "failed-over"
        report = lenient.run.failovers[0].outcomes[0].report
        target = read_all(west, f"south.{topic}")
        replicated = {(p.partition, p.offset) for p in (source_position(list(r.headers)) for r in target)}
        truth = len(stream.acked - replicated)
        print(f"RPO {report.rpo.headline()}; truth {truth}")
        assert report.rpo.records_lower <= truth <= report.rpo.records_upper <= 10_000_000  # the bound held the truth
    finally:
        start_cluster(local_clusters["south"], timeout_s=120)


def test_promote_is_lossless_and_failback_returns(base_topology, east, west, unique):
    topic, group = unique("plan"), unique("ledger")
    create_topic(east, topic, partitions=2, rf=1)
    create_topic(west, topic, partitions=2, rf=1)
    produce(east, topic, [{"key": f"k{i}".encode(), "value": f"v{i}".encode(), "partition": i % 2} for i in range(200)])
    consumed = _consume_and_commit(east, topic, group, 70)
    flow = "east-west"
    topology = with_flows(base_topology, **{flow: {
        "source": "east", "target": "west", "topics": [topic], "rename": "identity", "groups": [group],
        "sync": ["configs", "partitions", "group-offsets"], "sync_interval_s": 1.0}})
    with running_mirror(topology):
        report = failover(topology, flow, promote=True, timeout_s=120)
    assert report.rpo_records == 0 and report.kind == "promote"
    resumed = _drain(west, topic, group, commit=True)
    expected = {f"v{i}".encode() for i in range(200)} - {m.value() for m in consumed}
    assert sorted(m.value() for m in resumed) == sorted(expected)  # 0 missing, 0 duplicated
    # business now runs on west: new writes there, the group consumes part of them there
    produce(west, topic, [{"key": b"w", "value": f"w{i}".encode(), "partition": i % 2} for i in range(40)])
    read_on_west = _consume_and_commit(west, topic, group, 10)
    assert all(m.value().startswith(b"w") for m in read_on_west)
    back = failback(topology, flow, timeout_s=120)
    assert back.promote is not None and back.promote.rpo_records == 0
    on_east = read_all(east, topic)
    assert sorted(r.value for r in on_east if r.value.startswith(b"w")) == sorted(f"w{i}".encode() for i in range(40))
    assert len(on_east) == 240  # east's own records were not sent back to it
    resumed_east = _drain(east, topic, group)
    remaining = {f"w{i}".encode() for i in range(40)} - {m.value() for m in read_on_west}
    assert sorted(m.value() for m in resumed_east) == sorted(remaining)


def _observed_at(conn, flow: str) -> int:
    """When the running mirror last looked at the source's end offsets (0: never)."""
    observed = state_store(conn).read().source_ends(flow)
    return 0 if observed is None else observed.at_ms


def test_the_state_topic_is_upgraded_to_a_control_partition_that_no_open_transaction_hides(south):
    """South is never a target here: its state topic is made in the first layout (one partition, every record in
    it), with a transaction left open on it, as a mirror killed mid-commit leaves one."""
    from confluent_kafka.admin import AdminClient

    from geokafka.control.admin import ClusterAdmin
    from geokafka.control.state_records import Heartbeat, Progress
    from geokafka.control.state_store import KafkaStateStore, ensure_state_topic

    create_topic(south, "__geokafka_state", partitions=1, rf=1, config={"cleanup.policy": "compact"})
    first = Producer(south.librdkafka(**{"acks": "all"}))
    old = {"flow/old": Heartbeat("old", "running", 1_000, {"written": 5}),
           "role/old": Role("old", "failed-over", 2_000, {"kind": "failover"}),
           "progress/old/t/0": Progress("old", "t", 0, 40)}
    for key, record in old.items():
        first.produce("__geokafka_state", json.dumps(record.encode()).encode(), key.encode(), partition=0)
    assert first.flush(30) == 0
    dead = Producer(south.librdkafka(**{"transactional.id": "geokafka-test-dead-writer",
                                        "transaction.timeout.ms": 120_000}))
    dead.init_transactions(30)
    dead.begin_transaction()
    dead.produce("__geokafka_state", json.dumps(Progress("old", "t", 0, 99).encode()).encode(), b"progress/old/t/0",
                 partition=0)
    assert dead.flush(30) == 0  # written, never committed: it hides what follows from read_committed readers

    ensure_state_topic(ClusterAdmin(south))
    topic = AdminClient(south.librdkafka()).list_topics("__geokafka_state", timeout=10).topics["__geokafka_state"]
    assert len(topic.partitions) == 2
    store = KafkaStateStore(south)  # a reader of its own, as another process would be
    state = store.read(10)
    assert state.layout_seen
    assert state.heartbeat("old").state == "running" and state.role("old") == "failed-over"  # carried over once
    assert state.progress("old") == {("t", 0): 40}  # the open transaction's progress stays hidden
    writer = KafkaStateStore(south)
    started = time.monotonic()
    writer.set_flow_state("new", "running", written=1)
    wait_for(lambda: (h := store.read(5).heartbeat("new")) is not None and h.state == "running", 5,
             "the heartbeat behind the open transaction")
    seen_s = time.monotonic() - started
    # a settled read waits on its own: a read beside it is not held up
    settled_failure: list[BaseException] = []

    def settle() -> None:
        try:
            store.read_settled(timeout_s=8)
        except BaseException as exc:  # noqa: BLE001 - looked at below
            settled_failure.append(exc)

    waiter = threading.Thread(target=settle)
    waiter.start()
    time.sleep(0.5)
    reads = []
    for _ in range(5):
        before = time.monotonic()
        store.read(5)
        reads.append(time.monotonic() - before)
    waiter.join(30)
    print(f"control record visible {seen_s:.2f} s after its write behind an open transaction; reads beside a "
          f"settled read took at most {max(reads):.2f} s")
    assert max(reads) < 4.0  # not held for the settled read's 8 s
    assert settled_failure and getattr(settled_failure[0], "retriable", False)  # the transaction is still open
    dead.abort_transaction(30)
    assert store.read_settled(timeout_s=30).progress("old") == {("t", 0): 40}
    store.close()
    writer.close()


def test_a_transaction_held_open_on_the_state_topic_never_makes_a_flow_look_down(base_topology, east, south, unique):
    """Two flows east -> south in one mirror; a writer holds a transaction open on south's state topic (as a mirror
    killed mid-commit leaves one) while one of them restarts for a new topic, its start waiting for the settled read
    of its progress. The other flow's heartbeats keep their cadence and it keeps replicating; `status` never calls
    a flow down and shows every heartbeat fresh; once the transaction ends, the restarted flow runs."""
    from geokafka.control.state_records import Progress
    from geokafka.control.state_store import DATA_PARTITION, KafkaStateStore
    from geokafka.monitoring.collect import StatusCollector
    from geokafka.pipeline.flow_jobs import HEARTBEAT_S

    steady, restarting = unique("steady"), unique("restarting")
    for topic in (steady, f"{restarting}-1"):
        create_topic(east, topic, partitions=2, rf=1)
        produce(east, topic, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)])
    topology = with_flows(base_topology, **{steady: {"source": "east", "target": "south", "topics": [steady]},
                                            restarting: {"source": "east", "target": "south",
                                                         "topics": [f"{restarting}-.*"]}})
    topology = topology.model_copy(update={"pipeline": topology.pipeline.model_copy(update={"topic_refresh_s": 2})})
    heartbeats = KafkaStateStore(south)
    with running_mirror(topology) as runners:
        wait_for(lambda: all(name in runners and runners[name].status == "running" and
                             sum(p.written for p in runners[name].progress.values()) >= 20
                             for name in (steady, f"{restarting}")), 240, "both flows running")
        dead = Producer(south.librdkafka(**{"transactional.id": f"geokafka-test-open-{steady}",
                                            "transaction.timeout.ms": 120_000}))
        dead.init_transactions(30)
        dead.begin_transaction()
        dead.produce("__geokafka_state", json.dumps(Progress("nobody", "t", 0, 1).encode()).encode(),
                     b"progress/nobody/t/0", partition=DATA_PARTITION)
        assert dead.flush(30) == 0
        opened = time.monotonic()
        create_topic(east, f"{restarting}-2", partitions=2, rf=1)
        produce(east, f"{restarting}-2", [(f"k{i}".encode(), f"v{i}".encode()) for i in range(20)])
        wait_for(lambda: runners[restarting].status != "running", 60, "the flow restarting for its new topic")
        seen: list[tuple[float, dict[str, tuple[str, float | None]]]] = []
        beats: dict[int, float] = {}
        with StatusCollector(topology, [steady, restarting], state_timeout_s=10, source_timeout_s=5) as collector:
            observed_until = time.monotonic() + 4 * HEARTBEAT_S
            while time.monotonic() < observed_until:
                report = collector.collect()
                seen.append((time.monotonic() - opened,
                             {f.name: (f.state, f.heartbeat_age_s) for f in report.flows}))
                beat = heartbeats.read(5).heartbeat(steady)
                if beat is not None:
                    beats.setdefault(beat.at_ms, time.monotonic())
                produce(east, steady, [(b"k", b"during")])
                time.sleep(1.0)
        still_waiting = runners[restarting].status != "running"
        steady_written = sum(p.written for p in runners[steady].progress.values())
        dead.abort_transaction(30)
        wait_for(lambda: runners[restarting].status == "running" and
                 sum(p.written for p in runners[restarting].progress.values()) >= 40, 120,
                 "the restarted flow replicating its new topic once the transaction ended")
    heartbeats.close()
    ages = [age for _, flows in seen for _, age in flows.values()]
    print(f"while a transaction was held open: {len(seen)} status reads, flow states "
          f"{sorted({state for _, flows in seen for state, _ in flows.values()})}, heartbeat ages at most "
          f"{max(a for a in ages if a is not None):.1f} s; {len(beats)} new heartbeats of the steady flow; "
          f"the restarting flow still waiting at the end: {still_waiting}")
    assert still_waiting  # the open transaction held the restarting flow's start the whole time observed
    assert all(state not in ("down", "error") for _, flows in seen for state, _ in flows.values()), seen
    assert all(age is not None and age <= FRESH_HEARTBEAT_S for age in ages), \
        [(round(at, 1), {name: age for name, (_, age) in flows.items()}) for at, flows in seen]
    assert len(beats) >= 3, beats  # the steady flow's heartbeat kept its cadence (one per HEARTBEAT_S)
    assert steady_written >= 20 + len(seen) - 2  # and it kept replicating
