"""Planning that nobody waits for any more stops at its next check.

A long text is cut and planned in a worker thread (service.translator's ``_off_loop``), and a
thread cannot be cancelled. So the task that awaits it, when it is cancelled (a deleted document
job, a client that went away), sets the stop it handed the thread, and the planning loops call
``check()``. Otherwise a deleted 2 MB subtitle file kept a thread cutting sentences for seconds,
and on a 2-core machine every other request waited for the GIL meanwhile.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Iterator

_STOP: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("planning_stop", default=None)


class Abandoned(Exception):
    """Raised inside planning whose awaiting task was cancelled; nobody sees it."""


def check() -> None:
    """Raise Abandoned if the work this thread does was given up."""
    stop = _STOP.get()
    if stop is not None and stop.is_set():
        raise Abandoned


@contextlib.contextmanager
def stoppable() -> Iterator[threading.Event]:
    """A stop for the work started inside (``asyncio.to_thread`` copies the context it is called in)."""
    stop = threading.Event()
    token = _STOP.set(stop)
    try:
        yield stop
    finally:
        _STOP.reset(token)
