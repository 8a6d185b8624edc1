"""SIGTERM as Ctrl-C for commands that start processes and must stop them again."""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager


def _interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """Within the block, SIGTERM raises KeyboardInterrupt, so ``finally`` blocks still stop every
    cluster and process the command started (`kill <pid>` would otherwise leave brokers behind)."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signal handlers can only be set from the main thread
        return
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """Within the block, Ctrl-C (SIGINT) and SIGTERM set the event this yields instead of raising.

    For loops that call Kafka clients: a KeyboardInterrupt raised while a client runs a Python
    callback leaves the client broken (seen: a SystemError out of a librdkafka callback, and a
    ``status --watch`` that never exited). The loop checks the event between its steps.
    """
    stop = threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield stop
        return
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
