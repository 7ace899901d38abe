"""A client that stops reading a stream gives its engine work back, as one that hangs up does.

The stalled client keeps its socket open and never reads (a 4 KiB receive buffer); the stream's
first sentences are fast and long, so its unread output soon fills the socket buffers, and the rest
are slow, so the request would hold the engine for a minute. Once a send has waited
write_timeout_s, the server closes the connection, and the request's ticket and segments go.
"""

from __future__ import annotations

import json
import socket
import time

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.servers import serve

FAST = [f"快句子第{i}号，" + "这是一个为了填满缓冲区而写得很长的句子" * 15 + "。" for i in range(200)]
SLOW = [f"慢句子第{i}号。" for i in range(100)]  # 100 s of engine work at 1 s each, on 2 slots: 50 s
STREAMS = {
    "libretranslate": ("/translate/stream", {"q": "".join(FAST + SLOW), "source": "zh", "target": "en"}),
    "openai": ("/v1/chat/completions", {"model": "mtserve-zh-en", "stream": True,
                                        "messages": [{"role": "user", "content": "".join(FAST + SLOW)}]}),
}
WAIT_S = 20.0


@pytest.mark.parametrize("family", STREAMS)
def test_a_stream_whose_client_stops_reading_is_cancelled_and_frees_its_work(family: str):
    path, payload = STREAMS[family]
    body = json.dumps(payload, ensure_ascii=False).encode()
    engine = FakeEngine(slots=2, delay_s=1.0, delays={text: 0.0 for text in FAST})
    with serve(engine, segment_budget_chars=0, char_limit=200_000, request_timeout_s=120,
               write_timeout_s=1.0, send_buffer_bytes=16_384) as url:
        port = int(url.rsplit(":", 1)[1])
        stalled = socket.socket()
        stalled.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        stalled.connect(("127.0.0.1", port))
        stalled.sendall(b"POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                        b"Content-Length: %d\r\n\r\n" % (path.encode(), len(body)) + body)
        try:
            deadline = time.monotonic() + WAIT_S
            admitted = 1
            while time.monotonic() < deadline:
                admitted = httpx.get(f"{url}/health/details", timeout=5).json()["queue"]["admitted"]
                if admitted == 0 and engine.calls:
                    break
                time.sleep(0.2)
            calls = len(engine.calls)
            after = httpx.post(f"{url}/translate", json={"q": "你好。", "source": "zh", "target": "en"}, timeout=10)
        finally:
            stalled.close()
    assert admitted == 0, "the stalled stream still holds its ticket"
    assert calls < len(FAST) + len(SLOW), "the stalled stream's work was not given back"
    assert after.status_code == 200


def test_a_stream_whose_client_hangs_up_before_its_first_event_gives_its_work_back():
    """Its first event waits behind another request; the 200 has not gone out yet, and the hang-up
    must still cancel it, not leave it queued until the engine gets to it."""
    engine = FakeEngine(slots=1, delay_s=0.1, delays={"忙。": 3.0})
    with serve(engine) as url:
        port = int(url.rsplit(":", 1)[1])
        busy = socket.create_connection(("127.0.0.1", port))
        body = json.dumps({"q": "忙。", "source": "zh", "target": "en"}, ensure_ascii=False).encode()
        busy.sendall(b"POST /translate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n" % len(body) + body)
        deadline = time.monotonic() + WAIT_S
        while not engine.calls and time.monotonic() < deadline:
            time.sleep(0.02)
        body = json.dumps({"q": "走了。", "source": "zh", "target": "en"}, ensure_ascii=False).encode()
        with socket.create_connection(("127.0.0.1", port)) as gone:
            gone.sendall(b"POST /translate/stream HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                         b"Content-Length: %d\r\n\r\n" % len(body) + body)
            while httpx.get(f"{url}/health/details", timeout=5).json()["queue"]["admitted"] < 2 \
                    and time.monotonic() < deadline:
                time.sleep(0.02)
        while httpx.get(f"{url}/health/details", timeout=5).json()["queue"]["admitted"] > 1 \
                and time.monotonic() < deadline:
            time.sleep(0.02)
        busy_still_running = engine.in_flight == 1
        busy.recv(65536)  # its answer: the engine is free again
        time.sleep(0.5)  # room for a queued segment to reach it, had it stayed queued
        busy.close()
    assert busy_still_running, "the stream was let go only once the request before it had finished"
    assert [call.text for call in engine.calls] == ["忙。"]
