"""`geokafka check FLOW`: does each cluster grant what the flow needs?"""

from __future__ import annotations

import click
from rich.table import Table

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.control.permissions import CheckReport, acl_command
from geokafka.errors import AuthError


def render(report: CheckReport) -> Table:
    """One row per permission: OK, or MISSING/UNKNOWN with the ACL that grants it."""
    table = Table("cluster", "resource", "operation", "status", "acl / detail",
                  title=f"permissions of flow {report.flow}: {report.source} -> {report.target}")
    for r in report.results:
        p = r.permission
        resource = f"{p.resource_type}:{p.name}{'*' if p.prefixed else ''}"
        fix = r.detail if r.status == "OK" else f"{acl_command(p)}  ({r.detail})" if r.detail else acl_command(p)
        table.add_row(p.cluster, resource, p.operation, r.status, fix)
    return table


@click.command()
@click.argument("flow")
@click.option("--timeout", "timeout_s", default=10.0, type=click.FloatRange(min=0.5),
              help="seconds to wait for each Kafka call (and for an unreachable cluster)")
@pass_ctx
def check(ctx: CliContext, flow: str, timeout_s: float) -> None:
    """Verify on the real clusters every permission FLOW needs, and print the ACLs missing.

    \b
    Source: reachable; Describe, Read (and DescribeConfigs) on the selected topics; Describe on
    synced groups. Target: reachable; Create, Describe, Write (AlterConfigs, Alter) on the
    target topics; Write/Describe on transactional ids geokafka-<flow>-*; Create, Describe,
    Read, Write on __geokafka_state; Read/Describe on synced groups. Writes happen only in
    aborted transactions and on a probe topic that is deleted again. Exit 9 when one is missing.
    """
    from geokafka.control.permission_check import check_flow

    report = check_flow(ctx.topology, flow, timeout_s=timeout_s)
    ctx.emit(report.to_dict(), render(report))
    missing = [r for r in report.results if r.status == "MISSING"]
    if missing:
        first = missing[0].permission
        raise AuthError(
            f"flow {flow}: {len(missing)} permission(s) missing, first: {first.operation} on "
            f"{first.resource_type} {first.name} of cluster {first.cluster}"
        )


COMMANDS = [check]
