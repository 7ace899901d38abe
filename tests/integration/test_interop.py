"""The official DeepL and OpenAI client packages, pointed at mtserve on loopback, with the small model."""

from __future__ import annotations

import re

import deepl
import httpx
import openai
import pytest

from tests.servers import engine_generates, samples_named

pytestmark = pytest.mark.model


def words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]+", text.lower()))


@pytest.fixture(scope="module")
def deepl_client(live_server):
    deepl.http_client.max_network_retries = 0  # a refusal must show, not be retried away
    deepl.http_client.min_connection_timeout = 120.0  # a CPU model; the default 10 s is for DeepL's servers
    return deepl.Translator("any-key:fx", server_url=live_server)


def test_deepl_translates_one_text_and_a_list(deepl_client, live_server):
    with engine_generates(live_server):
        one = deepl_client.translate_text("我喜欢猫。", target_lang="EN-US")
    assert "cat" in " ".join(words(one.text)) and one.detected_source_lang == "ZH"
    with engine_generates(live_server):
        many = deepl_client.translate_text(["今天很冷。", "我喜欢音乐。"], source_lang="ZH",
                                           target_lang="EN-GB")
    assert "cold" in words(many[0].text) and "music" in words(many[1].text)


def test_deepl_lists_languages_and_usage(deepl_client):
    sources = {lang.code for lang in deepl_client.get_source_languages()}
    targets = {lang.code: lang for lang in deepl_client.get_target_languages()}
    assert {"ZH", "EN"} <= sources
    assert {"EN-US", "EN-GB", "ZH-HANS", "ZH-HANT"} <= set(targets)
    assert targets["EN-US"].supports_formality is False
    before = deepl_client.get_usage()
    assert before.character.valid
    deepl_client.translate_text("你好吗？", source_lang="ZH", target_lang="EN-US")
    after = deepl_client.get_usage().character
    assert after.count == before.character.count + len("你好吗？")  # the characters just translated
    assert after.limit > after.count and not after.limit_reached


def test_deepl_glossary_create_use_list_delete(deepl_client):
    glossary = deepl_client.create_glossary("companies", source_lang="ZH", target_lang="EN",
                                            entries={"国际商业机器公司": "IBM"})
    assert glossary.entry_count == 1 and glossary.ready
    assert glossary.glossary_id in {g.glossary_id for g in deepl_client.list_glossaries()}
    assert deepl_client.get_glossary_entries(glossary) == {"国际商业机器公司": "IBM"}
    result = deepl_client.translate_text("国际商业机器公司发布了新电脑。", source_lang="ZH",
                                         target_lang="EN-US", glossary=glossary)
    assert "IBM" in result.text
    deepl_client.delete_glossary(glossary)
    with pytest.raises(deepl.GlossaryNotFoundException):
        deepl_client.get_glossary(glossary.glossary_id)


def test_deepl_errors_have_deepl_shape(live_server):
    r = httpx.post(f"{live_server}/v2/translate", data={"text": "你好", "target_lang": "XX"})
    assert r.status_code == 400 and "target_lang" in r.json()["message"]
    r = httpx.post(f"{live_server}/v2/translate",
                   data={"text": "你好", "target_lang": "EN-US", "formality": "more"})
    assert r.status_code == 400 and "formality" in r.json()["message"]
    r = httpx.post(f"{live_server}/v2/translate", data={"target_lang": "EN-US"})
    assert r.status_code == 400 and "text" in r.json()["message"]


@pytest.fixture(scope="module")
def openai_client(live_server):
    return openai.OpenAI(base_url=f"{live_server}/v1", api_key="dummy", max_retries=0)


def test_openai_lists_models(openai_client):
    ids = {m.id for m in openai_client.models.list()}
    assert {"mtserve", "mtserve-zh-en", "mtserve-en-zh"} <= ids


def test_openai_chat_completion_translates(openai_client, live_server):
    with engine_generates(live_server):
        reply = openai_client.chat.completions.create(
            model="mtserve-zh-en", messages=[{"role": "user", "content": "请在会议开始前把报告发给我。"}])
    text = reply.choices[0].message.content
    assert {"report", "meeting"} <= words(text)
    assert reply.usage.completion_tokens > 0 and reply.usage.prompt_tokens > 0
    assert reply.usage.total_tokens == reply.usage.prompt_tokens + reply.usage.completion_tokens


def test_openai_target_from_the_system_prompt(openai_client, live_server):
    with engine_generates(live_server):
        reply = openai_client.chat.completions.create(
            model="mtserve",
            messages=[{"role": "system", "content": "Translate the user's text into English."},
                      {"role": "user", "content": "我喜欢喝茶。"}])
    assert "tea" in words(reply.choices[0].message.content)


def test_openai_streaming_follows_the_sse_format(openai_client, live_server):
    pieces, finish, usage = [], None, None
    with engine_generates(live_server):
        stream = openai_client.chat.completions.create(
            model="mtserve-zh-en", stream=True, stream_options={"include_usage": True},
            messages=[{"role": "user", "content": "他昨天买了一辆新自行车。我们明天去公园。"}])
        for chunk in stream:
            if chunk.usage:
                usage = chunk.usage
            for choice in chunk.choices:
                pieces.append(choice.delta.content or "")
                finish = choice.finish_reason or finish
    text = "".join(pieces)
    assert {"bicycle", "park"} & words(text) and text.count(".") >= 2
    assert finish == "stop" and usage is not None and usage.completion_tokens > 0


def test_openai_refuses_what_is_not_a_translation_request(openai_client):
    with pytest.raises(openai.BadRequestError) as info:
        openai_client.chat.completions.create(model="mtserve",
                                              messages=[{"role": "user", "content": "What is 2+2?"}])
    assert "target" in str(info.value)


def test_raw_sse_ends_with_done(live_server):
    with httpx.stream("POST", f"{live_server}/v1/chat/completions", timeout=120,
                      json={"model": "mtserve", "target_lang": "en", "stream": True,
                            "messages": [{"role": "user", "content": "明天见。"}]}) as r:
        lines = [line for line in r.iter_lines() if line.startswith("data: ")]
    assert lines[-1] == "data: [DONE]"


def test_metrics_carry_the_api_label(live_server):
    """Each family's requests are counted under its own label: this test makes its own calls,
    one per family, and reads the samples (not the HELP text, which names no family)."""
    calls = {"libretranslate": "/languages", "deepl": "/v2/languages", "openai": "/v1/models"}

    def counted(api: str, route: str) -> float:
        return sum(samples_named(live_server, "mtserve_requests_total", api=api, route=route,
                                 status="200").values())

    before = {api: counted(api, route) for api, route in calls.items()}
    for route in calls.values():
        assert httpx.get(f"{live_server}{route}", timeout=30).status_code == 200
    after = {api: counted(api, route) for api, route in calls.items()}
    assert after == {api: n + 1 for api, n in before.items()}


def test_deepl_glossary_language_pairs(deepl_client):
    pairs = {(p.source_lang, p.target_lang) for p in deepl_client.get_glossary_languages()}
    assert ("zh", "en") in pairs and ("en", "zh") in pairs
    assert all(source != target for source, target in pairs)
