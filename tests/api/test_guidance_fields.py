"""DeepL's context, custom_instructions and formality on every API family, through the official clients,
on a server whose prompted test double records what reached the engine (the prompt is built from it:
tests/quality/test_guidance.py). The context is not billed; seq2seq engines ignore these fields."""

from __future__ import annotations

import deepl
import httpx
import openai
import pytest

from mtserve.documents.formats.registry import SUBTITLES, UI_STRINGS
from mtserve.service.access import KeyStore
from tests.documents import samples
from tests.fakes import FakeEngine
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve

CONTEXT = "这是 Git 图形客户端里的一个按钮：把暂存的更改记录到仓库。"


def translated(request) -> str:
    """Han characters swapped for Latin letters (a translation the guardrails take), tags kept."""
    return samples.swap(request.text)


@pytest.fixture(scope="module")
def engine():
    return ScriptedEngine(translated)


@pytest.fixture(scope="module")
def server(engine, tmp_path_factory):
    with serve(engine, home=tmp_path_factory.mktemp("home"), context_max_chars=200) as url:
        yield url


@pytest.fixture(scope="module")
def translator(server):
    return deepl.Translator("any-key", server_url=server)


def last_guidance(engine):
    return engine.calls[-1].guidance


def test_the_deepl_client_sends_context_and_custom_instructions_to_the_engine(engine, translator):
    result = translator.translate_text("提交", source_lang="ZH", target_lang="EN-US", context=CONTEXT,
                                       custom_instructions=["Use the imperative.", "Keep it short."])
    guidance = last_guidance(engine)
    assert guidance.context == CONTEXT
    assert guidance.instructions == ("Use the imperative.", "Keep it short.")
    assert result.billed_characters == 2  # the text only: a context is not billed


def test_supports_formality_tells_the_truth_and_formality_reaches_the_engine(engine, translator):
    targets = {lang.code: lang.supports_formality for lang in translator.get_target_languages()}
    assert targets["DE"] is True and targets["FR"] is True and targets["JA"] is True
    assert targets["EN-US"] is False and targets["EN-GB"] is False
    assert targets["ZH-HANS"] is False and targets["KO"] is False  # as DeepL: not told into them
    translator.translate_text("你能帮我吗？", source_lang="ZH", target_lang="DE", formality="more")
    assert last_guidance(engine).formality == "more"
    translator.translate_text("你能帮我吗？", source_lang="ZH", target_lang="FR", formality="prefer_less")
    assert last_guidance(engine).formality == "less"
    translator.translate_text("你能帮我吗？", source_lang="ZH", target_lang="EN-US", formality="prefer_less")
    assert not last_guidance(engine)  # DeepL's prefer_*: the default where the target has no formality
    with pytest.raises(deepl.DeepLException, match="Target language.*formality"):  # as DeepL's own tests match
        translator.translate_text("你能帮我吗？", source_lang="ZH", target_lang="EN-US", formality="more")


@pytest.mark.parametrize("body, status, fragment", [
    ({"custom_instructions": ["x"] * 11}, 400, "the most allowed is 10"),
    ({"custom_instructions": ["x" * 301]}, 400, "at most 300"),
    ({"custom_instructions": "Be brief."}, 200, ""),  # one instruction, as a form sends it
    ({"custom_instructions": [1]}, 400, "'custom_instructions' must be a list of strings"),
    ({"context": "上下文" * 67}, 413, "MTSERVE_CONTEXT_MAX_CHARS"),
    ({"context": 3}, 400, "'context' must be a string"),
])
def test_bad_guidance_fields_are_deepl_errors_that_say_what_to_fix(server, body, status, fragment):
    r = httpx.post(f"{server}/v2/translate", json={"text": ["提交"], "source_lang": "ZH", "target_lang": "EN-US",
                                                   **body})
    assert r.status_code == status, r.text
    if fragment:
        assert fragment in r.json()["message"]


def test_libretranslate_takes_context_as_an_extension(engine, server):
    r = httpx.post(f"{server}/translate", json={"q": "提交", "source": "zh", "target": "en", "context": CONTEXT})
    assert r.status_code == 200 and last_guidance(engine).context == CONTEXT
    form = httpx.post(f"{server}/translate", data={"q": "提交。", "source": "zh", "target": "en",
                                                   "context": "网页表单的按钮"})
    assert form.status_code == 200 and last_guidance(engine).context == "网页表单的按钮"
    with httpx.stream("GET", f"{server}/translate/stream",
                      params={"q": "提交！", "source": "zh", "target": "en", "context": CONTEXT}) as events:
        assert events.status_code == 200 and "event: done" in events.read().decode()
    assert last_guidance(engine).context == CONTEXT
    too_long = httpx.post(f"{server}/translate", json={"q": "提交", "target": "en", "context": "长" * 201})
    assert too_long.status_code == 413 and "context" in too_long.json()["error"]


def test_openai_takes_context_as_an_extension(engine, server):
    client = openai.OpenAI(base_url=f"{server}/v1", api_key="none", max_retries=0)
    reply = client.chat.completions.create(model="mtserve-zh-en", messages=[{"role": "user", "content": "提交"}],
                                           extra_body={"context": CONTEXT})
    assert reply.choices[0].message.content and last_guidance(engine).context == CONTEXT


def test_a_context_is_not_billed_against_a_quota(tmp_path):
    store = KeyStore(tmp_path / "keys.sqlite3")
    secret, _ = store.add(name="q", char_quota=10, period="month")
    with serve(ScriptedEngine(translated), home=tmp_path, api_keys=True) as url:
        translator = deepl.Translator(secret, server_url=url)
        translator.translate_text("提交", source_lang="ZH", target_lang="EN-US", context="上下文" * 60)
        assert translator.get_usage().character.count == 2
        r = httpx.post(f"{url}/translate", json={"q": "提交", "source": "zh", "target": "en", "api_key": secret,
                                                 "context": "上下文" * 60})
        assert r.status_code == 200
        assert translator.get_usage().character.count == 4


def documents_context(engine, first: int) -> set[str]:
    return {call.guidance.context for call in engine.calls[first:]}


@pytest.mark.parametrize("name, default", [("messages.po", UI_STRINGS), ("strings.json", UI_STRINGS),
                                           ("film.srt", SUBTITLES), ("notes.txt", "")])
def test_a_document_gets_its_format_s_context_unless_the_request_sends_one(engine, server, name, default):
    data = samples.all_samples()[name]
    first = len(engine.calls)
    r = httpx.post(f"{server}/translate_file", data={"source": "zh", "target": "en"}, files={"file": (name, data)})
    assert r.status_code == 200, r.text
    assert documents_context(engine, first) == {default}
    first = len(engine.calls)
    r = httpx.post(f"{server}/translate_file", data={"source": "zh", "target": "en", "context": "一个游戏"},
                   files={"file": (name, data)})
    assert r.status_code == 200, r.text
    assert documents_context(engine, first) == {"一个游戏"}


def test_the_deepl_document_api_takes_context_and_formality(engine, translator, tmp_path):
    source, output = tmp_path / "messages.po", tmp_path / "out.po"
    source.write_bytes(samples.all_samples()["messages.po"])
    first = len(engine.calls)
    status = translator.translate_document_from_filepath(source, output, source_lang="ZH", target_lang="DE",
                                                         formality="less",
                                                         extra_body_parameters={"context": "一个游戏的菜单"})
    assert status.ok and output.read_bytes()
    assert {(c.guidance.context, c.guidance.formality) for c in engine.calls[first:]} == {("一个游戏的菜单", "less")}
    first = len(engine.calls)
    translator.translate_document_from_filepath(source, tmp_path / "again.po", source_lang="ZH", target_lang="FR")
    assert documents_context(engine, first) == {UI_STRINGS}


def test_a_seq2seq_engine_supports_no_formality_and_ignores_context(tmp_path):
    engine = FakeEngine(languages=("en", "zh", "de"))
    with serve(engine, home=tmp_path) as url:
        translator = deepl.Translator("any-key", server_url=url)
        assert not any(lang.supports_formality for lang in translator.get_target_languages())
        with pytest.raises(deepl.DeepLException, match="formality"):
            translator.translate_text("你好", source_lang="ZH", target_lang="DE", formality="less")
        translator.translate_text("你好", source_lang="ZH", target_lang="DE", context=CONTEXT,
                                  custom_instructions=["Be brief."], formality="prefer_more")
    assert engine.calls and not engine.calls[-1].guidance


def test_a_segment_too_long_for_the_model_s_context_is_a_413_not_a_500(tmp_path):
    from mtserve.engines.base import PromptTooLong

    def refuse(request):
        raise PromptTooLong("the segment's prompt is 2090 tokens, over the 1024 tokens of a slot's context "
                            "(MTSERVE_CTX_PER_SLOT): send shorter text")

    with serve(ScriptedEngine(refuse), home=tmp_path) as url:
        r = httpx.post(f"{url}/translate", json={"q": "提交", "source": "zh", "target": "en"})
        d = httpx.post(f"{url}/v2/translate", json={"text": ["提交"], "source_lang": "ZH", "target_lang": "EN-US"})
    assert r.status_code == 413 and "MTSERVE_CTX_PER_SLOT" in r.json()["error"]
    assert d.status_code == 413 and "MTSERVE_CTX_PER_SLOT" in d.json()["message"]
