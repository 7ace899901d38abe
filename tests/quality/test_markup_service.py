"""Markup in the service, with a scripted engine: a segment keeps its tags and placeholders, a
broken translation is retried and then placed by the fallback, and spacing at tag edges is fixed.

Most tests run markup_mode "context" (the sentence goes to the engine with its tags), whose
retry and fallback they follow step by step; the "transfer" tests (the default) are marked so."""

from __future__ import annotations

import asyncio

from mtserve.engines.base import PromptTooLong
from mtserve.engines.prompts import NO_COUNTERPART
from mtserve.service.request import Delta, TranslationRequest, Usage
from mtserve.text.html import TagHandling
from tests.fakes import FakeEngine
from tests.quality.helpers import ScriptedEngine, counter, service_for


def table(answers: dict[str, str], strict: dict[str, str] | None = None):
    """A script that answers from a table: the request's text -> the raw output."""
    strict = strict or {}

    def script(request):
        if request.strict and request.text in strict:
            return strict[request.text]
        return answers.get(request.text)

    return script


def run(engine, tmp_path, texts, source="zh", target="en", fmt="text", mode="context", **kwargs):
    usage = Usage()

    async def main():
        async with service_for(engine, tmp_path, markup_mode=mode) as service:
            results = await service.translate(TranslationRequest(texts, target, source=source, format=fmt,
                                                                 **kwargs), usage)
            return service, [r.text for r in results]

    service, outputs = asyncio.run(main())
    return service, outputs, usage


def test_an_html_sentence_is_translated_whole_with_its_tags(tmp_path):
    engine = ScriptedEngine(table({"点击<a1>这里</a1>保存您的更改。": "Click <a1>here</a1> to save your changes."}))
    service, [out], usage = run(engine, tmp_path, ['<p>点击<a href="/save">这里</a>保存您的更改。</p>'], fmt="html")
    assert out == '<p>Click <a href="/save">here</a> to save your changes.</p>'
    [call] = engine.calls
    assert call.markup and not call.strict
    assert usage.markup_retries == usage.markup_fallbacks == 0


def test_a_translation_that_loses_a_tag_is_retried_strictly(tmp_path):
    source = "我们的<b1>新产品</b1>明天在上海发布。"
    engine = ScriptedEngine(table({source: "Our new product will be launched in Shanghai tomorrow."},
                                  strict={source: "Our <b1>new product</b1> launches in Shanghai tomorrow."}))
    service, [out], usage = run(engine, tmp_path, ["<p>我们的<b>新产品</b>明天在上海发布。</p>"], fmt="html")
    assert out == "<p>Our <b>new product</b> launches in Shanghai tomorrow.</p>"
    assert [(c.strict, c.markup) for c in engine.calls] == [(False, True), (True, True)]
    assert usage.markup_retries == 1 and usage.markup_fallbacks == 0
    assert counter(service, "mtserve_markup_retries_total") == 1


def test_when_the_retry_fails_too_the_fallback_places_the_tags_on_the_right_words(tmp_path):
    source = "他<i1>昨天</i1>去了<b2>北京</b2>。"
    engine = ScriptedEngine(table({
        source: "He went to Beijing yesterday.",  # tags lost, twice
        "他昨天去了北京。": "He went to Beijing yesterday.",
        "昨天": "Yesterday",
        "北京": "Beijing",
    }))
    service, [out], usage = run(engine, tmp_path, ["<p>他<i>昨天</i>去了<b>北京</b>。</p>"], fmt="html")
    assert out == "<p>He went to <b>Beijing</b> <i>yesterday</i>.</p>"
    assert usage.markup_fallbacks == 1
    assert counter(service, "mtserve_markup_fallbacks_total", reason="invalid") == 1
    assert {c.text for c in engine.calls} == {source, "他昨天去了北京。", "昨天", "北京"}


def test_a_seq2seq_engine_never_sees_tags_and_gets_the_fallback(tmp_path):
    class Dictionary(FakeEngine):
        answers = {"我喜欢猫。": "I like cats.", "猫": "cat"}

        def render(self, request):  # type: ignore[override]
            return self.answers.get(request.text, request.text)

    engine = Dictionary()
    service, [out], usage = run(engine, tmp_path, ["<p>我喜欢<b>猫</b>。</p>"], fmt="html")
    assert out == "<p>I like <b>cats</b>.</p>"
    assert all("<" not in c.text for c in engine.calls)
    assert counter(service, "mtserve_markup_fallbacks_total", reason="not_prompted") == 1


def test_spacing_at_tag_edges_follows_the_target(tmp_path):
    engine = ScriptedEngine(table({
        "点击<a1>这里</a1>保存。": "Click<a1>here </a1>to save.",
        "Click <b1>here</b1> to save.": "点击 <b1>这里</b1> 保存。",
    }))

    async def main():
        async with service_for(engine, tmp_path, markup_mode="context") as service:
            [en] = await service.translate(TranslationRequest(["<p>点击<a href=/s>这里</a>保存。</p>"], "en",
                                                              source="zh", format="html"))
            [zh] = await service.translate(TranslationRequest(["<p>Click <b>here</b> to save.</p>"], "zh",
                                                              source="en", format="html"))
            return en.text, zh.text

    en, zh = asyncio.run(main())
    assert en == "<p>Click <a href=/s>here</a> to save.</p>"
    assert zh == "<p>点击<b>这里</b>保存。</p>"


def test_placeholders_in_plain_text_come_back_byte_identical(tmp_path):
    source = "%s，你有{count}条新消息。"
    engine = ScriptedEngine(table({source: "%s, you have %s new messages."},
                                  strict={source: "%s, you have {count} new messages."}))
    service, [out], usage = run(engine, tmp_path, [source])
    assert out == "%s, you have {count} new messages."
    assert engine.calls[0].markup and usage.markup_retries == 1


def test_a_placeholder_lost_twice_is_put_back_by_the_fallback(tmp_path):
    source = "第%1$s页，共%2$d页"
    engine = ScriptedEngine(table({source: "Page %1$s of %d"}))
    _, [out], usage = run(engine, tmp_path, [source])
    assert out == "Page %1$s of %2$d"
    assert usage.markup_fallbacks == 1


def test_text_without_markup_gets_the_plain_prompt(tmp_path):
    engine = ScriptedEngine()
    run(engine, tmp_path, ["今天很冷。"])
    assert not engine.calls[0].markup


def test_a_tag_across_a_sentence_end_keeps_both_sentences_in_one_segment(tmp_path):
    engine = ScriptedEngine(table({"<b1>第一句。第二句。</b1>第三句。": "<b1>One. Two.</b1> Three."}))
    _, [out], _ = run(engine, tmp_path, ["<p><b>第一句。第二句。</b>第三句。</p>"], fmt="html")
    assert out == "<p><b>One. Two.</b> Three.</p>"


def test_broken_markup_never_breaks_the_request(tmp_path):
    engine = ScriptedEngine(lambda request: "Please <x1/>click here")
    _, outputs, _ = run(engine, tmp_path, ["<p>请<b>点击这里</p>", "<p>a</i>b<u>c", "</b></b><b>"], fmt="html")
    assert outputs[0].count("<b>") == 1 and outputs[0].endswith("</p>")
    assert "</i>" in outputs[1] and "<u>" in outputs[1]
    assert outputs[2] == "</b></b><b>"


def test_deepl_xml_placeholders_come_back_byte_identical(tmp_path):
    engine = ScriptedEngine(table({"请点击<x1/>保存您的更改。": "Please click<x1/>to save your changes."}))
    tags = TagHandling("xml", ignore_tags=frozenset({"x"}))
    _, [out], _ = run(engine, tmp_path, ['请点击<x id="0"></x>保存您的更改。'], fmt="xml", tags=tags)
    assert out == 'Please click <x id="0"></x> to save your changes.'


def test_streaming_shows_no_view_tags_and_ends_with_the_final_html(tmp_path):
    engine = ScriptedEngine(table({"我喜欢<b1>猫</b1>。": "I like <b1>cats</b1>."}))

    async def main():
        async with service_for(engine, tmp_path, markup_mode="context") as service:
            request = TranslationRequest.of("<p>我喜欢<b>猫</b>。</p>", "en", source="zh", format="html")
            return [e async for e in service.stream(request)]

    events = asyncio.run(main())
    assert not any("<b1>" in e.text for e in events if isinstance(e, Delta))
    assert events[-1].translation.text == "<p>I like <b>cats</b>.</p>"


def _llamacpp(tmp_path, **kwargs):
    from mtserve.engines.llamacpp import LlamaCppEngine

    return LlamaCppEngine(tmp_path / "m.gguf", model_name="m", family="qwen", languages=("zh", "en"),
                          threads=1, n_parallel=1, ctx_per_slot=512, max_output_tokens=64, **kwargs)


def test_the_prompt_teaches_the_tags_only_to_segments_that_have_them(tmp_path):
    from mtserve.engines.base import EngineRequest

    engine = _llamacpp(tmp_path)
    plain = engine.build_request(EngineRequest("我喜欢猫。", "zh", "en"))
    marked = engine.build_request(EngineRequest("我喜欢<b1>猫</b1>。", "zh", "en", markup=True))
    assert "<b1>" not in plain["messages"][0]["content"]
    assert "<b1>" in marked["messages"][0]["content"]
    assert len(marked["messages"]) > len(plain["messages"])  # the tagged examples
    assert any("<a1>" in m["content"] for m in marked["messages"][1:-1])
    assert marked["grammar"] == plain["grammar"]  # the first try: only the script grammar


def test_the_strict_retry_decodes_under_a_grammar_that_requires_every_tag(tmp_path):
    from mtserve.engines.base import EngineRequest
    from mtserve.engines.prompts import markup_grammar

    engine = _llamacpp(tmp_path)
    request = EngineRequest("他<i1>昨天</i1>去了<b2>北京</b2>，%s。", "zh", "en", markup=True, strict=True)
    grammar = engine.build_request(request)["grammar"]
    assert grammar == markup_grammar(request.text, IDEOGRAPHIC)
    rules = dict(line.split(" ::= ", 1) for line in grammar.splitlines())
    assert rules["t"].startswith("[^<" + IDEOGRAPHIC) and "%" in rules["t"]  # nor stray tags, CJK or %
    top = rules[rules["root"]]
    assert top.count("|") == 5  # three items at the top level: any of their 6 orders
    assert '"<i1>"' in top and '"</b2>"' in top and '"%s"' in top
    assert "grammar" not in _llamacpp(tmp_path, markup_grammar="off", script_grammar="retry").build_request(
        EngineRequest("我<b1>喜欢</b1>", "zh", "en", markup=True))
    assert markup_grammar("没有标记的句子。") is None and markup_grammar("<b1>不配对") is None


IDEOGRAPHIC = r"\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uff00-\uffef"


def test_a_retry_that_pads_the_sentence_to_hang_a_tag_on_is_not_taken(tmp_path):
    source = "他<i1>昨天</i1>去了<b2>北京</b2>。"
    engine = ScriptedEngine(table({
        source: "He went to <b2>Beijing</b2>.",
        "他昨天去了北京。": "He went to Beijing yesterday.", "昨天": "yesterday", "北京": "Beijing",
    }, strict={source: "He went to <b2>Beijing</b2>. This was a <i1>past</i1> event, long ago."}))
    _, [out], usage = run(engine, tmp_path, ["<p>他<i>昨天</i>去了<b>北京</b>。</p>"], fmt="html")
    assert out == "<p>He went to <b>Beijing</b> <i>yesterday</i>.</p>"
    assert usage.markup_retries == usage.markup_fallbacks == 1


def test_an_icu_message_keeps_its_skeleton_and_has_its_branches_translated(tmp_path):
    engine = ScriptedEngine(table({
        "你有{count}。": "You have {count}.",
        "{#} 条新消息": "{#} new message",
        "{#} 条新消息!": "{#} new messages",
    }))
    source = "你有{count, plural, one {# 条新消息} other {# 条新消息!}}。"
    _, [out], _ = run(engine, tmp_path, [source])
    assert out == "You have {count, plural, one {# new message} other {# new messages}}."


def test_transfer_mode_translates_without_tags_then_puts_them_into_that_translation(tmp_path):
    def script(request):
        if request.align:  # which words of the translation translate the marked ones
            assert request.transfer == "He went to Beijing yesterday."
            return {"他[[昨天]]去了北京。": "yesterday", "他昨天去了[[北京]]。": NO_COUNTERPART}[request.text]
        if request.transfer is not None:
            assert request.text == "他<i1>昨天</i1>去了<b2>北京</b2>。"
            return "He went to <b2>Beijing</b2> <i1>yesterday</i1>."
        return {"他昨天去了北京。": "He went to Beijing yesterday."}.get(request.text)

    engine = ScriptedEngine(script)

    async def main():
        async with service_for(engine, tmp_path, markup_mode="transfer") as service:
            usage = Usage()
            [tagged] = await service.translate(TranslationRequest(["<p>他<i>昨天</i>去了<b>北京</b>。</p>"], "en",
                                                                  source="zh", format="html"), usage)
            [plain] = await service.translate(TranslationRequest(["他昨天去了北京。"], "en", source="zh"))
            return tagged.text, plain.text, usage

    tagged, plain, usage = asyncio.run(main())
    assert tagged == "<p>He went to <b>Beijing</b> <i>yesterday</i>.</p>"
    assert plain == "He went to Beijing yesterday."
    calls = [(c.text, c.transfer, c.align) for c in engine.calls]
    assert calls[0] == ("他昨天去了北京。", None, False)
    assert sorted(calls[1:3]) == [("他[[昨天]]去了北京。", "He went to Beijing yesterday.", True),
                                  ("他昨天去了[[北京]]。", "He went to Beijing yesterday.", True)]
    assert calls[3:] == [("他<i1>昨天</i1>去了<b2>北京</b2>。", "He went to Beijing yesterday.", False)]
    # the engine named "yesterday"; for 北京 it named nothing, and the dictionary's glosses found "Beijing"
    assert engine.calls[3].anchors == ((1, 19, 28), (2, 11, 18))
    assert usage.markup_fallbacks == 0  # and the plain sentence was a cache hit


def test_transfer_mode_asks_a_tag_the_engine_cannot_place_by_its_content_alone(tmp_path):
    """Out of Chinese, where no dictionary can check the engine's answer, a tag it gives no words for
    is found by its content translated on its own, where that occurs once."""
    def script(request):
        if request.align:
            return NO_COUNTERPART
        if request.transfer is not None:
            return "Er ging <b1>gestern</b1> nach Berlin."
        return {"Er ging gestern nach Berlin.": "He went to Berlin yesterday.", "gestern": "yesterday"}.get(
            request.text)

    engine = ScriptedEngine(script)
    _, [out], _ = run(engine, tmp_path, ["Er ging <b>gestern</b> nach Berlin."], fmt="html", source="de", target="en",
                      mode="transfer")
    texts = [c.text for c in engine.calls if not c.align and c.transfer is None]
    assert "gestern" in texts
    assert [c.anchors for c in engine.calls if c.transfer is not None and not c.align] == [((1, 18, 27),)]


def test_transfer_mode_falls_back_when_the_translation_changes(tmp_path):
    def script(request):
        if request.transfer is not None:
            return "He visited <b2>Beijing</b2> <i1>yesterday</i1>."  # not the translation it was given
        return {"他昨天去了北京。": "He went to Beijing yesterday.", "昨天": "yesterday", "北京": "Beijing"}.get(
            request.text)

    engine = ScriptedEngine(script)
    usage = Usage()

    async def main():
        async with service_for(engine, tmp_path, markup_mode="transfer") as service:
            [tagged] = await service.translate(TranslationRequest(["<p>他<i>昨天</i>去了<b>北京</b>。</p>"], "en",
                                                                  source="zh", format="html"), usage)
            return tagged.text

    assert asyncio.run(main()) == "<p>He went to <b>Beijing</b> <i>yesterday</i>.</p>"
    assert usage.markup_fallbacks == 1


def test_the_transfer_grammar_allows_only_the_translation_and_the_tags(tmp_path):
    from mtserve.engines.base import EngineRequest

    body = _llamacpp(tmp_path).build_request(EngineRequest(
        "我喜欢<b1>猫</b1><x2/>。", "zh", "en", markup=True, transfer="I like cats."))
    rules = dict(line.split(" ::= ", 1) for line in body["grammar"].splitlines())
    assert rules["root"] == "s0x0p0"
    assert rules["s0x0p0"] == '"<b1>" s0x1p1 | "<x2/>" s0x4p0 | "I" s1x0p0'  # </b1> only after <b1>
    assert rules["s0x1p1"] == '"<x2/>" s0x5p1 | "I" s1x1p0'  # and only once a word is inside
    pinned = _llamacpp(tmp_path).build_request(EngineRequest(
        "我喜欢<b1>猫</b1><x2/>。", "zh", "en", markup=True, transfer="I like cats.", anchors=((1, 7, 11),)))
    assert [line.split(" ::= ")[0] for line in pinned["grammar"].splitlines() if '"<b1>"' in line] == [
        "s4x0p0", "s4x4p0"]  # <b1> only right before "cats", and </b1> right after it
    assert rules["s6x7p0"] == '""'  # the end: every chunk of the translation, every tag once
    assert '"<x2/>" s6x7p0' in rules["s6x3p0"]  # a void tag may come after the last word
    assert "s5x0p0" not in rules  # past the last word with <b1> unplaced: no way to give it a word
    assert body["messages"][-1]["content"] == "Sentence: 我喜欢<b1>猫</b1><x2/>。\nTranslation: I like cats."


def test_a_markup_retry_over_the_context_falls_back_to_placing_the_tags(tmp_path):
    source = "他<i1>昨天</i1>去了<b2>北京</b2>。"
    answers = table({source: "He went to Beijing yesterday.", "他昨天去了北京。": "He went to Beijing yesterday.",
                     "昨天": "Yesterday", "北京": "Beijing"})

    def script(request):
        if request.strict:
            raise PromptTooLong("the segment's prompt is 1100 tokens, over the 1024 tokens of a slot's context")
        return answers(request)

    service, [out], usage = run(ScriptedEngine(script), tmp_path, ["<p>他<i>昨天</i>去了<b>北京</b>。</p>"],
                                fmt="html")
    assert out == "<p>He went to <b>Beijing</b> <i>yesterday</i>.</p>"
    assert usage.markup_retries == 1 and usage.markup_fallbacks == 1


def test_a_tag_whose_words_the_translation_lost_has_its_sentence_retried_strictly(tmp_path):
    plain = "下季度我们将重点开拓海外市场。"
    strict_seen = []

    def script(request):
        if request.align:
            return "overseas markets" if "overseas" in request.transfer else NO_COUNTERPART
        if request.transfer is not None:
            return request.transfer.replace("overseas markets", "<b1>overseas markets</b1>")
        if request.strict:
            strict_seen.append(request.guidance.instructions)
            return "Next quarter we will focus on opening up overseas markets."
        return {plain: "We will focus on expanding our business next quarter.", "海外市场": "world market"}.get(
            request.text)

    engine = ScriptedEngine(script)
    _, [out], usage = run(engine, tmp_path, ["<p>下季度我们将重点开拓<b>海外市场</b>。</p>"], fmt="html",
                          mode="transfer")
    assert out == "<p>Next quarter we will focus on opening up <b>overseas markets</b>.</p>"
    assert any("海外" in line for lines in strict_seen for line in lines)  # the retry names what was lost
    assert usage.content_dropped == 0


def test_a_tag_no_gloss_supports_where_the_model_put_it_is_kept_empty_at_the_sentence_end(tmp_path):
    """The engine cannot say where 很 went, nothing in the translation glosses it, and the model hung the
    tag on "happy": the tag is kept, empty, at the sentence's end, and counted."""
    def script(request):
        if request.align:
            return NO_COUNTERPART
        if request.transfer is not None:
            return "He is <b1>happy</b1>."
        return {"他很高兴。": "He is happy.", "很": "very"}.get(request.text)

    engine = ScriptedEngine(script)
    _, [out], usage = run(engine, tmp_path, ["<p>他<b>很</b>高兴。</p>"], fmt="html", mode="transfer")
    assert out == "<p>He is happy<b></b>.</p>"
    assert usage.markup_unplaced == 1 and usage.content_dropped == 0


def test_the_engine_named_span_grows_over_the_words_the_glosses_support(tmp_path):
    def script(request):
        if request.align:
            return "within"  # too short: 24小时内 is "within 24 hours"
        if request.transfer is not None:
            return "Please pay <b1>within 24 hours</b1>."
        return {"请在24小时内完成付款。": "Please pay within 24 hours."}.get(request.text)

    engine = ScriptedEngine(script)
    _, [out], _ = run(engine, tmp_path, ["<p>请在<b>24小时内</b>完成付款。</p>"], fmt="html", mode="transfer")
    assert out == "<p>Please pay <b>within 24 hours</b>.</p>"
    [transfer] = [c for c in engine.calls if c.transfer is not None and not c.align]
    assert transfer.anchors == ((1, 11, 26),)
