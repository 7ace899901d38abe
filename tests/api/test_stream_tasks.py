"""Streams whose clients hang up leave no task behind.

A stream waits for its segment's next delta with a getter task on the segment's queue. Cancelled
while waiting (its client hung up), it left that getter pending; when no delta came after (the
engine stopped, as a cancelled one does), the task stayed until the garbage collector destroyed it,
and asyncio logged "Task was destroyed but it is pending". The segment here hangs in the engine
without a delta, so the getter would wait for ever.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.servers import running_server, wait_until

TEXT = "第一句。挂起的句子。"
STREAMS = {
    "libretranslate": ("/translate/stream", {"q": TEXT, "source": "zh", "target": "en"}),
    "openai": ("/v1/chat/completions", {"model": "mtserve-zh-en", "stream": True,
                                        "messages": [{"role": "user", "content": TEXT}]}),
}
LONG_LIVED = {"_shutdown_watcher"}  # sse-starlette's one watcher per event loop, which ends with the server


def tasks_on(loop: asyncio.AbstractEventLoop) -> list[str]:
    names = [getattr(task.get_coro(), "__qualname__", "?") for task in list(asyncio.all_tasks(loop))]
    return sorted(name for name in names if name not in LONG_LIVED)


@pytest.mark.parametrize("family", STREAMS)
def test_a_stream_whose_client_hangs_up_leaves_no_task_behind(family: str):
    path, payload = STREAMS[family]
    engine = FakeEngine(delay_s=0.1, slots=2, hang_on="挂起")
    with running_server(engine, segment_budget_chars=0) as (url, server):
        loop = server.servers[0].get_loop()
        before = Counter(tasks_on(loop))
        try:
            with httpx.stream("POST", url + path, json=payload, timeout=30) as r:
                seen = ""
                for line in r.iter_lines():
                    seen += line
                    if "句" in seen and "。" in seen:  # the first sentence's end: the stream moves on
                        break
                # the stream now waits for the hung sentence's deltas; hang up once it is in the engine
                wait_until(lambda: any("挂起" in call.text for call in engine.calls), 10,
                           "the hung sentence in the engine")
            deadline = time.monotonic() + 10
            left = Counter(tasks_on(loop)) - before
            while left and time.monotonic() < deadline:
                time.sleep(0.1)
                left = Counter(tasks_on(loop)) - before
            admitted = httpx.get(f"{url}/health/details", timeout=5).json()["queue"]["admitted"]
        finally:
            engine.release()
    assert admitted == 0
    assert not left, f"left behind: {dict(left)}"
