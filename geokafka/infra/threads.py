"""Work on a thread of its own that hands back its result or its error (never a time-out instead of the
real cause), and waits that give up when a stop is asked for."""

from __future__ import annotations

import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import TypeVar

T = TypeVar("T")


def in_thread(fn: Callable[[], T], name: str) -> Future[T]:
    """Run ``fn`` on a daemon thread; its future holds what it returned or raised (``BaseException`` included)."""
    future: Future[T] = Future()

    def run() -> None:
        if not future.set_running_or_notify_cancel():
            return
        try:
            future.set_result(fn())
        except BaseException as exc:  # noqa: BLE001 - handed back to whoever waits, whatever it is
            future.set_exception(exc)

    threading.Thread(target=run, name=name, daemon=True).start()
    return future


def result_unless_stopped(future: Future[T], stop: threading.Event, poll_s: float = 0.1) -> tuple[bool, T | None]:
    """``(True, result)`` once ``future`` is done (its error raised), ``(False, None)`` as soon as ``stop`` is set."""
    while not stop.is_set():
        try:
            return True, future.result(timeout=poll_s)
        except FutureTimeout:
            continue
    return False, None
