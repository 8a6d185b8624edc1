"""Processes tracked by PID files: start, stop together, and the grace given to a lost quorum.

Real (tiny Python) processes, no Kafka: what `geokafka down` relies on to stop every broker.
"""

from __future__ import annotations

import socket
import sys
import time
from pathlib import Path

import pytest

from geokafka.infra.local_cluster import listening_ports, port_is_free
from geokafka.infra.processes import running_pid, start_process, stop_process, stop_processes

pytestmark = pytest.mark.integration

SLEEPER = "import time; time.sleep(120)"
STUBBORN = (  # ignores SIGTERM, like a KRaft voter that waits for a quorum that has gone
    "import signal, sys, time, pathlib; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
    "pathlib.Path(sys.argv[2]).touch(); time.sleep(120)"
)


def start(tmp_path: Path, name: str, code: str = SLEEPER) -> Path:
    pid_file = tmp_path / f"{name}.pid"
    marker = f"geokafka-test-{name}-{tmp_path.name}"
    ready = tmp_path / f"{name}.ready"
    cmd = [sys.executable, "-c", code, marker, str(ready)]
    start_process(cmd, pid_file, tmp_path / f"{name}.log", marker, tmp_path)
    if code is STUBBORN:
        deadline = time.monotonic() + 30
        while not ready.exists():
            assert time.monotonic() < deadline, "stubborn process never got ready"
            time.sleep(0.02)
    return pid_file


def test_a_process_is_running_as_soon_as_it_is_started(tmp_path: Path) -> None:
    # Right after exec the kernel shows an empty command line for a moment; a check made then
    # called a starting broker dead ("exited during start-up") and orphaned it.
    pid_files: list[Path] = []
    try:
        for i in range(20):
            pid_files.append(start(tmp_path, f"p{i}"))
            assert running_pid(pid_files[-1]) is not None
    finally:
        assert stop_processes(pid_files, timeout_s=10) == len(pid_files)


def test_a_pid_file_is_only_trusted_with_its_marker(tmp_path: Path) -> None:
    pid_file = start(tmp_path, "real")
    try:
        pid = running_pid(pid_file)
        assert pid is not None
        forged = tmp_path / "forged.pid"
        forged.write_text(f"{pid}\nsome-other-marker\n")
        assert running_pid(forged) is None  # a reused PID is never signalled
        assert not stop_process(forged)
        assert running_pid(pid_file) == pid
    finally:
        assert stop_process(pid_file)
    assert running_pid(pid_file) is None
    assert not pid_file.exists()


def test_stop_processes_signals_all_at_once(tmp_path: Path) -> None:
    pid_files = [start(tmp_path, f"s{i}") for i in range(3)]
    started = time.monotonic()
    assert stop_processes(pid_files, timeout_s=30) == 3
    assert time.monotonic() - started < 10
    assert all(running_pid(p) is None and not p.exists() for p in pid_files)
    assert stop_processes(pid_files) == 0  # stopping again is harmless


def test_the_last_of_a_lost_quorum_is_killed_after_the_grace(tmp_path: Path) -> None:
    pid_files = [start(tmp_path, "v1"), start(tmp_path, "v2"), start(tmp_path, "v3", STUBBORN)]
    started = time.monotonic()
    assert stop_processes(pid_files, timeout_s=60, quorum=2, grace_s=1.0) == 3
    took = time.monotonic() - started
    assert took < 15, f"waited {took:.1f}s instead of the 1 s grace"
    assert all(running_pid(p) is None for p in pid_files)


def test_without_quorum_a_stubborn_process_is_killed_at_the_timeout(tmp_path: Path) -> None:
    pid_file = start(tmp_path, "alone", STUBBORN)
    started = time.monotonic()
    assert stop_process(pid_file, timeout_s=2.0)
    assert 2.0 <= time.monotonic() - started < 15
    assert running_pid(pid_file) is None


def test_listening_ports_and_port_is_free() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as server:
        server.bind(("127.0.0.1", 0))
        port = server.getsockname()[1]
        assert not port_is_free(port)  # bound: `up` must refuse it
        assert port not in (listening_ports() or set())  # bound is not listening
        server.listen(1)
        assert port in (listening_ports() or {port})
    assert port_is_free(port)
