"""Guardrails: each check on crafted outputs, and the one strict retry through the real service."""

from __future__ import annotations

import asyncio
import re

import pytest

from mtserve.engines.base import EngineRequest, Guidance, PromptTooLong
from mtserve.service.guardrails import Problem, check, choose, retry_request, substitute_terms
from mtserve.service.request import Done, TranslationRequest
from tests.quality.helpers import ScriptedEngine, counter, service_for, translate_once


@pytest.mark.parametrize("source, output, src, tgt, kind", [
    ("团长率领队员们进入了会场。", "The团长 led his team into the venue.", "zh", "en", "untranslated"),
    ("这是一本书。", "这是一本书。", "zh", "en", "identical"),
    ("Good morning, how are you today?", "Good morning, how are you today?", "en", "de", "identical"),
    ("I like cats.", "I like cats.", "en", "zh", "identical"),
    ("The weather is nice today.", "The weather is nice today, and we go out.", "en", "zh", "untranslated"),
    ("他很高兴。", "He is happy. He is happy. He is happy. He is happy. He is happy.", "zh", "en",
     "repetition"),
    ("他很高兴。", "He is very happy today. He is very happy today.", "zh", "en", "repetition"),
    ("好。", "OK " * 60, "zh", "en", "runaway"),
    ("今天下雨了，我们不去公园了。", "It is raining, raining, raining, raining today.", "zh", "en",
     "repetition"),
    ("他很高兴。", "He is happy.\nPinyin: tā hěn gāoxìng", "zh", "en", "explanation"),
    ("他很高兴。", "He is happy (this sentence means he feels good).", "zh", "en", "explanation"),
    ("我喝茶。", "I drink tea.", "zh", "en", None),
    ("iPhone", "iPhone", "en", "de", None),  # a name is the same in both languages
    ("Berlin ist schön.", "Berlin is beautiful.", "de", "en", None),
    ("请翻译这句话。", "Please translate this sentence.", "zh", "en", None),  # the source talks about it
    ("哈哈哈哈哈哈", "Hahaha hahaha hahaha hahaha", "zh", "en", None),  # the source repeats too
    ("我們去台北。", "我们去台北。", "zt", "zh", None),  # zt -> zh shares the script
])
def test_each_check_on_crafted_outputs(source, output, src, tgt, kind):
    problem = check(source, output, src, tgt)
    assert (problem.kind if problem else None) == kind, problem


def test_runaway_is_the_token_limit_or_an_absurd_length():
    assert check("你好。", "Hello.", "zh", "en", finish_reason="length").kind == "runaway"
    long = " ".join(f"word{i}" for i in range(200))
    assert check("你好。", long, "zh", "en").kind == "runaway"


def test_glossary_terms_must_appear_and_may_be_in_any_script():
    glossary = {"国际商业机器公司": "IBM"}
    assert check("国际商业机器公司发布了新产品。", "International Business Machines released a product.",
                 "zh", "en", glossary=glossary).kind == "glossary"
    assert check("国际商业机器公司发布了新产品。", "IBM released a new product.", "zh", "en",
                 glossary=glossary) is None
    # a Latin term inside Chinese output is not "untranslated"
    assert check("IBM released a new product.", "IBM发布了新产品。", "en", "zh",
                 glossary={"IBM": "IBM"}) is None


def test_the_retry_is_strict_greedy_and_puts_missed_terms_into_the_source():
    request = EngineRequest("国际商业机器公司很大。", "zh", "en", temperature=0.7, seed=3,
                                 glossary=(("国际商业机器公司", "IBM"),))
    retry = retry_request(request, Problem("glossary", ""))
    assert retry.strict and retry.temperature == 0 and retry.seed is None
    assert retry.text == "IBM很大。"
    assert retry_request(request, Problem("untranslated", "")).text == request.text
    assert substitute_terms("I use a Mac and a mac.", {"Mac": "苹果电脑"}) == \
        "I use a 苹果电脑 and a 苹果电脑."


def test_choose_keeps_the_better_answer():
    bad = Problem("untranslated", "")
    assert choose("first", bad, "second", None) == ("second", False)
    assert choose("first", bad, "second", Problem("explanation", "")) == ("first", True)
    assert choose("first", bad, "second", Problem("repetition", "")) == ("first", True)
    assert choose("first", Problem("repetition", ""), "second", Problem("untranslated", "")) == \
        ("second", True)


def test_the_service_retries_once_with_the_strict_prompt_and_counts_it(tmp_path):
    def script(request):
        if "团长" in request.text:
            return "The team leader led the members in." if request.strict else "The团长 led the members in."
        return None

    engine = ScriptedEngine(script)

    async def main():
        async with service_for(engine, tmp_path) as service:
            [result] = await service.translate(TranslationRequest(["团长率领队员们进入了会场。"], "en", source="zh"))
            again = await service.translate(TranslationRequest(["团长率领队员们进入了会场。"], "en",
                                                               source="zh"))  # cached: no retry
            return service, result, again

    service, result, again = asyncio.run(main())
    assert result.text == "The team leader led the members in."
    assert again[0].text == result.text
    assert [c.strict for c in engine.calls] == [False, True]
    assert counter(service, "mtserve_guardrail_retries_total", reason="untranslated") == 1
    assert counter(service, "mtserve_guardrail_unresolved_total", reason="untranslated") == 0


def test_an_unfixable_output_is_kept_and_reported_unresolved(tmp_path):
    engine = ScriptedEngine(lambda request: "这是一本书。")  # always hands the input back

    service, result = translate_once(engine, tmp_path, "这是一本书。", "zh", "en")
    assert result.text == "这是一本书。"
    assert len(engine.calls) == 2  # once, and one retry: never a loop
    assert counter(service, "mtserve_guardrail_unresolved_total", reason="identical") == 1


def test_a_retry_over_the_context_keeps_the_first_answer(tmp_path):
    """The strict prompt is ~630 tokens longer than the first attempt's: a segment whose first prompt
    fitted may not fit it, and that must cost the retry, not the segment."""
    def script(request):
        if request.strict:
            raise PromptTooLong("the segment's prompt is 1029 tokens, over the 1024 tokens of a slot's context")
        return "The plug-in was not found."  # misses the glossary's "plugin"

    engine = ScriptedEngine(script)

    service, result = translate_once(engine, tmp_path, "找不到该插件。", "zh", "en", glossary={"插件": "plugin"})
    assert result.text == "The plug-in was not found."
    assert [c.strict for c in engine.calls] == [False, True]
    assert counter(service, "mtserve_guardrail_retries_total", reason="glossary") == 1
    assert counter(service, "mtserve_guardrail_unresolved_total", reason="glossary") == 1


def test_guardrails_can_be_turned_off(tmp_path):
    engine = ScriptedEngine(lambda request: "这是一本书。")

    async def main():
        async with service_for(engine, tmp_path, guardrails=False) as service:
            return await service.translate(TranslationRequest(["这是一本书。"], "en", source="zh"))

    asyncio.run(main())
    assert len(engine.calls) == 1


def test_streaming_applies_the_retry_to_the_final_text(tmp_path):
    engine = ScriptedEngine(lambda r: "Fixed." if r.strict else "Half 翻译.")

    async def main():
        async with service_for(engine, tmp_path) as service:
            return [e async for e in service.stream(TranslationRequest.of("你好世界。", "en", source="zh"))]

    events = asyncio.run(main())
    assert isinstance(events[-1], Done) and events[-1].translation.text == "Fixed."


def _llamacpp(tmp_path, **kwargs):
    from mtserve.engines.llamacpp import LlamaCppEngine

    return LlamaCppEngine(tmp_path / "m.gguf", model_name="m", family="qwen", languages=("zh", "en"),
                          threads=1, n_parallel=1, ctx_per_slot=512, max_output_tokens=64, **kwargs)


def test_cjk_to_english_decodes_under_a_grammar_that_keeps_cjk_out(tmp_path):
    from mtserve.engines.prompts import script_grammar

    engine = _llamacpp(tmp_path)  # the default: every request, so the guardrails rarely need to retry
    first = engine.build_request(EngineRequest("京剧是一种戏曲。", "zh", "en"))
    retry = engine.build_request(EngineRequest("京剧是一种戏曲。", "zh", "en", strict=True))
    assert first["grammar"].startswith("root ::= [^") and retry["grammar"] == first["grammar"]
    assert retry["messages"][0]["content"] != first["messages"][0]["content"]  # the strict system prompt
    assert "grammar" not in engine.build_request(EngineRequest("Peking opera.", "en", "zh"))
    assert script_grammar("en", "zh") is None and script_grammar("zh", "ja") is None
    assert script_grammar("zh", "en", (("京剧", "京剧"),)) is None  # a required term written in Han


@pytest.mark.parametrize("source, output, kind", [
    # seen with the 1.5B into Chinese (HSK en->zh, test split)
    ("He waited impatiently.", "他 impatient地等待。", "untranslated"),
    ("She knitted a sweater.", "她 knitting了一件毛衣。", "untranslated"),  # another form of the word
    ("Flowers are everywhere.", "everywhere都有花。", "untranslated"),
    ("It runs 2×faster.", "它运行速度快2×faster。", "untranslated"),  # × is no letter: the word after it counts
    ("He waited impatiently.", "Он impatient ждал.", "untranslated"),  # into Russian alike
    ("He waited impatiently.", "他不耐烦地等待。", None),
    ("He uses an iPhone.", "他用 iPhone。", None),  # a name: mostly Chinese, weighed by what a character carries
    ("The API is slow.", "API 很慢。", None),
    ("Run `pip install foo` and open https://example.com/docs.", "运行 `pip install foo` 并打开 https://example.com/docs。",
     None),  # code and links stay as written
    ("Hello {name}, see config.yaml and src/main.py.", "你好 {name}，请看 config.yaml 和 src/main.py。", None),
    ("Set %s as the value", "将 %s 设为值", None),
    ("He waited.", "他在 Berlin 等待。", None),  # not a word of the source
    # the source says "as an AI" itself, spelled out (instr-019 into Chinese): a translation, no refusal
    ("As an artificial intelligence, how do you feel?", "作为一个人工智能，你有什么感受？", None),
    ('Enter a valid "slug".', "输入有效的“slug”。", None),  # a quoted word is a literal
    ("%(title)s has been added", "%(title)s 已添加", None),
])
def test_source_words_left_in_a_translation_out_of_latin_letters_are_caught(source, output, kind):
    target = "ru" if "Он" in output else "zh"
    problem = check(source, output, "en", target)
    assert (problem.kind if problem else None) == kind, problem


def test_the_strict_retry_out_of_english_keeps_lower_case_latin_to_what_the_text_keeps(tmp_path):
    from mtserve.engines.prompts import kept_letters, kept_letters_grammar
    from mtserve.engines.vllm import strict_regex

    text = "Open https://example.com on your iPhone at {place}, then run `make test`."
    engine = _llamacpp(tmp_path)
    assert "grammar" not in engine.build_request(EngineRequest(text, "en", "zh"))  # the first attempt is free
    grammar = engine.build_request(EngineRequest(text, "en", "zh", strict=True))["grammar"]
    assert grammar == kept_letters_grammar(kept_letters("en", "zh", text))
    assert grammar.startswith("root ::= ( [^a-z")
    for piece in ('"https://example.com"', '"iPhone"', '"{place}"', '"`make test`"'):
        assert piece in grammar
    assert kept_letters("zh", "en", "你好") is None and kept_letters("en", "de", text) is None
    assert kept_letters("en", "zh", "Use a Mac.", (("Mac", "mac mini"),))[-1] == "mac mini"  # a glossary term
    # a segment with placeholders or tags: the markup grammar's free text takes the same rule
    marked = engine.build_request(EngineRequest(text, "en", "zh", strict=True, markup=True))["grammar"]
    free_text = next(line for line in marked.splitlines() if line.startswith("t ::="))
    assert "[^<a-z" in free_text and '"iPhone"' in free_text and "{place}" not in free_text
    assert '"{place}"' in marked  # once, where the markup rules put it
    regex = strict_regex("en", "zh", (), text)  # vLLM's form of the same rule
    assert re.fullmatch(regex, "在{place}用iPhone打开https://example.com，然后运行`make test`。")
    assert not re.fullmatch(regex, "他 impatient地等待。")


def test_the_service_retries_source_words_left_in_chinese(tmp_path):
    def script(request):
        return "他不耐烦地等待。" if request.strict else "他 impatient地等待。"

    engine = ScriptedEngine(script)

    service, result = translate_once(engine, tmp_path, "He waited impatiently.", "en", "zh")
    assert result.text == "他不耐烦地等待。"
    assert [c.strict for c in engine.calls] == [False, True]
    assert counter(service, "mtserve_guardrail_retries_total", reason="untranslated") == 1
    assert counter(service, "mtserve_guardrail_unresolved_total", reason="untranslated") == 0


def test_script_grammar_retry_keeps_the_grammar_for_the_strict_retry_only(tmp_path):
    engine = _llamacpp(tmp_path, script_grammar="retry")
    first = engine.build_request(EngineRequest("京剧是一种戏曲。", "zh", "en"))
    retry = engine.build_request(EngineRequest("京剧是一种戏曲。", "zh", "en", strict=True))
    assert "grammar" not in first and retry["grammar"].startswith("root ::= [^")


def test_an_unknown_script_grammar_mode_is_refused(tmp_path):
    from mtserve.engines.base import EngineError

    with pytest.raises(EngineError, match="script_grammar"):
        _llamacpp(tmp_path, script_grammar="sometimes")


UI_CONTEXT = "These are user-interface strings of a software application."


@pytest.mark.parametrize("source, output, kind", [
    # seen with the 1.5B on the software set: the context line came back for 已翻译 ("Translated")
    ("已翻译", "These are user-interface strings of a software application", "context"),
    ("已翻译", "These are user interface strings.", "context"),
    ("已翻译", "Translated", None),  # the translation
    ("用户界面字符串", "User-interface strings", None),  # three words of the context are a label, not an echo
    ("这是一个软件应用程序。", "This is a software application.", None),  # not a piece of the context
])
def test_an_output_that_restates_the_context_is_caught(source, output, kind):
    problem = check(source, output, "zh", "en", context=UI_CONTEXT)
    assert (problem.kind if problem else None) == kind, problem
    assert check(source, output, "zh", "en") is None  # without a context there is nothing to restate


def test_the_service_retries_a_restated_context_without_the_context(tmp_path):
    def script(request):
        if request.guidance.context:
            return UI_CONTEXT  # what the model did with the context in the prompt
        return "Translated"

    engine = ScriptedEngine(script)

    service, result = translate_once(engine, tmp_path, "已翻译", "zh", "en", guidance=Guidance(context=UI_CONTEXT))
    assert result.text == "Translated"
    assert [(c.strict, c.guidance.context) for c in engine.calls] == [(False, UI_CONTEXT), (True, "")]
    assert counter(service, "mtserve_guardrail_retries_total", reason="context") == 1
    assert counter(service, "mtserve_guardrail_unresolved_total", reason="context") == 0
