"""SIGTERM while a model is written: the temporaries go before the process ends.

SIGTERM's default action ends the process at once, skipping every ``finally``: a scheduler's
timeout, ``docker stop`` or ``kill`` in the middle of a write would leave the temporaries
(as large as the weights) until the next export to the same path. KeyboardInterrupt (SIGINT)
is an exception already, so the writer's ``finally`` handles it."""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class Terminated(BaseException):
    """SIGTERM arrived while tonnx was writing files (raised by the handler below)."""


def _raise_terminated(signum, frame) -> None:
    raise Terminated()


@contextlib.contextmanager
def cleanup_on_sigterm() -> Iterator[None]:
    """While the block runs, SIGTERM raises :class:`Terminated` so the writer's cleanup runs;
    then the signal is raised again with its default action: the process ends as it would
    have (killed by SIGTERM), with nothing of the write left on disk.

    Only where SIGTERM has its default action, and in the main thread (the only one Python
    delivers signals to): a handler the user installed is theirs and is left alone."""
    if (threading.current_thread() is not threading.main_thread()
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL):
        yield
        return
    signal.signal(signal.SIGTERM, _raise_terminated)
    try:
        yield
    except Terminated:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        signal.raise_signal(signal.SIGTERM)
        raise  # only if the process survives its own SIGTERM (it does not by default)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
