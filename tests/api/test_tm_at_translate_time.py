"""The translation memory at translate time, on a real server: exact matches served as stored with no
engine call, similar entries sent to the engine as examples, ``tm: false`` leaving it out."""

from __future__ import annotations

import subprocess
import sys
import time

import httpx

from mtserve.engines.base import Guidance
from mtserve.engines.prompts import guidance_block, template_for
from tests.quality.helpers import ScriptedEngine
from tests.servers import UI_PO, metric_value, serve


def import_po(home, tmp_path) -> str:
    path = tmp_path / "ui.po"
    path.write_text(UI_PO, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mtserve.cli", "tm", "import", str(path), "--source", "zh",
                           "--target", "en", "--home", str(home)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout + done.stderr


def translate(url, q, **extra):
    return httpx.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en", **extra}, timeout=30)


def test_exact_matches_are_served_from_the_memory_and_similar_ones_become_examples(tmp_path):
    home = tmp_path / "home"
    print(import_po(home, tmp_path))
    engine = ScriptedEngine(lambda request: "Engine translation")
    with serve(engine, home=home) as url:
        exact = translate(url, "保存您的更改")
        assert exact.status_code == 200, exact.text
        assert exact.json()["translatedText"] == "Save your changes"
        assert exact.json()["translationMemory"] == {"segments": 1}
        assert engine.calls == []  # no engine call for an exact match
        assert metric_value(url, "mtserve_tm_exact_matches_total") == 1

        off = translate(url, "保存您的更改", tm=False)
        assert off.json()["translatedText"] == "Engine translation" and "translationMemory" not in off.json()
        assert any(call.text == "保存您的更改" and not call.examples for call in engine.calls)

        similar = translate(url, "请打开设置页面")
        assert similar.status_code == 200
        call = next(c for c in engine.calls if c.text == "请打开设置页面")
        assert ("打开设置", "Open the settings") in call.examples
        assert metric_value(url, "mtserve_tm_examples_total") >= 1
        fuzzy = translate(url, "删除文件")  # the fuzzy .po entry was never imported
        assert fuzzy.json()["translatedText"] == "Engine translation"


def test_retrieved_examples_come_after_the_fixed_prefix_and_do_not_change_it():
    template = template_for("qwen")
    plain = template.messages("请打开设置页面", "zh", "en")
    guided = template.messages("请打开设置页面", "zh", "en", retrieved=(("打开设置", "Open the settings"),))
    assert guided[:len(plain) - 1] == plain[:-1]  # the system prompt and fixed examples, unchanged and first
    assert guided[-3:] == [{"role": "user", "content": "打开设置"},
                           {"role": "assistant", "content": "Open the settings"}, plain[-1]]


def test_the_guidance_opens_the_first_turn_after_the_fixed_prefix_so_segments_with_and_without_examples_share_it():
    template = template_for("qwen")
    guidance = Guidance(context="These are user-interface strings of a software application.")
    plain = template.messages("请打开设置页面", "zh", "en")
    fixed = len(plain) - 1  # the system prompt and the fixed examples
    unretrieved = template.messages("请打开设置页面", "zh", "en", guidance=guidance)
    first = template.messages("请打开设置页面", "zh", "en", retrieved=(("打开设置", "Open the settings"),),
                              guidance=guidance)
    second = template.messages("删除文件", "zh", "en", retrieved=(("删除", "Delete"), ("文件", "File")),
                               guidance=guidance)
    for messages in (unretrieved, first, second):
        assert messages[:fixed] == plain[:-1]
    guided = template.guided_user.format(guidance=guidance_block(guidance, "en"), request="")
    assert unretrieved[fixed:] == [{"role": "user", "content": guided + "请打开设置页面"}]  # as it always was
    assert first[fixed:] == [{"role": "user", "content": guided + "打开设置"},
                             {"role": "assistant", "content": "Open the settings"},
                             {"role": "user", "content": "请打开设置页面"}]  # the text bare, as without guidance
    assert second[fixed]["content"] == guided + "删除" and second[-1] == {"role": "user", "content": "删除文件"}
    # every kind of segment shares the prefix through the guidance, which llama.cpp then keeps cached
    assert all(m[fixed]["content"].startswith(guided) for m in (unretrieved, first, second))


PLACEHOLDER_PO = '''msgid ""
msgstr ""
"Language: zh_CN\\n"

msgid "Cannot open the file %s."
msgstr "无法打开文件 %s。"

msgid "Deleted %d items"
msgstr "已删除项目"
'''


def test_strings_with_placeholders_are_matched_and_get_examples_like_plain_text(tmp_path):
    """Most software strings carry a placeholder: they are looked up as plain text, and an exact match is
    served only when its translation keeps the string's placeholders."""
    home, path = tmp_path / "home", tmp_path / "app.po"
    path.write_text(PLACEHOLDER_PO, encoding="utf-8")
    done = subprocess.run([sys.executable, "-m", "mtserve.cli", "tm", "import", str(path), "--source", "zh",
                           "--target", "en", "--home", str(home)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    engine = ScriptedEngine(lambda request: "Engine translation %s" if "%s" in request.text else "Engine translation")
    with serve(engine, home=home) as url:
        exact = translate(url, "无法打开文件 %s。")
        assert exact.json() == {"translatedText": "Cannot open the file %s.", "translationMemory": {"segments": 1}}
        assert engine.calls == []

        similar = translate(url, "无法保存文件 %s。")
        assert similar.json()["translatedText"] == "Engine translation %s"
        call = next(c for c in engine.calls if c.text == "无法保存文件 %s。")
        assert call.markup and ("无法打开文件 %s。", "Cannot open the file %s.") in call.examples

        # the stored translation lost the string's placeholder: not served, translated with the entry as example
        lost = translate(url, "已删除项目")
        assert lost.json()["translatedText"] == "Engine translation" and "translationMemory" not in lost.json()

        tagged = httpx.post(f"{url}/translate", json={"q": "<b>无法打开文件</b> %s。", "source": "zh", "target": "en",
                                                       "format": "html"}, timeout=30)
        assert tagged.status_code == 200 and "translationMemory" not in tagged.json()  # inline tags: no lookup


XLIFF_WITH_A_STORED_UNIT = '''<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2">
  <file original="ui" source-language="zh-CN" datatype="plaintext">
    <body>
      <trans-unit id="save"><source>保存您的更改</source></trans-unit>
      <trans-unit id="open"><source>请打开设置页面</source></trans-unit>
      <trans-unit id="both"><source>保存您的更改。关闭窗口。</source></trans-unit>
      <trans-unit id="half"><source>保存您的更改。请打开设置页面。</source></trans-unit>
    </body>
  </file>
</xliff>
'''


def test_an_xliff_unit_served_from_the_memory_is_marked_an_exact_match_not_machine_translation(tmp_path):
    """A CAT tool reads the target's state: a stored translation is a person's, a machine's needs review."""
    from lxml import etree

    from mtserve.service.tm import TranslationMemory

    home = tmp_path / "home"
    import_po(home, tmp_path)
    # stored sentence by sentence: a unit made of two of them is the memory's too, one that is half not
    TranslationMemory(home / "tm.sqlite3").add([("保存您的更改。", "Save your changes."),
                                                ("关闭窗口。", "Close the window.")], "zh", "en")
    engine = ScriptedEngine(lambda request: "Engine translation")
    with serve(engine, home=home) as url:
        job = httpx.post(f"{url}/jobs", data={"source": "zh", "target": "en"},
                         files={"file": ("ui.xlf", XLIFF_WITH_A_STORED_UNIT.encode())}, timeout=30)
        assert job.status_code in (200, 202), job.text
        status = job.json()
        for _ in range(200):
            status = httpx.get(f"{url}/jobs/{status['id']}", timeout=30).json()
            if status["status"] in ("done", "failed"):
                break
            time.sleep(0.05)
        assert status["status"] == "done", status
        assert "2 of 4 segments are translations stored in the translation memory, used as stored." in status["notes"]
        download = httpx.get(status["translatedFileUrl"], timeout=30)
        assert download.status_code == 200, download.text
    ns = "{urn:oasis:names:tc:xliff:document:1.2}"
    targets = {unit.get("id"): unit.find(f"{ns}target") for unit in etree.fromstring(download.content).iter(
        f"{ns}trans-unit")}
    assert targets["save"].text == "Save your changes"
    assert (targets["save"].get("state"), targets["save"].get("state-qualifier")) == ("translated", "exact-match")
    assert targets["open"].text == "Engine translation"
    assert (targets["open"].get("state"), targets["open"].get("state-qualifier")) == (
        "needs-review-translation", "mt-suggestion")
    assert targets["both"].text == "Save your changes. Close the window."
    assert (targets["both"].get("state"), targets["both"].get("state-qualifier")) == ("translated", "exact-match")
    assert targets["half"].get("state-qualifier") == "mt-suggestion"  # one sentence is the engine's
    assert sorted(c.text for c in engine.calls) == ["请打开设置页面", "请打开设置页面。"]
