"""A stream is admitted before its first event: a full queue is a 503 with Retry-After, never a 200
followed by an in-band error."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.servers import serve, wait_until

STREAMS = {
    "libretranslate, source auto": ("/translate/stream", {"q": "快。", "source": "auto", "target": "en"}),
    "libretranslate, source zh": ("/translate/stream", {"q": "快。", "source": "zh", "target": "en"}),
    "openai, alias auto": ("/v1/chat/completions", {"model": "mtserve-auto-en", "stream": True,
                                                    "messages": [{"role": "user", "content": "快。"}]}),
}


@pytest.mark.parametrize("name", STREAMS)
def test_a_stream_on_a_full_queue_is_a_503_with_retry_after(name: str) -> None:
    path, body = STREAMS[name]
    engine = FakeEngine(delay_s=1.5, slots=1)
    with serve(engine, max_queue=1) as url:
        async def while_busy():
            async with httpx.AsyncClient(timeout=30) as client:
                busy = asyncio.create_task(
                    client.post(f"{url}/translate", json={"q": "慢。", "source": "zh", "target": "en"}))
                await asyncio.to_thread(wait_until, lambda: engine.calls, 10, "the busy request in the engine")
                refused = await client.post(url + path, json=body)
                return await busy, refused

        busy, refused = asyncio.run(while_busy())
    assert busy.status_code == 200
    assert refused.status_code == 503, refused.text[:300]
    assert int(refused.headers["retry-after"]) >= 1
    assert "capacity" in refused.text


def test_an_admitted_stream_still_starts_with_the_detected_language() -> None:
    with serve(FakeEngine()) as url:
        with httpx.stream("POST", f"{url}/translate/stream", timeout=30,
                          json={"q": "你好。", "source": "auto", "target": "en"}) as r:
            events = [line.split(":", 1)[1].strip() for line in r.iter_lines() if line.startswith("event:")]
            status = r.status_code
        health = httpx.get(f"{url}/health/details").json()
    assert status == 200
    assert events[0] == "detected" and events[-1] == "done" and "delta" in events
    assert health["queue"]["admitted"] == 0  # the ticket closed with the stream


def test_a_same_language_stream_is_admitted_and_answered_without_the_engine() -> None:
    engine = FakeEngine()
    with serve(engine) as url:
        r = httpx.post(f"{url}/translate/stream", timeout=30,
                       json={"q": "Hello.", "source": "en", "target": "en"})
    data = [json.loads(line[5:]) for line in r.text.splitlines() if line.startswith("data:")]
    assert r.status_code == 200 and data[-1]["translatedText"] == "Hello."
    assert engine.calls == []
