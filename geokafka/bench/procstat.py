"""CPU seconds and resident memory of a process tree, sampled from /proc."""

from __future__ import annotations

import os
import threading
from pathlib import Path

_TICK = os.sysconf("SC_CLK_TCK")


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rpartition(")")[2].split()[1])
        kids.setdefault(ppid, []).append(int(entry))
    return kids


def tree(root: int) -> list[int]:
    """``root`` and every descendant alive now."""
    kids = _children_map()
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(kids.get(pid, ()))
    return out


def _cpu_and_rss(pid: int) -> tuple[float, int]:
    """CPU seconds (own + reaped children) and VmRSS bytes of one process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0
    # after ")": state(0) ppid(1) ... utime(11) stime(12) cutime(13) cstime(14)
    cpu = sum(int(fields[i]) for i in (11, 12, 13, 14)) / _TICK
    rss = 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return cpu, rss


class TreeSampler:
    """Samples a process tree every ``interval_s``: CPU seconds (summed) and peak summed RSS.

    CPU of a child that exited and was reaped moves into its parent's cutime/cstime, so the sum
    over the live tree stays (nearly) monotone; the sampler keeps the largest value seen.
    """

    def __init__(self, root: int, interval_s: float = 0.25) -> None:
        self.root, self.interval_s = root, interval_s
        self.cpu_s = 0.0
        self.peak_rss = 0
        self.processes = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-sampler")

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def sample(self) -> None:
        pids = tree(self.root)
        cpu, rss = 0.0, 0
        for pid in pids:
            c, r = _cpu_and_rss(pid)
            cpu += c
            rss += r
        self.cpu_s = max(self.cpu_s, cpu)
        self.peak_rss = max(self.peak_rss, rss)
        self.processes = max(self.processes, len(pids))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)
