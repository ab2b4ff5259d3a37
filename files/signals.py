"""Termination signals as exceptions, so that a command stopped by SIGTERM or SIGHUP cleans up as on Ctrl-C.

Python turns SIGINT into ``KeyboardInterrupt``, which runs every ``finally`` block on its way out
(:func:`ckptplan.files.atomic.atomic_write` removes its temporaries there). SIGTERM (``kill``, a batch
scheduler's time limit, ``docker stop``) and SIGHUP (a closed terminal or SSH session) kill the
process outright by default, leaving temporaries behind. :func:`terminate_on_signals` converts them,
while it is active, into :class:`Terminated`, a ``SystemExit`` whose code is ``128 + signal number``
(143 for SIGTERM, 129 for SIGHUP, the shell's convention), so the same clean-up runs. A second
signal while the first is being handled is ignored (the clean-up is not interrupted); the previous
handlers are restored on leaving. SIGKILL cannot be caught: the next write into the folder removes
what it leaves (:func:`ckptplan.files.atomic.clean_stale_temporaries`).

Signals are delivered to the main thread only; elsewhere (a worker thread, a Dask worker) the
context manager does nothing.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

__all__ = ["HANDLED_SIGNALS", "Terminated", "terminate_on_signals"]

#: the signals converted into :class:`Terminated` (those this platform has)
HANDLED_SIGNALS = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


class Terminated(SystemExit):
    """The process received a termination signal (``signum``); exit status ``128 + signum``."""

    def __init__(self, signum: int):
        super().__init__(128 + signum)
        self.signum = signum
        try:
            self.signame = signal.Signals(signum).name
        except ValueError:  # pragma: no cover
            self.signame = f"signal {signum}"

    def __str__(self) -> str:
        return f"stopped by {self.signame}"


@contextlib.contextmanager
def terminate_on_signals(signals: tuple[int, ...] = HANDLED_SIGNALS) -> Iterator[None]:
    """While active, raise :class:`Terminated` in the main thread when one of ``signals`` arrives."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    fired: list[int] = []

    def handler(signum: int, frame: object) -> None:
        if fired:  # already on the way out: let the clean-up finish
            return
        fired.append(signum)
        raise Terminated(signum)

    previous = {}
    try:
        for sig in signals:
            previous[sig] = signal.signal(sig, handler)
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old if old is not None else signal.SIG_DFL)
