"""tests/servers.py checks what it claims: a metric check reads samples, and engine_generates
tells an engine answer from a cached one."""

from __future__ import annotations

import httpx
import pytest

from tests.fakes import FakeEngine
from tests.servers import engine_generates, metric_value, samples_named, serve


def translate(url: str, q: str) -> httpx.Response:
    return httpx.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en"}, timeout=30)


def test_a_help_line_is_not_a_sample(tmp_path):
    with serve(FakeEngine(), home=tmp_path) as url:
        text = httpx.get(f"{url}/metrics", timeout=30).text
        assert "mtserve_guardrail_retries" in text  # a substring check passes on the HELP line alone
        assert samples_named(url, "mtserve_guardrail_retries_total") == {}  # there is no sample yet
        untranslated = 'mtserve_guardrail_retries_total{reason="untranslated"}'
        assert metric_value(url, untranslated, default=-1.0) == -1.0
        with pytest.raises(AssertionError, match="not in /metrics"):
            metric_value(url, 'mtserve_requests_total{api="deepl",route="/v2/translate",status="200"}')
        assert translate(url, "你好。").status_code == 200
        counted = samples_named(url, "mtserve_requests_total", api="libretranslate", route="/translate")
        assert list(counted.values()) == [1.0]
        ok = 'mtserve_requests_total{api="libretranslate",route="/translate",status="200"}'
        assert metric_value(url, ok) == 1.0


def test_engine_generates_fails_for_an_answer_from_the_cache():
    with serve(FakeEngine(), cache_size=100) as url:
        with engine_generates(url):
            first = translate(url, "缓存的句子。")
        with pytest.raises(AssertionError, match="generated no tokens"):
            with engine_generates(url):
                second = translate(url, "缓存的句子。")
    assert first.json() == second.json()
