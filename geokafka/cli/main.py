"""The `geokafka` command: wires subcommands to the library; computes nothing itself."""

from __future__ import annotations

import logging
import os
import sys
from pathlib import Path

import click

from geokafka import __version__
from geokafka.cli.context import CliContext
from geokafka.errors import GeokafkaError
from geokafka.secrets import redact
from geokafka.topology import DEFAULT_FILE


class _Group(click.Group):
    """Turns every :class:`GeokafkaError` into one line on stderr and its exit code (secrets redacted)."""

    def invoke(self, ctx: click.Context) -> object:
        try:
            return super().invoke(ctx)
        except GeokafkaError as exc:
            click.echo(redact(f"{type(exc).__name__.rstrip('_')}: {exc}"), err=True)
            ctx.exit(exc.exit_code)
        except KeyboardInterrupt:
            click.echo("interrupted", err=True)
            ctx.exit(130)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except Exception as exc:
            if os.environ.get("GEOKAFKA_DEBUG"):
                raise
            click.echo(redact(f"InternalError: {type(exc).__name__}: {exc} (set GEOKAFKA_DEBUG=1 for a traceback)"),
                       err=True)
            ctx.exit(1)
        return None


@click.group(cls=_Group, context_settings={"help_option_names": ["-h", "--help"], "show_default": True})
@click.option(
    "-f", "--file", "file", type=click.Path(path_type=Path), default=None, envvar="GEOKAFKA_FILE",
    help="topology file, relative to the current directory  [default: ./geokafka.yaml, which must exist]",
)
@click.option("--json", "json_output", is_flag=True, help="machine-readable output on stdout")
@click.version_option(__version__, "--version", prog_name="geokafka", message="%(prog)s %(version)s",
                      help="print geokafka's version and exit")
@click.option("--log-level", type=click.Choice(["error", "warning", "info", "debug"]), default="warning",
              envvar="GEOKAFKA_LOG_LEVEL", help="geokafka's own log lines on stderr from this level on")
@click.pass_context
def cli(ctx: click.Context, file: Path | None, json_output: bool, log_level: str) -> None:
    """geokafka: run Apache Kafka across data centers.

    Replicates topics between clusters on Spark, moves consumer groups exactly on failover,
    plans stretched clusters and drills disasters, all from one topology file.
    """
    configure_logging(log_level)
    ctx.obj = CliContext(file=file if file is not None else DEFAULT_FILE, json_output=json_output,
                         file_given=file is not None)


class _Redacting(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        return redact(super().format(record))


def configure_logging(level: str) -> None:
    """geokafka's loggers write ``HH:MM:SS LEVEL message`` to stderr from ``level`` on (secrets redacted);
    client libraries' own lines stay silent (see ``geokafka.librdkafka``)."""
    root = logging.getLogger("geokafka")
    for handler in [h for h in root.handlers if getattr(h, "geokafka_cli", False)]:
        root.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_Redacting("%(asctime)s %(levelname)s %(message)s", "%H:%M:%S"))
    handler.geokafka_cli = True  # type: ignore[attr-defined]
    root.addHandler(handler)
    root.setLevel(level.upper())
    # Python's root logger gets a handler that writes nothing: a library's module-level
    # logging.exception() (py4j's, when Spark's JVM goes away under a call) would otherwise
    # install a console handler on it (basicConfig), print its traceback, and print every
    # geokafka line a second time from then on.
    python_root = logging.getLogger()
    if not any(isinstance(h, logging.NullHandler) for h in python_root.handlers):
        python_root.addHandler(logging.NullHandler())


def _register() -> None:
    from geokafka.cli import (
        bench_cmd,
        check_cmd,
        clusters_cmd,
        demo_cmd,
        drill_cmd,
        failover_cmd,
        guard_cmd,
        jars_cmd,
        mirror_cmd,
        offsets_cmd,
        plan_cmd,
        reconcile_cmd,
        status_cmd,
        topology_cmd,
        where_cmd,
    )

    for module in (demo_cmd, bench_cmd, clusters_cmd, topology_cmd, mirror_cmd, failover_cmd, reconcile_cmd,
                   offsets_cmd, plan_cmd, drill_cmd, guard_cmd, status_cmd, check_cmd, where_cmd, jars_cmd):
        for command in module.COMMANDS:
            cli.add_command(command)


def _json_after_command(ctx: click.Context, _param: click.Parameter, value: bool) -> None:
    found = ctx.find_object(CliContext)
    if value and found is not None:
        found.json_output = True


def _accept_json_after_every_command(group: click.Group) -> None:
    """``geokafka status --json`` as well as ``geokafka --json status``: every command (and sub-command) takes the
    global flag after its name too, unless it has a ``--json`` of its own."""
    for command in group.commands.values():
        if isinstance(command, click.Group):
            _accept_json_after_every_command(command)
        elif not any("--json" in getattr(p, "opts", ()) for p in command.params):
            command.params.append(click.Option(["--json"], is_flag=True, expose_value=False, is_eager=True,
                                               callback=_json_after_command,
                                               help="machine-readable output on stdout (same as the global --json)"))


_register()
_accept_json_after_every_command(cli)


def main() -> None:
    """Console entry point."""
    sys.exit(cli.main(standalone_mode=True))
