"""Bulk work runs on threads the OS schedules after the engine's (a higher nice value, per thread)."""

from __future__ import annotations

import asyncio
import os
import sys
import threading

import pytest

from mtserve.service.background import BACKGROUND_NICE, in_background


def _own_priority() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread priority is Linux's")
def test_background_work_runs_at_a_lower_priority_than_the_caller():
    async def main():
        return _own_priority(), await in_background(_own_priority)

    caller, background = asyncio.run(main())
    if caller >= BACKGROUND_NICE:
        pytest.skip(f"the tests themselves run at nice {caller}")
    assert background == BACKGROUND_NICE
