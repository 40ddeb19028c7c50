"""Ctrl-C, SIGTERM and SIGHUP end a job the same way: one line, status `interrupted` naming the signal.

SLURM sends SIGTERM at a job's time limit (and SIGHUP when the terminal goes); Python's default for both is
to die at once, leaving `summary.json` at `running`. `handling()` turns each of the three into
`Interrupted` (a KeyboardInterrupt), so the job's `except KeyboardInterrupt` records it.

A KeyboardInterrupt raised while a finalizer runs (a weakref callback, `__del__`) is printed by Python as
"Exception ignored in ..." and lost, and the job would go on to end `ok`. So the signal is also remembered
(`pending()`), and the job's bookkeeping raises it again at the next stage boundary and before it writes
`ok` (`raise_pending`).

Once a job is stopping (`ignore()`: its interruption is being recorded), the process is on its way out: every
`handling()` block that ends from then on leaves the three signals ignored instead of restoring Python's
defaults, so a second signal (Ctrl-C then SIGTERM 50 ms later) can no longer kill the process in the gap
before it exits with 130 and its one line. `clear()` (a new job) ends that state.
"""

from __future__ import annotations

import signal
import threading
from contextlib import contextmanager
from typing import Any, Iterator, Optional

HANDLED = tuple(s for s in (signal.SIGINT, getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)) if s)
_PENDING: Optional[int] = None
_STOPPING = False  # ignore() was called: the process is ending; handling() leaves the signals ignored


class Interrupted(KeyboardInterrupt):
    """A job stopped by a signal: Ctrl-C (SIGINT), SIGTERM or SIGHUP."""

    def __init__(self, signum: int = signal.SIGINT) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name

    def __str__(self) -> str:
        return "Ctrl-C (SIGINT)" if self.signum == signal.SIGINT else f"{self.name} (the process was told to stop)"


def interruption(signum: int) -> KeyboardInterrupt:
    """Ctrl-C as Python's own KeyboardInterrupt; SIGTERM / SIGHUP as `Interrupted` naming the signal."""
    return KeyboardInterrupt() if signum == signal.SIGINT else Interrupted(signum)


def signal_of(exc: BaseException) -> int:
    return exc.signum if isinstance(exc, Interrupted) else signal.SIGINT


def _handler(signum: int, frame: Any) -> None:
    global _PENDING
    _PENDING = signum
    raise interruption(signum)


def pending() -> Optional[int]:
    """The signal received and not yet handled, if any."""
    return _PENDING


def clear() -> None:
    global _PENDING, _STOPPING
    _PENDING = None
    _STOPPING = False


def stopping() -> bool:
    """An interruption is being recorded: the process is ending (`ignore()` was called)."""
    return _STOPPING


def raise_pending() -> None:
    """Raise the signal a finalizer swallowed (no-op when none is pending)."""
    if _PENDING is not None:
        raise interruption(_PENDING)


def ignore() -> None:
    """While an interruption is being recorded, further signals are ignored (no second traceback), to the end
    of the process (`handling()` no longer restores the defaults)."""
    global _STOPPING
    if threading.current_thread() is not threading.main_thread():
        return
    _STOPPING = True
    for signum in HANDLED:
        try:
            signal.signal(signum, signal.SIG_IGN)
        except (ValueError, OSError):
            pass


@contextmanager
def handling() -> Iterator[None]:
    """SIGINT, SIGTERM and SIGHUP raise `Interrupted` inside the block (main thread only; restored after, or
    left ignored once the process is stopping: an interruption that leaves the block stops it). A signal the
    process ignores (a background job's SIGINT under `nohup`) stays ignored."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in HANDLED:
            try:
                old = signal.getsignal(signum)
                if old is signal.SIG_IGN:
                    continue
                previous[signum] = old
                signal.signal(signum, _handler)
            except (ValueError, OSError):
                pass
    try:
        yield
    except KeyboardInterrupt:  # an interruption leaving the block: the process is ending, no second signal kills it
        ignore()
        raise
    finally:
        for signum, old in previous.items():
            try:
                restored = signal.SIG_IGN if _STOPPING else (old if old is not None else signal.SIG_DFL)
                signal.signal(signum, restored)
            except (ValueError, OSError):
                pass
