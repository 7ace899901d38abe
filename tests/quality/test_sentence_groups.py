"""Segments of several sentences in the service (segment_budget_chars): one engine call for a short
text, lines kept apart, and a translation that drops a sentence redone sentence by sentence."""

from __future__ import annotations

import asyncio

from mtserve.service.guardrails import check, dropped_sentence
from mtserve.service.request import SegmentDone, TranslationRequest, Usage
from tests.fakes import FakeEngine
from tests.quality.helpers import ScriptedEngine, counter, service_for

UI = "Your changes were saved. Reload the page? Click OK to continue!"
UI_ZH = "您的更改已保存。要重新加载页面吗？点击“确定”继续！"
TABLE = {
    UI_ZH: "Your changes have been saved. Reload the page? Click OK to continue!",
    "您的更改已保存。": "Your changes have been saved.",
    "要重新加载页面吗？": "Reload the page?",
    "点击“确定”继续！": "Click OK to continue!",
}


def run(engine, tmp_path, texts, source="zh", target="en", fmt="text", budget=400, **settings):
    usage = Usage()

    async def main():
        async with service_for(engine, tmp_path, segment_budget_chars=budget, **settings) as service:
            results = await service.translate(TranslationRequest(texts, target, source=source, format=fmt), usage)
            return service, [r.text for r in results]

    service, outputs = asyncio.run(main())
    return service, outputs, usage


def test_a_ui_string_of_three_sentences_is_one_engine_call(tmp_path):
    engine = FakeEngine()
    _, [out], usage = run(engine, tmp_path, [UI], "en", "de")
    assert [c.text for c in engine.calls] == [UI]
    assert out == f"<de>{UI}" and usage.segments == 1


def test_budget_zero_sends_one_sentence_per_call_as_before(tmp_path):
    engine = FakeEngine()
    run(engine, tmp_path, [UI], "en", "de", budget=0)
    assert [c.text for c in engine.calls] == ["Your changes were saved.", "Reload the page?", "Click OK to continue!"]


def test_lines_and_html_paragraphs_are_never_grouped(tmp_path):
    engine = FakeEngine()
    _, [out], _ = run(engine, tmp_path, ["<p>One. Two.</p><p>Three. Four.</p>"], "en", "de", fmt="html")
    assert sorted(c.text for c in engine.calls) == ["One. Two.", "Three. Four."]
    assert out.startswith("<p>") and out.count("<p>") == 2
    engine = FakeEngine()
    _, [out], _ = run(engine, tmp_path, ["One. Two.\nThree. Four."], "en", "de")
    assert [c.text for c in engine.calls] == ["One. Two.", "Three. Four."]
    assert out == "<de>One. Two.\n<de>Three. Four."


def test_a_good_multi_sentence_translation_passes_every_guardrail(tmp_path):
    engine = ScriptedEngine(lambda request: TABLE.get(request.text))
    service, [out], usage = run(engine, tmp_path, [UI_ZH])
    assert out == TABLE[UI_ZH]
    assert [c.text for c in engine.calls] == [UI_ZH]
    assert usage.sentence_fallbacks == 0
    assert counter(service, "mtserve_guardrail_retries_total", reason="answer") == 0
    assert check(UI_ZH, TABLE[UI_ZH], "zh", "en") is None


def test_a_dropped_sentence_is_caught_and_the_segment_redone_sentence_by_sentence(tmp_path):
    # the classic failure of a small model given several sentences: it translates the first only
    answers = dict(TABLE, **{UI_ZH: "Your changes have been saved."})
    engine = ScriptedEngine(lambda request: answers.get(request.text))

    async def main():
        usage = Usage()
        async with service_for(engine, tmp_path, segment_budget_chars=400) as service:
            [first] = await service.translate(TranslationRequest([UI_ZH], "en", source="zh"), usage)
            calls = len(engine.calls)
            [again] = await service.translate(TranslationRequest([UI_ZH], "en",
                                                                 source="zh"))  # the fallback's answer is cached
            return service, first.text, again.text, calls, usage

    service, out, again, calls, usage = asyncio.run(main())
    assert out == again == "Your changes have been saved. Reload the page? Click OK to continue!"
    assert [c.text for c in engine.calls] == [UI_ZH, "您的更改已保存。", "要重新加载页面吗？", "点击“确定”继续！"]
    assert calls == 4 and not any(c.strict for c in engine.calls)
    assert usage.sentence_fallbacks == 1
    assert counter(service, "mtserve_guardrail_sentence_fallbacks_total") == 1


def test_the_dropped_sentence_check_is_off_with_the_guardrails(tmp_path):
    engine = ScriptedEngine(lambda request: "Saved." if len(request.text) > 9 else None)
    _, [out], usage = run(engine, tmp_path, [UI_ZH], guardrails=False)
    assert out == "Saved." and len(engine.calls) == 1 and usage.sentence_fallbacks == 0


def test_a_dropped_sentence_in_a_marked_segment_falls_back_with_its_tags(tmp_path):
    source = "点击<b1>保存</b1>。然后关闭窗口。"
    answers = {source: "Click <b1>Save</b1>.", "点击<b1>保存</b1>。": "Click <b1>Save</b1>.",
               "然后关闭窗口。": "Then close the window."}
    engine = ScriptedEngine(lambda request: answers.get(request.text))
    _, [out], usage = run(engine, tmp_path, ["<p>点击<b>保存</b>。然后关闭窗口。</p>"], fmt="html",
                          markup_mode="context")
    assert out == "<p>Click <b>Save</b>. Then close the window.</p>"
    assert usage.sentence_fallbacks == 1


def test_streaming_sends_a_group_as_one_segment(tmp_path):
    engine = ScriptedEngine(lambda request: TABLE.get(request.text))

    async def main():
        async with service_for(engine, tmp_path, segment_budget_chars=400) as service:
            request = TranslationRequest.of(UI_ZH + "\n" + UI_ZH, "en", source="zh")
            return [event async for event in service.stream(request)]

    events = asyncio.run(main())
    segments = [e for e in events if isinstance(e, SegmentDone)]
    assert [s.text for s in segments] == [TABLE[UI_ZH]] * 2
    assert events[-1].translation.text == TABLE[UI_ZH] + "\n" + TABLE[UI_ZH]
    assert len(engine.calls) == 2


def test_dropped_sentence_counts_the_output_sentences():
    assert dropped_sentence(3, "One. Two.", "en").kind == "dropped"
    assert dropped_sentence(3, "One. Two. Three.", "en") is None
    assert dropped_sentence(2, "One. Two. Three.", "en") is None  # a sentence split in two is fine
    assert dropped_sentence(1, "", "en") is None  # one sentence: the other checks see an empty output
    assert dropped_sentence(2, "你好。我很好。", "zh") is None
    assert dropped_sentence(2, "你好，我很好。", "zh").kind == "dropped"
    assert dropped_sentence(2, "Dr. Smith came.", "en").kind == "dropped"  # an abbreviation is not a sentence end


def test_a_sentence_stored_in_the_translation_memory_is_served_as_stored_inside_a_group(tmp_path):
    from mtserve.service.tm import TranslationMemory
    from mtserve.settings import Settings

    memory = TranslationMemory(Settings(home=tmp_path).tm_db)
    memory.add([("要重新加载页面吗？", "Reload this page now?")], "zh", "en")
    memory.close()
    engine = ScriptedEngine(lambda request: TABLE.get(request.text), languages=("en", "zh"))
    _, [out], usage = run(engine, tmp_path, [UI_ZH], tm_k=0)
    assert out == "Your changes have been saved. Reload this page now? Click OK to continue!"
    assert [c.text for c in engine.calls] == ["您的更改已保存。", "点击“确定”继续！"]
    assert usage.tm_segments == 1 and usage.sentence_fallbacks == 0


def test_a_short_request_still_runs_after_at_most_one_segment_of_a_grouped_document(tmp_path):
    """Fairness is round-robin by segment: with a budget a document has fewer, longer segments, and
    a one-line request that arrives while it runs still goes after at most the one running."""
    engine = FakeEngine(delay_s=0.02, slots=1)
    document = "\n".join(f"Line {i} starts here. It goes on. It ends here." for i in range(12))

    async def main():
        async with service_for(engine, tmp_path, segment_budget_chars=400, n_parallel=1) as service:
            async def short():
                for _ in range(5000):  # until the document's first segment is in the engine
                    if engine.calls:
                        break
                    await asyncio.sleep(0.002)
                arrived_after = len(engine.calls)
                await service.translate(TranslationRequest(["Hi there."], "de", source="en"))
                return arrived_after

            _, arrived_after = await asyncio.gather(service.translate(TranslationRequest([document], "de",
                                                                                         source="en")), short())
            return arrived_after

    arrived_after = asyncio.run(main())
    order = [c.text for c in engine.calls]
    assert len(order) == 13 and order[0] == "Line 0 starts here. It goes on. It ends here."  # a line per call
    assert order.index("Hi there.") <= arrived_after + 1, order
