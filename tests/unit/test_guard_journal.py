"""The guard's journal: what is still lowered (also after a restart), and how status and /metrics show it."""

from __future__ import annotations

from rich.console import Console

from geokafka.guard.journal import Entry, known_brokers, members_text, outstanding
from geokafka.guard.model import Action, Broker
from geokafka.guard.summary import summarize
from geokafka.monitoring.metrics import render_metrics
from geokafka.monitoring.status import StatusReport
from geokafka.monitoring.status_render import render_report

LOWER = Action("lower-min-isr", "orders", "dc1", 2, 3, "dc1 lost").to_dict()
RESTORE = Action("restore-min-isr", "orders", "dc1", 3, 2, "dc1 back").to_dict()


def test_a_lowering_is_outstanding_until_its_restore_is_done() -> None:
    applying = [Entry(1, "applying", LOWER, "", "a")]
    assert outstanding(applying)["orders"].original == 3  # a guard that died mid-action still restores
    done = applying + [Entry(2, "done", LOWER, "", "a")]
    assert outstanding(done)["orders"].lowered == 2
    assert outstanding(done + [Entry(3, "applying", RESTORE, "", "b")])  # not done yet
    assert outstanding(done + [Entry(3, "applying", RESTORE, "", "b"), Entry(4, "done", RESTORE, "", "b")]) == {}
    # a failed lowering changed nothing
    assert outstanding([Entry(1, "failed", LOWER, "refused", "c")]) == {}


def test_members_survive_a_restart_of_the_guard() -> None:
    brokers = {1: Broker(1, "dc1", "h", 9001), 3: Broker(3, "dc2", "h", 9003)}
    entries = [Entry(1, "members", None, members_text(brokers), "m")]
    assert known_brokers(entries) == brokers


def test_status_and_metrics_show_what_is_lowered() -> None:
    guard = summarize("stretch", [Entry(1_700_000_000_000, "event", None, "dc1 is lost", "e"),
                                  Entry(1_700_000_000_500, "done", LOWER, "", "a")])
    assert guard.lowered == [{"topic": "orders", "dc": "dc1", "original": 3, "lowered": 2, "at_ms": 1_700_000_000_500}]
    report = StatusReport(1_700_000_001_000, [], guard)
    text = render_metrics(report)
    assert 'geokafka_guard_min_isr_lowered{cluster="stretch",dc="dc1",topic="orders"} 2.0' in text
    assert 'geokafka_guard_actions_total{cluster="stretch",kind="lower-min-isr",status="done"} 1.0' in text
    console = Console(width=160, record=True)
    console.print(render_report(report))
    shown = console.export_text()
    assert "orders: min.insync.replicas lowered 3 -> 2 (dc1 lost)" in shown and "dc1 is lost" in shown
