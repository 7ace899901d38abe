"""An entry of the translation memory is whatever its translator translated at once: a UI string
of two sentences, a paragraph. A text that matches one whole is served from it, even though the
service would cut it into sentences for the engine."""

from __future__ import annotations

import asyncio

from mtserve.service.translator import Usage
from tests.quality.helpers import ScriptedEngine, counter, service_for

TWO_SENTENCES = "文件已保存。要关闭窗口吗？"
STORED = "The file was saved. Close the window?"


def test_a_text_of_several_sentences_matches_an_entry_whole(tmp_path) -> None:
    engine = ScriptedEngine(lambda request: "From the engine.")

    async def main():
        async with service_for(engine, tmp_path) as service:
            service.memory.add([(TWO_SENTENCES, STORED)], "zh", "en", origin="test")
            usage = Usage()
            [whole] = await service.translate(["  " + TWO_SENTENCES + "\n"], "zh", "en", usage=usage)
            [off] = await service.translate([TWO_SENTENCES], "zh", "en", tm=False)
            [part] = await service.translate(["文件已保存。"], "zh", "en")
            return whole.text, usage, off.text, part.text, counter(service, "mtserve_tm_exact_matches_total")

    whole, usage, off, part, exact = asyncio.run(main())
    assert whole == "  " + STORED + "\n"  # the outer whitespace kept
    assert usage.tm_segments == 1 and usage.segments == 1
    assert exact == 1
    assert off == "From the engine. From the engine."  # tm off: two sentences, two engine calls
    assert part == "From the engine."  # one sentence of the entry is not a match
    assert {"文件已保存。", "要关闭窗口吗？"} <= {call.text for call in engine.calls}  # tm off: sentence by sentence
