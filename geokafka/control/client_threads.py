"""The CPU of a thread a Kafka client started, read from Linux's ``/proc``: a job's cost counts it.

An admin client's answers become Python objects on its background thread (``rdk:bg``), not on the
thread that asked: over 200 topics of 10 partitions, a look at every topic's ID cost the asking thread
3-6 ms of CPU and the background thread 21-31 ms more, a look at every partition's end offset 7-9 ms
and ~3 ms more (an idle mirror's jobs, traced).
Where ``/proc`` is missing or the thread cannot be told apart, nothing is found and nothing is added.
"""

from __future__ import annotations

from geokafka.procfs import thread_cpu_s, thread_ids, thread_name

__all__ = ["started_thread", "thread_cpu_s", "thread_ids"]


def started_thread(before: set[int], name: str) -> int | None:
    """The one thread named ``name`` started since ``before`` was taken (:func:`thread_ids`); None when there is
    none, or more than one (another thread made a client meanwhile: which is whose is unknown)."""
    found = [tid for tid in thread_ids() - before if thread_name(tid) == name]
    return found[0] if len(found) == 1 else None
