"""FollowingConsumer and FollowingProducer driven through injected fakes: an in-memory state store
read by a watcher only when told, fake confluent clients, a fake clock and an inline release (no
Kafka, no threads). Failover, promote and failback are the role records they write."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from client_fakes import FLOW, Clock, Consumers, Message, Producers, Released, Roles, topology
from confluent_kafka import KafkaError

from geokafka.client import FollowingConsumer, FollowingProducer, Switch
from geokafka.errors import ClusterUnreachableError, FlowFailedOverError, TopologyError

NYC, ATL = "127.0.0.1:19092", "127.0.0.1:29092"


class Harness:
    def __init__(self, rename: str = "prefix", groups: str = "[billing]") -> None:
        self.topology = topology(rename, groups)
        self.clock = Clock()
        self.roles = Roles(self.topology, self.clock)
        self.consumers = Consumers()
        self.producers = Producers()
        self.released = Released()
        self.switches: list[Switch] = []

    def consumer(self, **kwargs: Any) -> FollowingConsumer:
        return FollowingConsumer(self.topology, FLOW, "billing", ["orders"], kwargs.pop("config", None),
                                 self.switches.append, watcher=self.roles.watcher, consumer_factory=self.consumers,
                                 release=self.released, clock=self.clock, **kwargs)

    def producer(self, **kwargs: Any) -> FollowingProducer:
        return FollowingProducer(self.topology, FLOW, kwargs.pop("config", None), self.switches.append,
                                 watcher=self.roles.watcher, producer_factory=self.producers, release=self.released,
                                 clock=self.clock, **kwargs)


def test_the_consumer_reads_at_the_source_and_commits_what_was_returned_once_more_is_asked_for() -> None:
    h = Harness()
    consumer = h.consumer()
    nyc = h.consumers.last
    assert (consumer.cluster, nyc.bootstrap, nyc.subscribed) == ("nyc", NYC, ["orders"])
    assert nyc.settings["auto.offset.reset"] == "earliest" and nyc.settings["enable.auto.offset.store"] is False
    nyc.waiting = [Message("orders", 0, 7), Message("orders", 1, 3)]
    assert consumer.poll(0).offset() == 7
    assert nyc.stored == {}  # not processed yet: the application has not asked for more
    assert [m.offset() for m in consumer.consume(10, 0)] == [3]
    assert nyc.stored == {("orders", 0): 8}
    consumer.close()
    assert nyc.stored == {("orders", 0): 8, ("orders", 1): 4} and nyc.closed


def test_a_failover_stops_reading_until_the_groups_moved_then_resumes_at_the_target(caplog) -> None:
    h = Harness()
    consumer = h.consumer()
    nyc = h.consumers.last
    nyc.waiting = [Message("orders", 0, 41)]
    consumer.poll(0)
    h.roles.failover_started()
    nyc.waiting = [Message("orders", 0, 42)]
    calls = nyc.consumed_calls
    with caplog.at_level(logging.INFO, "geokafka.client"):
        assert consumer.poll(0) is None  # not read: the failover translates what was committed
    assert nyc.consumed_calls == calls and nyc.stored == {("orders", 0): 42} and nyc.commits == [True]
    assert consumer.cluster == "nyc" and not h.switches
    h.clock.now += 2.5
    h.roles.failover_done()
    caplog.clear()
    with caplog.at_level(logging.INFO, "geokafka.client"):
        assert consumer.poll(0) is None
    atl = h.consumers.last
    assert nyc.closed and h.released.calls == 1
    assert (consumer.cluster, atl.bootstrap, atl.subscribed) == ("atl", ATL, ["nyc.orders", "orders"])
    assert atl.settings["group.id"] == "billing"
    [switch] = h.switches
    assert (switch.from_cluster, switch.to_cluster, switch.topics, switch.waited_s, switch.groups_moved) == (
        "nyc", "atl", ("nyc.orders", "orders"), 2.5, True)
    [line] = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert line.getMessage() == switch.describe()
    atl.waiting = [Message("nyc.orders", 0, 40), Message("orders", 0, 0)]
    assert [m.topic() for m in consumer.consume(5, 0)] == ["nyc.orders", "orders"]
    consumer.poll(0)
    assert atl.stored == {("nyc.orders", 0): 41, ("orders", 0): 1}  # nothing of nyc's offsets reaches atl
    assert len(h.switches) == 1


def test_a_failover_that_never_finishes_is_followed_after_the_settle_timeout() -> None:
    h = Harness()
    consumer = h.consumer(settle_timeout_s=30)
    h.roles.failover_started()
    consumer.poll(0)
    h.clock.now += 29
    consumer.poll(0)
    assert consumer.cluster == "nyc"
    h.clock.now += 1
    consumer.poll(0)
    assert consumer.cluster == "atl"
    [switch] = h.switches
    assert not switch.groups_moved and "did not finish in time" in switch.describe()


def test_a_failback_brings_the_consumer_back_to_its_topic_and_the_copies_of_what_was_written_meanwhile() -> None:
    h = Harness()
    h.roles.failover_done()
    consumer = h.consumer()
    assert consumer.cluster == "atl" and not h.switches  # started there: no switch to report
    h.roles.failed_back()
    consumer.poll(0)
    assert (consumer.cluster, h.consumers.last.bootstrap, consumer.subscription) == ("nyc", NYC,
                                                                                   ["orders", "atl.orders"])
    assert [s.to_cluster for s in h.switches] == ["nyc"] and h.switches[0].placement.kind == "failback"


def test_identity_naming_reads_one_name_on_either_side() -> None:
    h = Harness("identity")
    consumer = h.consumer()
    h.roles.failover_done()
    consumer.poll(0)
    assert (consumer.cluster, consumer.subscription) == ("atl", ["orders"])


def test_a_consumer_started_while_a_failover_moves_the_groups_reads_nowhere_until_it_is_done() -> None:
    h = Harness()
    h.roles.failover_started()
    consumer = h.consumer()
    assert consumer.cluster is None and consumer.poll(0) is None and not h.consumers.made
    h.roles.failover_done()
    consumer.poll(0)
    assert consumer.cluster == "atl" and not h.switches


def test_with_manual_commits_only_commit_commits_and_never_across_clusters() -> None:
    h = Harness()
    consumer = h.consumer(config={"enable.auto.commit": False})
    nyc = h.consumers.last
    nyc.waiting = [Message("orders", 0, 5)]
    consumer.poll(0)
    consumer.poll(0)
    assert nyc.stored == {}
    consumer.commit(asynchronous=False)
    assert nyc.stored == {("orders", 0): 6} and nyc.commits == [False]
    nyc.waiting = [Message("orders", 0, 6)]
    consumer.poll(0)  # returned, not committed by the application
    h.roles.failover_started()
    consumer.commit(asynchronous=False)  # the flow moved away from nyc: never wait for it
    assert nyc.stored == {("orders", 0): 7} and nyc.commits == [False, True, True]
    nyc.waiting = [Message("orders", 0, 7)]
    h.roles.failover_done()
    consumer.poll(0)
    consumer.commit()
    assert nyc.stored == {("orders", 0): 7} and h.consumers.last.stored == {}


def test_a_topic_missing_on_the_new_cluster_is_read_once_it_exists_not_reported_as_an_error() -> None:
    h = Harness()
    consumer = h.consumer()
    h.roles.failover_done()
    consumer.poll(0)
    missing = Message("orders", -1, -1, KafkaError(KafkaError.UNKNOWN_TOPIC_OR_PART, "Subscribed topic not available"))
    other = Message("nyc.orders", 0, -1, KafkaError(KafkaError._TRANSPORT))
    h.consumers.last.waiting = [missing, other]
    assert consumer.consume(5, 0) == [other]


@pytest.mark.parametrize("config", [{"auto.offset.reset": "latest"}, {"bootstrap.servers": "x:1"},
                                    {"group.id": "other"}, {"enable.auto.offset.store": True}])
def test_the_consumer_refuses_settings_it_owns(config) -> None:
    with pytest.raises(ValueError, match="sets .* itself"):
        Harness().consumer(config=config)


def test_topics_the_flow_does_not_replicate_are_refused() -> None:
    h = Harness()
    with pytest.raises(TopologyError, match="does not replicate audit"):
        FollowingConsumer(h.topology, FLOW, "billing", ["orders", "audit"], watcher=h.roles.watcher,
                          consumer_factory=h.consumers)


def test_a_group_the_flow_does_not_sync_is_said_to_start_from_the_earliest(caplog) -> None:
    with caplog.at_level(logging.WARNING, "geokafka.client"):
        Harness(groups="[audit-.*]").consumer()
    assert "does not sync group billing" in caplog.text


def test_the_producer_writes_the_topics_own_name_at_the_active_cluster_and_takes_back_what_was_queued() -> None:
    h = Harness()
    producer = h.producer()
    reports: list[tuple[Any, Any]] = []
    nyc = h.producers.last
    assert (producer.cluster, nyc.bootstrap) == ("nyc", NYC)
    assert nyc.settings["enable.idempotence"] is True
    producer.produce("orders", b"1", on_delivery=lambda err, msg: reports.append((err, msg)))
    producer.produce("orders", b"2", on_delivery=lambda err, msg: reports.append((err, msg)))
    nyc.send()  # 1 and 2 in flight
    producer.produce("orders", b"3", key="k3", on_delivery=lambda err, msg: reports.append((err, msg)))  # queued
    h.roles.failover_started()  # the producer does not wait for the groups
    producer.produce("orders", b"4", on_delivery=lambda err, msg: reports.append((err, msg)))
    atl = h.producers.last
    assert producer.cluster == "atl" and atl.bootstrap == ATL
    assert [(s.topic, s.kwargs["value"]) for s in atl.queued] == [("orders", b"3"), ("orders", b"4")]
    assert producer.taken_back == 1 and producer.taken_back_keys == [b"k3"]  # for reconcile --skip-keys
    assert nyc.purged and [s.kwargs["value"] for s in nyc.in_flight] == [b"1", b"2"]
    [switch] = h.switches
    assert (switch.from_cluster, switch.to_cluster, switch.client) == ("nyc", "atl", "producer")
    nyc.ack()
    assert producer.flush(1) == 0
    assert [s.kwargs["value"] for s in nyc.written] == [b"1", b"2"]
    assert [s.kwargs["value"] for s in atl.written] == [b"3", b"4"]
    assert [err for err, _ in reports] == [None] * 4
    assert h.released.calls == 1


def test_records_in_flight_to_a_dead_source_are_reported_failed_after_the_drain_timeout() -> None:
    h = Harness()
    producer = h.producer(drain_timeout_s=5)
    failures: list[Any] = []
    producer.produce("orders", b"1", on_delivery=lambda err, msg: failures.append(err))
    h.producers.last.send()
    h.roles.failover_done()
    producer.poll(0)
    assert producer.cluster == "atl" and not failures and len(producer) == 1
    h.clock.now += 5
    producer.poll(0)
    assert [f.code() for f in failures] == [KafkaError._PURGE_INFLIGHT] and len(producer) == 0


def test_a_producer_pinned_to_its_site_refuses_while_the_flow_is_failed_over_and_writes_again_after_failback() -> None:
    h = Harness()
    producer = h.producer(site="nyc")
    producer.produce("orders", b"1")
    h.roles.failover_started()
    with pytest.raises(FlowFailedOverError, match="failed over to atl .* writes only at nyc"):
        producer.produce("orders", b"2")
    assert producer.cluster is None and len(h.producers.made) == 1
    h.roles.failed_back()
    producer.produce("orders", b"3")
    assert producer.cluster == "nyc" and [s.kwargs["value"] for s in h.producers.last.queued] == [b"3"]


def test_the_producer_refuses_a_site_outside_the_flow_and_topics_it_does_not_replicate() -> None:
    h = Harness()
    with pytest.raises(TopologyError, match="neither the source"):
        h.producer(site="sfo")
    with pytest.raises(TopologyError, match="does not replicate audit"):
        h.producer().produce("audit", b"x")


def test_a_producer_with_a_role_max_age_refuses_while_the_role_cannot_be_read() -> None:
    h = Harness()
    producer = h.producer(role_max_age_s=30)
    producer.produce("orders", b"1")
    h.clock.now += 31  # no read for 31 s: the target is out of reach from here
    with pytest.raises(ClusterUnreachableError, match="not read on atl for 31 s: .* refuses"):
        producer.produce("orders", b"2")
    h.roles.watcher.refresh()
    producer.produce("orders", b"3")
    assert [s.kwargs["value"] for s in h.producers.last.queued] == [b"1", b"3"]
