"""An entry of the translation memory is whatever its translator translated at once: a UI string
of two sentences, a paragraph. A text that matches one whole is served from it, even though the
service would cut it into sentences for the engine."""

from __future__ import annotations

import asyncio

from mtserve.service.request import TranslationRequest, Usage
from tests.quality.helpers import ScriptedEngine, counter, service_for

TWO_SENTENCES = "文件已保存。要关闭窗口吗？"
STORED = "The file was saved. Close the window?"


def test_a_text_of_several_sentences_matches_an_entry_whole(tmp_path) -> None:
    engine = ScriptedEngine(lambda request: "From the engine.")

    async def main():
        async with service_for(engine, tmp_path) as service:
            service.memory.add([(TWO_SENTENCES, STORED)], "zh", "en", origin="test")
            usage = Usage()
            [whole] = await service.translate(TranslationRequest(["  " + TWO_SENTENCES + "\n"], "en",
                                                                 source="zh"), usage)
            [off] = await service.translate(TranslationRequest([TWO_SENTENCES], "en", source="zh", memory=False))
            [part] = await service.translate(TranslationRequest(["文件已保存。"], "en", source="zh"))
            return whole.text, usage, off.text, part.text, counter(service, "mtserve_tm_exact_matches_total")

    whole, usage, off, part, exact = asyncio.run(main())
    assert whole == "  " + STORED + "\n"  # the outer whitespace kept
    assert usage.tm_segments == 1 and usage.segments == 1
    assert exact == 1
    assert off == "From the engine. From the engine."  # tm off: two sentences, two engine calls
    assert part == "From the engine."  # one sentence of the entry is not a match
    assert {"文件已保存。", "要关闭窗口吗？"} <= {call.text for call in engine.calls}  # tm off: sentence by sentence


def test_a_stored_sentence_with_a_placeholder_is_served_inside_a_longer_segment(tmp_path) -> None:
    """A segment of two sentences, one of them stored: it goes sentence by sentence, and the stored one,
    placeholder and all, comes from the memory."""
    engine = ScriptedEngine(lambda request: "From the engine.")

    async def main():
        async with service_for(engine, tmp_path) as service:
            service.memory.add([("无法打开文件 %s。", "Cannot open the file %s.")], "zh", "en", origin="test")
            usage = Usage()
            request = TranslationRequest(["无法打开文件 %s。请稍后再试。"], "en", source="zh")
            [out] = await service.translate(request, usage)
            return out.text, usage

    out, usage = asyncio.run(main())
    assert out == "Cannot open the file %s. From the engine."
    assert usage.tm_segments == 1
    assert [call.text for call in engine.calls] == ["请稍后再试。"]
