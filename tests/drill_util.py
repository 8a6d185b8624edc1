"""Stretch drills in tests: a drill that disagrees with its plan fails with the evidence in the message.

A drill's cluster lives in the test's tmp_path and is gone once pytest prunes old runs (and with
a CI machine): the failure message carries what is needed to find the cause later, namely the
drill's recovery steps, the partitions it measured, and each node's last warnings and errors.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from geokafka.drills.stretch import StretchDrillOptions, StretchDrillResult, run_stretch_drill
from geokafka.errors import DrillFailedError

LOG_LINES = 12


def run_drill_explained(opts: StretchDrillOptions) -> StretchDrillResult:
    """:func:`run_stretch_drill`; on a disagreement, fail with the report's evidence and the nodes' logs."""
    try:
        return run_stretch_drill(opts)
    except DrillFailedError as exc:
        pytest.fail(f"{exc}\n{evidence(opts)}", pytrace=False)


def evidence(opts: StretchDrillOptions) -> str:
    """The newest report's recovery steps and measured partitions, and every node's last WARN/ERROR lines."""
    out: list[str] = []
    reports = sorted(Path(opts.out_dir).glob("stretch-drill-*.json"), key=lambda p: p.stat().st_mtime)
    if reports:
        report = json.loads(reports[-1].read_text())
        out.append(f"recovery: {json.dumps(report.get('recovery'))}")
        out.append(f"send failures: {json.dumps(report.get('measured', {}).get('send_failures'))}")
        for p in report.get("measured", {}).get("partitions", []):
            out.append(f"partition: {json.dumps(p)}")
    for log in sorted(Path(opts.home).rglob("*.log")):
        if log.name not in ("server.log", "controller.log", "state-change.log", "stdout.log"):
            continue
        lines = [line for line in log.read_text(errors="replace").splitlines() if " WARN " in line or " ERROR " in line]
        if lines:
            out.append(f"--- {log.relative_to(opts.home)} (last {min(LOG_LINES, len(lines))} of {len(lines)} WARN/ERROR)")
            out.extend(line[:400] for line in lines[-LOG_LINES:])
    return "\n".join(out)
