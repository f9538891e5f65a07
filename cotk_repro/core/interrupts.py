"""A Ctrl-C that Python swallowed: noted, so that the command it was meant for still stops.

Python's own SIGINT handler raises KeyboardInterrupt wherever the main thread happens to be. Where that is a
weakref callback or a ``__del__`` (importlib runs such a callback for its module locks during imports), Python
prints "Exception ignored in ..." and goes on, and the Ctrl-C is lost: ``cotk-repro run`` interrupted while it
imported went on to start the entry and wait for it. The command line installs :func:`note_and_raise` before it
imports anything else (it raises KeyboardInterrupt as Python's does, and notes it); code that takes the signals
over later (a run's latch, :func:`cotk_repro.records.runner.forwarding_signals`) asks :func:`take_swallowed`
whether one came that nobody acted on: a KeyboardInterrupt that was not swallowed ends the process first.
"""

from __future__ import annotations

import signal
import threading
from typing import Any

_noted: list[int] = []


def note_and_raise(signum: int, _frame: Any) -> None:
    """Python's SIGINT handler (raise KeyboardInterrupt), noting the signal first."""
    _noted.append(signum)
    raise KeyboardInterrupt


def install() -> None:
    """Note every Ctrl-C from now on (only in the main thread, and only over Python's default handler)."""
    if threading.current_thread() is threading.main_thread() and signal.getsignal(signal.SIGINT) is (
        signal.default_int_handler
    ):
        signal.signal(signal.SIGINT, note_and_raise)


def take_swallowed() -> list[int]:
    """The signals noted so far (then forgotten): where the process still runs, none of them stopped it."""
    taken = list(_noted)
    _noted.clear()
    return taken
