"""The site guard's decisions (pure): a site is lost only when the guard and the live mirrors have both failed to
reach it for confirm_s; a mirror that still reaches it vetoes; a lost site fails over as one, only within the RPO
limit; every refusal is said once and recorded for status."""

from __future__ import annotations

import pytest

from geokafka.control.rpo import RpoInterval
from geokafka.control.state_records import AutoFailover, Role
from geokafka.failover.automatic import RETRY_S, FlowLook, SiteLook, SiteLossPolicy
from geokafka.failover.vantage import MirrorView
from geokafka.topology.schema import FailoverPolicy

CONFIRM_S = 30


def policy(automatic: bool = True, max_rpo: int | None = 1000, dry_run: bool = False) -> SiteLossPolicy:
    return SiteLossPolicy(FailoverPolicy(automatic=automatic, confirm_s=CONFIRM_S, max_rpo_records=max_rpo), dry_run)


def view(now_ms: int, observed_ms: int | None, failed_ms: int | None = None, heartbeat: str | None = "retrying",
         heartbeat_age_s: float | None = 2.0) -> MirrorView:
    return MirrorView(observed_ms, failed_ms, heartbeat, heartbeat_age_s, now_ms)


def bounded(upper: int | None) -> RpoInterval:
    return RpoInterval("observed", 0, upper, 0.0, None, reason=None if upper is not None else "no failed look")


def look(now_ms: int, reached: bool, *flows: tuple[str, MirrorView, int | None], role: str = Role.ACTIVE,
         elapsed_ms: int | None = None) -> SiteLook:
    """A look at ``now_ms`` on the wall clock (and on the monotonic clock unless ``elapsed_ms`` says otherwise)."""
    return SiteLook("nyc", now_ms, now_ms if elapsed_ms is None else elapsed_ms, reached,
                    tuple(FlowLook(name, "atl", role, v, bounded(upper)) for name, v, upper in flows))


def lost_site(guard: SiteLossPolicy, upper: int | None = 100, seconds: int = 40) -> list:
    """Looks every second from the kill at t=0 (the mirror's look failed at 0.2 s) for ``seconds``."""
    decisions = []
    for t in range(seconds + 1):
        now = t * 1000
        decisions.append(guard.decide(look(now, t == 0, ("a", view(now, -100, 200), upper),
                                           ("b", view(now, -100, 200), upper))))
    return decisions


def test_a_lost_site_fails_over_as_one_once_both_views_failed_for_confirm_s():
    decisions = lost_site(policy())
    states = [d.state for d in decisions]
    assert states[0] == "up"
    assert set(states[1:CONFIRM_S + 1]) == {"suspect"}  # own first failure at 1 s: lost at 31 s
    first = next(i for i, d in enumerate(decisions) if d.fail_over)
    assert first == CONFIRM_S + 1
    assert decisions[first].fail_over == ["a", "b"]
    assert decisions[first].state == "lost"
    # said once per episode, recorded once per change
    assert sum(1 for d in decisions for e in d.events if "out of reach" in e and "lost if" in e) == 1
    assert decisions[1].records == {"a": ("suspect", decisions[1].reason), "b": ("suspect", decisions[1].reason)}
    assert all(not d.records for d in decisions[2:first])
    # not tried again before RETRY_S (the loop finishes a partial failure then)
    assert not any(d.fail_over for d in decisions[first + 1:])


def test_a_failed_attempt_is_retried_after_the_retry_interval():
    guard = policy()
    decisions = lost_site(guard, seconds=CONFIRM_S + 1 + int(RETRY_S))
    attempts = [i for i, d in enumerate(decisions) if d.fail_over]
    assert attempts == [CONFIRM_S + 1, CONFIRM_S + 1 + int(RETRY_S)]


def test_a_wall_clock_step_never_makes_a_site_lost_early():
    # the wall clock jumps 60 s forward in one second of the guard's own time (an NTP step, a paused VM): the
    # mirrors' failed looks seem 60 s old at once, the guard's own failed looks are still counted on its monotonic clock
    guard = policy()
    decisions = []
    for t in range(CONFIRM_S + 2):
        now = t * 1000 + (60_000 if t >= 2 else 0)
        decisions.append(guard.decide(look(now, t == 0, ("a", view(now, -100, 200), 100), elapsed_ms=t * 1000)))
    assert [d.state for d in decisions[1:CONFIRM_S + 1]] == ["suspect"] * CONFIRM_S
    assert next(i for i, d in enumerate(decisions) if d.fail_over) == CONFIRM_S + 1


def test_a_mirror_that_still_reaches_the_site_vetoes_any_failover():
    guard = policy()
    for t in range(0, 100):
        now = t * 1000
        decision = guard.decide(look(now, False, ("a", view(now, now - 300, None), 10),
                                     ("b", view(now, -100, 200), 10)))
        assert decision.state == "partitioned" and not decision.fail_over
    assert "a partition between the guard and nyc" in decision.reason


def test_a_stale_look_counts_as_lost_only_after_fresh_s():
    guard = policy()
    # looks that hang (a site dropping packets): no failed look recorded, the last good one ages
    states = [guard.decide(look(t * 1000, False, ("a", view(t * 1000, 0), 10))).state for t in range(0, 45)]
    assert states[5] == "partitioned"  # 5 s old: the mirror may still reach it
    assert states[12] == "suspect"
    assert "lost" in states and states.index("lost") == CONFIRM_S  # confirm_s after the last good look and own first


def test_no_live_mirror_means_no_second_view_and_a_person_decides():
    guard = policy()
    decisions = [guard.decide(look(t * 1000, False, ("a", view(t * 1000, 0, 200, heartbeat="stopped"), 10)))
                 for t in range(0, 40)]
    assert decisions[5].state == "suspect"
    assert decisions[CONFIRM_S].state == "held"
    assert not any(d.fail_over for d in decisions)
    assert "no live mirror" in decisions[CONFIRM_S].reason
    assert decisions[CONFIRM_S].records["a"][0] == AutoFailover.HELD


@pytest.mark.parametrize("upper", [1001, None])
def test_an_rpo_over_the_limit_or_unbounded_holds_the_site_for_a_person(upper):
    decisions = lost_site(policy(max_rpo=1000), upper=upper)
    assert not any(d.fail_over or d.would_fail_over for d in decisions)
    held = [d for d in decisions if d.state == "held"]
    assert held and "waiting for a person" in held[0].reason
    assert ("could lose up to 1,001 records" if upper else "has no upper bound") in held[0].reason
    assert held[0].records == {"a": ("held", held[0].reason), "b": ("held", held[0].reason)}
    assert sum(len(d.events) for d in held) == 1  # loud once, not every second


def test_a_dry_run_or_a_policy_that_is_not_automatic_only_says_what_it_would_do():
    for guard in (policy(dry_run=True), policy(automatic=False, dry_run=True)):
        decisions = lost_site(guard)
        assert not any(d.fail_over for d in decisions)
        assert decisions[-1].would_fail_over == ["a", "b"]
        assert sum(1 for d in decisions for e in d.events if "would fail over a, b" in e) == 1


def test_a_site_that_answers_again_clears_what_was_recorded():
    guard = policy()
    for t in range(0, 5):
        guard.decide(look(t * 1000, False, ("a", view(t * 1000, -100, 200), 10)))
    back = guard.decide(look(6000, True, ("a", view(6000, 5900), 10)))
    assert back.state == "up" and back.records == {"a": ("clear", "nyc answers")}
    assert back.events == ["nyc answers again: no failover"]
    # a healthy site never records anything
    assert policy().decide(look(0, True, ("a", view(0, -100), 10))).records == {}


def test_flows_already_failed_over_are_left_alone():
    decision = policy().decide(look(0, False, ("a", view(0, -100, 200), 10), role=Role.FAILED_OVER))
    assert decision.state == "failed-over" and not decision.fail_over and not decision.records


def test_the_topology_requires_a_limit_with_automatic():
    with pytest.raises(ValueError, match="max_rpo_records"):
        FailoverPolicy(automatic=True)
    assert FailoverPolicy().automatic is False  # never automatic by default
