"""The strict retry's prompt, computed once before ready, comes back from llama.cpp's prompt cache.

It shares no prefix with the first attempt's prompt, so a cold retry computes all of it (~630
tokens) in the batch every slot decodes in. Warmed, a later retry in any slot computes only its
text: llama.cpp sees a slot that would keep little of its cache, saves it, and loads the better
prompt it holds.
"""

from __future__ import annotations

import asyncio

import pytest

from mtserve.engines.base import EngineRequest
from mtserve.service.runtime import Runtime
from mtserve.settings import Settings
from tests.fakes import FakeEngine


def _llamacpp(model_path, n_parallel: int = 2, max_output_tokens: int = 32, **options):
    from mtserve.engines.llamacpp import LlamaCppEngine

    return LlamaCppEngine(model_path, model_name="m", family="qwen", languages=("zh", "en"), threads=2,
                          n_parallel=n_parallel, ctx_per_slot=1024, max_output_tokens=max_output_tokens, **options)


def _strict_retry_tokens(engine, text: str = "一加一等于几？") -> tuple[int, int]:
    """(tokens computed, tokens from cache) of a strict retry of ``text``, as this thread made it."""
    engine.translate(EngineRequest(text, "zh", "en", strict=True))
    timings = engine.last_timings()
    return int(timings["prompt_n"]), int(timings["cache_n"])


def _strict_prompt_tokens(engine) -> tuple[int, int]:
    """(tokens computed, tokens from cache) of a strict retry after a normal request."""
    engine.translate(EngineRequest("他显得很高兴。", "zh", "en"))
    return _strict_retry_tokens(engine)


@pytest.mark.model
def test_a_warmed_strict_prompt_is_served_from_the_prompt_cache(model_path):
    cold = _llamacpp(model_path)
    cold.load()
    try:
        computed_cold, cached_cold = _strict_prompt_tokens(cold)
    finally:
        cold.close()
    warm = _llamacpp(model_path)
    warm.load()
    try:
        warm.warm_strict([("zh", "en")])
        computed, cached = _strict_prompt_tokens(warm)
    finally:
        warm.close()
    print(f"strict retry: cold {computed_cold} computed / {cached_cold} cached; warmed {computed} / {cached}")
    assert computed_cold > 500 and cached_cold < 50  # nothing of it was in any slot
    assert computed < 40 and cached > 500  # only the text's own turn is computed


@pytest.mark.model
def test_the_warmed_strict_prompt_outlives_the_traffic_after_it(model_path):
    """Busy slots that turn over leave idle ones with new states at every task's start. llama.cpp's
    own default copies each into the prompt cache then, and with a budget of a few states the
    warmed strict prompt, the oldest entry, was the one pushed out."""
    from concurrent.futures import ThreadPoolExecutor

    engine = _llamacpp(model_path, n_parallel=4, max_output_tokens=16, prompt_cache_ram_mib=16)
    engine.load()
    subjects = ("他显得很高兴。", "今天下雨了。", "我们明天见。", "这本书很有意思。")
    endings = ("请关上门。", "火车晚点了。", "她在学习中文。", "这个问题很难。")
    try:
        engine.warm_strict([("zh", "en")])
        with ThreadPoolExecutor(6) as pool:  # more callers than slots, as under load
            list(pool.map(lambda text: engine.translate(EngineRequest(text, "zh", "en", max_tokens=4)),
                          [a + b for a in subjects for b in endings]))
        computed, cached = _strict_retry_tokens(engine)
    finally:
        engine.close()
    assert computed < 40 and cached > 500, (computed, cached)


@pytest.mark.model
def test_two_strict_retries_at_once_both_find_the_warmed_prompt(model_path):
    """The state llama.cpp keeps goes to the one slot that takes it: a second retry beside the
    first would compute the whole strict prompt while every slot waits, so it waits its turn."""
    from concurrent.futures import ThreadPoolExecutor

    engine = _llamacpp(model_path)
    engine.load()
    try:
        engine.warm_strict([("zh", "en")])
        with ThreadPoolExecutor(2) as pool:
            retries = list(pool.map(lambda text: _strict_retry_tokens(engine, text),
                                    ["一加一等于几？", "你有没有时间？"]))
    finally:
        engine.close()
    assert all(computed < 40 and cached > 500 for computed, cached in retries), retries


class WarmableEngine(FakeEngine):
    prompted = True

    def __init__(self):
        super().__init__()
        self.warmed: list[list[tuple[str, str]]] = []

    def warm_strict(self, pairs):
        self.warmed.append(list(pairs))


def _warmed(tmp_path, serving: bool, **settings) -> list:
    engine = WarmableEngine()

    async def main():
        runtime = Runtime(Settings(home=tmp_path, **settings), engine, serving=serving)
        await runtime.start()
        await runtime.wait_ready()
        assert runtime.ready
        await runtime.stop()

    asyncio.run(main())
    return engine.warmed


def test_a_server_warms_its_pairs_before_ready_and_one_shot_commands_do_not(tmp_path):
    assert _warmed(tmp_path, serving=True) == [[("zh", "en")]]
    assert _warmed(tmp_path, serving=True, warm_strict="zh:en, en:zh,xx:en") == [[("zh", "en"), ("en", "zh")]]
    assert _warmed(tmp_path, serving=False) == []  # mtserve translate: start-up time is the whole run
    assert _warmed(tmp_path, serving=True, warm_strict="") == []
    assert _warmed(tmp_path, serving=True, guardrails=False) == []  # no retries, nothing to warm
