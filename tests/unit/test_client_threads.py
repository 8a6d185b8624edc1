"""A Kafka client's own threads found among the process's threads, and their CPU counted (Linux /proc)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from geokafka.control.admin import ClusterAdmin
from geokafka.control.client_threads import named_threads, thread_cpu_s, thread_ids
from geokafka.control.connection import ClusterConnection

pytestmark = pytest.mark.skipif(not thread_ids(), reason="no /proc/self/task here")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_admin_client_knows_its_main_and_background_threads_and_their_cpu() -> None:
    conn = ClusterConnection(name="nowhere", bootstrap=f"127.0.0.1:{_dead_port()}", security={})
    admin = ClusterAdmin(conn, timeout_s=0.5)
    try:
        admin.background_cpu_s()  # a thread names itself once it runs: looked for again until both are found
        tids = _eventually_both(admin)
        assert all(tid in thread_ids() for tid in tids)
        # where requests are built and answers parsed, and where the answers become Python objects
        assert sorted(open(f"/proc/self/task/{tid}/comm").read().strip() for tid in tids) == ["rdk:bg", "rdk:main"]
        assert 0.0 <= admin.background_cpu_s() <= sum(thread_cpu_s(tid) for tid in tids)  # read again later: never less
    finally:
        admin.close()


def _eventually_both(admin: ClusterAdmin) -> tuple[int, ...]:
    deadline = time.monotonic() + 5
    while len(admin._client_threads) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
        admin.background_cpu_s()
    return admin._client_threads


def _name_this_thread(name: str) -> None:
    """Name the calling thread as Linux shows it (``comm``), as a librdkafka thread names itself once it runs."""

    Path(f"/proc/self/task/{threading.get_native_id()}/comm").write_text(name)


@contextmanager
def _running(target: Callable[[], None], *releases: threading.Event) -> Iterator[int]:
    """``target`` on a thread of its own, yielding its Linux thread ID; on the way out ``releases`` are set (the
    thread waits on them to end) and the thread is joined."""
    thread = threading.Thread(target=target)
    thread.start()
    try:
        assert thread.native_id is not None
        yield thread.native_id
    finally:
        for release in releases:
            release.set()
        thread.join(5)


def test_a_client_s_thread_that_names_itself_late_is_found_on_a_later_call() -> None:
    named = threading.Event()
    go = threading.Event()

    def later() -> None:
        go.wait(5)
        _name_this_thread("rdk:main")
        named.set()
        time.sleep(0.5)

    with _running(later, go) as tid:
        assert named_threads({tid}) == ()  # not named yet
        go.set()
        assert named.wait(5)
        assert named_threads({tid}) == (tid,)


def test_a_name_two_candidate_threads_share_is_left_out() -> None:
    ready, end = threading.Barrier(4), threading.Event()

    def named(name: str) -> None:
        _name_this_thread(name)
        ready.wait(5)
        end.wait(5)

    threads = [threading.Thread(target=named, args=(name,)) for name in ("rdk:main", "rdk:main", "rdk:bg")]
    for thread in threads:
        thread.start()
    try:
        ready.wait(5)
        tids = {thread.native_id for thread in threads if thread.native_id is not None}
        bg = threads[2].native_id
        assert named_threads(tids) == (bg,)  # two main threads: which is whose is unknown
    finally:
        end.set()
        for thread in threads:
            thread.join(5)


def test_two_clients_made_at_once_are_not_told_apart_and_an_unknown_thread_costs_nothing() -> None:
    before = thread_ids()
    clients = [AdminClient({"bootstrap.servers": f"127.0.0.1:{_dead_port()}"}) for _ in range(2)]
    assert named_threads(thread_ids() - before, ("rdk:bg",)) == ()  # two background threads: which is whose is unknown
    one = thread_ids()
    client = AdminClient({"bootstrap.servers": f"127.0.0.1:{_dead_port()}"})
    assert len(named_threads(thread_ids() - one, ("rdk:bg",))) == 1
    now = thread_ids()
    assert named_threads(thread_ids() - now, ("rdk:bg",)) == ()  # nothing started since
    assert len(clients) == 2 and client is not None  # each client's thread is alive up to here
    assert thread_cpu_s(None) == 0.0 and thread_cpu_s(2**22 + 12345) == 0.0  # above Linux's largest thread ID


def test_a_threads_cpu_is_read_to_the_nanosecond_not_in_clock_ticks() -> None:
    """As a client's background thread is read: between its answers, while it waits."""
    go, done, end = threading.Event(), threading.Event(), threading.Event()
    own: list[float] = []

    def answer() -> None:
        go.wait(5)
        started = time.thread_time()
        sum(range(300_000))  # a few milliseconds: less than a clock tick (10 ms)
        own.append(time.thread_time() - started)
        done.set()
        end.wait(5)

    with _running(answer, go, end) as tid:
        if not Path(f"/proc/self/task/{tid}/schedstat").exists():
            pytest.skip("no schedstat here: CPU in clock ticks")
        waiting(tid)
        before = thread_cpu_s(tid)
        go.set()
        assert done.wait(5)
        waiting(tid)
        spent = thread_cpu_s(tid) - before
    assert 0 < spent and abs(spent - own[0]) < 0.002  # what the thread's own clock says, not 0 or 10 ms


def waiting(tid: int | None) -> None:
    """Until thread ``tid`` waits (its CPU time is then up to date)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        state = Path(f"/proc/self/task/{tid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        if state == "S":
            return
        time.sleep(0.001)
    raise AssertionError(f"thread {tid} never waited")
