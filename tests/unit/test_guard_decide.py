"""The guard's decisions on observations of a 2.5-DC cluster (RF 4 over dc1/dc2, min.insync.replicas 3)."""

from __future__ import annotations

from geokafka.guard.decide import DcLossPolicy, GuardSettings
from geokafka.guard.model import Broker, ClusterView, PartitionView

BROKERS = {i: Broker(i, "dc1" if i <= 2 else "dc2", "127.0.0.1", 9000 + i) for i in (1, 2, 3, 4)}
REPLICAS = (1, 3, 2, 4)


def view(at_s: float, down: set[int] = frozenset(), fenced: set[int] | None = None, isr: tuple[int, ...] = REPLICAS,
         min_isr: int = 3, leader: int | None = None, wall_s: float | None = None) -> ClusterView:
    """An observation at ``at_s`` on the monotonic clock (and on the wall clock unless ``wall_s`` says otherwise)."""
    fenced = down if fenced is None else fenced
    parts = tuple(PartitionView("orders", p, REPLICAS, tuple(b for b in isr if b not in fenced),
                                leader if leader is not None else next(b for b in REPLICAS if b not in fenced))
                  for p in range(3))
    return ClusterView(int((at_s if wall_s is None else wall_s) * 1000), int(at_s * 1000),
                       frozenset(set(BROKERS) - fenced), frozenset(set(BROKERS) - down), parts,
                       {"orders": min_isr, "__consumer_offsets": 3})


def policy(quorum: bool = True) -> DcLossPolicy:
    return DcLossPolicy(BROKERS, {"dc1": quorum, "dc2": quorum}, GuardSettings(grace_s=10))


def test_a_lost_dc_lowers_min_isr_to_the_surviving_isr_after_the_grace_period() -> None:
    guard = policy()
    assert guard.decide(view(0)).actions == []
    first = guard.decide(view(1, down={1, 2}))
    assert first.dcs["dc1"] == "suspect" and first.actions == []
    lost = guard.decide(view(11, down={1, 2}))
    assert lost.dcs["dc1"] == "lost"
    assert [(a.kind, a.topic, a.value, a.previous) for a in lost.actions] == [("lower-min-isr", "orders", 2, 3)]
    assert any("dc1 is lost" in e for e in lost.events)
    again = guard.decide(view(12, down={1, 2}, min_isr=2))
    assert again.actions == [] and again.events == []  # done, and said once


def test_one_broker_or_a_short_outage_never_acts() -> None:
    guard = policy()
    for t in range(0, 60, 5):
        assert guard.decide(view(t, down={1})).actions == []  # dc1 still has broker 2
    for t in range(60, 69):
        assert guard.decide(view(t, down={1, 2})).actions == []  # back before 10 s
    assert guard.decide(view(69)).dcs["dc1"] == "up"
    assert guard.decide(view(75, down={1, 2})).dcs["dc1"] == "suspect"  # the clock starts again


def test_a_wall_clock_step_never_makes_a_dc_lost_early() -> None:
    # an NTP step or a paused VM moves the wall clock 60 s in one second of the guard's own (monotonic) time
    guard = policy()
    assert guard.decide(view(0, down={1, 2}, wall_s=1000)).dcs["dc1"] == "suspect"
    stepped = guard.decide(view(1, down={1, 2}, wall_s=1060))
    assert stepped.dcs["dc1"] == "suspect" and stepped.actions == []
    assert guard.decide(view(9, down={1, 2}, wall_s=1068)).actions == []
    assert [a.kind for a in guard.decide(view(10, down={1, 2}, wall_s=1069)).actions] == ["lower-min-isr"]


def test_no_action_without_a_quorum_per_plan_or_when_lost_brokers_stay_registered() -> None:
    guard = policy(quorum=False)
    guard.decide(view(0, down={1, 2}))
    d = guard.decide(view(20, down={1, 2}))
    assert d.actions == [] and any("quorum" in e and "plan" in e for e in d.events)
    unfenced = policy()
    unfenced.decide(view(0, down={1, 2}, fenced=set()))
    d = unfenced.decide(view(20, down={1, 2}, fenced=set()))
    assert d.actions == [] and any("still registered" in e for e in d.events)


def test_restores_min_isr_and_leaders_once_every_replica_is_back_in_sync() -> None:
    guard = policy()
    guard.decide(view(0, down={1, 2}))
    guard.decide(view(11, down={1, 2}))
    # brokers back, but not yet in the ISR: nothing restored
    returning = guard.decide(view(30, isr=(3, 4), min_isr=2, leader=3))
    assert returning.dcs["dc1"] == "returning" and returning.actions == []
    back = guard.decide(view(40, min_isr=2, leader=3))
    assert [(a.kind, a.value, a.previous) for a in back.actions] == [
        ("restore-min-isr", 3, 2), ("elect-preferred-leaders", None, None)]
    assert guard.decide(view(41)).actions == []


def test_a_setting_changed_by_someone_else_is_left_alone() -> None:
    guard = policy()
    guard.decide(view(0, down={1, 2}))
    guard.decide(view(11, down={1, 2}))
    d = guard.decide(view(40, min_isr=4))
    assert d.actions == [] and any("left alone" in e for e in d.events)
