"""`geokafka status` exits non-zero when a flow needs a person (scripts and cron checks rely on it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from geokafka.cli.main import cli
from geokafka.monitoring.status import FlowStatus, StatusReport

TOPOLOGY = """\
clusters:
  east: {bootstrap: 127.0.0.1:1}
  west: {bootstrap: 127.0.0.1:2}
flows:
  f: {source: east, target: west}
"""


@pytest.mark.parametrize(("states", "code"), [
    (["running"], 0), (["running", "stopped", "failed-over", "not-started", "retrying"], 0),
    (["running", "error"], 20), (["down"], 20), (["source-unreachable"], 20), (["state-unavailable"], 20),
])
@pytest.mark.parametrize("as_json", [False, True])
def test_exit_code_follows_the_worst_flow(states: list[str], code: int, as_json: bool, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "geokafka.yaml"
    path.write_text(TOPOLOGY, encoding="utf-8")

    def report(*_: Any, **__: Any) -> StatusReport:
        return StatusReport(0, [FlowStatus(f"f{i}", "east", "west", s, s) for i, s in enumerate(states)])

    monkeypatch.setattr("geokafka.cli.status_cmd.collect_status", report)
    args = ["-f", str(path), "status", "--sample", "0"] + (["--json"] if as_json else [])
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == code, result.output
    assert result.output  # the report is printed either way
