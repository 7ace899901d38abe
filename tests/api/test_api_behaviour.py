"""API behaviour under load, deadlines and disconnects: a real uvicorn on loopback, a test double engine."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time

import httpx
import pytest
import uvicorn

from mtserve.api.app import create_app
from mtserve.api.server import server_config
from mtserve.settings import Settings
from tests.fakes import FakeEngine
from tests.servers import free_port, serve, wait_until


def translate(url, q="你好。", **kw):
    return httpx.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en", **kw}, timeout=30)


def test_sentences_are_split_scheduled_and_reassembled_in_order():
    engine = FakeEngine(slots=2)
    with serve(engine, segment_budget_chars=0) as url:  # one sentence per segment
        r = translate(url, q="第一句。第二句！\n\n第三句？")
    assert r.status_code == 200
    assert r.json()["translatedText"] == "<en>第一句。 <en>第二句！\n\n<en>第三句？"
    assert sorted(c.text for c in engine.calls) == ["第一句。", "第三句？", "第二句！"]


def test_full_queue_answers_503_with_retry_after():
    engine = FakeEngine(delay_s=1.5, slots=1)
    with serve(engine, max_queue=1) as url:
        async def burst():
            async with httpx.AsyncClient(timeout=30) as client:
                first = asyncio.create_task(
                    client.post(f"{url}/translate", json={"q": "慢。", "source": "zh", "target": "en"}))
                await asyncio.to_thread(wait_until, lambda: engine.calls, 10, "the first request in the engine")
                second = await client.post(f"{url}/translate",
                                           json={"q": "快。", "source": "zh", "target": "en"})
                return await first, second

        first, second = asyncio.run(burst())
    assert first.status_code == 200
    assert second.status_code == 503
    assert int(second.headers["retry-after"]) >= 1
    assert "capacity" in second.json()["error"]


def test_deadline_answers_504_and_cancels_engine_work():
    engine = FakeEngine(delay_s=3.0, slots=1)
    with serve(engine, request_timeout_s=0.5) as url:
        t0 = time.monotonic()
        r = translate(url, q="很慢的句子。")
        elapsed = time.monotonic() - t0
        wait_until(lambda: engine.cancelled, 3, "the engine work cancelled")
    assert r.status_code == 504 and "deadline" in r.json()["error"]
    assert elapsed < 2.0
    assert engine.cancelled == ["很慢的句子。"]


def test_client_disconnect_cancels_the_work():
    engine = FakeEngine(delay_s=5.0, slots=1)
    with serve(engine) as url:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{url}/translate", json={"q": "没人等的句子。", "source": "zh", "target": "en"},
                       timeout=httpx.Timeout(0.5))
        deadline = time.monotonic() + 3
        while not engine.cancelled and time.monotonic() < deadline:
            time.sleep(0.05)
        health = httpx.get(f"{url}/health/details").json()
    assert engine.cancelled == ["没人等的句子。"]
    assert health["queue"]["admitted"] == 0


def test_streaming_disconnect_cancels_the_work():
    engine = FakeEngine(delay_s=5.0, slots=1)
    with serve(engine) as url:
        with httpx.stream("POST", f"{url}/translate/stream", timeout=10,
                          json={"q": "流式的句子。", "source": "zh", "target": "en"}) as r:
            for line in r.iter_lines():
                if line.startswith("data:"):
                    break  # got the first delta; hang up
        deadline = time.monotonic() + 3
        while not engine.cancelled and time.monotonic() < deadline:
            time.sleep(0.05)
    assert engine.cancelled == ["流式的句子。"]


def test_an_engine_failure_is_a_500_json_error_with_the_request_id():
    engine = FakeEngine(slots=2, fail_on="坏")
    with serve(engine) as url:
        bad = translate(url, q="坏句子。")
        good = translate(url, q="好句子。")
    assert bad.status_code == 500
    assert bad.headers["x-request-id"] in bad.json()["error"]
    assert good.status_code == 200


def test_not_ready_while_the_model_loads():
    class SlowLoading(FakeEngine):
        def load(self):
            time.sleep(2)
            super().load()

    engine = SlowLoading()
    port = free_port()
    settings = Settings(host="127.0.0.1", port=port)
    server = uvicorn.Server(server_config(create_app(settings, engine=engine), settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.TransportError):
                live = httpx.get(f"{url}/health/live", timeout=1)
                break
            time.sleep(0.05)
        health = httpx.get(f"{url}/health")
        r = translate(url)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
    assert live.status_code == 200
    assert health.status_code == 503 and health.json() == {"status": "loading"}
    assert r.status_code == 503 and "loading" in r.json()["error"] and r.headers["retry-after"]


def test_same_source_and_target_returns_the_text_untouched():
    engine = FakeEngine()
    with serve(engine) as url:
        r = httpx.post(f"{url}/translate", json={"q": "Hello.", "source": "en", "target": "en"})
    assert r.json()["translatedText"] == "Hello."
    assert engine.calls == []


def test_punctuation_only_segments_never_reach_the_engine():
    engine = FakeEngine()
    with serve(engine) as url:
        r = translate(url, q="<p><b>你好</b></p><p>！</p>", format="html")
    # engine output is text, so escaped
    assert r.json()["translatedText"] == "<p><b>&lt;en&gt;你好</b></p><p>!</p>"
    assert [c.text for c in engine.calls] == ["你好"]


def test_api_keys_libretranslate_field_and_bearer_header(tmp_path):
    from mtserve.service.access import KeyStore

    secret, _ = KeyStore(tmp_path / "keys.sqlite3").add(name="client", rpm=2)
    engine = FakeEngine()
    with serve(engine, home=tmp_path, api_keys=True, require_api_key=True) as url:
        missing = translate(url)
        wrong = translate(url, api_key="mts_nope")
        by_field = translate(url, api_key=secret)
        by_header = httpx.post(f"{url}/translate", json={"q": "好。", "source": "zh", "target": "en"},
                               headers={"Authorization": f"Bearer {secret}"})
        limited = translate(url, api_key=secret)
        settings = httpx.get(f"{url}/frontend/settings").json()
    # LibreTranslate's words in error, mtserve's advice in hint
    assert missing.status_code == 400 and "required" in missing.json()["hint"]  # LibreTranslate's 400
    assert missing.json()["error"] == "Please contact the server operator to get an API key"
    assert wrong.status_code == 403 and wrong.json()["error"] == "Invalid API key"
    assert by_field.status_code == 200 and by_header.status_code == 200
    assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
    assert limited.json()["error"] == "Slowdown: 2 per 1 minute" and "per minute" in limited.json()["hint"]
    assert settings["keyRequired"] is True


def test_anonymous_callers_are_limited_per_ip(tmp_path):
    with serve(FakeEngine(), home=tmp_path, api_keys=True, anonymous_rpm=2) as url:
        statuses = [translate(url, q=f"句子{i}。").status_code for i in range(3)]
    assert statuses == [200, 200, 429]


def test_body_size_limit():
    with serve(FakeEngine(), max_body_bytes=1000) as url:
        big = httpx.post(f"{url}/translate", content=b'{"q": "' + b"a" * 2000 + b'", "target": "en"}',
                         headers={"content-type": "application/json"})

        def chunks():
            yield b'{"q": "'
            for _ in range(10):
                yield b"a" * 200
            yield b'", "target": "en"}'

        chunked = httpx.post(f"{url}/translate", content=chunks(),
                             headers={"content-type": "application/json"})
        small = translate(url)
    assert big.status_code == 413 and "1000 bytes" in big.json()["error"]
    assert chunked.status_code == 413
    assert small.status_code == 200


def test_client_can_shorten_the_deadline():
    engine = FakeEngine(delay_s=2.0, slots=1)
    with serve(engine) as url:
        t0 = time.monotonic()
        r = translate(url, q="慢。", timeout=0.3)
        elapsed = time.monotonic() - t0
    assert r.status_code == 504 and elapsed < 1.5


def test_cors_is_off_by_default_and_configurable():
    with serve(FakeEngine()) as url:
        off = httpx.options(f"{url}/translate", headers={"Origin": "http://example.test",
                                                          "Access-Control-Request-Method": "POST"})
    with serve(FakeEngine(), cors_origins="http://example.test") as url:
        on = httpx.options(f"{url}/translate", headers={"Origin": "http://example.test",
                                                         "Access-Control-Request-Method": "POST"})
    assert "access-control-allow-origin" not in off.headers
    assert on.headers["access-control-allow-origin"] == "http://example.test"


@pytest.mark.parametrize(
    "content, fragment",
    [
        (b'{"q": "\xff\xfe", "target": "en"}', "UTF-8"),
        (b"[" * 10000 + b"]" * 10000, "nested too deeply"),
        (b'{"q": 5, "target": "en"}', "q"),
        (b'{"q": null, "target": "en"}', "q"),
        (b'{"q": {"a": 1}, "target": "en"}', "q"),
        (b'{"q": ["a", 3], "target": "en"}', "q"),
        (b'{"q": "hi", "target": "en", "timeout": -1}', "timeout"),
    ],
)
def test_malformed_payloads_are_4xx_with_a_message(content, fragment):
    with serve(FakeEngine()) as url:
        r = httpx.post(f"{url}/translate", content=content, headers={"content-type": "application/json"})
    assert r.status_code == 400, r.text
    assert fragment in r.json()["error"]


def wait_for_health(url: str, status: int, timeout_s: float = 10) -> dict:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            r = httpx.get(f"{url}/health/details", timeout=2)
        except httpx.TransportError:  # a server thread just started may not listen yet
            time.sleep(0.05)
            continue
        if r.status_code == status:
            return r.json()
        time.sleep(0.05)
    raise AssertionError(f"/health/details did not answer {status} within {timeout_s} s")


def test_a_hung_engine_is_noticed_and_restarted():
    engine = FakeEngine(slots=1, hang_on="挂")
    try:
        with serve(engine, request_timeout_s=0.5, engine_hang_s=1.0) as url:
            engine.load_delay_s = 1.0  # the reload takes a while, so "restarting" can be seen
            hung = translate(url, q="挂起的句子。")
            during = wait_for_health(url, 503)
            after = wait_for_health(url, 200)
            ok = translate(url, q="正常的句子。")
            metrics = httpx.get(f"{url}/metrics").text
    finally:
        engine.release()
    assert hung.status_code == 504
    assert during["status"] == "restarting" and during["ready"] is False
    assert after["restarts"] == 1 and engine.loads == 2
    assert ok.status_code == 200 and ok.json()["translatedText"] == "<en>正常的句子。"
    assert "mtserve_engine_restarts_total 1.0" in metrics


def test_a_dead_engine_is_restarted_and_service_recovers():
    engine = FakeEngine(slots=2, die_on="死")
    with serve(engine) as url:
        dead = translate(url, q="死。")
        deadline = time.monotonic() + 10
        while engine.loads < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        after = wait_for_health(url, 200)
        ok = translate(url, q="活。")
    assert dead.status_code == 500 and "request id" in dead.json()["error"]
    assert engine.loads == 2 and after["restarts"] == 1
    assert ok.status_code == 200


def test_work_cut_by_the_shutdown_grace_period_gets_a_json_503():
    engine = FakeEngine(delay_s=5.0, slots=1)
    port = free_port()
    settings = Settings(host="127.0.0.1", port=port, shutdown_grace_s=0.5)
    server = uvicorn.Server(server_config(create_app(settings, engine=engine), settings))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{port}"
    wait_for_health(url, 200)
    result = {}

    def slow_request():
        result["r"] = translate(url, q="很长的工作。")

    client = threading.Thread(target=slow_request)
    client.start()
    wait_until(lambda: engine.in_flight, 10, "the request in the engine")
    server.should_exit = True  # what SIGTERM does
    client.join(timeout=10)
    thread.join(timeout=10)
    r = result["r"]
    assert r.status_code == 503 and "shutting down" in r.json()["error"]
    assert r.headers["retry-after"]


class _Records(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record):
        self.records.append(record)


@pytest.mark.parametrize(("path", "body", "read"), [
    ("/translate", {"q": "你好。", "source": "zh", "target": "en"}, lambda r: r["translatedText"]),
    ("/v2/translate", {"text": ["你好。", "再见。"], "target_lang": "EN"},
     lambda r: "".join(t["text"] for t in r["translations"])),
    ("/v1/chat/completions", {"model": "mtserve-zh-en", "messages": [{"role": "user", "content": "你好。"}]},
     lambda r: r["choices"][0]["message"]["content"]),
])
def test_every_family_logs_the_characters_it_sent_back(path, body, read):
    records = _Records()
    logger = logging.getLogger("mtserve.request")
    level = logger.level
    logger.addHandler(records)
    logger.setLevel(logging.INFO)  # the per-request line is at info
    try:
        with serve(FakeEngine(slots=2)) as url:
            reply = httpx.post(f"{url}{path}", json=body, timeout=30)
            deadline = time.monotonic() + 5
            while not any(getattr(r, "path", None) == path for r in records.records) and time.monotonic() < deadline:
                time.sleep(0.05)
    finally:
        logger.removeHandler(records)
        logger.setLevel(level)
    assert reply.status_code == 200, reply.text
    [line] = [r for r in records.records if getattr(r, "path", None) == path]
    text = read(reply.json())
    assert line.chars_out == len(text) > 0
    assert line.chars_in == sum(len(t) for t in (body.get("text") or [body.get("q") or "你好。"]))
