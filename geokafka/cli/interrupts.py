"""SIGTERM as Ctrl-C for commands that start processes and must stop them again (loops that
should stop between steps use :func:`geokafka.infra.signals.stop_on_signals`)."""

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
