"""Linux's ``/proc``: a process's or thread's ``stat`` fields, a process's threads by name, a thread's CPU.

One reader for the process tools (is a broker running, whose child is it), the bench's sampler (a process
tree's CPU, the JIT compiler threads) and the CPU a control-plane job counts for a client's own thread. A
process or thread that is gone, or a machine without ``/proc``, reads as nothing (None, an empty map, 0.0).
"""

from __future__ import annotations

import os
from pathlib import Path

TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
"""The clock ticks of ``stat``'s CPU times in a second."""

UTIME, STIME, CUTIME, CSTIME = 11, 12, 13, 14
"""Indexes of the CPU times in :func:`stat_fields` (own user and system time, then reaped children's)."""


def _task(pid: int | None, tid: int | None) -> Path:
    base = Path("/proc/self" if pid is None else f"/proc/{pid}")
    return base if tid is None else base / "task" / str(tid)


def stat_fields(pid: int | None = None, tid: int | None = None) -> list[str] | None:
    """The fields of process ``pid``'s ``stat`` (None: this process), or of its thread ``tid``, after the command's
    name: state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14); None when there is no such process or
    thread. The name is cut off at its last ``)``: it may hold spaces and parentheses."""
    try:
        fields = (_task(pid, tid) / "stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    return fields or None


def ticks_s(fields: list[str], *indexes: int) -> float:
    """The CPU seconds of the given :func:`stat_fields` indexes, summed."""
    return sum(int(fields[i]) for i in indexes) / TICKS_PER_S


def thread_ids(pid: int | None = None) -> set[int]:
    """The IDs of every live thread of ``pid`` (None: this process); empty when there is no such process or no
    ``/proc``."""
    try:
        return {int(tid) for tid in os.listdir(_task(pid, None) / "task")}
    except OSError:
        return set()


def thread_name(tid: int, pid: int | None = None) -> str | None:
    """The name (``comm``, cut to 15 characters by Linux) of thread ``tid`` of ``pid`` (None: this process); None
    when it has ended."""
    try:
        return (_task(pid, tid) / "comm").read_text().strip()
    except OSError:
        return None


def thread_names(pid: int | None = None) -> dict[int, str]:
    """Thread ID -> name (:func:`thread_name`) of every live thread of ``pid`` (None: this process); empty when
    there is no such process or no ``/proc``."""
    names = {tid: thread_name(tid, pid) for tid in thread_ids(pid)}
    return {tid: name for tid, name in names.items() if name is not None}  # a thread that ended meanwhile: none


def thread_cpu_s(tid: int | None, pid: int | None = None) -> float:
    """CPU seconds thread ``tid`` of ``pid`` (None: this process) has run; 0.0 for None or a thread gone.

    From ``schedstat`` in nanoseconds where the kernel has it: ``stat``'s user and system times count whole
    clock ticks (10 ms), and a look whose answer takes the thread 10 ms would read as 0 or 10 ms by turns.
    """
    if tid is None:
        return 0.0
    try:
        return int((_task(pid, tid) / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        pass
    fields = stat_fields(pid, tid)
    return ticks_s(fields, UTIME, STIME) if fields is not None else 0.0
