"""Failover, promote and failback of a flow: move the business to the target, and back.

* ``failover`` -- the source is gone. Fence the flow's writers (nothing more can land), mark
  the flow failed-over on the target (a mirror that is still alive stops), move every synced
  group to its translated position clamped to the target's end, and report what was lost as
  an interval (:mod:`geokafka.control.rpo`): per partition the records the last observation of
  the source showed but the target does not have, and at most what the source could have
  taken since at its peak rate; the exact figure comes from `geokafka reconcile` once the
  old source answers again (:mod:`geokafka.failover.reconcile`).
* ``promote`` -- a planned move. The source is reachable and producers have stopped: wait
  until the running mirror has replicated everything, sync configs and groups a last time,
  then fail over. RPO is 0 by construction, or the command refuses after its timeout.
* ``failback`` -- see :mod:`geokafka.failover.failback`.
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

from geokafka import contract
from geokafka.control.acl_sync import sync_topic_acls
from geokafka.control.admin import ClusterAdmin
from geokafka.control.connection import connection
from geokafka.control.flow_states import FlowState
from geokafka.control.naming import policy_for
from geokafka.control.rpo import RpoInterval, rpo_interval
from geokafka.control.selection import select_topics
from geokafka.control.state_records import FailoverRecord, Role
from geokafka.control.state_store import StateSnapshot, StateStore
from geokafka.control.state_stores import StateStores, using
from geokafka.control.topic_sync import TopicPair, sync_topic_configs
from geokafka.errors import AlreadyFailedOverError, ClusterUnreachableError, FlowStateError, SourceStillReachedError
from geokafka.failover.vantage import mirror_still_reaches, mirror_view
from geokafka.pipeline.fencing import fence
from geokafka.pipeline.groups import recorded_writers
from geokafka.topology.schema import Topology


@dataclass(frozen=True)
class PartitionLoss:
    """One source partition at failover time."""

    topic: str
    partition: int
    observed_end: int | None
    replicated_next: int
    unreplicated: int
    """Seen by the last observation and not replicated: certainly lost."""
    replicated_past_observation: int = 0
    """Replicated beyond the last observation: written after it (the observation is stale here)."""
    last_replicated_ms: int | None = None
    """Timestamp of the last record replicated (the oldest loss here is not older)."""


@dataclass
class FailoverReport:
    """What a failover or promote did (or, with ``dry_run``, would do), and what it cost."""

    flow: str
    kind: str
    source: str
    target: str
    started_ms: int
    finished_ms: int = 0
    source_reachable: bool = False
    dry_run: bool = False
    observed_at_ms: int | None = None
    observation_age_s: float | None = None
    rpo: RpoInterval = field(default_factory=lambda: RpoInterval.unknown("not computed"))
    """What the failover lost, records and seconds between bounds (see :mod:`geokafka.control.rpo`)."""
    partitions: list[PartitionLoss] = field(default_factory=list)
    groups: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    mirror_view: dict[str, Any] | None = None
    """The flow's mirror's own view of the source when the command decided (see :mod:`~geokafka.failover.vantage`)."""

    @property
    def rpo_records(self) -> int:
        """Records certainly lost: the last observation of the source showed them, the target lacks them
        (the interval's lower bound: records written after that observation cannot be counted)."""
        return sum(p.unreplicated for p in self.partitions)

    @property
    def rpo_records_upper(self) -> int | None:
        """At most this many records lost; None when unbounded."""
        return self.rpo.records_upper

    @property
    def rpo_seconds(self) -> float | None:
        """At most this span of source writes did not reach the target (None when unbounded)."""
        return self.rpo.seconds_upper

    @property
    def duration_s(self) -> float:
        """How long the command took (its share of the RTO)."""
        return (self.finished_ms - self.started_ms) / 1000

    def groups_held_on_target(self) -> list[str]:
        """Groups left (partly) where they are because they are in use on the target."""
        return sorted(g for g, rows in self.groups.items() if any(r.get("held") for r in rows))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form, with the totals (no NaN: unknown is null)."""
        data = asdict(self)
        seconds = self.rpo_seconds
        data.update(rpo=self.rpo.to_dict(), rpo_records=self.rpo_records, rpo_records_lower=self.rpo_records,
                    rpo_records_upper=self.rpo_records_upper, rpo_seconds=None if seconds is None else round(seconds, 3),
                    duration_s=round(self.duration_s, 3), groups_held_on_target=self.groups_held_on_target())
        return data


def flow_pairs(topology: Topology, flow_name: str, state: StateSnapshot) -> list[TopicPair]:
    """The flow's topic pairs as its progress records know them (works without the source)."""
    flow = topology.flows[flow_name]
    policy = policy_for(flow)
    partitions: dict[str, int] = {}
    for topic, partition in state.progress(flow_name):
        partitions[topic] = max(partitions.get(topic, 0), partition + 1)
    observation = state.source_ends(flow_name)
    for key in observation.ends if observation else {}:
        topic, number = contract.parse_partition_key(key)
        partitions[topic] = max(partitions.get(topic, 0), number + 1)
    return [TopicPair(t, policy.remote_topic(flow.source, t), n) for t, n in sorted(partitions.items())]


def losses(flow_name: str, state: StateSnapshot) -> tuple[int | None, list[PartitionLoss]]:
    """Per partition: last observed source end vs replicated progress (pure)."""
    observation = state.source_ends(flow_name)
    observed_at = observation.at_ms if observation else None
    ends = observation.ends if observation else {}
    records = state.progress_records(flow_name)
    keys = {contract.parse_partition_key(k) for k in ends} | set(records)
    out = []
    for topic, partition in sorted(keys):
        end = ends.get(contract.partition_key(topic, partition))
        record = records.get((topic, partition))
        nxt = record.next if record is not None else 0
        stamp = record.last_timestamp if record is not None and record.last_timestamp >= 0 else None
        missing = max(0, end - nxt) if end is not None else 0
        past = max(0, nxt - end) if end is not None else 0
        out.append(PartitionLoss(topic, partition, end, nxt, missing, past, stamp))
    return observed_at, out


def failover(
    topology: Topology,
    flow_name: str,
    *,
    promote: bool = False,
    timeout_s: float = 120.0,
    probe_timeout_s: float = 5.0,
    overwrite_groups: bool = False,
    dry_run: bool = False,
    move_groups: bool = True,
    force: bool = False,
    stores: StateStores | None = None,
) -> FailoverReport:
    """Fail the flow over to its target (``promote``: only once fully caught up, RPO 0).

    The source is probed once, in parallel with the work on the target, for at most
    ``probe_timeout_s`` (a dead site answers at once). When it does not answer from here but the
    flow's mirror still reaches it (:func:`~geokafka.failover.vantage.mirror_still_reaches`), this
    is a partition, not a lost site: refused unless ``force``. ``overwrite_groups`` also moves target
    groups that consumers on the target moved. ``dry_run`` decides and reports everything and
    changes nothing. ``move_groups=False`` leaves consumer groups to the caller (failback). ``stores``: the
    caller's state stores (stores of its own otherwise).
    """
    with using(stores) as own:
        return _failover(topology, flow_name, promote, timeout_s, probe_timeout_s, overwrite_groups, dry_run,
                         move_groups, force, own)


def _failover(topology: Topology, flow_name: str, promote: bool, timeout_s: float, probe_timeout_s: float,
              overwrite_groups: bool, dry_run: bool, move_groups: bool, force: bool,
              stores: StateStores) -> FailoverReport:
    flow = topology.flow(flow_name)
    target = connection(topology, flow.target)
    report = FailoverReport(flow_name, "promote" if promote else "failover", flow.source, flow.target,
                            int(time.time() * 1000), dry_run=dry_run)
    source_admin = ClusterAdmin(connection(topology, flow.source), timeout_s=probe_timeout_s)
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="probe") as pool:
        probe = pool.submit(source_admin.probe, probe_timeout_s)
        target_admin = ClusterAdmin(target)
        target_admin.check_reachable()
        store = stores.of(target)
        state = store.read()
        if state.role(flow_name) == Role.FAILED_OVER:
            raise AlreadyFailedOverError(f"flow {flow_name} is already failed over to {flow.target}")
        if promote:
            if not probe.result():
                raise ClusterUnreachableError(
                    f"promote needs the source {flow.source} reachable; it is not: use `geokafka failover {flow_name}`"
                )
            source_admin.timeout_s = 15.0
            state = _promote_preparation(topology, flow_name, source_admin, store, timeout_s, report)
        elif not force and not probe.result():
            seen = mirror_still_reaches(store.read, flow_name)
            if seen is not None:
                refusal = (f"{seen.describe(flow.source)} (its heartbeat {seen.heartbeat_age_s or 0:.1f} s old) while "
                           f"{flow.source} does not answer from here: this looks like a partition between here and "
                           f"{flow.source}, not a lost site; --force to fail over anyway")
                if not dry_run:
                    raise SourceStillReachedError(f"flow {flow_name}: {refusal}")
                report.notes.append(f"would refuse: {refusal}")
        _open_local_topics(target_admin, flow_pairs(topology, flow_name, state), report, dry_run)
        if not dry_run:  # from here on nothing more lands on the target from this flow
            store.set_role(flow_name, Role.FAILED_OVER, kind=report.kind)
            state = store.read()  # a generation recorded since the first read (a mirror that just started)
            fence(target, recorded_writers(flow_name, state.generation(flow_name), flow_pairs(topology, flow_name, state)))
            state = store.read_settled()
        else:
            # the preview reads what the run would: to the end of every transaction open now (the run's fence
            # ends the flow's own at once), not only to the first of them
            state = store.read_settled()
        report.source_reachable = probe.result()
        probed_at_ms = int(time.time() * 1000)
        report.mirror_view = mirror_view(state, flow_name, probed_at_ms).to_dict()
    report.observed_at_ms, report.partitions = losses(flow_name, state)
    if promote:
        report.rpo = RpoInterval.exact(0, 0.0)  # caught up before the role changed: nothing to lose
    else:
        report.rpo = rpo_interval(state.source_ends(flow_name), state.progress_records(flow_name),
                                  report.started_ms, gone_at_ms=None if report.source_reachable else probed_at_ms)
        report.observation_age_s = report.rpo.observation_age_s
        if report.source_reachable:
            report.notes.append("the source still answers: records its producers write from now on stay there; "
                                f"`geokafka reconcile {flow_name}` lists them")
        else:
            report.notes.append(f"the exact loss: `geokafka reconcile {flow_name}` once {flow.source} answers again")
    if move_groups and ("group-offsets" in flow.sync or flow.groups):
        report.groups = _move_groups(topology, flow_name, store, report, overwrite_groups, dry_run)
    report.finished_ms = int(time.time() * 1000)
    if not dry_run:
        store.write(FailoverRecord(flow_name, report.to_dict()))
        # groups_moved: clients that follow the flow (geokafka.client) resume at the target from here on
        store.set_role(flow_name, Role.FAILED_OVER, kind=report.kind, rpo=report.rpo.to_dict(), groups_moved=True)
    return report


def _open_local_topics(target: ClusterAdmin, pairs: list[TopicPair], report: FailoverReport, dry_run: bool) -> None:
    """With a renaming policy the target holds the source's topics under other names (``nyc.orders``); producers that
    move to the target write to the topics' own names there (``orders``): create those that do not exist yet, like
    their replicas (partitions, replication factor, configs), before the role changes and clients move."""
    renamed = [p for p in pairs if p.target != p.source]
    if not renamed:
        return
    existing = target.topic_partitions()
    missing = [p for p in renamed if p.source not in existing and p.target in existing]
    for pair in missing:
        if dry_run:
            report.notes.append(f"would create {pair.source} on {report.target} like {pair.target}, for producers")
            continue
        replica = target.describe_topic(pair.target)
        target.create_topic(pair.source, replica.partitions, replica.replication_factor, replica.configs)
        report.notes.append(f"created {pair.source} on {report.target} ({replica.partitions} partitions, like "
                            f"{pair.target}): producers that move write there")


def _promote_preparation(topology: Topology, flow_name: str, source_admin: ClusterAdmin, store: StateStore,
                         timeout_s: float, report: FailoverReport) -> StateSnapshot:
    """Wait until caught up and sync configs and ACLs a last time (a dry run only looks, once)."""
    flow = topology.flows[flow_name]
    target = connection(topology, flow.target)
    if report.dry_run:
        state = store.read()
        behind = _behind(topology, flow_name, source_admin, state)
        report.notes.append("would wait until caught up: " + (", ".join(behind[:5]) if behind else "caught up now"))
        report.notes.append("would sync topic configs and ACLs a last time, then fail over with RPO 0")
        return state
    state = _wait_caught_up(topology, flow_name, source_admin, store, timeout_s)
    target_admin = ClusterAdmin(target)
    pairs = flow_pairs(topology, flow_name, state)
    if "configs" in flow.sync:
        sync_topic_configs(source_admin, target_admin, pairs, flow.config_exclude)
    if "acls" in flow.sync:
        policy = policy_for(flow)
        sync_topic_acls(source_admin, target_admin, [p.source for p in pairs],
                        lambda name: policy.remote_topic(flow.source, name))
    return state


def _move_groups(topology: Topology, flow_name: str, store: StateStore, report: FailoverReport, overwrite: bool,
                 dry_run: bool) -> dict[str, list[dict[str, Any]]]:
    from geokafka.control.offsets import sync_group_offsets

    sync = sync_group_offsets(topology, flow_name, clamp_to_end=True, fallback_to_checkpoints=True,
                              source_reachable=report.source_reachable, overwrite=overwrite, dry_run=dry_run,
                              store=store)
    if sync.offsets_from == "checkpoint":
        report.notes.append("source unreachable: group positions come from the last checkpoint on the target")
    groups: dict[str, list[dict[str, Any]]] = {}
    for action in sync.actions:
        groups.setdefault(action.group, []).append({
            "topic": action.target_topic, "partition": action.partition, "source_offset": action.source_offset,
            "resume_at": action.target_offset if action.action != "skip" else action.previous_offset,
            "action": action.action, "reason": action.reason, "held": action.held,
        })
    held = sorted({a.group for a in sync.held_on_target()})
    if held:
        report.notes.append(
            f"groups in use on {report.target} were left where they are: {', '.join(held)} "
            "(run again with --overwrite-target-offsets to move them to their source position)")
    return groups


def _wait_caught_up(topology: Topology, flow_name: str, source: ClusterAdmin, store: StateStore,
                    timeout_s: float) -> StateSnapshot:
    """Wait until the flow's progress covers every committed record on the source."""
    deadline = time.monotonic() + timeout_s
    while True:
        state = store.read()
        behind = _behind(topology, flow_name, source, state)
        if not behind:
            return state
        if time.monotonic() > deadline:
            heartbeat = state.heartbeat(flow_name)
            running = heartbeat is not None and heartbeat.state == FlowState.RUNNING
            hint = "" if running else f"; is `geokafka mirror {flow_name}` running?"
            raise FlowStateError(
                f"flow {flow_name} did not catch up within {timeout_s:.0f}s: {', '.join(behind[:5])}{hint}"
            )
        time.sleep(1.0)


def _behind(topology: Topology, flow_name: str, source: ClusterAdmin, state: StateSnapshot) -> list[str]:
    """Source partitions with committed records the flow has not replicated yet."""
    flow = topology.flows[flow_name]
    progress = state.progress(flow_name)
    partitions = source.topic_partitions()
    behind = []
    for topic in select_topics(partitions, flow):
        for p, (_, end) in source.watermarks(topic, partitions[topic]).items():
            nxt = progress.get((topic, p), 0)
            if nxt < end and _has_committed_record(source, topic, p, nxt):
                behind.append(f"{topic}/{p} ({end - nxt} behind)")
    return behind


def _has_committed_record(source: ClusterAdmin, topic: str, partition: int, offset: int) -> bool:
    """True if a read_committed consumer finds a record at or after ``offset`` (markers don't count)."""
    from confluent_kafka import TopicPartition

    consumer = source.consumer(**{"enable.partition.eof": True})
    try:
        consumer.assign([TopicPartition(topic, partition, offset)])
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            msg = consumer.poll(1.0)
            if msg is None:
                continue
            return msg.error() is None
        return True
    finally:
        consumer.close()
