"""The README's main command: the demo runs end to end and prints what its JSON report says."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]


def test_demo_runs_and_prints_its_own_report(tmp_path):
    out = tmp_path / "reports"
    proc = subprocess.run(
        [sys.executable, "-m", "geokafka", "demo", "--traffic", "8", "--rate", "200", "--out", str(out)],
        capture_output=True, text=True, timeout=840,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    # no client library line reaches the console (librdkafka's look like "%3|1700000000.123|FAIL|rdkafka#...")
    library_lines = [line for line in (proc.stdout + proc.stderr).splitlines()
                     if re.match(r"^%\d\|", line) or "rdkafka#" in line or re.search(r"Connect to \S+ failed", line)
                     or "incubator modules" in line or "Setting default log level" in line]  # the Spark JVM's
    assert library_lines == [], library_lines[:5]
    report = json.loads(next(out.glob("demo-*.json")).read_text())
    assert next(out.glob("demo-*.png")).stat().st_size > 0
    text = proc.stdout

    def shown(label: str) -> str:
        line = next(line for line in text.splitlines() if label in line)
        return line.split("│")[2].strip() if "│" in line else line.rsplit("  ", 1)[-1].strip()

    assert shown("RPO, measured") == f"{report['rpo_records_measured']:,} records"
    assert shown("RTO (site killed") == f"{report['rto_seconds']:.1f} s"
    assert shown("duplicates seen by the group") == f"{report['duplicates']:,}"
    assert report["produced_acked"] > 0 and report["replicated"] > 0
    assert report["rpo_records_reported"] <= report["rpo_records_measured"]
    assert report["missing_for_consumer"] == 0
    # the application was never restarted: its group and its producer followed the failover to atl on their own
    assert report["switch_seconds"] is not None and report["acked_at_target"] > 0 and report["consumed_new_at_target"] > 0
    # nyc came back: reconcile counted at least every acked order that never reached atl, and no late write
    assert report["stranded_counted"] >= report["rpo_records_measured"] and report["late_writes_counted"] == 0
    assert shown("stranded at nyc, counted by `reconcile`") == f"{report['stranded_counted']:,} records"
    assert re.search(r"report: .*demo-\d+-\d+\.json", text)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def test_a_killed_demo_stops_its_clusters(tmp_path):
    """`kill <demo pid>` (SIGTERM) must not leave the demo's brokers running."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "geokafka", "demo", "--traffic", "60", "--out", str(tmp_path / "reports")],
        cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        pids: list[int] = []
        deadline = time.monotonic() + 180
        while len(pids) < 4 and time.monotonic() < deadline:  # every broker of both sites started
            time.sleep(0.5)
            pids = [int(text.split()[0]) for p in (tmp_path / ".geokafka" / "demo").glob("clusters/*/node-*/kafka.pid")
                    if (text := p.read_text().strip())]
        assert len(pids) == 4 and all(_alive(pid) for pid in pids)
        proc.terminate()
        assert proc.wait(120) == 130
    finally:
        proc.kill()
    assert [pid for pid in pids if _alive(pid)] == []
