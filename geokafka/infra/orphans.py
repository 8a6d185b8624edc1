"""Orphans a command's child processes leave: Spark's launcher script forks a helper, then execs the
JVM in its place, and the JVM never waits for that helper. Its zombie outlives the JVM, and on a
machine whose init does not reap (containers, service managers watching a process group) it keeps
the command's process group alive. A command that starts Spark adopts such orphans and reaps them."""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from pathlib import Path

_PR_SET_CHILD_SUBREAPER = 36


def adopt_orphans() -> None:
    """Make this process the reaper of its descendants' orphans (Linux; elsewhere nothing happens)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def reap_orphans() -> int:
    """Reap this process's children that have exited (zombies); how many were reaped. Children that run
    are left alone, and so is any child whose exit status its own owner (a ``Popen``) collected first."""
    reaped = 0
    me = os.getpid()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            # "pid (comm) state ppid ...": comm may hold spaces and parentheses, the rest follows its last ")"
            state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
        except (OSError, IndexError, ValueError):
            continue
        if state == "Z" and int(ppid) == me:
            with contextlib.suppress(ChildProcessError):
                if os.waitpid(int(stat.parent.name), os.WNOHANG)[0]:
                    reaped += 1
    return reaped
