"""--log-level: geokafka's own log lines on stderr from the chosen level on, secrets redacted."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from geokafka.cli.main import cli

TOPOLOGY = "clusters:\n  east: {bootstrap: 127.0.0.1:1}\n"


@click.command("log-probe", hidden=True)
def _log_probe() -> None:
    log = logging.getLogger("geokafka.probe")
    log.info("an info line")
    log.warning("a warning line")
    click.echo("done")


@pytest.fixture(autouse=True)
def probe_command() -> Iterator[None]:
    cli.add_command(_log_probe)
    try:
        yield
    finally:
        cli.commands.pop("log-probe", None)


def test_default_level_shows_warnings_only_and_debug_shows_more(tmp_path: Path) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(TOPOLOGY, encoding="utf-8")
    quiet = CliRunner().invoke(cli, ["-f", str(path), "log-probe"])
    assert quiet.exit_code == 0 and "a warning line" in quiet.stderr and "an info line" not in quiet.stderr
    loud = CliRunner().invoke(cli, ["-f", str(path), "--log-level", "info", "log-probe"])
    assert "an info line" in loud.stderr and "WARNING a warning line" in loud.stderr
    assert loud.stderr.count("a warning line") == 1  # one handler, however often the CLI ran in this process
    silent = CliRunner().invoke(cli, ["-f", str(path), "--log-level", "error", "log-probe"])
    assert silent.stderr == "" and silent.stdout == "done\n"
