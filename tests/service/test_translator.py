"""The translator's pipeline, with test doubles for the engine: the request settled, each text down
the one per-segment path, translate and stream agreeing, events in the text's order, and a failure
that leaves no work behind."""

from __future__ import annotations

import asyncio
import functools

import pytest

from mtserve.engines.base import EngineError, Guidance
from mtserve.service.glossary import UnusableGlossaryId
from mtserve.service.request import (
    Delta,
    Detected,
    Done,
    FormalityUnsupported,
    SegmentDone,
    TranslationRequest,
    Usage,
)
from tests.fakes import FakeEngine
from tests.quality.helpers import ScriptedEngine, service_for

PARAGRAPHS = "第一句。第二句！\n\n第三句？"
HTML = "<p>我喜欢<b>猫</b>。</p><p>  </p><p>他很高兴。</p>"


def sync(test):
    """Run an async test body in its own event loop (the suite has no asyncio plugin)."""
    @functools.wraps(test)
    def run(*args, **kwargs):
        return asyncio.run(test(*args, **kwargs))
    return run


async def events_of(service, request: TranslationRequest) -> list:
    return [event async for event in service.stream(request)]


# --- the request -------------------------------------------------------------------------------------
def test_a_request_holds_texts_and_refuses_what_it_cannot_mean():
    request = TranslationRequest(["你好", "再见"], "en", source="zh")
    assert request.texts == ("你好", "再见") and request.chars == 4
    assert TranslationRequest.of("你好", "en").text == "你好"
    with pytest.raises(TypeError):
        TranslationRequest("你好", "en")  # a string is not a list of texts
    with pytest.raises(ValueError, match="format"):
        TranslationRequest(["你好"], "en", format="pdf")
    with pytest.raises(ValueError, match="2 texts"):
        _ = request.text


@sync
async def test_settling_resolves_the_glossary_id_and_the_formality(tmp_path):
    async with service_for(ScriptedEngine(), tmp_path) as service:
        made = service.glossaries.create("ui", "zh", "en", {"设置": "Settings", "保存": "Save"})
        settled = service.settle(TranslationRequest(["保存设置"], "en", source="zh", glossary_id=made.id,
                                                     glossary={"保存": "Store"},
                                                     guidance=Guidance(formality="prefer_more")))
        assert settled.glossary_id is None
        assert settled.glossary == {"设置": "Settings", "保存": "Store"}  # the request's own entries win
        assert settled.guidance.formality == "default"  # English marks no formality: the preference falls back
        assert service.settle(settled) == settled  # settling twice changes nothing
        into_german = service.settle(TranslationRequest(["你好"], "de", guidance=Guidance(formality="prefer_less")))
        assert into_german.guidance.formality == "less"
        with pytest.raises(FormalityUnsupported, match="prefer_more"):
            service.settle(TranslationRequest(["你好"], "en", guidance=Guidance(formality="more")))
        with pytest.raises(FormalityUnsupported, match="one of"):
            service.settle(TranslationRequest(["你好"], "de", guidance=Guidance(formality="very")))
        with pytest.raises(UnusableGlossaryId):
            service.settle(TranslationRequest(["你好"], "en", source="zh", glossary_id="nope"))


@sync
async def test_an_engine_without_a_prompt_gets_no_guidance_and_cannot_be_required_a_formality(tmp_path):
    async with service_for(FakeEngine(), tmp_path) as service:
        settled = service.settle(TranslationRequest(["x"], "de", guidance=Guidance(context="a button")))
        assert not settled.guidance
        with pytest.raises(FormalityUnsupported, match="no prompt"):
            service.settle(TranslationRequest(["x"], "de", guidance=Guidance(formality="less")))


# --- one path, two ways out ----------------------------------------------------------------------------
@pytest.mark.parametrize("text, fmt, sentences", [(PARAGRAPHS, "text", 3), (HTML, "html", 2)])
@sync
async def test_translate_and_stream_give_the_same_translation(tmp_path, text, fmt, sentences):
    async with service_for(ScriptedEngine(), tmp_path, cache_size=0, segment_budget_chars=0) as service:
        request = TranslationRequest.of(text, "en", source="zh", format=fmt)
        [translated] = await service.translate(request)
        events = await events_of(service, request)
    assert isinstance(events[-1], Done) and events[-1].translation.text == translated.text
    assert translated.text.count("[en]") == sentences  # each sentence through the engine


@sync
async def test_a_stream_yields_detection_deltas_and_segments_in_the_texts_order(tmp_path):
    # the first sentence takes longest: the later ones finish first, and still come after it
    engine = ScriptedEngine(delays={"第一句。": 0.3})
    async with service_for(engine, tmp_path, cache_size=0, segment_budget_chars=0) as service:
        events = await events_of(service, TranslationRequest.of(PARAGRAPHS, "en"))
    assert isinstance(events[0], Detected) and events[0].detection.language == "zh"
    done = [e for e in events if isinstance(e, SegmentDone)]
    assert [e.index for e in done] == [0, 1, 2]
    assert "".join(e.gap + e.text for e in done) == events[-1].translation.text
    assert events[-1].translation.detected == events[0].detection
    # every delta streamed before its own segment was done, and the text the deltas built is the answer's
    shown = "".join(e.text for e in events if isinstance(e, Delta))
    assert shown.replace(" ", "") == events[-1].translation.text.replace(" ", "")
    assert events.index(done[0]) < events.index(done[1]) < events.index(done[2]) < len(events) - 1


@sync
async def test_known_segments_stream_their_text_and_need_no_engine(tmp_path):
    engine = ScriptedEngine()
    async with service_for(engine, tmp_path, segment_budget_chars=0) as service:
        await service.translate(TranslationRequest(["第一句。"], "en", source="zh"))  # now cached
        calls = len(engine.calls)
        events = await events_of(service, TranslationRequest.of("第一句。\n\n---", "en", source="zh"))
    assert len(engine.calls) == calls  # the cached sentence and the rule are known without the engine
    deltas = "".join(e.text for e in events if isinstance(e, Delta))
    assert deltas == events[-1].translation.text


@sync
async def test_texts_of_one_request_can_share_one_detected_source(tmp_path):
    async with service_for(ScriptedEngine(), tmp_path) as service:
        blocks = ["OK", "这是一个很长的中文句子，说明了这些文字的语言。"]
        apart = await service.translate(TranslationRequest(blocks, "en"))
        together = await service.translate(TranslationRequest(blocks, "en", one_source=True))
    assert apart[0].source != "zh"  # "OK" alone reads as another language
    assert {t.source for t in together} == {"zh"}


@sync
async def test_a_failed_segment_fails_the_call_and_leaves_no_work_running(tmp_path):
    engine = ScriptedEngine(fail_on="第三句", delays={"第一句。": 0.5})
    usage = Usage()
    async with service_for(engine, tmp_path, cache_size=0, segment_budget_chars=0) as service:
        with pytest.raises(EngineError):
            await service.translate(TranslationRequest([PARAGRAPHS], "en", source="zh"), usage)
        loop_tasks = {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}
        assert not [t for t in loop_tasks if "_translate_one" in repr(t) or "finish" in repr(t)]
        assert service.scheduler.admitted == 0  # the ticket was closed with the call
    assert usage.segments == 3


@sync
async def test_a_stream_closed_early_cancels_its_segments(tmp_path):
    engine = ScriptedEngine(delays={"第二句！": 5.0})
    async with service_for(engine, tmp_path, cache_size=0, segment_budget_chars=0) as service:
        stream = service.stream(TranslationRequest.of(PARAGRAPHS, "en", source="zh"))
        async for event in stream:
            if isinstance(event, SegmentDone):
                break  # the caller stops reading after the first segment
        await stream.aclose()
        assert service.scheduler.admitted == 0
