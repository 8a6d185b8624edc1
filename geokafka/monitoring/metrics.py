"""Prometheus exposition of a status report (text format 0.0.4, as ``/metrics`` serves it).

=========================================== ======= ==========================================
metric                                      type    meaning
=========================================== ======= ==========================================
geokafka_replication_lag_records            gauge   source end - replicated progress (per partition)
geokafka_replication_lag_seconds            gauge   age of the oldest unreplicated record
geokafka_source_end_offset                  gauge   the source partition's end offset
geokafka_replicated_offset                  gauge   next source offset to replicate (progress)
geokafka_replication_lost_records           gauge   deleted at the source before being replicated
geokafka_replicated_records_total           counter records written by the current mirror process
geokafka_replicated_bytes_total             counter bytes written by the current mirror process
geokafka_flow_up                            gauge   1 when the flow's mirror is running, else 0
geokafka_flow_state                         gauge   1 for the flow's current state label
geokafka_flow_source_up                     gauge   1 when the source cluster answers
geokafka_flow_heartbeat_age_seconds         gauge   age of the mirror's last heartbeat
geokafka_flow_rpo_records                   gauge   records a failover would lose now, at most (the interval's
                                                    upper bound; exact while the source answers); after a
                                                    failover: what it lost
geokafka_flow_rpo_seconds                   gauge   span of those writes, at most
geokafka_flow_rpo_records_lower             gauge   records certainly lost (seen by the last observation)
geokafka_flow_rpo_records_upper             gauge   at most this many records (left out when unbounded)
geokafka_flow_rpo_seconds_lower             gauge   span of the lost writes, at least
geokafka_flow_rpo_seconds_upper             gauge   span of the lost writes, at most
geokafka_flow_rpo_exact                     gauge   1 when the RPO is counted, 0 when it is bounded
geokafka_flow_rpo_observation_age_seconds   gauge   age of the mirror's last look at the source the bounds use
geokafka_flow_throughput_records_per_second gauge   replicated records/s over the status window
geokafka_flow_automatic_failover_held       gauge   1 while `guard --sites` holds a lost site's failover for a
                                                    person (RPO over its limit, or no second view), else 0
=========================================== ======= ==========================================

Unknown values are left out rather than reported as 0.
"""

from __future__ import annotations

from collections.abc import Iterator

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from geokafka.control.flow_states import HeadlineState
from geokafka.control.state_records import AutoFailover
from geokafka.guard.summary import GuardStatus
from geokafka.monitoring.status import StatusReport

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"
STATES = tuple(HeadlineState)
_PART = ["flow", "topic", "partition"]


class _ReportCollector:
    """A prometheus_client collector over one fixed report."""

    def __init__(self, report: StatusReport) -> None:
        self.report = report

    def collect(self) -> Iterator[Metric]:
        lag = GaugeMetricFamily("geokafka_replication_lag_records",
                                "Source end offset minus replicated progress, per source partition", labels=_PART)
        lag_s = GaugeMetricFamily("geokafka_replication_lag_seconds",
                                  "Age of the oldest unreplicated record (0 when caught up)", labels=_PART)
        end = GaugeMetricFamily("geokafka_source_end_offset", "End offset of the source partition", labels=_PART)
        done = GaugeMetricFamily("geokafka_replicated_offset", "Next source offset to replicate", labels=_PART)
        lost = GaugeMetricFamily("geokafka_replication_lost_records",
                                 "Records deleted at the source (retention, deleteRecords) before they were replicated",
                                 labels=_PART)
        written = CounterMetricFamily("geokafka_replicated_records",
                                      "Records written to the target by the flow's current mirror process",
                                      labels=["flow"])
        nbytes = CounterMetricFamily("geokafka_replicated_bytes",
                                     "Bytes written to the target by the flow's current mirror process",
                                     labels=["flow"])
        up = GaugeMetricFamily("geokafka_flow_up", "1 when the flow's mirror is running, else 0", labels=["flow"])
        state = GaugeMetricFamily("geokafka_flow_state", "1 for the flow's current state", labels=["flow", "state"])
        source_up = GaugeMetricFamily("geokafka_flow_source_up", "1 when the flow's source cluster answers",
                                      labels=["flow"])
        age = GaugeMetricFamily("geokafka_flow_heartbeat_age_seconds", "Age of the mirror's last heartbeat",
                                labels=["flow"])
        rpo = GaugeMetricFamily("geokafka_flow_rpo_records",
                                "Records a failover would lose now, at most (after a failover: what it lost)",
                                labels=["flow"])
        rpo_s = GaugeMetricFamily("geokafka_flow_rpo_seconds", "Span of the writes a failover would lose now, at most",
                                  labels=["flow"])
        bounds = {
            name: GaugeMetricFamily(f"geokafka_flow_rpo_{name}", text, labels=["flow"]) for name, text in (
                ("records_lower", "Records a failover would certainly lose (seen by the last observation)"),
                ("records_upper", "Records a failover would lose at most (left out when unbounded)"),
                ("seconds_lower", "Span of the writes a failover would lose, at least"),
                ("seconds_upper", "Span of the writes a failover would lose, at most"),
                ("exact", "1 when the RPO is counted exactly, 0 when it is bounded"),
                ("observation_age_seconds", "Age of the mirror's last look at the source the RPO bounds use"),
            )
        }
        held = GaugeMetricFamily("geokafka_flow_automatic_failover_held",
                                 "1 while the site guard holds the failover of the flow's lost source for a person",
                                 labels=["flow"])
        rate = GaugeMetricFamily("geokafka_flow_throughput_records_per_second",
                                 "Replicated records per second over the status window", labels=["flow"])
        for flow in self.report.flows:
            for part in flow.partitions:
                labels = [flow.name, part.topic, str(part.partition)]
                for family, value in ((lag, part.lag_records), (lag_s, part.lag_seconds),
                                      (end, part.source_end), (done, part.replicated), (lost, part.lost_records)):
                    if value is not None:
                        family.add_metric(labels, float(value))
            if flow.written is not None:
                written.add_metric([flow.name], float(flow.written))
            if flow.bytes is not None:
                nbytes.add_metric([flow.name], float(flow.bytes))
            up.add_metric([flow.name], 1.0 if flow.state == HeadlineState.RUNNING else 0.0)
            for name in sorted(set(STATES) | {flow.state}):
                state.add_metric([flow.name, name], 1.0 if flow.state == name else 0.0)
            source_up.add_metric([flow.name], 1.0 if flow.source_reachable else 0.0)
            if flow.heartbeat_age_s is not None:
                age.add_metric([flow.name], flow.heartbeat_age_s)
            figures = flow.rpo
            for family, value in ((rpo, figures.records_upper), (rpo_s, figures.seconds_upper),
                                  (bounds["records_lower"], figures.records_lower),
                                  (bounds["records_upper"], figures.records_upper),
                                  (bounds["seconds_lower"], figures.seconds_lower),
                                  (bounds["seconds_upper"], figures.seconds_upper),
                                  (bounds["observation_age_seconds"], figures.observation_age_s)):
                if value is not None:
                    family.add_metric([flow.name], float(value))
            if figures.records_lower is not None:
                bounds["exact"].add_metric([flow.name], 1.0 if figures.exact else 0.0)
            if flow.throughput is not None:
                rate.add_metric([flow.name], flow.throughput.records_per_s)
            holding = flow.automatic is not None and flow.automatic.get("state") == AutoFailover.HELD and flow.failover is None
            held.add_metric([flow.name], 1.0 if holding else 0.0)
        yield from (lag, lag_s, end, done, lost, written, nbytes, up, state, source_up, age, rpo, rpo_s, rate, held)
        yield from bounds.values()
        if self.report.guard is not None:
            yield from _guard_metrics(self.report.guard)


def _guard_metrics(guard: GuardStatus) -> Iterator[Metric]:
    lowered = GaugeMetricFamily("geokafka_guard_min_isr_lowered",
                                "min.insync.replicas the guard set on a topic and has not restored yet",
                                labels=["cluster", "topic", "dc"])
    for low in guard.lowered:
        lowered.add_metric([guard.cluster, low["topic"], low["dc"]], float(low["lowered"]))
    actions = CounterMetricFamily("geokafka_guard_actions", "Guard journal records of actions, by kind and outcome",
                                  labels=["cluster", "kind", "status"])
    for key, count in guard.actions.items():
        kind, _, status = key.partition("/")
        actions.add_metric([guard.cluster, kind, status], float(count))
    up = GaugeMetricFamily("geokafka_guard_journal_readable", "1 when the guard's journal could be read",
                           labels=["cluster"])
    up.add_metric([guard.cluster], 0.0 if guard.error else 1.0)
    yield from (lowered, actions, up)


def render_metrics(report: StatusReport | None) -> str:
    """The report in Prometheus text format (only HELP/TYPE lines when there is no report yet)."""
    registry = CollectorRegistry(auto_describe=False)
    if report is not None:
        registry.register(_ReportCollector(report))  # type: ignore[arg-type]
    return generate_latest(registry).decode()
