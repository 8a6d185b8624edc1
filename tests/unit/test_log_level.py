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


def test_a_librarys_module_level_error_log_prints_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    """py4j logs with logging.exception() on Python's root logger when Spark's JVM goes away under
    a call: that must neither print its traceback nor make every later geokafka line print twice."""
    from geokafka.cli.main import configure_logging

    root = logging.getLogger()
    before = list(root.handlers)
    root.handlers[:] = []  # as in the CLI's process (pytest puts its own handlers there)
    try:
        configure_logging("info")
        try:
            raise ConnectionResetError(104, "Connection reset by peer")
        except ConnectionResetError:
            logging.exception("Exception while sending command.")
        logging.getLogger("geokafka.probe").info("said once")
        err = capsys.readouterr().err
        assert "Traceback" not in err and "Exception while sending command" not in err
        assert err.count("said once") == 1
    finally:
        root.handlers[:] = before
        for handler in [h for h in logging.getLogger("geokafka").handlers if getattr(h, "geokafka_cli", False)]:
            logging.getLogger("geokafka").removeHandler(handler)
