"""`geokafka where FLOW`: where the flow's applications should connect now."""

from __future__ import annotations

from typing import Any

import click
from rich.console import Group
from rich.table import Table
from rich.text import Text

from geokafka.cli.context import CliContext, pass_ctx
from geokafka.client import where as where_now
from geokafka.control.state_records import Role

_JSON_HELP = "machine-readable output on stdout (same as the global --json)"


@click.command()
@click.argument("flow")
@click.option("-t", "--topic", "topics", multiple=True,
              help="a topic, named as on the flow's source; repeatable  [default: the topics the flow replicated]")
@click.option("--timeout", "timeout_s", default=10.0, type=click.FloatRange(min=0.5),
              help="seconds to wait for the target's state topic")
@click.option("--json", "json_output", is_flag=True, help=_JSON_HELP)
@pass_ctx
def where(ctx: CliContext, flow: str, topics: tuple[str, ...], timeout_s: float, json_output: bool) -> None:
    """The cluster FLOW's applications use now, its bootstrap, since when, and the topic names to consume and
    produce there.

    Read from the flow's target only (its role record in __geokafka_state): the answer does not
    need the source, so it comes as fast when the source site is gone. Before a failover and after
    a failback the active cluster is the source; after failover or promote, the target, where
    consumers read the replica and the topic's own name (prefix naming) and producers write the
    topic's own name. The dashboard serves the same JSON at /api/flows/FLOW. Changes nothing.
    """
    ctx.json_output = ctx.json_output or json_output
    answer = where_now(ctx.topology, flow, topics, timeout_s=timeout_s)
    ctx.emit(answer, _render(answer))


def _render(answer: dict[str, Any]) -> Group:
    state = f"{answer['role']}{' (' + answer['kind'] + ')' if answer['kind'] else ''}"
    if answer["since"]:
        state += f" since {answer['since']}"
    if answer["role"] == Role.FAILED_OVER and not answer["settled"]:
        state += ", consumer groups being moved"
    table = Table("TOPIC", "CONSUME", "PRODUCE")
    for row in answer["topics"]:
        table.add_row(row["topic"], ", ".join(row["consume"]), row["produce"])
    return Group(Text(f"flow {answer['flow']}: {state}\nconnect to {answer['active_cluster']}: {answer['bootstrap']}"),
                 table)


COMMANDS = [where]
