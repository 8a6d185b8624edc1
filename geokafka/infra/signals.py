"""Ctrl-C and SIGTERM as a stop request that loops check between their steps."""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

STOP_SIGNALLED = threading.Event()
"""Set by the first stop signal a :func:`stop_on_signals` block handles: the process is stopping (Spark's JVM, in
the same process group, may have got the signal too and be stopping its queries on its own)."""


@contextmanager
def stop_on_signals(stop: threading.Event | None = None, keep: bool = False,
                    on_second: Callable[[], None] | None = None) -> Iterator[threading.Event]:
    """Within the block, Ctrl-C (SIGINT) and SIGTERM set ``stop`` (a new event if None), which this
    yields, instead of raising; the previous handlers come back at the end (blocks nest), unless
    ``keep``: for a command whose process ends with the block, Ctrl-C is then ignored until the
    process exits and SIGTERM keeps setting ``stop``. A second Ctrl-C that arrives once the work
    is done would otherwise meet the default handlers the interpreter puts back as it exits and
    kill the process (exit -2) after it printed its summary.

    For loops that call Kafka clients or Spark: a KeyboardInterrupt raised while a client runs a
    Python callback leaves the client broken (seen: a SystemError out of a librdkafka callback, and
    a ``status --watch`` that never exited). Off the main thread it only yields the event (signal
    handlers belong to the main thread). ``on_second``: called when a signal comes while ``stop`` is
    already set (a second Ctrl-C or SIGTERM: stop at once).
    """
    event = stop if stop is not None else threading.Event()
    if threading.current_thread() is not threading.main_thread():
        yield event
        return

    def handle(*_: object) -> None:
        if event.is_set() and on_second is not None:
            on_second()
        STOP_SIGNALLED.set()
        event.set()

    previous = {sig: signal.signal(sig, handle) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield event
    finally:
        if keep:
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # the interpreter leaves an ignored signal ignored
        else:
            for sig, handler in previous.items():
                signal.signal(sig, handler)
