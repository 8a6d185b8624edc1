"""``geokafka drill stretch``: lose a DC of a real local stretched cluster and check the plan.

The drill starts the layout's cluster (rack = DC, the plan's replica assignment), produces
with the topics' acks at a steady rate while a consumer in a surviving DC reads, kills every
process of one DC at once, and watches for ``observe_s`` seconds. Then it measures:

* **RTO**: per partition, how long after the kill the first record *sent after the kill* was
  acknowledged; writes have resumed when every partition expected back has done so;
* **RPO**: acknowledged records missing from what the surviving brokers serve (read back
  from offset 0 to the high watermark of every partition that has a live leader);
* **quorum**: whether the cluster can still commit a metadata change (a probe topic);

and compares them with the plan's verdict for that DC (:mod:`.compare`). With ``recover`` it
then runs the plan's manual steps (restart the survivors with a reduced voter set, lower
min.insync.replicas) and measures the RTO they give.

WAN latency is not emulated: every local node binds 127.0.0.1, so per-DC network namespaces
with ``tc netem`` would need per-node listener addresses; the drill kills processes only and
says so in its report.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from geokafka.control.state_records import TopicPartitionKey
from geokafka.drills.stretch import stretch_cluster as sc
from geokafka.drills.stretch.compare import Comparison, DrillObservation, PartitionObservation, automatic_rto, compare
from geokafka.drills.stretch.guarded import GuardThread as _GuardThread
from geokafka.drills.stretch.guarded import dc_returns as _dc_returns
from geokafka.drills.stretch.guarded import guard_report as _guard_report
from geokafka.drills.stretch.timeline import write_json, write_png
from geokafka.drills.stretch.traffic import PRODUCER_REQUEST_TIMEOUT_MS, AckLog, LiveConsumer, PacedProducer, read_back
from geokafka.errors import ClusterUnreachableError, DrillFailedError, TopologyError
from geokafka.planning.plan import StretchPlan, plan_stretch, verdict_dict
from geokafka.planning.verdicts import Verdict
from geokafka.topology.schema import Stretch

WAN_NOTE = ("WAN latency not emulated: every local node binds 127.0.0.1, so per-DC network namespaces with tc netem "
            "would need per-node listener addresses; this drill kills processes only")


@dataclass(frozen=True)
class StretchDrillOptions:
    """What to drill and how."""

    layout_name: str
    stretch: Stretch
    home: Path
    out_dir: Path
    dc: str | None = None
    kill_after_s: float = 5.0
    observe_s: float = 20.0
    rate: float = 200.0
    heap_mb: int = 256
    recover: bool = False
    recover_timeout_s: float = 45.0
    start_timeout_s: float = 180.0
    producer_request_timeout_ms: int = PRODUCER_REQUEST_TIMEOUT_MS
    """request.timeout.ms of the drill's producers (Kafka's default is 30 000; see the planner's advice)."""
    guard_grace_s: float | None = None
    """Run `geokafka guard` (with this grace period) through the drill instead of manual steps,
    then bring the DC back and watch the guard undo what it did."""
    return_timeout_s: float = 150.0
    kill_brokers: bool = False
    """Manual steps: the broker-only survivors go down hard too (power lost at the surviving site)
    and restart with the new voter set; they come back unclean, so partitions need the plan's
    unclean election step."""


@dataclass(frozen=True)
class StretchDrillResult:
    """The report (as written to ``json_path``), the plot, and the judgement."""

    report: dict[str, Any]
    json_path: Path
    png_path: Path
    comparison: Comparison


Event = Callable[[str], None]


def _ignore(_: str) -> None:
    return None


class _Traffic:
    """The producers (one per acks setting) and the live consumer, pumped by the drill's loop."""

    def __init__(self, plan: StretchPlan, cluster: sc.DrillCluster, rack: str, consumer_bootstrap: str,
                 rate: float, request_timeout_ms: int = PRODUCER_REQUEST_TIMEOUT_MS) -> None:
        self.partitions: list[TopicPartitionKey] = [(t.name, p.partition) for t in plan.topics for p in t.partitions]
        self.log = AckLog(t0=time.monotonic())
        groups: dict[str, list[TopicPartitionKey]] = {}
        for t in plan.topics:
            groups.setdefault(t.config.acks, []).extend((t.name, p.partition) for p in t.partitions)
        self.producers = [
            PacedProducer(cluster.spec.bootstrap, acks, parts, rate * len(parts) / len(self.partitions), self.log,
                          request_timeout_ms)
            for acks, parts in groups.items()
        ]
        self.consumer = LiveConsumer(consumer_bootstrap, rack, self.partitions, self.log.t0)
        self.consumer.start()
        self._tick = self.log.t0

    def pump(self, until: float, on_tick: Event, stop: Callable[[], bool] = lambda: False) -> None:
        """Produce until ``until`` (monotonic) or until ``stop()`` is true; report once a second."""
        while time.monotonic() < until and not stop():
            slice_end = min(until, time.monotonic() + 0.05)
            for producer in self.producers:
                producer.pump(slice_end)
            now = time.monotonic()
            if now - self._tick >= 1.0:
                self._tick = now
                recent = sum(1 for _, _, at in list(self.log.acked.values())[-1000:] if now - at < 1.0)
                on_tick(f"t={now - self.log.t0:5.1f}s  acked {len(self.log.acked)}  ({recent}/s)")

    def pump_while(self, work: Callable[[], Any], on_tick: Event, limit_s: float) -> Any:
        """Run ``work`` in a thread while producing; return its result or re-raise its error."""
        box: dict[str, Any] = {}

        def target() -> None:
            try:
                box["result"] = work()
            except BaseException as exc:  # noqa: BLE001 - handed to the caller's thread
                box["error"] = exc

        thread = threading.Thread(target=target, name="geokafka-drill-work", daemon=True)
        thread.start()
        self.pump(time.monotonic() + limit_s, on_tick, stop=lambda: not thread.is_alive())
        thread.join(timeout=1)
        if "error" in box:
            raise box["error"]
        return box.get("result")

    def close(self) -> None:
        """Stop producing (outstanding records get 5 s, then are purged) and stop the consumer."""
        for producer in self.producers:
            producer.close()
        self.consumer.stop.set()
        self.consumer.join(timeout=5)


def run_stretch_drill(
    opts: StretchDrillOptions, on_event: Event = _ignore, on_tick: Event = _ignore, check: bool = True
) -> StretchDrillResult:
    """Run the drill and write its report and timeline.

    With ``check`` (the default) raises :class:`DrillFailedError`, after writing both files,
    when reality disagrees with the plan; without it the caller reads ``result.comparison``.
    """
    plan = plan_stretch(opts.stretch)
    if plan.layout.observer_brokers:
        raise TopologyError(
            "the drill runs Apache Kafka, which has no observers (a Confluent Server feature): the plan's "
            "observer promotion cannot be checked; drill a layout without observers:"
        )
    dc = opts.dc or plan.most_interesting_dc()
    verdict = plan.verdict_for_dc(dc)
    if opts.guard_grace_s is not None:
        # The guard acts after the grace period, once the controller fenced the lost brokers (9 s);
        # the producers' first write after its change then took another 9 s to over 25 s in drills
        # (cause not found yet), so the drill watches long enough to measure that RTO.
        opts = replace(opts, observe_s=max(opts.observe_s, opts.guard_grace_s + 60.0), recover=False)
    cluster = sc.cluster_on_free_ports(plan.layout, f"stretch-{opts.layout_name}", opts.home,
                                       opts.stretch.base_port, opts.heap_mb)
    survivors = cluster.brokers_outside(dc)
    rack = next((cluster.dc_of[n.node_id] for n in survivors), dc)
    on_event(f"plan for losing {dc}: quorum {'survives' if verdict.quorum_survives else 'LOST'}, writes "
             f"{verdict.writes}, RPO {'0' if verdict.rpo_zero else '> 0'}, RTO {'≈ 0' if verdict.rto_zero else '> 0'}")
    on_event(f"starting {len(cluster.spec.nodes)} Kafka processes in {opts.home} ({WAN_NOTE.split(':')[0]})")
    started = datetime.now(UTC)
    traffic: _Traffic | None = None
    guard: _GuardThread | None = None
    returned: dict[str, Any] | None = None
    try:
        sc.fresh_start(cluster, opts.start_timeout_s)
        sc.create_topics(cluster, plan.topics)
        on_event(f"cluster up, topics created with the planned assignment; producing {opts.rate:.0f} records/s")
        traffic = _Traffic(plan, cluster, rack, cluster.bootstrap_outside(dc) or cluster.spec.bootstrap, opts.rate,
                           opts.producer_request_timeout_ms)
        t0 = traffic.log.t0
        traffic.pump(t0 + 30, on_tick, stop=lambda: bool(traffic.log.acked))  # connections, producer id
        if not traffic.log.acked:
            raise ClusterUnreachableError(f"no write was acknowledged within 30 s of starting traffic "
                                          f"(send errors: {dict(traffic.log.failures) or 'none'})")
        warm = min(at for _, _, at in traffic.log.acked.values())
        if opts.guard_grace_s is not None:
            guard = _GuardThread(cluster, plan, opts.guard_grace_s, on_event)
            guard.wait_guarding(opts.start_timeout_s)
        traffic.pump(warm + opts.kill_after_s, on_tick)
        killed = sc.kill_dc(cluster, dc)
        kill_time = time.monotonic()
        on_event(f"t={kill_time - t0:.1f}s killed every process of {dc} (nodes {', '.join(map(str, killed))})")
        quorum = _observe(traffic, cluster, verdict, dc, kill_time, opts, on_event, on_tick)
        auto = traffic.log.resumed_at(kill_time)
        auto_end = kill_time + opts.observe_s
        recovery_at, steps_done = None, []
        if opts.recover and verdict.steps and survivors:
            recovery_at = time.monotonic()
            steps_done = _recover(traffic, cluster, verdict, plan, dc, opts, on_event, on_tick)
        end = time.monotonic()
        traffic.close()
        acks_by_part = traffic.log.resumed_at(kill_time)
        readback = read_back(cluster.bootstrap_outside(dc), traffic.partitions,
                             {n.node_id for n in survivors}) if survivors else None
        if guard is not None:
            returned = _dc_returns(cluster, plan, dc, guard, opts, on_event)
    except BaseException:
        if traffic is not None:
            traffic.close()
        raise
    finally:
        if guard is not None:
            guard.stop()
        sc.kill_leftovers(opts.home)
    on_event("all drill processes stopped")
    outcome = {(o.topic, o.partition): o for o in verdict.outcomes}
    guarded = guard is not None and verdict.quorum_survives
    parts = tuple(
        PartitionObservation(
            t, p, outcome[(t, p)].writable or (guarded and not outcome[(t, p)].offline),
            _delay(auto.get((t, p)), kill_time, auto_end),
            _delay(acks_by_part.get((t, p)), kill_time, end) if recovery_at is not None else None,
        )
        for t, p in traffic.partitions
    )
    lost, unreadable = _losses(traffic.log, readback, traffic.partitions)
    obs = DrillObservation(opts.observe_s, parts, len(traffic.log.acked), lost, unreadable, quorum,
                           recovered=recovery_at is not None)
    comparison = compare(verdict, obs)
    report = _report(opts, plan, verdict, cluster, dc, started, obs, comparison, traffic, kill_time, end,
                     recovery_at, steps_done, readback)
    if guard is not None:
        report["guard"] = _guard_report(guard, returned, kill_time, opts)
        if report["measured"]["rto_kind"] == "automatic":
            report["measured"]["rto_kind"] = "automatic, by geokafka guard"
        if returned is not None and not returned["restored"]:
            comparison = Comparison((*comparison.disagreements, (
                f"guard: after {dc} came back, min.insync.replicas and leaders were not restored within "
                f"{opts.return_timeout_s:.0f} s")), comparison.notes)
            report["agreement"]["agrees"] = False
            report["agreement"]["disagreements"] = list(comparison.disagreements)
    first_acks = [p.resumed_after_s for p in obs.partitions if p.resumed_after_s is not None]
    stem = f"stretch-drill-{opts.layout_name}-{dc}-{started.strftime('%Y%m%dT%H%M%S')}"
    json_path, png_path = opts.out_dir / f"{stem}.json", opts.out_dir / f"{stem}.png"
    report["files"] = {"json": str(json_path), "png": str(png_path)}
    write_json(report, json_path)
    m = report["measured"]
    rpo = f"{lost} acked lost" + (f", {unreadable} unreadable" if unreadable else "")
    rto = f"RTO {m['rto_s']:.1f} s" if m["rto_s"] is not None else "writes did not resume"
    write_png(png_path, f"stretch drill {opts.layout_name}: lose {dc} - {rpo}, {rto} - "
              f"{'plan agrees' if comparison.agrees else 'PLAN DISAGREES'}",
              report["timeline"]["acked_per_s"], report["timeline"]["consumed_per_s"],
              kill_time - t0, f"kill {dc}", None if m["rto_s"] is None else kill_time - t0 + m["rto_s"],
              None if recovery_at is None else recovery_at - t0,
              None if not first_acks else kill_time - t0 + min(first_acks))
    result = StretchDrillResult(report, json_path, png_path, comparison)
    if check:
        raise_on_disagreement(result)
    return result


def raise_on_disagreement(result: StretchDrillResult) -> None:
    """Raise :class:`DrillFailedError` naming the first disagreement and the report, if there is one."""
    c = result.comparison
    if c.agrees:
        return
    more = f" (and {len(c.disagreements) - 1} more)" if len(c.disagreements) > 1 else ""
    raise DrillFailedError(
        f"reality disagrees with the plan for losing {result.report['lost_dc']}: {c.disagreements[0]}{more}; "
        f"report: {result.json_path}"
    )


def _observe(traffic: _Traffic, cluster: sc.DrillCluster, verdict: Verdict, dc: str, kill_time: float,
             opts: StretchDrillOptions, on_event: Event, on_tick: Event) -> bool | None:
    """Watch writes for ``observe_s`` (less when the plan expects every partition back and they all are)."""
    end = kill_time + opts.observe_s
    expect_all = all(o.writable for o in verdict.outcomes)
    n = len(traffic.partitions)

    def all_back() -> bool:
        back = traffic.log.resumed_at(kill_time)
        return expect_all and len(back) == n and time.monotonic() - max(back.values()) > 2.0

    probe_at = kill_time + min(5.0, opts.observe_s / 4)
    traffic.pump(probe_at, on_tick, stop=all_back)
    bootstrap = cluster.bootstrap_outside(dc)
    quorum: bool | None = None
    if bootstrap:
        live = cluster.brokers_outside(dc)[0].node_id
        budget = max(5.0, end - time.monotonic() - 2.0)
        probe = traffic.pump_while(
            lambda: sc.metadata_writable(bootstrap, f"_geokafka-probe-{int(kill_time)}", live, budget),
            on_tick, limit_s=budget + 15)
        quorum = None if probe is None else probe.writable
        if probe is not None and probe.writable:
            on_event(f"metadata quorum answers (probe topic created, attempt {probe.attempts})")
        else:
            why = "no answer in time" if probe is None else f"{probe.attempts} attempts, last: {probe.last_error}"
            on_event(f"metadata quorum does not answer (probe topic not created: {why})")
    traffic.pump(end, on_tick, stop=all_back)
    back = traffic.log.resumed_at(kill_time)
    on_event(f"after {time.monotonic() - kill_time:.1f}s: {len(back)}/{n} partitions accept writes again")
    return quorum


def _recover(traffic: _Traffic, cluster: sc.DrillCluster, verdict: Verdict, plan: StretchPlan, dc: str,
             opts: StretchDrillOptions, on_event: Event, on_tick: Event) -> list[dict[str, Any]]:
    """Run the plan's manual steps while producing; wait until the partitions they restore accept writes."""
    done: list[dict[str, Any]] = []
    t0 = traffic.log.t0
    bootstrap = cluster.bootstrap_outside(dc)
    expected = {(o.topic, o.partition) for o in verdict.outcomes if not o.offline}
    if not verdict.quorum_survives:
        on_event("manual step: restart the surviving controllers with a voter set that lists only them")
        notes: list[str] = []
        traffic.pump_while(lambda: sc.restart_with_survivors(cluster, dc, 120, notes, opts.kill_brokers),
                           on_tick, limit_s=210)
        done.append({"at_s": round(time.monotonic() - t0, 2), "step": "quorum restored without " + dc})
        for note in notes:
            on_event(note)
            done.append({"at_s": round(time.monotonic() - t0, 2), "step": note})
    live = {n.node_id for n in cluster.brokers_outside(dc)}
    on_event("waiting for leaders among the surviving replicas")
    elected = traffic.pump_while(lambda: sc.wait_for_leaders(bootstrap, expected, live, 60), on_tick, limit_s=70)
    done.append({"at_s": round(time.monotonic() - t0, 2),
                 "step": "leaders elected outside " + dc if elected else "no leader for some partitions after 60 s"})
    lower: dict[str, int] = {}
    for o in verdict.outcomes:
        topic = plan.layout.topics[o.topic]
        if not o.offline and topic.acks == "all" and o.surviving_replicas < topic.min_insync_replicas:
            lower[o.topic] = min(lower.get(o.topic, o.surviving_replicas), o.surviving_replicas)
    if lower:
        on_event(f"manual step: lower min.insync.replicas to {lower}")
        traffic.pump_while(lambda: sc.lower_min_isr(bootstrap, lower), on_tick, limit_s=60)
        done.append({"at_s": round(time.monotonic() - t0, 2), "step": f"min.insync.replicas lowered: {lower}"})
    if not elected:
        _elect_leaderless(traffic, bootstrap, expected, live, on_event, on_tick, done)
    since = time.monotonic()

    def back() -> bool:
        return expected <= set(traffic.log.resumed_at(since))

    traffic.pump(since + opts.recover_timeout_s, on_tick, stop=back)
    on_event(f"after the manual steps: {len(set(traffic.log.resumed_at(since)) & expected)}/{len(expected)} "
             f"partitions accept writes")
    for at, name in traffic.log.producer_restarts:
        on_event(f"the producer stopped with the fatal error {name} at t={at - t0:.1f}s and was replaced "
                 "(as an application must)")
    traffic.pump(time.monotonic() + 3.0, on_tick)
    return done


def _elect_leaderless(traffic: _Traffic, bootstrap: str, expected: set[tuple[str, int]], live: set[int],
                      on_event: Event, on_tick: Event, done: list[dict[str, Any]]) -> None:
    """The plan's last resort: an unclean election on the partitions that still have no leader.

    Nobody can choose the replica here (the controller takes the first live one of the replica
    list); the drill's read-back then counts every acked record the election lost.
    """
    stuck = traffic.pump_while(lambda: sc.leaderless(bootstrap, expected, live), on_tick, limit_s=20)
    if not stuck:
        return
    on_event(f"manual step: unclean leader election on {len(stuck)} leaderless partitions")
    errors = traffic.pump_while(lambda: sc.elect_unclean(bootstrap, stuck), on_tick, limit_s=60)
    failed = f" ({len(errors)} refused: {next(iter(errors.values()))})" if errors else ""
    done.append({"at_s": round(time.monotonic() - traffic.log.t0, 2),
                 "step": f"unclean leader election on {len(stuck)} leaderless partitions{failed}"})


def _delay(at: float | None, kill_time: float, until: float) -> float | None:
    return None if at is None or at > until else round(at - kill_time, 3)


def _losses(log: AckLog, readback: Any, partitions: list[TopicPartitionKey]) -> tuple[int, int]:
    """(acked records missing from readable partitions, acked records in unreadable partitions)."""
    if readback is None:
        return 0, len(log.acked)
    lost = unreadable = 0
    for seq, (part, _, _) in log.acked.items():
        if part in readback.values:
            lost += seq not in readback.values[part]
        else:
            unreadable += 1
    return lost, unreadable


def _report(opts: StretchDrillOptions, plan: StretchPlan, verdict: Verdict, cluster: sc.DrillCluster, dc: str,
            started: datetime, obs: DrillObservation, comparison: Comparison, traffic: _Traffic,
            kill_time: float, end: float, recovery_at: float | None, steps_done: list[dict[str, Any]],
            readback: Any) -> dict[str, Any]:
    t0 = traffic.log.t0
    seconds = int(end - t0) + 1
    if obs.recovered:
        delays = [p.resumed_after_recovery_s for p in obs.partitions
                  if (p.topic, p.partition) in {(o.topic, o.partition) for o in verdict.outcomes if not o.offline}]
        rto = None if not delays or None in delays else max(d for d in delays if d is not None)
    else:
        rto = automatic_rto(obs) if all(p.predicted_writable for p in obs.partitions) else None
    plan_json = verdict_dict(verdict)
    plan_json.pop("partition_outcomes")
    return {
        "drill": "stretch",
        "layout": opts.layout_name,
        "lost_dc": dc,
        "started_at": started.isoformat(),
        "options": {"kill_after_s": opts.kill_after_s, "observe_s": opts.observe_s, "rate": opts.rate,
                    "heap_mb": opts.heap_mb, "recover": opts.recover,
                    "producer_request_timeout_ms": opts.producer_request_timeout_ms},
        "nodes": [
            {"id": n.node_id, "dc": cluster.dc_of[n.node_id],
             "roles": [r for r, on in (("broker", n.is_broker), ("controller", n.is_controller)) if on],
             "broker_port": n.broker_port, "controller_port": n.controller_port}
            for n in cluster.spec.nodes
        ],
        "controllers": {str(c): host for c, host in cluster.controller_host.items()},
        "plan": plan_json,
        "measured": {
            "acked": obs.acked,
            "acked_before_kill": sum(1 for _, _, at in traffic.log.acked.values() if at < kill_time),
            "acked_lost": obs.acked_lost,
            "acked_unreadable": obs.acked_unreadable,
            "unreadable_partitions": {f"{t}-{p}": why for (t, p), why in (readback.unreadable if readback else {}).items()},
            "send_failures": dict(traffic.log.failures),
            "producer_restarts": [{"after_kill_s": round(at - kill_time, 2), "error": name}
                                  for at, name in traffic.log.producer_restarts],
            "rpo_zero": obs.acked_lost == 0 and obs.acked_unreadable == 0,
            "rto_s": rto,
            "rto_kind": None if rto is None else ("after manual steps" if obs.recovered else "automatic"),
            "writes_resumed": rto is not None,
            "partitions_resumed": sum(1 for p in obs.partitions
                                      if p.resumed_after_s is not None or p.resumed_after_recovery_s is not None),
            "quorum_available": obs.quorum_available,
            "consumed": len(traffic.consumer.consumed_at),
            "partitions": [
                {"partition": f"{p.topic}-{p.partition}", "plan_writable": p.predicted_writable,
                 "resumed_after_s": p.resumed_after_s, "resumed_after_recovery_s": p.resumed_after_recovery_s}
                for p in obs.partitions
            ],
        },
        "recovery": {"performed": obs.recovered, "steps": steps_done,
                     "started_at_s": None if recovery_at is None else round(recovery_at - t0, 2)},
        "timeline": {"kill_at_s": round(kill_time - t0, 3), "acked_per_s": traffic.log.acked_per_second(seconds),
                     "consumed_per_s": traffic.consumer.per_second(seconds)},
        "agreement": {"agrees": comparison.agrees, "disagreements": list(comparison.disagreements),
                      "notes": list(comparison.notes)},
        "emulation": {"wan_latency": False, "note": WAN_NOTE,
                      "combined_controllers": "controllers run inside their DC's brokers where the DC has brokers",
                      "observers": "not started (Apache Kafka has no observers)" if plan.layout.observer_brokers
                      else "none in the layout"},
    }
