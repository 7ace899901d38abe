"""Simplified and Traditional Chinese: detection of the variant, OpenCC conversion, and the service path."""

from __future__ import annotations

import asyncio

from mtserve.service.request import Delta, TranslationRequest
from mtserve.text.chinese import has_japanese_kanji, is_traditional, to_simplified, to_traditional, variant
from tests.quality.helpers import ScriptedEngine, service_for


def test_variant_and_conversion():
    assert variant("這是一本書") == "zt" and variant("这是一本书") == "zh"
    assert variant("你好") == "zh"  # the same in both scripts
    assert variant("Hello") is None
    assert to_simplified("這是一本書") == "这是一本书"
    assert to_traditional("这是一本书") == "這是一本書"
    assert is_traditional("我們去台北")


def test_hsk_traditional_sentences_read_as_traditional_and_convert_back():
    from hsk_sentences_audio import load_sentences

    sentences = load_sentences()
    assert not any(variant(s["chinese"]) == "zt" for s in sentences)
    marked = [s for s in sentences if to_simplified(s["traditional"]) != s["traditional"]]
    assert len(marked) >= 0.5 * len(sentences), (len(marked), len(sentences))  # the check has material
    assert all(is_traditional(s["traditional"]) for s in marked)
    assert sum(to_simplified(s["traditional"]) == s["chinese"] for s in sentences) >= 0.99 * len(sentences)


def test_japanese_kanji_forms_are_not_in_chinese_text():
    from hsk_sentences_audio import load_sentences

    assert has_japanese_kanji("図書館") and has_japanese_kanji("駅") and has_japanese_kanji("働く")
    assert not any(has_japanese_kanji(s["chinese"] + s["traditional"]) for s in load_sentences())


def test_traditional_input_reaches_the_model_as_simplified_and_zt_output_is_converted(tmp_path):
    engine = ScriptedEngine(lambda r: "这是一本书。" if r.target == "zh" else "This is a book.")

    async def main():
        async with service_for(engine, tmp_path) as service:
            to_en = await service.translate(TranslationRequest(["這是一本書。"], "en", source="zt"))
            auto = await service.translate(TranslationRequest(["這是一本書。"], "en", source="auto"))
            to_zt = await service.translate(TranslationRequest(["This is a book."], "zt", source="en"))
            to_zh = await service.translate(TranslationRequest(["This is a book."], "zh", source="en"))
            streamed = [e async for e in service.stream(TranslationRequest.of("This is a novel.", "zt", source="en"))]
            return to_en, auto, to_zt, to_zh, streamed

    to_en, auto, to_zt, to_zh, streamed = asyncio.run(main())
    assert to_en[0].text == "This is a book."
    assert auto[0].source == "zt" and auto[0].detected.language == "zt"
    assert to_zt[0].text == "這是一本書。" and to_zh[0].text == "这是一本书。"
    assert streamed[-1].translation.text == "這是一本書。"
    deltas = "".join(e.text for e in streamed if isinstance(e, Delta))
    assert deltas == "這是一本書。" and "这" not in deltas  # the deltas are converted too
    first_call = engine.calls[0]
    assert first_call.text == "这是一本书。" and first_call.source == "zh"
    assert all(c.target in ("en", "zh") for c in engine.calls)  # never asked for Traditional itself


def test_simplified_and_traditional_convert_without_the_model(tmp_path):
    engine = ScriptedEngine()

    async def main():
        async with service_for(engine, tmp_path) as service:
            to_zt = await service.translate(TranslationRequest(["我们去北京，这是一本书。"], "zt", source="zh",
                                                               alternatives=2))
            to_zh = await service.translate(TranslationRequest(["我們去台北。"], "zh", source="zt"))
            streamed = [e async for e in service.stream(TranslationRequest.of("这是一本书。", "zt", source="zh"))]
            return to_zt, to_zh, streamed

    to_zt, to_zh, streamed = asyncio.run(main())
    assert to_zt[0].text == "我們去北京，這是一本書。" and to_zt[0].alternatives == []
    assert to_zh[0].text == "我们去台北。"
    assert streamed[-1].translation.text == "這是一本書。"
    assert engine.calls == []
