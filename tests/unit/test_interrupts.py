"""Signals in the CLI's loops: Ctrl-C and SIGTERM stop them between steps, never inside a client call."""

from __future__ import annotations

import os
import signal
import time

import pytest

from geokafka.cli.interrupts import terminate_as_interrupt
from geokafka.infra.signals import stop_on_signals


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_sets_the_event_instead_of_raising(sig: signal.Signals) -> None:
    before = signal.getsignal(sig)
    with stop_on_signals() as stop:
        os.kill(os.getpid(), sig)  # delivered to this (main) thread before kill returns
        assert stop.wait(5)
    assert signal.getsignal(sig) is before


def test_sigterm_raises_keyboard_interrupt_inside_terminate_as_interrupt() -> None:
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(KeyboardInterrupt), terminate_as_interrupt():
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises at once; reaching the end of the sleep fails the test
    assert signal.getsignal(signal.SIGTERM) is before


def test_blocks_nest_and_share_the_callers_event() -> None:
    """The mirror's shape: its own block, then another after PySpark replaced the SIGINT handler."""
    import threading

    before = signal.getsignal(signal.SIGINT)
    mine = threading.Event()
    with stop_on_signals(mine) as outer:
        assert outer is mine
        signal.signal(signal.SIGINT, signal.default_int_handler)  # as SparkContext does
        with stop_on_signals(mine):
            os.kill(os.getpid(), signal.SIGINT)
            assert mine.wait(5)
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    assert signal.getsignal(signal.SIGINT) is before


def test_kept_handlers_ignore_ctrl_c_and_stop_on_sigterm_after_the_block() -> None:
    """A command that ends its process with the block: a late Ctrl-C must not kill it on its way out."""
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        with stop_on_signals(keep=True) as stop:
            pass
        assert signal.getsignal(signal.SIGINT) == signal.SIG_IGN  # the interpreter's exit keeps it ignored
        os.kill(os.getpid(), signal.SIGINT)
        os.kill(os.getpid(), signal.SIGTERM)
        assert stop.wait(5)
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
