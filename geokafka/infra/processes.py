"""Processes geokafka starts, tracked by PID files and never found by name.

A PID file holds the PID and a marker string that must appear in the process's command line,
so a PID reused by an unrelated process is never signalled.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from geokafka.procfs import stat_fields


def start_process(cmd: list[str], pid_file: Path, log_file: Path, marker: str, cwd: Path) -> int:
    """Start ``cmd`` detached from this session, logging to ``log_file``; record it in ``pid_file``."""
    log_file.parent.mkdir(parents=True, exist_ok=True)
    with open(log_file, "ab") as log:
        proc = subprocess.Popen(
            cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=cwd, start_new_session=True
        )
    pid_file.write_text(f"{proc.pid}\n{marker}\n", encoding="utf-8")
    # Just after exec the kernel shows an empty command line for a moment (longer on a busy
    # machine), and running_pid() would call the new process dead: wait until it shows.
    deadline = time.monotonic() + 10.0
    while proc.poll() is None and marker not in _cmdline(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.01)
    return proc.pid


QUICK_JIT = ["-XX:TieredStopAtLevel=1"]
"""JVM options of ``jit: quick``: the quick (C1) compiler only. In a JVM's first minutes the
optimizing compiler takes most of its CPU (60% of a broker's at 300 records/s on 2 cores), and
a short run never earns it back."""


LATE_OPTIMIZING_JIT = [
    "-XX:Tier4InvocationThreshold=50000", "-XX:Tier4MinInvocationThreshold=6000",
    "-XX:Tier4CompileThreshold=60000", "-XX:Tier4BackEdgeThreshold=400000",
]
"""JVM options of ``jit: full`` for Spark: the optimizing (C2) compiler takes a method only after
ten times the JVM's default calls and loop turns (compile threshold 4x). A session's start-up
code runs a few thousand times and then never again; with the defaults the optimizing compiler
compiled it anyway and took 6.3-6.6 of a bare session's ~11 CPU s up to its first job, beside
the thread starting it on two cores. With these: 2.8-3.2 CPU s, the session ready in 3.9-4.2 s
instead of 4.9-5.4 s (load < 2). A whole mirror start on the quiet machine (two runs each,
alternating): the JVM used 8.8-9.9 CPU s up to its query start instead of 10.5-12.4, its first
record written after 11.2-11.5 s against 11.0-12.7 (the same, within the runs' spread).
Per-record code runs millions of times and still reaches the optimizing compiler in its first
second: 2,000,000 x 1 KiB copies (seven runs each way, alternating) at the same speed and CPU per GB."""


def jvm_options_from_env(variable: str) -> list[str]:
    """Extra JVM options from environment variable ``variable`` (space-separated; none when unset)."""
    return os.environ.get(variable, "").split()


def extra_jvm_options(quick_jit: bool, variable: str, full_jit: Sequence[str] = ()) -> list[str]:
    """A JVM's options besides its own: :data:`QUICK_JIT` for ``jit: quick``, else ``full_jit``
    (Spark's: :data:`LATE_OPTIMIZING_JIT`), then ``variable``'s (which can override either)."""
    return [*(QUICK_JIT if quick_jit else full_jit), *jvm_options_from_env(variable)]


def running_pid(pid_file: Path) -> int | None:
    """The PID recorded in ``pid_file`` if that process still runs and is ours, else None."""
    try:
        pid_text, marker = pid_file.read_text(encoding="utf-8").splitlines()[:2]
        pid = int(pid_text)
    except (FileNotFoundError, ValueError):
        return None
    try:
        os.waitpid(pid, os.WNOHANG)  # reap it if it is our own exited child
    except ChildProcessError:
        pass
    cmdline = _cmdline(pid)
    fields = stat_fields(pid)
    if fields is None or marker not in cmdline or fields[0] == "Z":
        return None
    return pid


def stop_process(pid_file: Path, timeout_s: float = 20.0) -> bool:
    """SIGTERM the recorded process, SIGKILL it after ``timeout_s``; True if one was running."""
    return stop_processes([pid_file], timeout_s) == 1


def stop_processes(pid_files: list[Path], timeout_s: float = 20.0, quorum: int = 0, grace_s: float = 6.0) -> int:
    """SIGTERM every recorded process at once, SIGKILL those left after ``timeout_s``; how many ran.

    Signalled together so that processes which need each other to shut down cleanly (the
    KRaft voters of a cluster) do not wait for peers that are already gone. Once fewer than
    ``quorum`` of them still run, the rest cannot finish cleanly: they get ``grace_s`` more.
    """
    running = {pid_file: pid for pid_file in pid_files if (pid := running_pid(pid_file)) is not None}
    for pid in running.values():
        _signal(pid, signal.SIGCONT)  # a paused process cannot handle SIGTERM
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + timeout_s
    left = dict(running)
    while left and time.monotonic() < deadline:
        time.sleep(0.1)
        left = {pid_file: pid for pid_file, pid in left.items() if running_pid(pid_file) is not None}
        if 0 < len(left) < quorum:
            deadline = min(deadline, time.monotonic() + grace_s)
            quorum = 0
    for pid in left.values():
        _signal(pid, signal.SIGKILL)
    while any(running_pid(pid_file) is not None for pid_file in left):
        time.sleep(0.05)
    for pid_file in pid_files:
        pid_file.unlink(missing_ok=True)
    return len(running)


def signal_process(pid_file: Path, sig: signal.Signals) -> bool:
    """Send ``sig`` to the recorded process; True if it was running."""
    pid = running_pid(pid_file)
    if pid is None:
        return False
    _signal(pid, sig)
    if sig == signal.SIGKILL:
        while running_pid(pid_file) is not None:
            time.sleep(0.02)
    return True


def _cmdline(pid: int) -> str:
    """The command line of ``pid`` ("" if there is no such process)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except (FileNotFoundError, ProcessLookupError):
        return ""


def _signal(pid: int, sig: signal.Signals) -> None:
    try:
        os.kill(pid, sig)
    except ProcessLookupError:
        pass
