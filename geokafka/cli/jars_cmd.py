"""`geokafka fetch-jars`: the jars local clusters run from (not in the wheel), fetched from Maven Central."""

from __future__ import annotations

import click

from geokafka.artifacts.jars import fetch_jars
from geokafka.cli.context import CliContext, pass_ctx


@click.command("fetch-jars")
@pass_ctx
def fetch_jars_cmd(ctx: CliContext) -> None:
    """Fetch the pinned Kafka jars that `up`, `demo`, `drill` and `bench` run local clusters from.

    Needs Maven (`mvn`) and Maven Central; the jars are cached in ~/.cache/geokafka/jars
    ($GEOKAFKA_CACHE/jars). `mirror`, `status`, `failover` and the other commands that talk to your
    own clusters need none of this: the wheel carries their jars.
    """
    fetched = {name: str(path) for name, path in fetch_jars().items()}
    ctx.emit(fetched, "\n".join(f"{name}: {path}" for name, path in fetched.items()))


COMMANDS = [fetch_jars_cmd]
