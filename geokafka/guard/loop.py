"""The guard's loop: observe, decide, act, journal; until stopped."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import partial

from geokafka.control.connection import ClusterConnection
from geokafka.errors import GeokafkaError
from geokafka.guard.act import ClusterActor
from geokafka.guard.decide import DcLossPolicy, GuardSettings
from geokafka.guard.journal import Entry, Journal, known_brokers, members_text, outstanding
from geokafka.guard.model import Action, Broker, ClusterView, GuardMemory
from geokafka.guard.observe import ClusterReader, wait_for_brokers
from geokafka.infra.threads import in_thread, result_unless_stopped

log = logging.getLogger("geokafka.guard")

Say = Callable[[str], None]


@dataclass(frozen=True)
class Applied:
    """One action of a guard run and its outcome: done | failed: ... | would."""

    at_ms: int
    """Wall clock (for people): when a done action took effect, or when it was tried."""
    elapsed_s: float
    """The same instant on the monotonic clock (for durations, e.g. a drill's "after the kill")."""
    action: Action
    outcome: str


@dataclass
class GuardRun:
    """What a guard run did (actions applied, or that it would apply with ``dry_run``)."""

    dry_run: bool
    actions: list[Applied] = field(default_factory=list)
    events: list[tuple[int, str]] = field(default_factory=list)


def run_guard(
    conn: ClusterConnection,
    settings: GuardSettings,
    quorum_survives: Mapping[str, bool],
    *,
    dry_run: bool = False,
    interval_s: float = 1.0,
    stop: threading.Event | None = None,
    duration_s: float | None = None,
    say: Say = log.info,
    watching: threading.Event | None = None,
) -> GuardRun:
    """Guard the cluster behind ``conn`` until ``stop`` is set (or ``duration_s`` passed).

    ``quorum_survives``: per DC, whether the plan says the controller quorum survives its loss.
    With ``dry_run`` nothing is changed or journaled; what would be done is said.
    ``watching`` is set once the journal is read and the guard watches the cluster.
    """
    stop = stop or threading.Event()
    reader = ClusterReader(conn)
    journal = Journal(conn)
    actor = ClusterActor(conn)
    run = GuardRun(dry_run)
    try:
        registered = wait_for_brokers(reader, 60.0)
        if not dry_run:
            journal.ensure()
        entries = _read_journal(journal, stop, 60.0)
        remembered = known_brokers(entries)
        brokers = {**remembered, **registered}
        if brokers != remembered and not dry_run:
            journal.append("members", text=members_text(brokers))
        memory = GuardMemory(lowered=outstanding(entries))
        if memory.lowered:
            say(f"still lowered by an earlier run: {', '.join(sorted(memory.lowered))}")
        policy = DcLossPolicy(brokers, quorum_survives, settings, memory)
        dcs = policy.dcs()
        say(f"guarding {conn.name}: " + "; ".join(f"{dc}: brokers {ids}" for dc, ids in dcs.items())
            + f" (grace {settings.grace_s:.0f} s){' - dry run' if dry_run else ''}")
        if watching is not None:
            watching.set()
        deadline = None if duration_s is None else time.monotonic() + duration_s
        refresh = True
        while not stop.is_set() and (deadline is None or time.monotonic() < deadline):
            try:
                # on a thread of its own: a look at a cluster that lost a DC can take its time-outs, and a stop
                # must not wait for them
                looked, view = result_unless_stopped(
                    in_thread(partial(reader.observe, dict(brokers), refresh_configs=refresh), "guard-observe"), stop)
                if not looked or view is None:
                    break
            except GeokafkaError as exc:
                _event(run, journal, say, f"cluster not readable: {exc}", dry_run=True)  # journal needs the cluster
                stop.wait(interval_s)
                continue
            grown = reader_new(brokers, reader, view.live)
            if grown:
                brokers.update(grown)
                policy.brokers.update(grown)
                if not dry_run:
                    journal.append("members", text=members_text(brokers))
            decision = policy.decide(view)
            for text in decision.events:
                _event(run, journal, say, text, dry_run)
            refresh = bool(decision.actions)
            for action in decision.actions:
                if not _act(run, journal, actor, action, view, say, dry_run):
                    policy.failed(action)
                elif dry_run:
                    policy.simulated(action)
            stop.wait(interval_s)
    finally:
        reader.close()
        journal.close()
    return run


def _read_journal(journal: Journal, stop: threading.Event, timeout_s: float) -> list[Entry]:
    """The journal, read again while the cluster is busy electing leaders (a retriable error), up to ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return journal.read()
        except GeokafkaError as exc:
            if not exc.retriable or time.monotonic() > deadline or stop.is_set():
                raise
            log.info("guard journal not readable yet, trying again: %s", exc)
            stop.wait(1.0)


def reader_new(known: dict[int, Broker], reader: ClusterReader, live: frozenset[int]) -> dict[int, Broker]:
    """Brokers registered since the guard started (a cluster that grew), with their DCs."""
    if live <= set(known):
        return {}
    try:
        return {b: info for b, info in reader.registered_brokers().items() if b not in known}
    except GeokafkaError:
        return {}


def _event(run: GuardRun, journal: Journal, say: Say, text: str, dry_run: bool) -> None:
    run.events.append((int(time.time() * 1000), text))
    say(text)
    if not dry_run:
        try:
            journal.append("event", text=text)
        except GeokafkaError as exc:
            log.warning("guard journal not written: %s", exc)


def _act(run: GuardRun, journal: Journal, actor: ClusterActor, action: Action, view: ClusterView, say: Say,
         dry_run: bool) -> bool:
    """Journal, apply, journal again; False when it could not be done."""
    at, elapsed = int(time.time() * 1000), time.monotonic()
    if dry_run:
        run.actions.append(Applied(at, elapsed, action, "would"))
        say(f"would {_describe(action)}: {action.reason}")
        return True
    try:
        entry = journal.append("applying", action)
    except GeokafkaError as exc:
        run.actions.append(Applied(at, elapsed, action, f"failed: {exc}"))
        say(f"not done ({_describe(action)}): the journal cannot be written: {exc}")
        return False
    try:
        actor.apply(action, view)
    except GeokafkaError as exc:
        run.actions.append(Applied(at, elapsed, action, f"failed: {exc}"))
        say(f"failed to {_describe(action)}: {exc}")
        _append(journal, "failed", action, str(exc), entry.id)
        return False
    run.actions.append(Applied(int(time.time() * 1000), time.monotonic(), action, "done"))
    say(f"{_describe(action)}: {action.reason}")
    _append(journal, "done", action, "", entry.id)
    return True


def _append(journal: Journal, status: str, action: Action, text: str, entry_id: str) -> None:
    try:
        journal.append(status, action, text, entry_id)
    except GeokafkaError as exc:
        log.warning("guard journal not written: %s", exc)


def _describe(action: Action) -> str:
    if action.kind == "elect-preferred-leaders":
        return f"elect the preferred leaders of {action.topic}"
    verb = "lower" if action.kind == "lower-min-isr" else "restore"
    return f"{verb} min.insync.replicas of {action.topic} {action.previous} -> {action.value}"
