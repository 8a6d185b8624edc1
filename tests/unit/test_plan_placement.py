"""Rack(=DC)-aware replica assignment and quorum placement of the stretch planner."""

from __future__ import annotations

from collections import Counter

import pytest

from geokafka.errors import TopologyError
from geokafka.planning import PRESETS, layout_of, plan_stretch, reassignment_json
from geokafka.planning.placement import leaders_per_broker, rack_alternated, replicas_per_broker
from geokafka.topology.schema import Stretch, StretchDC, StretchTopic


def stretch(dcs: dict[str, tuple[int, int, int]], partitions: int = 6, rf: int = 3, min_isr: int = 2,
            acks: str = "all", unclean: bool = False) -> Stretch:
    """A stretch block from {dc: (brokers, controllers, observers)} and one topic."""
    return Stretch(
        dcs={n: StretchDC(brokers=b, controllers=c, observers=o) for n, (b, c, o) in dcs.items()},
        topics={"t": StretchTopic(partitions=partitions, replication_factor=rf, min_insync_replicas=min_isr,
                                  acks=acks, unclean_leader_election=unclean)},
    )


def per_dc(plan, partition) -> Counter[str]:  # type: ignore[no-untyped-def]
    return Counter(plan.layout.dc_of(r) for r in partition.replicas)


def test_numbering_brokers_then_observers_per_dc_and_controllers_from_101() -> None:
    layout = layout_of(stretch({"a": (2, 1, 1), "b": (1, 2, 0)}, rf=2, min_isr=1))
    assert [dc.brokers for dc in layout.dcs] == [(1, 2), (4,)]
    assert [dc.observers for dc in layout.dcs] == [(3,), ()]
    assert [dc.controllers for dc in layout.dcs] == [(101,), (102, 103)]
    assert layout.dc_of(3) == "a" and layout.dc_of(103) == "b"


def test_three_dcs_one_replica_per_dc_and_even_leaders() -> None:
    plan = plan_stretch(PRESETS["3dc"])
    for p in plan.topics[0].partitions:
        assert per_dc(plan, p) == {"dc1": 1, "dc2": 1, "dc3": 1}
    assert set(leaders_per_broker(plan.layout, plan.topics).values()) == {2}


def test_default_two_and_a_half_dcs_two_replicas_per_broker_dc() -> None:
    plan = plan_stretch(PRESETS["2.5dc"])
    for p in plan.topics[0].partitions:
        assert len(set(p.replicas)) == 4
        assert per_dc(plan, p) == {"dc1": 2, "dc2": 2}
    assert set(replicas_per_broker(plan.layout, plan.topics).values()) == {6}


def test_leaders_spread_evenly_when_partitions_divide() -> None:
    plan = plan_stretch(stretch({"a": (2, 1, 0), "b": (2, 1, 0), "c": (0, 1, 0)}, partitions=12, rf=4, min_isr=3))
    assert set(leaders_per_broker(plan.layout, plan.topics).values()) == {3}
    assert set(replicas_per_broker(plan.layout, plan.topics).values()) == {12}


def test_rf5_over_two_dcs_alternates_the_dc_with_three() -> None:
    plan = plan_stretch(stretch({"a": (3, 1, 0), "b": (3, 1, 0), "c": (0, 1, 0)}, rf=5, min_isr=3))
    splits = [per_dc(plan, p) for p in plan.topics[0].partitions]
    assert all(sorted(s.values()) == [2, 3] for s in splits)
    assert sum(1 for s in splits if s["a"] == 3) == sum(1 for s in splits if s["b"] == 3) == 3


def test_four_dcs_rf4_one_replica_in_each() -> None:
    plan = plan_stretch(stretch({f"dc{i}": (1, 1, 0) for i in range(4)}, partitions=8, rf=4, min_isr=3))
    for p in plan.topics[0].partitions:
        assert set(per_dc(plan, p).values()) == {1}


def test_spread_respects_small_dcs() -> None:
    plan = plan_stretch(stretch({"big": (3, 1, 0), "small": (1, 1, 0), "tie": (0, 1, 0)}, rf=3))
    for p in plan.topics[0].partitions:
        assert per_dc(plan, p) == {"big": 2, "small": 1}


def test_observers_on_every_partition_but_not_in_the_reassignment() -> None:
    plan = plan_stretch(stretch({"a": (2, 1, 1), "b": (2, 1, 1), "c": (0, 1, 0)}, rf=4, min_isr=3))
    observers = {3, 6}
    for p in plan.topics[0].partitions:
        assert set(p.observers) == observers and not observers & set(p.replicas)
    moves = reassignment_json(plan.topics)["partitions"]
    assert all(not observers & set(m["replicas"]) for m in moves)  # type: ignore[index]
    placement = plan.to_dict()["topics"]["t"]["confluent_placement"]
    assert placement["observers"] == [{"count": 1, "constraints": {"rack": "a"}},
                                      {"count": 1, "constraints": {"rack": "b"}}]


def test_reassignment_json_is_what_kafka_reassign_partitions_reads() -> None:
    plan = plan_stretch(PRESETS["2dc"])
    doc = reassignment_json(plan.topics)
    assert doc["version"] == 1
    parts = doc["partitions"]
    assert [(m["topic"], m["partition"]) for m in parts] == [("orders", i) for i in range(6)]  # type: ignore[index]
    assert all(len(set(m["replicas"])) == 4 for m in parts)  # type: ignore[index]


def test_multiple_topics_continue_the_leader_rotation() -> None:
    s = Stretch(dcs={"a": StretchDC(brokers=2, controllers=1), "b": StretchDC(brokers=2, controllers=1),
                     "c": StretchDC(controllers=1)},
                topics={"x": StretchTopic(partitions=2, replication_factor=2, min_insync_replicas=2),
                        "y": StretchTopic(partitions=2, replication_factor=2, min_insync_replicas=2)})
    plan = plan_stretch(s)
    leaders = [p.leader for t in plan.topics for p in t.partitions]
    assert sorted(leaders) == [1, 2, 3, 4]


def test_rack_alternated_list() -> None:
    assert rack_alternated([(1, 2, 3), (4,), (5, 6)]) == [1, 4, 5, 2, 6, 3]


def test_quorum_placement_and_majority() -> None:
    plan = plan_stretch(PRESETS["2dc"])
    assert plan.quorum.voters == {"dc1": (101, 102), "dc2": (103,)}
    assert (plan.quorum.size, plan.quorum.majority, plan.quorum.tolerated) == (3, 2, 1)
    assert plan.quorum.survives(1) and not plan.quorum.survives(2)


@pytest.mark.parametrize(("rf", "min_isr", "message"), [
    (5, 2, "replication_factor 5 exceeds the 4 brokers"),
    (3, 4, "min_insync_replicas 4 exceeds replication_factor 3"),
])
def test_impossible_topics_are_topology_errors(rf: int, min_isr: int, message: str) -> None:
    with pytest.raises(TopologyError, match=message):
        plan_stretch(stretch({"a": (2, 1, 0), "b": (2, 1, 0)}, rf=rf, min_isr=min_isr))


def test_public_surface() -> None:
    import geokafka.drills.stretch as drill
    import geokafka.planning as planning

    for module in (planning, drill):
        assert sorted(module.__all__) == sorted(set(module.__all__))
        assert all(hasattr(module, name) for name in module.__all__)
