"""Warnings and recommendations of the stretch planner."""

from __future__ import annotations

from geokafka.planning import PRESETS, plan_stretch
from geokafka.topology.schema import Stretch, StretchDC, StretchTopic


def codes(s: Stretch) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {}
    for a in plan_stretch(s).advice:
        found.setdefault(a.code, []).append(a.message)
    return found


def one_topic(dcs: dict[str, StretchDC], **topic: object) -> Stretch:
    return Stretch(dcs=dcs, topics={"t": StretchTopic(**topic)})  # type: ignore[arg-type]


def test_default_layout_consistency_vs_availability_and_fetch_from_follower() -> None:
    found = codes(PRESETS["2.5dc"])
    assert "consistency-vs-availability" in found and "dc1 or dc2" in found["consistency-vs-availability"][0]
    assert "fetch-from-follower" in found
    assert "client.rack" in found["fetch-from-follower"][0] and "RackAwareReplicaSelector" in found["fetch-from-follower"][0]
    assert "acked-data-in-one-dc" not in found and "quorum-depends-on-dc" not in found


def test_writes_stopped_by_a_dc_loss_advise_a_short_producer_request_timeout() -> None:
    found = codes(PRESETS["2.5dc"])
    assert "request.timeout.ms 10000" in found["producer-request-timeout"][0]
    assert "geokafka guard" in found["consistency-vs-availability"][0]
    assert "producer-request-timeout" not in codes(PRESETS["3dc"])  # no DC loss stops writes there


def test_min_isr_not_above_one_dcs_replicas_means_acked_data_in_one_dc() -> None:
    dcs = PRESETS["2.5dc"].dcs
    found = codes(one_topic(dcs, replication_factor=4, min_insync_replicas=2))
    messages = found["acked-data-in-one-dc"]
    assert len(messages) == 2 and "min.insync.replicas=2 <= 2 replicas in dc1" in messages[0]
    assert "Raise min.insync.replicas to 3" in messages[0]


def test_quorum_majority_in_one_dc() -> None:
    found = codes(PRESETS["2dc"])
    assert found["quorum-depends-on-dc"] == [
        "dc1 holds 2 of 3 voters, majority 2: losing dc1 loses the quorum (manual recovery, RTO > 0); put a "
        "tie-breaker controller in a third site (2.5 DCs)"]


def test_rf_not_divisible_over_dcs() -> None:
    dcs = {"a": StretchDC(brokers=3, controllers=1), "b": StretchDC(brokers=3, controllers=1),
           "c": StretchDC(controllers=1)}
    found = codes(one_topic(dcs, replication_factor=5, min_insync_replicas=3))
    assert "replication_factor 5 does not divide over 2 DCs" in found["rf-uneven"][0]


def test_unclean_election_acks_and_min_isr_one() -> None:
    dcs = PRESETS["3dc"].dcs
    assert "unclean-election" in codes(one_topic(dcs, unclean_leader_election=True))
    assert "acks-not-all" in codes(one_topic(dcs, acks="1"))
    assert "min-isr-one" in codes(one_topic(dcs, min_insync_replicas=1))


def test_even_quorum_single_dc_observers() -> None:
    four = {f"dc{i}": StretchDC(brokers=1, controllers=1) for i in range(4)}
    assert "even-quorum" in codes(one_topic(four, replication_factor=4, min_insync_replicas=3))
    assert "single-dc" in codes(PRESETS["1dc"])
    observed = {"a": StretchDC(brokers=2, controllers=1, observers=1), "b": StretchDC(brokers=2, controllers=1),
                "c": StretchDC(controllers=1)}
    assert "Confluent Server" in codes(one_topic(observed, replication_factor=4, min_insync_replicas=3))["observers"][0]


def test_three_dcs_has_no_warning() -> None:
    advice = plan_stretch(PRESETS["3dc"]).advice
    assert [a.level for a in advice] == ["recommendation"] * len(advice)


def test_warnings_come_first() -> None:
    levels = [a.level for a in plan_stretch(PRESETS["2dc"]).advice]
    assert levels == sorted(levels, key=lambda level: level != "warning")


def test_all_brokers_in_one_dc_is_a_warning_even_with_controllers_spread() -> None:
    from geokafka.topology.schema import Stretch, StretchDC, StretchTopic

    stretch = Stretch(dcs={"a": StretchDC(brokers=3, controllers=1), "b": StretchDC(controllers=1),
                           "c": StretchDC(controllers=1)},
                      topics={"t": StretchTopic(partitions=3, replication_factor=3, min_insync_replicas=2)})
    found = codes(stretch)
    assert "brokers-in-one-dc" in found and "every broker is in a" in found["brokers-in-one-dc"][0]
    assert "brokers-in-one-dc" not in codes(PRESETS["3dc"]) and "brokers-in-one-dc" not in codes(PRESETS["1dc"])
