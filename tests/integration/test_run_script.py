"""`./run geokafka` and `./run demo` work from any directory, with paths meant from there.

No broker, no Spark: only the script's environment checks (done once, then skipped) and
commands that read files. `./run demo` itself starts clusters; it runs on an embedded
topology, so only its start from elsewhere is checked here (its --help).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "GEOKAFKA_FILE"}
    return subprocess.run([str(ROOT / "run"), *args], cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_a_relative_f_is_read_where_the_user_stands(tmp_path: Path) -> None:
    (tmp_path / "sites").mkdir()
    (tmp_path / "sites" / "mine.yaml").write_text("clusters:\n  solo: {bootstrap: '127.0.0.1:9092'}\n")
    proc = run(tmp_path, "geokafka", "-f", "sites/mine.yaml", "validate")
    assert proc.returncode == 0, proc.stderr
    assert "sites/mine.yaml: valid (1 clusters, 0 flows)" in proc.stdout


def test_without_f_the_repository_example_is_not_used(tmp_path: Path) -> None:
    proc = run(tmp_path, "geokafka", "validate")
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1] == (
        f"TopologyError: {tmp_path / 'geokafka.yaml'}: no topology file here: without -f FILE (or GEOKAFKA_FILE) "
        "geokafka reads geokafka.yaml in the current directory")


def test_from_the_repository_root_its_example_is_read() -> None:
    proc = run(ROOT, "geokafka", "validate")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("geokafka.yaml: valid")


def test_demo_starts_from_elsewhere(tmp_path: Path) -> None:
    proc = run(tmp_path, "demo", "--help")
    assert proc.returncode == 0, proc.stderr
    assert "embedded topology" in proc.stdout
