"""SIGTERM as an exception while tonnx writes files, so the temporaries go before the end.

SIGTERM's default action ends the process at once, skipping every ``finally``: a scheduler's
timeout, ``docker stop`` or ``kill`` in the middle of a write would leave the temporaries
(as large as the weights) behind. KeyboardInterrupt (SIGINT) is an exception already, so
the writers' ``finally`` blocks handle it; this makes SIGTERM one too, for as long as a
write runs. One helper serves the library (the model writer: the process then ends as
killed) and commands (``tonnx export-llm``: the command reports it and exits 143)."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Terminated(BaseException):
    """SIGTERM arrived within :func:`sigterm_raises`. A BaseException: no ``except
    Exception`` on the way swallows it, and every ``with`` block is left as on an error."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


@contextlib.contextmanager
def sigterm_raises(*, resignal: bool) -> Iterator[None]:
    """Within the block, SIGTERM raises :class:`Terminated` where the main thread is.

    ``resignal=True`` (a library call: nobody asked to survive the signal): once the
    cleanup has run, SIGTERM is raised again with its default action, so the process ends
    as it would have, killed by SIGTERM. ``resignal=False`` (a command): :class:`Terminated`
    reaches the caller, which reports it.

    Installed only in the main thread (the only one Python delivers signals to) and only
    where SIGTERM has its default action: a handler the user installed is theirs, and inside
    an outer ``sigterm_raises`` the outer one's :class:`Terminated` passes through."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if resignal:
            signal.raise_signal(signal.SIGTERM)
        raise  # a command's report, or a process that survives its own SIGTERM
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
