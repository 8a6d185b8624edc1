"""Each periodic job of a flow on a schedule of its own (MirrorMaker 2's ``Scheduler``).

A flow's control-plane jobs (the source observation, the heartbeat, the topic and group syncs, the
topic watch) each run on a thread of their own: a call that waits seconds on a cluster that died
(a lost DC) delays that job only, never another job of the flow and never another flow. A run
that takes longer than its time-out is said once in the log (the job's own client calls carry the
real time-outs). :class:`ManualScheduler` runs the same jobs inline when the runner's clock says so,
for unit tests.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

COST_RUNS = 8
"""Runs a job's CPU cost is taken over (their least): other threads' bursts in the same process do not count."""


@dataclass
class Job:
    """One periodic job: ``run`` every ``interval_s``, expected to take at most ``timeout_s``.

    With a ``cpu_share``, the job runs less often when it costs more: never more often than keeps the
    CPU of its runs under that share of one core, whatever ``interval_s`` asks, and never less often than
    ``max_period_s`` (a figure whose age matters, as the source observation's in every RPO). A run's cost is
    ``cpu_clock``'s advance while it ran: under :class:`ThreadScheduler` the job's own thread's CPU time, so
    neither other threads' work (another flow starting, Spark's bridge) nor a loaded machine's longer runs
    count (the process's CPU did: at load ~17 it stretched a 250-ms observation to 4.3 s), plus ``extra_cpu``'s
    advance: the threads that work for the job's calls (a Kafka client's own threads, where an admin client's
    requests are built and its answers parsed and turned into Python objects: at 200 topics x 10, nearly two
    thirds of an end-offset look's CPU and most of a topic-ID look's); the least of the last :data:`COST_RUNS`
    runs, so only a cost every run pays stretches its period.
    """

    name: str
    interval_s: float
    run: Callable[[], None]
    timeout_s: float
    cpu_share: float | None = None
    max_period_s: float | None = None
    runs: int = 0
    last_took_s: float = 0.0
    long_runs: int = 0
    """Runs that took longer than ``timeout_s``."""
    cpu_clock: Callable[[], float] = field(default=time.process_time, repr=False)
    extra_cpu: Callable[[], float] | None = field(default=None, repr=False)
    _next_at: float = field(default=0.0, repr=False)
    _recent_cpu_s: deque[float] = field(default_factory=lambda: deque(maxlen=COST_RUNS), repr=False)

    @property
    def cpu_cost_s(self) -> float:
        """CPU seconds a run costs: the least of the last :data:`COST_RUNS` runs (0 before the first)."""
        return min(self._recent_cpu_s, default=0.0)

    @property
    def period_s(self) -> float:
        """The time from one run's start to the next's: ``interval_s``, or longer to keep to ``cpu_share``."""
        if self.cpu_share is None:
            return self.interval_s
        stretched = max(self.interval_s, self.cpu_cost_s / self.cpu_share)
        return stretched if self.max_period_s is None else min(stretched, max(self.interval_s, self.max_period_s))

    def run_once(self, clock: Callable[[], float], owner: str) -> None:
        """Run now; an exception the job did not handle is logged, never raised (the job runs again)."""
        started = clock()
        cpu_started = self._cpu_now()
        try:
            self.run()
        except Exception as exc:  # a job's own failures are its to report; this is a bug's last net
            log.warning("%s: job %s failed unexpectedly: %s: %s", owner, self.name, type(exc).__name__, exc)
            log.debug("%s: job %s", owner, self.name, exc_info=True)
        finally:
            self.runs += 1
            self.last_took_s = clock() - started
            self._recent_cpu_s.append(max(0.0, self._cpu_now() - cpu_started))
            if self.last_took_s > self.timeout_s:
                self.long_runs += 1
                level = logging.WARNING if self.long_runs == 1 else logging.DEBUG
                log.log(level, "%s: job %s took %.1f s (time-out %.1f s); it runs every %.1f s", owner, self.name,
                        self.last_took_s, self.timeout_s, self.period_s)

    def _cpu_now(self) -> float:
        return self.cpu_clock() + (self.extra_cpu() if self.extra_cpu is not None else 0.0)


class Scheduler(ABC):
    """Runs a flow's periodic jobs."""

    def __init__(self, owner: str, cpu_clock: Callable[[], float] = time.process_time) -> None:
        self.owner = owner
        self.jobs: dict[str, Job] = {}
        self._cpu_clock = cpu_clock

    def add(self, name: str, interval_s: float, run: Callable[[], None], timeout_s: float,
            cpu_share: float | None = None, max_period_s: float | None = None,
            extra_cpu: Callable[[], float] | None = None) -> Job:
        """Schedule ``run`` every ``interval_s`` (the first run at once); with ``cpu_share``, less often when
        its runs would take more than that share of a core (with ``extra_cpu``, the CPU seconds of the threads
        that work for its calls), but at least every ``max_period_s``."""
        job = Job(name, interval_s, run, timeout_s, cpu_share, max_period_s, cpu_clock=self._cpu_clock,
                  extra_cpu=extra_cpu)
        self.jobs[name] = job
        self._started(job)
        return job

    @abstractmethod
    def _started(self, job: Job) -> None: ...

    @abstractmethod
    def run_now(self, name: str) -> None:
        """Run job ``name`` as soon as possible (not waiting for its interval)."""

    def run_due(self, now: float) -> None:  # noqa: B027 - threads run themselves; ManualScheduler overrides
        """Run the jobs that are due (only :class:`ManualScheduler` does anything here)."""

    @abstractmethod
    def close(self, timeout_s: float = 5.0) -> None:
        """Stop every job; a run under way finishes on its own (its client calls have time-outs)."""


class ThreadScheduler(Scheduler):
    """Each job on a daemon thread of its own; a job's CPU cost is its thread's (``time.thread_time``)."""

    def __init__(self, owner: str, clock: Callable[[], float] = time.monotonic) -> None:
        super().__init__(owner, time.thread_time)
        self._clock = clock
        self._stop = threading.Event()
        self._wake: dict[str, threading.Event] = {}
        self._threads: list[threading.Thread] = []

    def _started(self, job: Job) -> None:
        wake = self._wake.setdefault(job.name, threading.Event())
        thread = threading.Thread(target=self._loop, args=(job, wake), name=f"{self.owner}:{job.name}", daemon=True)
        self._threads.append(thread)
        thread.start()

    def _loop(self, job: Job, wake: threading.Event) -> None:
        while not self._stop.is_set():
            started = self._clock()
            job.run_once(self._clock, self.owner)
            wake.wait(max(0.0, job.period_s - (self._clock() - started)))
            wake.clear()

    def run_now(self, name: str) -> None:
        """Wake the job's thread."""
        if name in self._wake:
            self._wake[name].set()

    def close(self, timeout_s: float = 5.0) -> None:
        """Stop the threads, waiting at most ``timeout_s`` in all; a job still running then is named, once."""
        self._stop.set()
        for wake in self._wake.values():
            wake.set()
        deadline = time.monotonic() + timeout_s
        for thread in self._threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        late = [t.name.rpartition(":")[2] for t in self._threads if t.is_alive()]
        if late:
            log.warning("%s: jobs %s still running %.1f s after the stop (a call waiting on its time-out); they "
                        "end on their own", self.owner, ", ".join(late), timeout_s)


class ManualScheduler(Scheduler):
    """Runs due jobs inline, when :meth:`run_due` is called with the time (unit tests)."""

    def __init__(self, owner: str, clock: Callable[[], float], cpu_clock: Callable[[], float] | None = None) -> None:
        super().__init__(owner, cpu_clock or clock)
        self._clock = clock

    def _started(self, job: Job) -> None:
        job._next_at = self._clock()

    def run_now(self, name: str) -> None:
        """Run the job now."""
        job = self.jobs.get(name)
        if job is not None:
            job.run_once(self._clock, self.owner)
            job._next_at = self._clock() + job.period_s

    def run_due(self, now: float) -> None:
        """Run every job whose time has come."""
        for job in list(self.jobs.values()):
            if now >= job._next_at:
                job.run_once(self._clock, self.owner)
                job._next_at = now + job.period_s

    def close(self, timeout_s: float = 5.0) -> None:
        """Nothing runs on its own."""
        self.jobs.clear()
