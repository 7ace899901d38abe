"""Bulk work that must not slow anyone's translation, run on threads the OS schedules after the engine's.

A translation-memory import builds its n-gram index inside SQLite for tens of seconds of CPU. Its lock
no longer holds up a translation, but on a machine with as many cores as the engine has threads it
still took their CPU: a short translation decoded while a 3 MB import ran took 4 s instead of 1.4 s.
Threads of this pool run at a lower priority (a higher nice value, which Linux sets per thread), so
the engine's threads take the cores when they need them and the import gets what is left.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import logging
import os
import threading
from typing import Any, Callable, TypeVar

log = logging.getLogger(__name__)
T = TypeVar("T")

BACKGROUND_NICE = 10  # above the engine's 0: about a tenth of a core's share when both want it
WORKERS = 2


def _lower_priority() -> None:
    try:
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), BACKGROUND_NICE)
    except (OSError, AttributeError) as exc:  # not Linux, or not allowed: the work runs at normal priority
        log.info("background threads keep normal priority", extra={"event": "background_priority",
                                                                   "error": str(exc)})


_POOL = concurrent.futures.ThreadPoolExecutor(WORKERS, thread_name_prefix="mtserve-background",
                                              initializer=_lower_priority)


async def in_background(work: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``work(*args, **kwargs)`` on a low-priority thread. Cancelling the caller does not stop the
    thread: the work must take a cancel event of its own, as a TM import does."""
    return await asyncio.get_running_loop().run_in_executor(_POOL, functools.partial(work, *args, **kwargs))
