"""The guard's journal as `status`, `/metrics` and the dashboard show it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from geokafka.guard.journal import Entry, outstanding


@dataclass
class GuardStatus:
    """What the guard has changed and not undone, and its last words."""

    cluster: str
    lowered: list[dict[str, Any]] = field(default_factory=list)
    """Topics whose min.insync.replicas the guard lowered: topic, dc, original, lowered, at_ms."""
    recent: list[dict[str, Any]] = field(default_factory=list)
    """The last journal records, newest last: at_ms, status, text."""
    actions: dict[str, int] = field(default_factory=dict)
    """``<kind>/<status>`` -> how many journal records."""
    error: str | None = None


def summarize(cluster: str, entries: list[Entry], recent: int = 8) -> GuardStatus:
    """The journal, summarized (pure)."""
    lowered = [{"topic": low.topic, "dc": low.dc, "original": low.original, "lowered": low.lowered,
                "at_ms": low.at_ms} for low in outstanding(entries).values()]
    counts = Counter(f"{(e.action or {}).get('kind')}/{e.status}" for e in entries if e.action)
    shown = [e for e in entries if e.status != "members"][-recent:]
    return GuardStatus(cluster, lowered, [{"at_ms": e.at_ms, "status": e.status, "text": _text(e)} for e in shown],
                       dict(sorted(counts.items())))


def _text(entry: Entry) -> str:
    action = entry.action
    if not action:
        return entry.text
    what = (f"min.insync.replicas of {action['topic']} {action['previous']} -> {action['value']}"
            if action["kind"] != "elect-preferred-leaders" else f"preferred leaders of {action['topic']}")
    return f"{action['kind']}: {what}" + (f" ({entry.text})" if entry.text else "")
