import json
import threading
import time

import httpx
import pytest

from mtserve.bench.targets import (
    EngineTarget,
    FifoLock,
    HttpTarget,
    NaiveTarget,
    NotLoopback,
    check_loopback,
    make_target,
    parse_server_timing,
)
from mtserve.bench.workloads import WorkItem
from mtserve.settings import Settings
from tests.fakes import FakeEngine


@pytest.mark.parametrize("url", ["http://127.0.0.1:8000", "http://127.9.8.7:1/", "http://localhost:80",
                                 "http://[::1]:8000", "https://127.0.0.1"])
def test_loopback_urls_are_accepted(url):
    assert check_loopback(url) == url.rstrip("/")


@pytest.mark.parametrize("url", ["http://10.0.0.1:8000", "http://192.168.1.2", "http://example.com",
                                 "http://0.0.0.0:8000", "http://8.8.8.8", "ftp://127.0.0.1", "127.0.0.1:8000",
                                 "http://localhost.example.com"])
def test_other_hosts_are_refused_with_a_reason(url):
    with pytest.raises(NotLoopback, match="loopback|http"):
        check_loopback(url)
    with pytest.raises(NotLoopback):
        make_target(url, Settings())


def test_server_timing_is_parsed():
    header = 'queue;dur=12.5, engine;dur=301.0, segments;desc="2 segments, 1 cached, 17 tokens"'
    assert parse_server_timing(header) == {"queue_ms": 12.5, "engine_ms": 301.0, "segments": 2, "cached": 1,
                                           "tokens": 17}
    assert parse_server_timing(None) == {}


def _mock_server(request: httpx.Request) -> httpx.Response:
    if request.url.path == "/health":
        return httpx.Response(200, json={"status": "ok"})
    if request.url.path == "/health/details":
        return httpx.Response(200, json={"status": "ok", "ready": True, "model": "m", "engine": "fake"})
    body = json.loads(request.content)
    if body["q"] == "full":
        return httpx.Response(503, text="the service is at capacity")
    if request.url.path == "/translate":
        return httpx.Response(200, json={"translatedText": "hi"}, headers={
            "Server-Timing": 'queue;dur=1.0, engine;dur=2.0, segments;desc="1 segments, 0 cached, 3 tokens"'})
    sse = ('event: delta\ndata: {"text": ""}\n\nevent: delta\ndata: {"text": "h"}\n\n'
           'event: delta\ndata: {"text": "i"}\n\nevent: done\ndata: {"translatedText": "hi"}\n\n')
    return httpx.Response(200, text=sse, headers={"content-type": "text/event-stream"})


def test_http_target_plain_stream_and_errors():
    target = HttpTarget("http://127.0.0.1:9", server_pid=1, transport=httpx.MockTransport(_mock_server))
    target.start()
    reply = target.call(WorkItem("你好", "zh", "en", "short"))
    assert reply.ok and reply.text == "hi" and reply.generated_tokens == 3 and reply.queue_ms == 1.0
    streamed = target.call(WorkItem("你好", "zh", "en", "short"), stream=True)
    assert streamed.ok and streamed.text == "hi" and streamed.ttft_s is not None
    failed = target.call(WorkItem("full", "zh", "en", "short"))
    assert not failed.ok and "503" in failed.error
    assert target.describe()["model"] == "m"
    target.stop()


class _FakeEngineTarget(EngineTarget):
    def _build(self):
        return FakeEngine(slots=self.settings.n_parallel, delay_s=0.01)


class _FakeNaiveTarget(NaiveTarget):
    def _build(self):
        return FakeEngine(slots=self.settings.n_parallel, delay_s=0.01)


def test_engine_target_splits_sentences_and_sums_their_figures():
    target = _FakeEngineTarget(Settings(n_parallel=4, segment_budget_chars=0))  # one sentence per segment
    target.start()
    reply = target.call(WorkItem("今天很好。明天下雨。", "zh", "en", "paragraph"), stream=True)
    assert reply.ok and [c.text for c in target.engine.calls] == ["今天很好。", "明天下雨。"]
    assert reply.generated_tokens == len("<en>今天很好。") + len("<en>明天下雨。")
    assert reply.ttft_s is not None and reply.prompt_ms is None  # the fake engine has no llama.cpp timings
    target.stop()


def test_naive_target_serves_one_request_at_a_time_with_one_slot():
    target = _FakeNaiveTarget(Settings(n_parallel=4))
    target.start()
    assert target.engine.max_concurrency == 1
    threads = [threading.Thread(target=target.call, args=(WorkItem(f"句子{i}。", "zh", "en", "short"),))
               for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.engine.peak_in_flight == 1 and len(target.engine.calls) == 4


def test_fifo_lock_grants_in_arrival_order():
    lock, order = FifoLock(), []
    lock.__enter__()
    threads = []
    for i in range(5):
        def take(i=i):
            with lock:
                order.append(i)
        t = threading.Thread(target=take)
        t.start()
        threads.append(t)
        while len(lock._waiters) < i + 1:  # wait until thread i is queued before starting the next
            time.sleep(0.001)
    lock.__exit__(None, None, None)
    for t in threads:
        t.join()
    assert order == [0, 1, 2, 3, 4]


def test_unknown_target_spec():
    with pytest.raises(ValueError, match="unknown target"):
        make_target("gpu", Settings())
