"""The CPU of the threads a Kafka client started, read from Linux's ``/proc``: a job's cost counts them.

An admin client's requests are built and its answers parsed on its main thread (``rdk:main``), and the
answers become Python objects on its background thread (``rdk:bg``), not on the thread that asked: a look at
the end offsets of 2,000 partitions (200 topics of 10) cost the asking thread 7.4 ms of CPU, ``rdk:main``
7.4 ms and ``rdk:bg`` 5.1 ms more, the broker's connection thread 0.6 ms (2026-12-03, on the bench's source).
Where ``/proc`` is missing or a thread cannot be told apart, nothing is found and nothing is added.
"""

from __future__ import annotations

from geokafka.procfs import thread_cpu_s, thread_ids, thread_name

__all__ = ["CLIENT_THREADS", "named_threads", "thread_cpu_s", "thread_ids"]

CLIENT_THREADS = ("rdk:main", "rdk:bg")
"""The threads a librdkafka client starts with itself that work for its calls (its broker threads start as it
learns the cluster's brokers and are left out: a look costs them a few percent of what it costs these)."""


def named_threads(candidates: set[int] | frozenset[int], names: tuple[str, ...] = CLIENT_THREADS) -> tuple[int, ...]:
    """The threads among ``candidates`` (e.g. those a client's constructor started) named ``names``, one a name,
    those that can be told apart. A thread names itself once it runs, so a name not there yet is found on a
    later call."""
    found: dict[str, list[int]] = {name: [] for name in names}
    for tid in candidates:
        name = thread_name(tid)
        if name in found:
            found[name].append(tid)
    return tuple(tids[0] for tids in found.values() if len(tids) == 1)
