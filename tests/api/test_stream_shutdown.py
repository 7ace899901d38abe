"""A stream still open when the server shuts down ends with an event that says so.

A translation stream gets the shutdown grace period, as any request does, and the ones still running
near its end get an `error` event that says the server is shutting down; a job's event stream (it
follows work that outlives the server: the job resumes after a restart) gets it at once. Either way
the client can tell a cut stream from a finished one. ``server.should_exit = True`` is what SIGTERM
does to uvicorn.
"""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.servers import running_server

STREAMS = {
    "libretranslate": ("/translate/stream", {"q": "慢慢地翻译。", "source": "auto", "target": "en"}),
    "openai": ("/v1/chat/completions", {"model": "mtserve-zh-en", "stream": True,
                                        "messages": [{"role": "user", "content": "慢慢地翻译。"}]}),
}
WAIT_S = 15.0


def read_stream(url: str, path: str, payload: dict | None, lines: list[str], first: threading.Event) -> None:
    method = "POST" if payload is not None else "GET"
    try:
        with httpx.stream(method, url + path, json=payload, timeout=30) as r:
            for line in r.iter_lines():
                lines.append(line)
                first.set()
    except httpx.HTTPError as exc:
        lines.append(f"!{type(exc).__name__}")
    finally:
        first.set()


def stream_through_shutdown(url: str, server, path: str, payload: dict | None) -> tuple[list[str], float]:
    """Open the stream, wait for its first line, shut the server down: (every line, seconds to its end)."""
    lines: list[str] = []
    first = threading.Event()
    reader = threading.Thread(target=read_stream, args=(url, path, payload, lines, first), daemon=True)
    reader.start()
    assert first.wait(WAIT_S), "the stream never started"
    started = time.monotonic()
    server.should_exit = True
    reader.join(WAIT_S)
    assert not reader.is_alive(), "the stream did not end"
    return lines, time.monotonic() - started


@pytest.mark.parametrize("family", STREAMS)
def test_a_translation_stream_cut_by_shutdown_ends_with_an_error_event(family: str):
    path, payload = STREAMS[family]
    engine = FakeEngine(delay_s=60.0, slots=1)  # never done within the grace period
    with running_server(engine, shutdown_grace_s=2.0) as (url, server):
        lines, ended_s = stream_through_shutdown(url, server, path, payload)
    data = [json.loads(line[5:]) for line in lines if line.startswith("data:") and line[5:].strip()[:1] == "{"]
    assert not any(line.startswith("!") for line in lines), lines  # a clean end, not a broken connection
    if family == "libretranslate":
        assert "event: error" in lines, lines
        message = data[-1]["error"]
    else:
        message = data[-1]["error"]["message"]
    assert "shutting down" in message
    assert ended_s < 2.0 + 1.0  # within the grace period: the stream ended itself, uvicorn did not cut it
    assert engine.cancelled  # and its engine work was stopped


def test_a_stream_that_finishes_within_the_grace_period_finishes():
    engine = FakeEngine(delay_s=1.0, slots=1)
    with running_server(engine, shutdown_grace_s=5.0) as (url, server):
        lines, _ = stream_through_shutdown(url, server, *STREAMS["libretranslate"])
    events = [line.split(":", 1)[1].strip() for line in lines if line.startswith("event:")]
    assert events[-1] == "done" and "error" not in events


def test_a_job_event_stream_ends_at_once_with_an_error_event_on_shutdown():
    engine = FakeEngine(delay_s=60.0, slots=1)
    with running_server(engine, shutdown_grace_s=5.0) as (url, server):
        job = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en"},
                         files={"file": ("slow.txt", "慢慢地翻译。".encode())}, timeout=30).json()
        lines, ended_s = stream_through_shutdown(url, server, f"/jobs/{job['id']}/events", None)
    events = [line.split(":", 1)[1].strip() for line in lines if line.startswith("event:")]
    data = [json.loads(line[5:]) for line in lines if line.startswith("data:")]
    assert events[-1] == "error", lines
    assert "shutting down" in data[-1]["error"] and "resume" in data[-1]["error"]
    assert ended_s < 5.0  # at once, not at the end of the grace period
