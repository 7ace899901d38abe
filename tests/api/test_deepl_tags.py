"""DeepL /v2/translate with tag_handling: sentences are translated whole with their tags, and
ignore_tags / splitting_tags / non_splitting_tags / outline_detection mean what DeepL says."""

from __future__ import annotations

import re

import httpx

from tests.quality.helpers import ScriptedEngine
from tests.servers import serve


def deepl(url, text, **fields):
    return httpx.post(f"{url}/v2/translate", timeout=30,
                      data={"text": text, "source_lang": "ZH", "target_lang": "EN-US", **fields})


def test_ignored_placeholder_tags_come_back_byte_identical_in_place():
    answers = {"请点击<x1/>保存您的更改。": "Please click <x1/> to save your changes."}
    engine = ScriptedEngine(lambda r: answers.get(r.text))
    with serve(engine, markup_mode="context") as url:
        r = deepl(url, '请点击<x id="0"></x>保存您的更改。', tag_handling="xml", ignore_tags="x")
    assert r.status_code == 200, r.text
    assert r.json()["translations"][0]["text"] == 'Please click <x id="0"></x> to save your changes.'
    assert [c.text for c in engine.calls] == ["请点击<x1/>保存您的更改。"]


def test_outline_detection_splitting_and_non_splitting_tags():
    seen: list[str] = []

    def script(request):  # each run of Chinese becomes "words"; the tags come back as they went
        seen.append(request.text)
        return re.sub(r"[\u4e00-\u9fff]+", "words", request.text)

    engine = ScriptedEngine(script)
    xml = "<doc><par>公司说它一直在</par><par>进行内部调查。</par></doc>"
    with serve(engine, markup_mode="context") as url:
        detected = deepl(url, xml, tag_handling="xml")
        joined = deepl(url, xml, tag_handling="xml", non_splitting_tags="par")
        manual = deepl(url, "<t>标题</t><s>一句<b>话</b>。</s>", tag_handling="xml", outline_detection="0",
                       splitting_tags="t,s")
    assert detected.status_code == joined.status_code == manual.status_code == 200
    # structure found automatically: each <par> is a block of its own
    assert seen[:2] == ["公司说它一直在", "进行内部调查。"]
    # non_splitting_tags: one sentence across both
    assert seen[2] == "<par1>公司说它一直在</par1><par2>进行内部调查。</par2>"
    # outline_detection=0: only splitting_tags split; <b> stays inline
    assert seen[3:] == ["标题", "一句<b1>话</b1>。"]
    assert manual.json()["translations"][0]["text"] == "<t>words</t><s>words <b>words</b>。</s>"


def test_bad_tag_parameters_are_a_400():
    with serve(ScriptedEngine()) as url:
        bad_outline = deepl(url, "<p>你好</p>", tag_handling="xml", outline_detection="maybe")
        bad_name = deepl(url, "<p>你好</p>", tag_handling="xml", ignore_tags="x,<y>")
    assert bad_outline.status_code == 400 and "outline_detection" in bad_outline.json()["message"]
    assert bad_name.status_code == 400 and "ignore_tags" in bad_name.json()["message"]
