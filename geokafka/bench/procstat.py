"""CPU seconds and resident memory of a process tree, sampled from /proc."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from geokafka.procfs import CSTIME, CUTIME, STIME, UTIME, stat_fields, thread_names, ticks_s


def machine_cpu(text: str | None = None) -> tuple[int, int]:
    """(busy, all) clock ticks of every CPU since boot, from ``/proc/stat``'s first line (or ``text``):
    busy is all but idle and iowait."""
    fields = [int(x) for x in (text if text is not None else Path("/proc/stat").read_text()).split("\n", 1)[0].split()[1:]]
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    return sum(fields[:8]) - idle, sum(fields[:8])


def busy_percent(before: tuple[int, int], after: tuple[int, int]) -> float:
    """How busy the machine's CPUs were between two :func:`machine_cpu` readings, in percent of all of them."""
    spent = after[1] - before[1]
    return round(100.0 * (after[0] - before[0]) / spent, 1) if spent > 0 else 0.0


def _children_map() -> dict[int, list[int]]:
    kids: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = stat_fields(int(entry))
        if fields is not None:
            kids.setdefault(int(fields[1]), []).append(int(entry))
    return kids


def _tree(root: int) -> list[tuple[int, int | None]]:
    """``root`` and every descendant alive now, each with its parent (None for ``root``)."""
    kids = _children_map()
    out: list[tuple[int, int | None]] = []
    todo: list[tuple[int, int | None]] = [(root, None)]
    while todo:
        pid, parent = todo.pop()
        out.append((pid, parent))
        todo.extend((kid, pid) for kid in kids.get(pid, ()))
    return out


def _exe(pid: int) -> str:
    try:
        return os.readlink(f"/proc/{pid}/exe")
    except OSError:
        return ""


SAME_PAGES = 0.1
"""How close (a fraction of the parent's) a child's RSS must be to count as its parent's pages."""


def summed_rss(processes: dict[int, tuple[int | None, str, int]]) -> int:
    """Resident bytes of a process tree, ``{pid: (parent, exe, rss)}``, counting shared pages once.

    A child caught between fork (or vfork) and exec runs its parent's program with its parent's
    pages: its RSS repeats the parent's. Spark's driver spawns such children for every
    checkpoint file (Hadoop's local file system runs ``chmod`` and ``readlink``), and summing
    them doubled the peak of a 1 GB JVM. A child running its parent's program with an RSS within
    :data:`SAME_PAGES` of its parent's is taken for one and not added.
    """
    total = 0
    for parent, exe, rss in processes.values():
        above = processes.get(parent) if parent is not None else None
        if above is not None and exe and exe == above[1] and abs(rss - above[2]) <= SAME_PAGES * above[2]:
            continue
        total += rss
    return total


def threads_and_sockets(pid: int) -> tuple[int, int]:
    """Threads (``/proc/<pid>/status``) and open sockets (file descriptors that are sockets) of one process."""
    threads = sockets = 0
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
        for fd in os.listdir(f"/proc/{pid}/fd"):
            try:
                if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:"):
                    sockets += 1
            except OSError:
                continue
    except OSError:
        pass
    return threads, sockets


def _cpu_and_rss(pid: int) -> tuple[float, int]:
    """CPU seconds (own + reaped children) and VmRSS bytes of one process."""
    fields = stat_fields(pid)
    if fields is None:
        return 0.0, 0
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0, 0
    cpu = ticks_s(fields, UTIME, STIME, CUTIME, CSTIME)
    rss = 0
    for line in status.splitlines():
        if line.startswith("VmRSS:"):
            rss = int(line.split()[1]) * 1024
    return cpu, rss


JIT_THREADS = ("C1 CompilerThre", "C2 CompilerThre")
"""Names (``comm``, cut to 15 characters) of HotSpot's just-in-time compiler threads."""
JIT_SAMPLE_EVERY = 4
"""The sampler looks at the compiler threads every this many samples (a thread HotSpot retires was
idle first, so its CPU as last seen is all of it)."""


def jit_threads(pid: int) -> dict[int, float]:
    """CPU seconds of each of ``pid``'s live JIT compiler threads, by thread id (none for a process
    that is not a HotSpot JVM). HotSpot retires compiler threads it started for a burst of work once
    they are idle, and a retired thread takes its CPU seconds with it: :class:`TreeSampler` keeps them."""
    found: dict[int, float] = {}
    for tid, name in thread_names(pid).items():
        if name.startswith(JIT_THREADS) and (fields := stat_fields(pid, tid)) is not None:
            found[tid] = ticks_s(fields, UTIME, STIME)
    return found


def jit_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s live JIT compiler threads (0 for a process that is not a HotSpot JVM)."""
    return sum(jit_threads(pid).values())


class TreeSampler:
    """Samples a process tree every ``interval_s``: CPU seconds (summed) and peak summed RSS
    (:func:`summed_rss`: a child not yet past exec is not counted twice).

    CPU of a child that exited and was reaped moves into its parent's cutime/cstime, so the sum
    over the live tree stays (nearly) monotone; the sampler keeps the largest value seen.
    """

    def __init__(self, root: int, interval_s: float = 0.25) -> None:
        self.root, self.interval_s = root, interval_s
        self.cpu_s = 0.0
        self.peak_rss = 0
        self.processes = 0
        self.peak_threads = 0
        self.peak_sockets = 0
        self._jit: dict[tuple[int, int], float] = {}  # (pid, thread id) -> CPU s, retired threads kept
        self._samples = 0
        self.history: list[tuple[float, float]] = []
        """``(time.monotonic(), cpu_s)`` of every sample, oldest first."""
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="bench-sampler")

    def start(self) -> TreeSampler:
        self._thread.start()
        return self

    def sample(self) -> None:
        procs = _tree(self.root)
        cpu = 0.0
        seen: dict[int, tuple[int | None, str, int]] = {}
        for pid, parent in procs:
            c, r = _cpu_and_rss(pid)
            cpu += c
            seen[pid] = (parent, _exe(pid), r)
        self.cpu_s = max(self.cpu_s, cpu)
        self.history.append((time.monotonic(), self.cpu_s))
        self.peak_rss = max(self.peak_rss, summed_rss(seen))
        self.processes = max(self.processes, len(procs))
        self._samples += 1
        if self._samples % JIT_SAMPLE_EVERY == 1:
            counts = [threads_and_sockets(pid) for pid, _ in procs]
            self.peak_threads = max(self.peak_threads, sum(t for t, _ in counts))
            self.peak_sockets = max(self.peak_sockets, sum(s for _, s in counts))
        if self._samples % JIT_SAMPLE_EVERY == 0:
            self._note_jit(procs)

    def cpu_at(self, at: float) -> float:
        """The tree's CPU seconds at ``at`` (``time.monotonic()``), interpolated between the samples around it (the
        first or last sample's outside them)."""
        return cpu_at(sorted(self.history), at)

    def jit_cpu_s(self) -> float:
        """CPU seconds of the JIT compiler threads of every JVM in the tree so far, those HotSpot
        retired since the sampler saw them included (their CPU as last seen)."""
        self._note_jit(_tree(self.root))
        return sum(self._jit.values())

    def _note_jit(self, procs: list[tuple[int, int | None]]) -> None:
        for pid, _ in procs:
            for tid, cpu in jit_threads(pid).items():
                self._jit[(pid, tid)] = max(cpu, self._jit.get((pid, tid), 0.0))

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval_s)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(5)


def cpu_at(history: list[tuple[float, float]], at: float) -> float:
    """CPU seconds at ``at`` from ``(time, cumulative CPU s)`` samples in time order, interpolated linearly between
    the two around it; before the first sample the first's value, after the last the last's (0 without any)."""
    if not history:
        return 0.0
    before = history[0]
    for sample in history:
        if sample[0] >= at:
            if sample[0] == before[0]:
                return sample[1]
            share = (at - before[0]) / (sample[0] - before[0])
            return before[1] + share * (sample[1] - before[1])
        before = sample
    return history[-1][1]
