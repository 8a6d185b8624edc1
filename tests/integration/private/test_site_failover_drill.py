"""A lost site fails over as one and the application follows it on its own.

east sources three flows: two to west (topics ``orders`` and ``pay``), one to south (``stock``). An application
runs throughout with geokafka's client library: a ``FollowingProducer`` writes orders and a ``FollowingConsumer``
group processes them, committing as it goes. Every east node is killed (SIGKILL) and `geokafka failover --site
east` runs: the application, never restarted, consumes at west from the offsets the failover committed (nothing
replicated is skipped; duplicates are counted) and its producer writes to west. When east comes back, a plain
producer (not the library) writes there: `reconcile` lists those late writes apart from the stranded records,
`failback` refuses until they are handled, and the library's producer never wrote to east again.
"""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from kafka_util import create_topic, produce, read_all
from pipeline_util import GEOKAFKA, running_mirror, state_store, wait_for, with_flows

from geokafka.client import FollowingConsumer, FollowingProducer
from geokafka.errors import GeokafkaError
from geokafka.infra.local_cluster import LocalClusterSpec, kill_node, start_cluster

pytestmark = [pytest.mark.integration, pytest.mark.slow(seconds=200), pytest.mark.timeout(900)]

EAST_BROKERS = 1  # the whole site dies at once: how many nodes it had changes nothing the failover sees

RATE = 50.0  # orders a second
LATE = 10


class App:
    """The application: orders produced and processed through the client library, in threads of its own."""

    def __init__(self, topology: Any) -> None:
        self.producer = FollowingProducer(topology, "orders", {"linger.ms": 5})
        self.consumer = FollowingConsumer(topology, "orders", "fulfillment", ["orders"],
                                          on_switch=lambda switch: self.switches.append((time.time(), switch)))
        self.switches: list[tuple[float, Any]] = []
        self.acked: dict[str, str] = {}  # value -> cluster that acknowledged it
        self.sent_at: dict[str, float] = {}
        self.consumed: list[tuple[float, str, str, str]] = []  # (time, cluster, topic, value)
        self.errors: list[BaseException] = []
        self._stop = threading.Event()
        self._threads = [threading.Thread(target=self._produce, daemon=True, name="app-producer"),
                         threading.Thread(target=self._consume, daemon=True, name="app-consumer")]

    def start(self) -> App:
        for thread in self._threads:
            thread.start()
        return self

    def _produce(self) -> None:
        sent, started = 0, time.monotonic()
        try:
            while not self._stop.is_set():
                due = int((time.monotonic() - started) * RATE)
                while sent < due:
                    value = f"order-{sent:06d}"

                    def delivered(err: Any, _msg: Any, value: str = value) -> None:
                        if err is None:  # served by poll() in this thread: the cluster that acknowledged it
                            self.acked[value] = str(self.producer.cluster)

                    self.sent_at[value] = time.time()
                    self.producer.produce("orders", value=value, key=value, on_delivery=delivered)
                    sent += 1
                self.producer.poll(0.05)
        except BaseException as exc:  # noqa: BLE001 - surfaced by the test
            self.errors.append(exc)

    def _consume(self) -> None:
        last_commit = time.monotonic()
        try:
            while not self._stop.is_set():
                for msg in self.consumer.consume(100, timeout=0.2):
                    self.consumed.append((time.time(), str(self.consumer.cluster), msg.topic(), msg.value().decode()))
                if time.monotonic() - last_commit > 0.5:
                    try:  # asynchronous: a synchronous commit waits on a dead site's coordinator for long
                        self.consumer.commit(asynchronous=True)
                    except GeokafkaError as exc:  # its cluster down for now: what an application does
                        if not exc.retriable:
                            raise
                    last_commit = time.monotonic()
        except BaseException as exc:  # noqa: BLE001 - surfaced by the test
            self.errors.append(exc)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(60)
        self.producer.close()
        self.consumer.close()
        assert not self.errors, self.errors


def _cli(path: Path, *args: str, timeout_s: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(GEOKAFKA), "-f", str(path), *args], capture_output=True, text=True, timeout=timeout_s)


def test_a_site_fails_over_as_one_and_the_application_follows(base_topology, local_clusters: dict[str, LocalClusterSpec],
                                                              east, west, south, tmp_path: Path) -> None:
    sync = {"sync": ["configs", "partitions", "group-offsets"], "sync_interval_s": 1.0}
    topology = with_flows(base_topology,
                          orders={"source": "east", "target": "west", "topics": ["orders"], "groups": ["fulfillment"],
                                  **sync},
                          pay={"source": "east", "target": "west", "topics": ["pay"], **sync},
                          stock={"source": "east", "target": "south", "topics": ["stock"], **sync})
    path = tmp_path / "geokafka.yaml"
    path.write_text(yaml.safe_dump(topology.model_dump(mode="json", exclude_defaults=True)))
    for topic in ("orders", "pay", "stock"):
        create_topic(east, topic, partitions=2, rf=1)
    produce(east, "pay", [{"value": f"pay-{i}".encode(), "partition": i % 2} for i in range(100)])
    produce(east, "stock", [{"value": f"stock-{i}".encode(), "partition": i % 2} for i in range(100)])
    with running_mirror(topology) as runners:
        app = App(topology).start()
        try:
            wait_for(lambda: all(n in runners and runners[n].status == "running" for n in ("orders", "pay", "stock")),
                     240, "the three flows running")
            wait_for(lambda: len(app.consumed) > 500 and len(read_all(west, "east.orders", timeout_s=5)) > 500, 240,
                     "orders flowing: produced, replicated and processed at east")
            wait_for(lambda: state_store(west).read(timeout_s=5).checkpoints("orders").get("fulfillment"), 60,
                     "the group's offsets checkpointed on west")
            for node in local_clusters["east"].nodes:  # the whole site dies
                kill_node(local_clusters["east"], node.node_id, signal.SIGKILL)
            killed = time.time()
            done = _cli(path, "failover", "--site", "east", "--json")
            assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
            site = json.loads(done.stdout)
            assert [(f["flow"], f["error"]) for f in site["flows"]] == [("orders", None), ("pay", None), ("stock", None)]
            wait_for(lambda: any(c == "west" and t == "orders" for _, c, t, _ in app.consumed), 120,
                     "the application consuming its own new orders at west")
            resumed = min(t for t, c, _, _ in app.consumed if c == "west")
            switched = time.time()
            time.sleep(3)  # the application runs on at west: orders produced and processed there
            start_cluster(local_clusters["east"], timeout_s=180)  # east comes back
            produce(east, "orders", [{"value": f"late-{i}".encode(), "partition": i % 2} for i in range(LATE)])
            time.sleep(3)  # the library's producer keeps writing, to west only
        finally:
            app.stop()
        wait_for(lambda: all(runners[n].status == "failed-over" for n in ("orders", "pay", "stock")), 60,
                 "the mirror to stop every failed-over flow")

    # the application: nothing replicated was skipped, duplicates are few, its producer wrote to west after the switch
    replicated = {r.value.decode() for r in read_all(west, "east.orders", timeout_s=60)}
    consumed = [v for _, _, _, v in app.consumed]
    skipped = replicated - set(consumed)
    duplicates = len(consumed) - len(set(consumed))
    acked_east = {v for v, c in app.acked.items() if c == "east"}
    acked_west = {v for v, c in app.acked.items() if c == "west"}
    stranded = acked_east - replicated
    assert not skipped, f"{len(skipped)} replicated orders never processed: {sorted(skipped)[:5]}"
    assert acked_west and acked_west <= {r.value.decode() for r in read_all(west, "orders", timeout_s=60)}
    at_east = {r.value.decode() for r in read_all(east, "orders", timeout_s=60)}
    # nothing sent to east after the kill; a record acknowledged at west that east's log holds too was sent to east
    # once before the kill, queued again for a retry when east died, and taken back to west at the switch
    taken_back = {k.decode() for k in app.producer.taken_back_keys if k is not None}
    assert not any(app.sent_at[v] > killed for v in at_east if v in app.sent_at), "the producer wrote to east after"
    assert acked_west & at_east <= taken_back, sorted(acked_west & at_east - taken_back)[:5]
    assert all(v in set(consumed) for v in acked_west if app.sent_at[v] < switched)  # new orders processed at west
    print(f"site failover: {site['duration_s']} s for 3 flows (each: "
          f"{', '.join(str(f['duration_s']) for f in site['flows'])} s); the application consumed at west "
          f"{resumed - killed:.1f} s after the kill (switched {[round(t - killed, 1) for t, _ in app.switches]} s after "
          f"it); {duplicates} duplicates ({duplicates / RATE:.1f} s of orders), "
          f"{len(stranded)} acked orders stranded at east, {len(acked_west & at_east)} taken back to west after a first "
          f"send to east; RPO reported per flow: "
          f"{[(f['flow'], f['report']['rpo']['headline']) for f in site['flows']]}")
    assert duplicates <= 3 * RATE, f"{duplicates} duplicates"

    # east is back: late writes listed apart from the stranded records, failback refuses until they are handled
    reconcile = _cli(path, "reconcile", "orders", "--json")
    assert reconcile.returncode == 0, reconcile.stderr[-2000:]
    account = json.loads(reconcile.stdout)
    assert account["late_records"] == LATE, account
    assert account["stranded_records"] >= len(stranded), account
    refused = _cli(path, "failback", "orders")
    assert refused.returncode == 10, refused.stdout[-2000:] + refused.stderr[-2000:]
    assert refused.stderr.startswith(f"LateWritesError: flow orders: {LATE} records were written at east after the "
                                     "failover"), refused.stderr
