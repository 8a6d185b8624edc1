"""A command that started Spark adopts the orphans of its children and reaps them: Spark's launcher
forks a helper and execs the JVM in its place, and that helper's zombie would otherwise outlive the JVM
in the command's process group (on machines whose init does not reap)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux's child subreaper")

# a child that forks a helper, then becomes ``sleep``: sleep never waits for the helper, which exits once it is
# an orphan (its parent is no longer bash's pid, handed to it as an argument: a helper that reads its parent
# itself may start, on a busy machine, after sleep ended and so wait for a change that never comes), so it
# always outlives its first parent (a helper that ended first could be reaped by bash before its exec); the
# script prints the zombies it had, how many it reaped and how many are left
_SCRIPT = textwrap.dedent("""
    import os, subprocess, sys, time
    from pathlib import Path
    from geokafka.infra.orphans import adopt_orphans, reap_orphans

    def zombies():
        found = []
        for stat in Path("/proc").glob("[0-9]*/stat"):
            try:
                state, ppid = stat.read_text().rsplit(")", 1)[1].split()[:2]
            except (OSError, IndexError, ValueError):
                continue
            if state == "Z" and int(ppid) == os.getpid():
                found.append(stat.parent.name)
        return found

    adopt_orphans()
    helper = ("import os, sys, time; first = int(sys.argv[1]); "
              "any(time.sleep(0.01) for _ in iter(lambda: os.getppid() == first, False))")
    subprocess.run(["bash", "-c", f"{sys.executable} -c '{helper}' $$ & exec sleep 0.3"], check=True)
    deadline = time.monotonic() + 20
    while not zombies() and time.monotonic() < deadline:
        time.sleep(0.01)
    before = zombies()
    print(len(before), reap_orphans(), len(zombies()))
""")


def test_an_adopted_orphan_is_reaped() -> None:
    out = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=60, check=True)
    assert [int(n) for n in out.stdout.split()] == [1, 1, 0]
