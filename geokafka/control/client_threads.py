"""The CPU of a thread a Kafka client started, read from Linux's ``/proc``: a job's cost counts it.

An admin client's answers become Python objects on its background thread (``rdk:bg``), not on the
thread that asked: over 200 topics of 10 partitions, a look at every topic's ID cost the asking thread
3-6 ms of CPU and the background thread 21-31 ms more, a look at every partition's end offset 7-9 ms
and ~3 ms more (an idle mirror's jobs, traced).
Where ``/proc`` is missing or the thread cannot be told apart, nothing is found and nothing is added.
"""

from __future__ import annotations

import os
from pathlib import Path

_TASKS = Path("/proc/self/task")
_TICK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def thread_ids() -> set[int]:
    """This process's thread IDs now (empty without ``/proc``)."""
    try:
        return {int(name) for name in os.listdir(_TASKS)}
    except OSError:
        return set()


def started_thread(before: set[int], name: str) -> int | None:
    """The one thread named ``name`` started since ``before`` was taken (:func:`thread_ids`); None when there is
    none, or more than one (another thread made a client meanwhile: which is whose is unknown)."""
    found = []
    for tid in thread_ids() - before:
        try:
            if (_TASKS / str(tid) / "comm").read_text().strip() == name:
                found.append(tid)
        except OSError:
            continue
    return found[0] if len(found) == 1 else None


def thread_cpu_s(tid: int | None) -> float:
    """CPU seconds thread ``tid`` of this process has run; 0.0 for None or a thread gone.

    From ``schedstat`` in nanoseconds where the kernel has it: ``stat``'s user and system times count whole
    clock ticks (10 ms), and a look whose answer takes the thread 10 ms would read as 0 or 10 ms by turns.
    """
    if tid is None:
        return 0.0
    try:
        return int((_TASKS / str(tid) / "schedstat").read_text().split()[0]) / 1e9
    except (OSError, IndexError, ValueError):
        pass
    try:
        fields = (_TASKS / str(tid) / "stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / _TICK
    except (OSError, IndexError, ValueError):
        return 0.0
