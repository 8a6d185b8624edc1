"""Per-failure verdicts: the source documents' layouts (1, 2, 2.5, 3 DCs) and odd ones."""

from __future__ import annotations

import pytest

from geokafka.planning import PRESETS, plan_stretch
from geokafka.planning.plan import StretchPlan
from geokafka.topology.schema import Stretch, StretchDC, StretchTopic


def stretch(dcs: dict[str, tuple[int, int, int]], partitions: int = 6, rf: int = 3, min_isr: int = 2,
            acks: str = "all", unclean: bool = False) -> Stretch:
    """A stretch block from {dc: (brokers, controllers, observers)} and one topic "t"."""
    return Stretch(
        dcs={n: StretchDC(brokers=b, controllers=c, observers=o) for n, (b, c, o) in dcs.items()},
        topics={"t": StretchTopic(partitions=partitions, replication_factor=rf, min_insync_replicas=min_isr,
                                  acks=acks, unclean_leader_election=unclean)},
    )


def with_topic(base: Stretch, **changes: object) -> Stretch:
    (name, topic), = base.topics.items()
    return Stretch(dcs=base.dcs, topics={name: topic.model_copy(update=changes)})


def step_index(steps: tuple[str, ...], prefix: str) -> int:
    return next(i for i, s in enumerate(steps) if s.startswith(prefix))


# --- the product brief's table ---------------------------------------------------------------

def test_one_dc_outage_on_dc_loss_rpo_zero_for_node_failures_only() -> None:
    plan = plan_stretch(PRESETS["1dc"])
    dc1 = plan.verdict_for_dc("dc1")
    assert not dc1.quorum_survives and dc1.writes == "outage"
    assert not dc1.rpo_zero and not dc1.rto_zero
    assert "No controller survives" in dc1.steps[0]
    brokers = [v for v in plan.node_verdicts if v.failure.kind == "broker"]
    assert len(brokers) == 3
    for v in brokers:
        assert v.quorum_survives and v.rpo_zero and v.rto_zero and v.writes == "automatic" and not v.steps


def test_two_dcs_quorum_split_losing_the_majority_dc_needs_manual_quorum_recovery() -> None:
    plan = plan_stretch(PRESETS["2dc"])
    dc1 = plan.verdict_for_dc("dc1")
    assert not dc1.quorum_survives and dc1.writes == "manual" and not dc1.rto_zero
    assert dc1.writable_partitions == 0
    assert dc1.rpo_zero  # min.isr 3 > 2 replicas per DC: acked data spans both DCs
    # the seed's order: restore the quorum, then lower min.insync.replicas, then producers resume
    quorum = step_index(dc1.steps, "Restore the KRaft quorum")
    lower = step_index(dc1.steps, "Lower min.insync.replicas of orders from 3 to 2")
    resume = step_index(dc1.steps, "Producers and consumers resume")
    assert quorum < lower < resume
    assert "103" in dc1.steps[quorum] and "unclean quorum recovery" in dc1.steps[quorum]
    # failback: quorum first, then brokers, then min.isr, then leaders
    fb = dc1.failback
    assert step_index(fb, "Restore the quorum") < step_index(fb, "Start brokers 1, 2") \
        < step_index(fb, "Restore min.insync.replicas of orders to 3") < step_index(fb, "Move leadership back")


def test_two_dcs_losing_the_minority_dc_keeps_quorum_but_needs_lower_min_isr() -> None:
    dc2 = plan_stretch(PRESETS["2dc"]).verdict_for_dc("dc2")
    assert dc2.quorum_survives and dc2.writes == "manual" and dc2.rpo_zero
    assert dc2.steps[0].startswith("Lower min.insync.replicas of orders from 3 to 2")
    assert not any("quorum" in s for s in dc2.steps)


def test_two_dcs_rpo_depends_on_min_isr() -> None:
    plan = plan_stretch(with_topic(PRESETS["2dc"], min_insync_replicas=2))
    dc1 = plan.verdict_for_dc("dc1")
    assert not dc1.quorum_survives and not dc1.rto_zero
    assert not dc1.rpo_zero
    assert any("min.insync.replicas=2 <= 2 lost replicas" in r for r in dc1.reasons)
    assert any(s.startswith("Only if a partition stays leaderless") and "UNCLEAN" in s for s in dc1.steps)


def test_two_and_a_half_dcs_tie_breaker_loss_is_rpo_zero_rto_zero() -> None:
    dc3 = plan_stretch(PRESETS["2.5dc"]).verdict_for_dc("dc3")
    assert dc3.quorum_survives and dc3.writes == "uninterrupted"
    assert dc3.rpo_zero and dc3.rto_zero and not dc3.steps


def test_two_and_a_half_dcs_broker_dc_loss_keeps_quorum_and_acked_data() -> None:
    """The seed: RPO 0 and no quorum surgery, but consistency vs availability remains for a broker DC:
    min.isr spanning both DCs stops acks=all writes until it is lowered by hand."""
    dc1 = plan_stretch(PRESETS["2.5dc"]).verdict_for_dc("dc1")
    assert dc1.quorum_survives and dc1.rpo_zero
    assert dc1.writes == "manual"
    assert len(dc1.steps) == 2 and dc1.steps[0].startswith("Lower min.insync.replicas")


def test_two_and_a_half_dcs_with_observers_promotion_gives_rpo_zero_rto_zero() -> None:
    s = stretch({"dc1": (2, 1, 1), "dc2": (2, 1, 1), "dc3": (0, 1, 0)}, rf=4, min_isr=3)
    plan = plan_stretch(s)
    for name in ("dc1", "dc2"):
        v = plan.verdict_for_dc(name)
        assert v.quorum_survives and v.rpo_zero and v.rto_zero and v.writes == "automatic"
        assert all(o.via_observer_promotion for o in v.outcomes)


def test_two_and_a_half_dcs_availability_choice_min_isr_two() -> None:
    dc1 = plan_stretch(with_topic(PRESETS["2.5dc"], min_insync_replicas=2)).verdict_for_dc("dc1")
    assert dc1.rto_zero and dc1.writes == "automatic"
    assert not dc1.rpo_zero


@pytest.mark.parametrize("dc", ["dc1", "dc2", "dc3"])
def test_three_dcs_rpo_zero_rto_zero(dc: str) -> None:
    v = plan_stretch(PRESETS["3dc"]).verdict_for_dc(dc)
    assert v.quorum_survives and v.writes == "automatic"
    assert v.rpo_zero and v.rto_zero and not v.steps
    assert v.writable_partitions == 6


# --- odd layouts ------------------------------------------------------------------------------

def test_rf5_over_two_dcs_hurts_the_partitions_with_three_replicas_in_the_lost_dc() -> None:
    plan = plan_stretch(stretch({"a": (3, 1, 0), "b": (3, 1, 0), "c": (0, 1, 0)}, rf=5, min_isr=3))
    v = plan.verdict_for_dc("a")
    three_in_a = {p.partition for p in plan.topics[0].partitions
                  if sum(plan.layout.dc_of(r) == "a" for r in p.replicas) == 3}
    assert len(three_in_a) == 3
    for o in v.outcomes:
        if o.partition in three_in_a:
            assert not o.writable and o.below_min_isr and not o.rpo_zero
        else:
            assert o.writable and o.rpo_zero
    assert v.writes == "manual" and not v.rpo_zero and v.writable_partitions == 3


def test_four_dcs_survive_any_dc() -> None:
    plan = plan_stretch(stretch({f"dc{i}": (1, 1, 0) for i in range(1, 5)}, partitions=8, rf=4, min_isr=3))
    for v in plan.dc_verdicts:
        assert v.quorum_survives and v.voters_left == 3 and v.rpo_zero and v.rto_zero


def test_four_dcs_two_voters_each_side_lose_quorum_either_way() -> None:
    plan = plan_stretch(stretch({"a": (2, 2, 0), "b": (2, 2, 0)}, rf=4, min_isr=3))
    assert all(not v.quorum_survives for v in plan.dc_verdicts)


def test_acks_one_writes_continue_but_rpo_is_not_zero() -> None:
    v = plan_stretch(with_topic(PRESETS["3dc"], acks="1")).verdict_for_dc("dc1")
    assert v.rto_zero and not v.rpo_zero
    assert any("acks=1" in r for r in v.reasons)


def test_acks_one_without_quorum_accepts_writes_with_a_frozen_high_watermark() -> None:
    v = plan_stretch(with_topic(PRESETS["2dc"], acks="1")).verdict_for_dc("dc1")
    frozen = [o for o in v.outcomes if o.frozen_high_watermark]
    assert frozen and all(not o.leader_lost for o in frozen)
    assert v.writes == "manual"


def test_unclean_election_voids_rpo_zero() -> None:
    v = plan_stretch(with_topic(PRESETS["3dc"], unclean_leader_election=True)).verdict_for_dc("dc1")
    assert not v.rpo_zero and v.rto_zero


def test_min_isr_one_single_broker_loss_can_lose_acked_records() -> None:
    plan = plan_stretch(with_topic(PRESETS["1dc"], min_insync_replicas=1))
    assert all(not v.rpo_zero for v in plan.node_verdicts if v.failure.kind == "broker")


def test_controller_losses() -> None:
    plan = plan_stretch(PRESETS["2dc"])
    controllers = [v for v in plan.node_verdicts if v.failure.kind == "controller"]
    assert [v.failure.name for v in controllers] == ["controller 101", "controller 102", "controller 103"]
    assert all(v.quorum_survives and v.writes == "uninterrupted" for v in controllers)


def test_losing_a_controller_only_dc_holding_the_majority_keeps_writes_but_needs_the_quorum_back() -> None:
    v = plan_stretch(stretch({"a": (2, 1, 0), "b": (2, 0, 0), "c": (0, 2, 0)}, rf=2, min_isr=1)).verdict_for_dc("c")
    assert not v.quorum_survives and v.writes == "uninterrupted"
    assert any(s.startswith("Restore the KRaft quorum") for s in v.steps)


def most_interesting(plan: StretchPlan) -> str:
    return plan.most_interesting_dc()


@pytest.mark.parametrize(("layout", "dc"), [("2dc", "dc1"), ("3dc", "dc1"), ("2.5dc", "dc1"), ("1dc", "dc1")])
def test_most_interesting_dc(layout: str, dc: str) -> None:
    assert most_interesting(plan_stretch(PRESETS[layout])) == dc


def test_json_shape() -> None:
    data = plan_stretch(PRESETS["2dc"]).to_dict()
    dc1 = data["verdicts"]["dc"][0]
    assert dc1["failure"]["name"] == "dc1" and dc1["quorum"] == {
        "survives": False, "voters_left": 1, "voters": 3, "majority": 2}
    assert dc1["rpo_zero"] is True and dc1["rto_zero"] is False and dc1["manual_action"] is True
    assert data["quorum"]["majority"] == 2
    assert len(data["reassignment"]["partitions"]) == 6


def test_a_lost_leader_shows_a_stall_not_an_rto_of_zero() -> None:
    from rich.console import Console

    from geokafka.planning.render import plan_renderable

    plan = plan_stretch(PRESETS["3dc"])
    dc1 = plan.verdict_for_dc("dc1")
    assert dc1.rto_zero and dc1.leader_stall_s == (9.0, 15.0)  # leaders in dc1 wait for fencing + election
    console = Console(width=200, record=True)
    console.print(plan_renderable(plan))
    text = console.export_text()
    assert "stall 9-15 s (auto)" in text and "≈ 0" not in text
    manual = plan_stretch(PRESETS["2.5dc"]).verdict_for_dc("dc1")
    assert manual.leader_stall_s is None  # a person acts: the RTO is the manual steps', not a stall


def test_printed_commands_name_a_bootstrap_server_and_the_topic() -> None:
    plan = plan_stretch(PRESETS["2.5dc"])
    steps = plan.verdict_for_dc("dc1").steps + plan.verdict_for_dc("dc1").failback
    commands = [s for s in steps if "kafka-configs" in s or "kafka-leader-election" in s or "kafka-topics" in s]
    assert commands and all("--bootstrap-server" in s for s in commands)
    assert any("--entity-name orders" in s for s in commands)


def test_quorum_loss_steps_end_with_an_unclean_election_for_leaderless_partitions() -> None:
    """Restarted survivors come back out of the ISR and the eligible leader replicas (KIP-966): the
    last resort for a partition without a leader is an unclean election of its most complete replica."""
    dc1 = plan_stretch(PRESETS["2dc"]).verdict_for_dc("dc1")
    assert not dc1.quorum_survives and dc1.rpo_zero
    election = next(s for s in dc1.steps if s.startswith("Only if a partition stays leaderless"))
    assert "every surviving replica was restarted" in election and "--election-type UNCLEAN" in election
    assert "highest last offset" in election
    assert dc1.steps.index(election) > next(i for i, s in enumerate(dc1.steps) if s.startswith("Lower min.insync"))
    assert "OUT_OF_ORDER_SEQUENCE_NUMBER" in dc1.steps[-1]
    kept = plan_stretch(PRESETS["3dc"]).verdict_for_dc("dc1")
    assert kept.quorum_survives and not any("leaderless" in s or "OUT_OF_ORDER" in s for s in kept.steps)
