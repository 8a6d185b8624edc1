"""geokafka.procfs against this process's own /proc entries (Linux only)."""

from __future__ import annotations

import os
import threading

import pytest

from geokafka import procfs

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="no /proc here")

GONE = 2**22 + 12345  # above Linux's largest process and thread ID


def test_a_process_s_stat_fields_start_after_its_name_and_a_gone_one_has_none():
    fields = procfs.stat_fields(os.getpid())
    assert fields is not None and fields[0] in "RS" and int(fields[1]) == os.getppid()
    own = procfs.stat_fields()  # None: this process
    assert own is not None and own[1] == fields[1]
    assert procfs.stat_fields(GONE) is None and procfs.stat_fields(os.getpid(), GONE) is None


def test_a_thread_is_listed_with_its_name_and_its_cpu_read():
    ready, done = threading.Event(), threading.Event()
    found: dict[str, int] = {}

    def work() -> None:
        found["tid"] = threading.get_native_id()
        ready.set()
        done.wait(10)

    thread = threading.Thread(target=work)
    thread.start()
    try:
        ready.wait(10)
        # the same threads whether this process is named or not; a thread of an earlier test's client may start or
        # end between two listings (a clean clone's run saw one do so), so the two are taken again until no
        # thread came or went between them
        for _ in range(50):
            names, named = procfs.thread_names(), procfs.thread_names(os.getpid())
            if set(names) == set(named):
                break
        assert found["tid"] in names and names[threading.get_native_id()]  # every thread with its name
        assert set(names) == set(named) and found["tid"] in procfs.thread_ids()
        assert procfs.thread_name(found["tid"]) == names[found["tid"]]
        assert procfs.thread_cpu_s(found["tid"]) > 0.0
        fields = procfs.stat_fields(os.getpid(), found["tid"])
        assert fields is not None and procfs.ticks_s(fields, procfs.UTIME, procfs.STIME) >= 0.0
    finally:
        done.set()
        thread.join(10)
    assert procfs.thread_cpu_s(None) == 0.0 and procfs.thread_cpu_s(GONE) == 0.0
    assert procfs.thread_names(GONE) == {} and procfs.thread_ids(GONE) == set() and procfs.thread_name(GONE) is None
