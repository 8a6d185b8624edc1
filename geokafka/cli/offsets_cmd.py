"""`geokafka offsets translate` and `geokafka reset-offsets`: where consumer groups resume."""

from __future__ import annotations

import click
from rich.table import Table

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.control.offsets import GroupTranslation, ResetReport, reset_offsets_to_datetime, translate_group
from geokafka.control.offsets.by_time import parse_datetime

_JSON_HELP = "machine-readable output on stdout (same as the global --json)"
_TIMEOUT_HELP = "seconds to wait for each Kafka call (and for an unreachable cluster)"


class IsoDatetime(click.ParamType[int, object]):
    """An ISO 8601 datetime, as epoch milliseconds; naive means UTC."""

    name = "ISO-DATETIME"

    def convert(self, value: object, param: click.Parameter | None, ctx: click.Context | None) -> int:
        if isinstance(value, int):
            return value
        try:
            return parse_datetime(str(value))
        except ValueError as exc:
            self.fail(str(exc), param, ctx)


@click.group()
def offsets() -> None:
    """Consumer group offsets across clusters."""


@offsets.command()
@click.argument("flow")
@click.option("-g", "--group", required=True, help="consumer group, as named on the flow's source")
@click.option("--timeout", "timeout_s", default=15.0, type=click.FloatRange(min=0.5), help=_TIMEOUT_HELP)
@click.option("--json", "json_output", is_flag=True, help=_JSON_HELP)
@pass_ctx
def translate(ctx: CliContext, flow: str, group: str, timeout_s: float, json_output: bool) -> None:
    """Where GROUP would resume on FLOW's target, per partition, exactly.

    Reads the group's committed offsets on the source (or, if the source is unreachable, the
    last checkpoint stored on the target) and the gk.src headers of the target topics.
    TARGET-OFFSET is the exact translation; TARGET-GROUP-NOW is what the group has committed on
    the target today (a sync moves it to TARGET-OFFSET unless consumers on the target moved it).
    CAUGHT-UP is "no" while records the group already read are still being replicated.
    Changes nothing.
    """
    ctx.json_output = ctx.json_output or json_output
    result = translate_group(ctx.topology, flow, group, timeout_s=timeout_s)
    ctx.emit(result.to_dict(), _translation_table(result))


def _translation_table(result: GroupTranslation) -> Table:
    title = f"group {result.group}: {result.source} -> {result.target} (flow {result.flow})"
    if result.offsets_from == "checkpoint":
        title += ", source unreachable: offsets from the last checkpoint"
    if not result.synced:
        title += "\n(the flow's groups regexes do not select this group: its offsets are not synced)"
    if result.target_members:
        title += (f"\nthe group has {result.target_members} active member(s) on {result.target} "
                  f"({result.target_state}): a sync or failover leaves its offsets alone")
    table = Table("TOPIC", "PARTITION", "SOURCE-OFFSET", "TARGET-TOPIC", "TARGET-OFFSET", "TARGET-GROUP-NOW",
                  "CAUGHT-UP", title=title)
    for p in result.partitions:
        target = str(p.target_offset) if p.target_offset is not None else f"- ({p.note})"
        now = "-" if p.target_committed is None else str(p.target_committed)
        if p.target_committed is not None and p.target_offset is not None and p.target_committed != p.target_offset:
            now += " (differs)"
        table.add_row(p.source_topic, str(p.partition), str(p.source_offset), p.target_topic, target, now,
                      "yes" if p.caught_up else "no")
    return table


@click.command("reset-offsets")
@click.option("--cluster", required=True, help="cluster of the group (the one you fail over to)")
@click.option("--group", required=True, help="consumer group to move")
@click.option("--topic", "topics", required=True, multiple=True, help="topic (all its partitions); repeatable")
@click.option("--to-datetime", "timestamp_ms", required=True, type=IsoDatetime(),
              help="e.g. 2017-08-22T06:00:33.236 (UTC unless a zone such as Z or +02:00 is given)")
@click.option("--dry-run", is_flag=True, help="show the new offsets, commit nothing (the default)")
@click.option("--execute", is_flag=True, help="commit the new offsets")
@click.option("--timeout", "timeout_s", default=15.0, type=click.FloatRange(min=0.5), help=_TIMEOUT_HELP)
@click.option("--json", "json_output", is_flag=True, help=_JSON_HELP)
@pass_ctx
def reset_offsets(
    ctx: CliContext, cluster: str, group: str, topics: tuple[str, ...], timestamp_ms: int, dry_run: bool,
    execute: bool, timeout_s: float, json_output: bool,
) -> None:
    """Time-based failover: move GROUP to the first record at or after a time.

    Previews unless given --execute, as `kafka-consumer-groups --reset-offsets` does. With
    --execute it overwrites GROUP's committed offsets on CLUSTER; the group must have no active
    members. Partitions with no record at or after the time go to their log end offset. Same
    offsets as `kafka-consumer-groups --reset-offsets --to-datetime`.
    """
    if dry_run and execute:
        raise click.UsageError("give --dry-run or --execute, not both")
    ctx.json_output = ctx.json_output or json_output
    report = reset_offsets_to_datetime(
        ctx.topology, cluster, group, list(topics), timestamp_ms, dry_run=not execute, timeout_s=timeout_s
    )
    ctx.emit(report.to_dict(), _reset_table(report))


def _reset_table(report: ResetReport) -> Table:
    verb = "would reset (preview: add --execute to apply)" if report.dry_run else "reset"
    title = f"{verb} group {report.group} on {report.cluster} to {report.datetime_utc}"
    if report.dry_run and report.group_active:
        title += f"\n(the group is {report.group_state}: a real reset would be refused)"
    table = Table("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET", "PREVIOUS", "FOUND-BY", title=title)
    for p in report.partitions:
        previous = str(p.previous_offset) if p.previous_offset is not None else "-"
        table.add_row(report.group, p.topic, str(p.partition), str(p.new_offset), previous,
                      "time index" if p.by_time else "log end (no record at or after the time)")
    return table


COMMANDS = [offsets, reset_offsets]
