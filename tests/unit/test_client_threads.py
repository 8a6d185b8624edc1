"""A Kafka client's background thread found among the process's threads, and its CPU counted (Linux /proc)."""

from __future__ import annotations

import socket

import pytest
from confluent_kafka.admin import AdminClient

from geokafka.control.admin import ClusterAdmin
from geokafka.control.client_threads import started_thread, thread_cpu_s, thread_ids
from geokafka.control.connection import ClusterConnection

pytestmark = pytest.mark.skipif(not thread_ids(), reason="no /proc/self/task here")


def _dead_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_admin_client_knows_its_background_thread_and_its_cpu() -> None:
    conn = ClusterConnection(name="nowhere", bootstrap=f"127.0.0.1:{_dead_port()}", security={})
    admin = ClusterAdmin(conn, timeout_s=0.5)
    try:
        tid = admin._background_thread
        assert tid is not None and tid in thread_ids()
        assert open(f"/proc/self/task/{tid}/comm").read().strip() == "rdk:bg"
        assert 0.0 <= admin.background_cpu_s() <= thread_cpu_s(tid)  # read again later: never less
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
    assert len(clients) == 2 and client is not None  # each client's thread is alive up to here
    assert thread_cpu_s(None) == 0.0 and thread_cpu_s(2**22 + 12345) == 0.0  # above Linux's largest thread ID
