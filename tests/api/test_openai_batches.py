"""A translation tool's batch on /v1/chat/completions through the official openai client: the strings
between separator lines are translated one text each, and the separators come back unchanged."""

from __future__ import annotations

import openai
import pytest

from tests.documents import samples
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve

BATCH = "确定\n==PART==\n取消\n==PART==\n保存文件\n另存为"


def translate(request) -> str:
    """Han swapped for Latin letters, and the English words a model would translate, translated."""
    return samples.swap(request.text).replace("PART", "TEIL").replace("SEP", "TRENNER").replace("Note", "Notiz")


@pytest.fixture(scope="module")
def engine():
    return ScriptedEngine(translate)


@pytest.fixture(scope="module")
def client(engine, tmp_path_factory):
    with serve(engine, home=tmp_path_factory.mktemp("home")) as url:
        yield openai.OpenAI(base_url=f"{url}/v1", api_key="none", max_retries=0)


def ask(client, text: str, **kwargs) -> str:
    reply = client.chat.completions.create(model="mtserve-auto-en", messages=[{"role": "user", "content": text}],
                                           **kwargs)
    return reply.choices[0].message.content


def test_each_block_is_its_own_text_and_the_separators_come_back(engine, client):
    first = len(engine.calls)
    answer = ask(client, BATCH)
    assert answer.split("\n==PART==\n") == [samples.swap("确定"), samples.swap("取消"),
                                             samples.swap("保存文件") + "\n" + samples.swap("另存为")]
    texts = sorted(call.text for call in engine.calls[first:])
    assert texts == sorted(["确定", "取消", "保存文件", "另存为"])  # no engine call saw a separator


@pytest.mark.parametrize("separator", ["---", "### 3 ###", "<<<SEP>>>"])
def test_separators_of_other_shapes_are_kept_in_number_and_order(client, separator):
    text = f"打开\n{separator}\n关闭\n{separator}\n退出\n"
    answer = ask(client, text)
    lines = answer.split("\n")
    assert lines[1] == lines[3] == separator and lines[-1] == ""
    assert [lines[0], lines[2], lines[4]] == [samples.swap(w) for w in ("打开", "关闭", "退出")]


def test_a_streamed_batch_says_the_same(client):
    stream = client.chat.completions.create(model="mtserve-zh-en", stream=True,
                                            messages=[{"role": "user", "content": BATCH}])
    streamed = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
    assert streamed == ask(client, BATCH)


def test_ordinary_lines_are_not_a_batch(engine, client):
    first = len(engine.calls)
    answer = ask(client, "**Note**\n不要删除。")
    assert answer == "**Notiz**\n" + samples.swap("不要删除。")  # the emphasised line is text, translated
    assert "**Note**" in {call.text for call in engine.calls[first:]}
