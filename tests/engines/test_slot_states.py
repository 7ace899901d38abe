"""Slots start holding the fixed prompt, and a slot that switches between plain segments and segments
with markup gets the other kind's prompt back from llama.cpp's host-RAM cache instead of computing it.

Plain and marked prompts part after the system prompt (the markup convention is part of it), so a
slot that takes the other kind would keep little of its state: llama.cpp then saves that state and
loads the best one it holds. The RAM cache must be large enough to still hold it
(docs/decisions/014-prompt-cache-ram.md: at 64 MiB a catalog's strings computed ~450 tokens at most switches).
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from mtserve.engines.base import EngineRequest
from mtserve.settings import Settings


def _llamacpp(model_path, n_parallel: int):
    from mtserve.engines.llamacpp import LlamaCppEngine

    return LlamaCppEngine(model_path, model_name="m", family="qwen", languages=("zh", "en"), threads=2,
                          n_parallel=n_parallel, ctx_per_slot=1024, max_output_tokens=16,
                          prompt_cache_ram_mib=Settings().prompt_cache_ram_mib)


def _tokens(engine, text: str, markup: bool = False, glossary=()) -> tuple[int, int]:
    """(tokens computed, tokens from a cache) of one request, as this thread made it."""
    engine.translate(EngineRequest(text, "zh", "en", markup=markup, max_tokens=4, glossary=glossary))
    timings = engine.last_timings()
    return int(timings["prompt_n"]), int(timings["cache_n"])


@pytest.mark.model
def test_warm_slots_leaves_every_slot_holding_the_fixed_prompt(model_path):
    engine = _llamacpp(model_path, n_parallel=4)
    engine.load()
    try:
        engine.warm_slots("zh", "en")
        with ThreadPoolExecutor(4) as pool:
            texts = ["我喜欢猫。", "今天很冷。", "他在看书。", "这个问题很难。"]
            found = list(pool.map(lambda text: _tokens(engine, text), texts))
    finally:
        engine.close()
    assert all(computed < 30 and cached > 150 for computed, cached in found), found


@pytest.mark.model
def test_a_slot_switching_kinds_restores_each_prompt_from_the_ram_cache(model_path):
    engine = _llamacpp(model_path, n_parallel=1)
    engine.load()
    try:
        plain = _tokens(engine, "我喜欢猫。")
        marked = _tokens(engine, "%s，今天很冷。", markup=True)
        plain_again = _tokens(engine, "他在看书。")
        marked_again = _tokens(engine, "{name}，这个问题很难。", markup=True)
    finally:
        engine.close()
    assert plain[0] > 150 and marked[0] > 150, (plain, marked)  # each kind computed once
    assert plain_again[0] < 30 and marked_again[0] < 30, (plain_again, marked_again)  # then restored


@pytest.mark.model
def test_glossary_terms_leave_the_fixed_prompt_cached(model_path):
    """Each segment gets only its own terms, so they differ from one segment to the next: after the
    cached prefix they cost their own tokens, where in the system prompt they cost the whole prefix."""
    engine = _llamacpp(model_path, n_parallel=1)
    engine.load()
    try:
        first = _tokens(engine, "我喜欢猫。")
        with_term = _tokens(engine, "找不到该插件。", glossary=(("插件", "plugin"),))
        other_term = _tokens(engine, "请保存页面。", glossary=(("页面", "page"), ("保存", "Save")))
        plain_again = _tokens(engine, "他在看书。")
    finally:
        engine.close()
    assert first[0] > 150, first
    assert all(computed < 40 and cached > 150 for computed, cached in (with_term, other_term, plain_again)), \
        (with_term, other_term, plain_again)
