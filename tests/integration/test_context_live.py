"""DeepL's context and custom instructions, and a translation tool's separator batch, against a live server
with the small model, through the official deepl and openai clients. The fields reach the prompt: the
prompt tokens the engine counts grow by them, while the characters billed do not."""

from __future__ import annotations

import re

import deepl
import httpx
import openai
import pytest

from tests.servers import engine_generates, metric_value

pytestmark = pytest.mark.model

PROMPT_TOKENS = "mtserve_prompt_tokens_total"
GIT = "这是 Git 图形客户端里的一个按钮：把暂存的更改记录到仓库。"
INSTRUCTIONS = ["Translate user-interface labels as short imperative verbs.", "Use American English."]


def prompt_tokens_of(url: str, send) -> tuple[float, object]:
    """(the prompt tokens the engine read for ``send()``, its result); requests run one at a time here."""
    before = metric_value(url, PROMPT_TOKENS)
    with engine_generates(url):
        result = send()
    return metric_value(url, PROMPT_TOKENS) - before, result


@pytest.fixture(scope="module")
def translator(live_server):
    deepl.http_client.min_connection_timeout = 120.0  # a CPU model; the default 10 s is for DeepL's servers
    return deepl.Translator("any-key:fx", server_url=live_server)


def test_deepl_context_and_custom_instructions_reach_the_prompt_and_are_not_billed(translator, live_server):
    def send(**fields):
        return lambda: translator.translate_text("提交", source_lang="ZH", target_lang="EN-US", **fields)

    plain, bare = prompt_tokens_of(live_server, send())
    with_context, result = prompt_tokens_of(live_server, send(context=GIT))
    guided, _ = prompt_tokens_of(live_server, send(context=GIT, custom_instructions=INSTRUCTIONS))
    print(f"prompt tokens: {plain:g} plain, {with_context:g} with the context, {guided:g} with instructions too")
    assert with_context >= plain + 20  # the context (~25 tokens) and its label are in the prompt
    assert guided >= with_context + 15  # and the instructions (~20)
    assert result.billed_characters == bare.billed_characters == 2  # the text only
    assert "commit" in result.text.lower(), result.text  # the Git button, not a form's Submit


def test_libretranslate_takes_the_context_too(live_server):
    body = {"q": "提交", "source": "zh", "target": "en"}
    plain, _ = prompt_tokens_of(live_server, lambda: httpx.post(f"{live_server}/translate", json=body,
                                                                timeout=120))
    guided, reply = prompt_tokens_of(live_server, lambda: httpx.post(
        f"{live_server}/translate", json={**body, "context": GIT}, timeout=120))
    assert reply.status_code == 200 and guided >= plain + 20


def test_deepl_reports_formality_where_the_prompt_carries_it(translator):
    targets = {lang.code: lang.supports_formality for lang in translator.get_target_languages()}
    assert targets["DE"] and targets["FR"] and not targets["EN-US"]
    result = translator.translate_text("Can you help me?", source_lang="EN", target_lang="DE", formality="less")
    assert result.text.strip()


def test_openai_separator_batch_comes_back_with_its_separators(live_server):
    client = openai.OpenAI(base_url=f"{live_server}/v1", api_key="dummy", max_retries=0, timeout=300)
    batch = "确定\n==PART==\n取消\n==PART==\n保存文件\n"
    with engine_generates(live_server):
        reply = client.chat.completions.create(model="mtserve-zh-en", messages=[{"role": "user", "content": batch}])
    answer = reply.choices[0].message.content
    print(repr(answer))
    lines = answer.split("\n")
    assert len(lines) == 6 and [lines[1], lines[3], lines[5]] == ["==PART==", "==PART==", ""]
    blocks = [lines[0], lines[2], lines[4]]
    assert all(block.strip() and not re.search(r"[\u4e00-\u9fff]", block) for block in blocks), blocks


def test_a_context_too_long_for_the_slot_is_cut_to_fit_not_a_500(live_server):
    context = "".join(chr(0x9F00 + i) for i in range(1000))  # rare ideographs: several tokens each, ~2,000 in all
    r = httpx.post(f"{live_server}/translate", json={"q": "提交", "source": "zh", "target": "en", "context": context},
                   timeout=300)
    assert r.status_code == 200, r.text  # the context was cut until the prompt fit the slot's 1,024 tokens
    assert r.json()["translatedText"].strip()
