"""A Kafka client's own threads found among the process's threads, and their CPU counted (Linux /proc)."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient

from geokafka.control.admin import ClusterAdmin
from geokafka.control.client_threads import started_thread, started_threads, thread_cpu_s, thread_ids
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
        tids = admin._client_threads
        assert all(tid in thread_ids() for tid in tids)
        # where requests are built and answers parsed, and where the answers become Python objects
        assert sorted(open(f"/proc/self/task/{tid}/comm").read().strip() for tid in tids) == ["rdk:bg", "rdk:main"]
        assert 0.0 <= admin.background_cpu_s() <= sum(thread_cpu_s(tid) for tid in tids)  # read again later: never less
    finally:
        admin.close()


def test_two_clients_made_at_once_are_not_told_apart_and_an_unknown_thread_costs_nothing() -> None:
    before = thread_ids()
    clients = [AdminClient({"bootstrap.servers": f"127.0.0.1:{_dead_port()}"}) for _ in range(2)]
    assert started_thread(before, "rdk:bg") is None  # two new background threads: which is whose is unknown
    one = thread_ids()
    client = AdminClient({"bootstrap.servers": f"127.0.0.1:{_dead_port()}"})
    assert started_thread(one, "rdk:bg") is not None
    assert started_thread(thread_ids(), "rdk:bg") is None  # nothing started since
    assert started_threads(before) == () and len(started_threads(one)) == 2  # rdk:main and rdk:bg, when told apart
    assert len(clients) == 2 and client is not None  # each client's thread is alive up to here
    assert thread_cpu_s(None) == 0.0 and thread_cpu_s(2**22 + 12345) == 0.0  # above Linux's largest thread ID


def test_a_threads_cpu_is_read_to_the_nanosecond_not_in_clock_ticks() -> None:
    """As a client's background thread is read: between its answers, while it waits."""
    import threading

    go, done, end = threading.Event(), threading.Event(), threading.Event()
    own: list[float] = []

    def answer() -> None:
        go.wait(5)
        started = time.thread_time()
        sum(range(300_000))  # a few milliseconds: less than a clock tick (10 ms)
        own.append(time.thread_time() - started)
        done.set()
        end.wait(5)

    worker = threading.Thread(target=answer)
    worker.start()
    try:
        tid = worker.native_id
        if not Path(f"/proc/self/task/{tid}/schedstat").exists():
            pytest.skip("no schedstat here: CPU in clock ticks")
        waiting(tid)
        before = thread_cpu_s(tid)
        go.set()
        assert done.wait(5)
        waiting(tid)
        spent = thread_cpu_s(tid) - before
    finally:
        go.set()
        end.set()
        worker.join(5)
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
