"""The strict retry out of English, on the real model: its grammar lets no English word through
in lower case, and keeps what the text keeps as written."""

from __future__ import annotations

import re

import pytest

from mtserve.engines.base import EngineRequest
from mtserve.service.guardrails import check

pytestmark = pytest.mark.model

HAN = re.compile("[\u4e00-\u9fff]")


@pytest.fixture(scope="module")
def engine(model_path):
    from mtserve.engines.llamacpp import LlamaCppEngine

    engine = LlamaCppEngine(model_path, model_name="m", family="qwen", languages=("zh", "en"), threads=2,
                            n_parallel=1, ctx_per_slot=1024, max_output_tokens=64)
    engine.load()
    yield engine
    engine.close()


@pytest.mark.parametrize("text", [
    "He waited impatiently.",  # the 1.5B: 他 impatient地等待。
    "She knitted a sweater.",  # 她 knitting了一件毛衣。
    "Flowers are everywhere.",  # everywhere都有花。
])
def test_the_strict_retry_into_chinese_leaves_no_english_word(engine, text):
    out = engine.translate(EngineRequest(text, "en", "zh", strict=True)).text
    assert HAN.search(out), out
    assert check(text, out, "en", "zh") is None, out


def test_the_strict_retry_into_chinese_may_keep_a_link_and_a_placeholder(engine):
    text = "Open https://example.com/docs and enter {name}."
    out = engine.translate(EngineRequest(text, "en", "zh", strict=True)).text
    assert HAN.search(out), out
    assert check(text, out, "en", "zh") is None, out
    assert "{name}" in out, out
