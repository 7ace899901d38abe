"""End to end: a real `mtserve serve` with the real small model, over HTTP on loopback."""

from __future__ import annotations

import json
import re

import httpx
import pytest

from tests.servers import engine_generates, metric_value, real_server, samples_named

pytestmark = pytest.mark.model

TIMEOUT = httpx.Timeout(120.0)


def post(url: str, path: str, **kwargs) -> httpx.Response:
    return httpx.post(f"{url}{path}", timeout=TIMEOUT, **kwargs)


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


def test_zh_to_en_keeps_the_content_words(live_server):
    with engine_generates(live_server):
        r = post(live_server, "/translate",
                 json={"q": "请在会议开始前把报告发给我。", "source": "zh", "target": "en"})
        assert r.status_code == 200, r.text  # inside: a refused request says why, not "no tokens"
    text = r.json()["translatedText"]
    assert {"report", "meeting"} <= words(text), text
    assert "detectedLanguage" not in r.json()
    assert r.headers["x-request-id"]


@pytest.mark.parametrize(
    "source_text, expected",
    [
        ("我每天早上喝一杯咖啡。", {"coffee"}),
        ("这本书非常有意思。", {"book"}),
        ("明天我们去北京。", {"beijing", "tomorrow"}),
    ],
)
def test_everyday_sentences(live_server, source_text, expected):
    with engine_generates(live_server):
        r = post(live_server, "/translate", json={"q": source_text, "source": "zh", "target": "en"})
    assert r.status_code == 200, r.text
    assert expected <= words(r.json()["translatedText"]), r.json()


def test_list_input_and_auto_detection(live_server):
    q = ["我喜欢猫。", "今天很冷。"]
    with engine_generates(live_server):
        r = post(live_server, "/translate", json={"q": q, "source": "auto", "target": "en"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body["translatedText"], list) and len(body["translatedText"]) == 2
    assert "cat" in " ".join(words(body["translatedText"][0]))
    assert "cold" in words(body["translatedText"][1])
    assert [d["language"] for d in body["detectedLanguage"]] == ["zh", "zh"]
    assert all(d["confidence"] > 50 for d in body["detectedLanguage"])


def test_form_data_like_libretranslate_clients_send(live_server):
    with engine_generates(live_server):
        r = post(live_server, "/translate", data={"q": "我喜欢音乐。", "source": "zh", "target": "en"})
    assert r.status_code == 200, r.text
    assert "music" in words(r.json()["translatedText"])


def test_paragraphs_and_surrounding_whitespace_survive(live_server):
    q = "  我喜欢猫。他喜欢狗。\n\n今天很冷。\n"
    with engine_generates(live_server):
        r = post(live_server, "/translate", json={"q": q, "source": "zh", "target": "en"})
    text = r.json()["translatedText"]
    assert text.startswith("  ") and text.endswith("\n")
    paragraphs = text.strip().split("\n\n")
    assert len(paragraphs) == 2, text
    assert "cold" in words(paragraphs[1])
    assert "\n" not in paragraphs[0]


def test_html_keeps_its_markup(live_server):
    q = '<p class="x">我喜欢<b>猫</b>。</p><script>var a = "不要翻译";</script>'
    with engine_generates(live_server):
        r = post(live_server, "/translate", json={"q": q, "source": "zh", "target": "en", "format": "html"})
    assert r.status_code == 200, r.text
    out = r.json()["translatedText"]
    kept = r'<p class="x">[^<]+<b>[^<]+</b>[^<]*</p><script>var a = "不要翻译";</script>'
    assert re.fullmatch(kept, out), out
    # the tag put back on the word it held: "I like <b>cats</b>."
    bold = re.search(r"<b>([^<]+)</b>", out).group(1)
    assert words(bold) & {"cat", "cats"}, out


def test_alternatives(live_server):
    with engine_generates(live_server):
        r = post(live_server, "/translate",
                 json={"q": "他很高兴。", "source": "zh", "target": "en", "alternatives": 2})
    assert r.status_code == 200, r.text
    body = r.json()
    assert isinstance(body["alternatives"], list) and 1 <= len(body["alternatives"]) <= 2, body
    assert all(isinstance(a, str) and a and a != body["translatedText"] for a in body["alternatives"])


def test_en_to_zh(live_server):
    with engine_generates(live_server):
        r = post(live_server, "/translate", json={"q": "I like cats.", "source": "en", "target": "zh"})
    assert r.status_code == 200
    assert "猫" in r.json()["translatedText"]


def test_languages_and_detect(live_server):
    langs = httpx.get(f"{live_server}/languages", timeout=TIMEOUT).json()
    by_code = {lang["code"]: lang for lang in langs}
    assert by_code["zh"]["name"] == "Chinese" and "en" in by_code["zh"]["targets"]
    assert "zh" not in by_code["zh"]["targets"]
    detected = post(live_server, "/detect", data={"q": "这是一个测试。"}).json()
    assert detected[0]["language"] == "zh" and detected[0]["confidence"] > 50
    assert post(live_server, "/detect", json={"q": "Hello"}).json()[0]["language"] == "en"


def test_sse_stream_sends_deltas_then_the_final_text(live_server):
    events = []
    with engine_generates(live_server), httpx.stream(
            "POST", f"{live_server}/translate/stream", timeout=TIMEOUT,
            json={"q": "我的邻居每天早上都喝绿茶。", "source": "auto", "target": "en"}) as r:
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in r.iter_lines():
            if line.startswith("event:"):
                kind = line.split(":", 1)[1].strip()
            elif line.startswith("data:"):
                events.append((kind, json.loads(line.split(":", 1)[1])))
    kinds = [k for k, _ in events]
    assert kinds[0] == "detected" and events[0][1]["language"] == "zh"
    assert kinds[-1] == "done" and kinds.count("delta") >= 2
    streamed = "".join(d["text"] for k, d in events if k == "delta")
    final = events[-1][1]["translatedText"]
    assert "tea" in words(final)
    assert words(final) <= words(streamed) | {""}


def test_health_and_metrics(live_server):
    health = httpx.get(f"{live_server}/health", timeout=TIMEOUT)
    assert health.status_code == 200 and health.json() == {"status": "ok"}  # LibreTranslate's words
    assert httpx.get(f"{live_server}/health/details", timeout=TIMEOUT).json()["ready"] is True
    assert httpx.get(f"{live_server}/health/live").json() == {"live": True}
    route = {"api": "libretranslate", "route": "/translate"}

    def total(name: str, **labels: str) -> float:  # samples, with labels and values: never a HELP line
        return sum(samples_named(live_server, name, **route, **labels).values())

    requests_before = total("mtserve_requests_total", status="200")
    latency_before = total("mtserve_request_latency_seconds_count")
    with engine_generates(live_server):
        r = post(live_server, "/translate", json={"q": "指标测试。", "source": "zh", "target": "en"})
    assert r.status_code == 200, r.text
    assert total("mtserve_requests_total", status="200") == requests_before + 1
    assert total("mtserve_request_latency_seconds_count") == latency_before + 1
    assert total("mtserve_request_latency_seconds_bucket", le="+Inf") == latency_before + 1
    for gauge in ("mtserve_num_segments_waiting", "mtserve_num_segments_running",
                  "mtserve_num_requests_admitted"):
        assert metric_value(live_server, gauge) == 0  # nothing left over once the answer is in
    assert metric_value(live_server, "mtserve_ready") == 1
    assert metric_value(live_server, "mtserve_cache_hits_total") == 0  # this server runs without a cache


def test_repeated_text_is_served_from_the_cache(model_path):
    # live_server runs without a cache, so that no test is answered from an earlier one's: this
    # test has a server of its own with the cache on.
    with real_server(model_path, {"MTSERVE_CACHE_SIZE": "100", "MTSERVE_THREADS": "1"}) as (url, _):
        q = {"q": "缓存测试的句子。", "source": "zh", "target": "en"}
        with engine_generates(url):
            first = post(url, "/translate", json=q).json()["translatedText"]
        assert metric_value(url, "mtserve_cache_misses_total") == 1
        generated = metric_value(url, "mtserve_generated_tokens_total")
        second = post(url, "/translate", json=q).json()["translatedText"]
        assert second == first
        assert metric_value(url, "mtserve_cache_hits_total") == 1
        assert metric_value(url, "mtserve_generated_tokens_total") == generated  # the engine was not asked


@pytest.mark.parametrize(
    "kwargs, status, fragment",
    [  # LibreTranslate's words in error, mtserve's advice in hint
        ({"json": {"q": "你好"}}, 400, "missing target parameter"),
        ({"json": {"q": "你好", "source": "zh", "target": "xx"}}, 400, "xx is not supported"),
        ({"json": {"q": [], "target": "en"}}, 400, "empty list"),
        ({"json": {"q": "你好", "target": "en", "format": "pdf"}}, 400, "pdf format is not supported"),
        ({"json": {"q": "你" * 10001, "target": "en"}}, 400, "request (10001) exceeds text limit (10000)"),
        ({"json": {"q": ["a"] * 65, "target": "en"}}, 400, "batch limit is 64"),
        ({"json": {"q": "你好", "target": "en", "alternatives": 99}}, 400, "alternatives parameter must be <= 3"),
        ({"content": b"{not json", "headers": {"content-type": "application/json"}}, 400, "not valid JSON"),
        ({"content": b"[1, 2]", "headers": {"content-type": "application/json"}}, 400, "object"),
        ({"content": b"q=hi", "headers": {"content-type": "text/plain"}}, 400, "JSON"),
    ],
)
def test_bad_input_gets_a_clear_json_error(live_server, kwargs, status, fragment):
    r = post(live_server, "/translate", **kwargs)
    assert r.status_code == status, r.text
    assert fragment in r.json()["error"] + " " + r.json().get("hint", "")


def test_a_raw_utf8_form_from_curl_is_translated(live_server):
    # curl -d 'q=你好世界&source=auto&target=en' localhost:8000/translate, byte for byte, as LibreTranslate takes it
    form = {"content-type": "application/x-www-form-urlencoded"}
    with engine_generates(live_server):
        r = post(live_server, "/translate", content="q=你好世界&source=auto&target=en".encode(), headers=form)
    assert r.status_code == 200, r.text
    print(r.json())
    assert r.json()["detectedLanguage"]["language"] == "zh", r.json()
    assert {"hello", "world"} & words(r.json()["translatedText"]), r.json()
    assert "German" not in r.json()["translatedText"]  # what the Latin-1 reading made of it
    detected = post(live_server, "/detect", content="q=你好世界".encode(), headers=form)
    assert detected.status_code == 200 and detected.json()[0]["language"] == "zh", detected.text


def test_unknown_routes_and_methods_are_json_errors(live_server):
    r = httpx.get(f"{live_server}/nope")
    assert r.status_code == 404 and "no such endpoint" in r.json()["error"]
    r = httpx.get(f"{live_server}/translate")
    assert r.status_code == 405 and "error" in r.json()


def test_openapi_and_docs(live_server):
    spec = httpx.get(f"{live_server}/openapi.json").json()
    assert {"/translate", "/translate/stream", "/languages", "/detect", "/health"} <= set(spec["paths"])
    assert httpx.get(f"{live_server}/docs").status_code == 200


def test_the_webui_page_is_served(live_server):
    page = httpx.get(f"{live_server}/")
    assert page.status_code == 200 and "<html" in page.text.lower()
    assert httpx.get(f"{live_server}/static/app.js").status_code == 200
