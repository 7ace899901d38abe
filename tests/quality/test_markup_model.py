"""Markup in context with the real small model: one sentence per format, read back.

Each test sends a sentence whose markup sits in the middle (a bold word, a link, a placeholder)
and checks that the output reads as one translation: no Chinese left, the markup back exactly
once, the formatting on the words that translate its content, and no word glued to a tag.
"""

from __future__ import annotations

import io
import json
import re

import httpx
import pytest

from mtserve.eval.markup import MarkupItem, edge_errors, strip_html, tags_intact
from tests.documents.samples import has_han

pytestmark = pytest.mark.model
TIMEOUT = 300


def translate(url: str, q: str, fmt: str = "text") -> str:
    r = httpx.post(f"{url}/translate", json={"q": q, "source": "zh", "target": "en", "format": fmt},
                   timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return r.json()["translatedText"]


def translate_file(url: str, name: str, data: bytes) -> bytes:
    r = httpx.post(f"{url}/translate_file", data={"source": "zh", "target": "en"},
                   files={"file": (name, data)}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    return httpx.get(r.json()["translatedFileUrl"], timeout=TIMEOUT).content


def one_sentence(source: str, output: str, fmt: str = "html") -> None:
    """English, tags intact, and nothing glued to a tag or capitalised after one mid-sentence."""
    visible = strip_html(output) if fmt != "text" else output
    assert not has_han(visible), output
    assert visible[:1].isupper() and visible.rstrip()[-1:] in ".!?", output
    if fmt != "text":
        assert tags_intact(source, output), output
        item = MarkupItem("t", "tags", fmt, source, "", "")
        assert edge_errors(item, output, visible, "en") == [], output


def test_html_bold_word_and_link_mid_sentence(live_server):
    source = '<p>我喜欢<b>猫</b>。</p><p>请点击<a href="/save">这里</a>保存您的更改。</p>'
    output = translate(live_server, source, "html")
    one_sentence(source, output)
    assert re.search(r"<b>[^<]*cat[^<]*</b>", output, re.I), output
    assert re.search(r'<a href="/save">[^<]+</a>', output) and re.search(r"\bsave\b", output, re.I), output


def test_deepl_xml_placeholder_tags_come_back_in_place(live_server):
    text = '请点击<x id="0"></x>保存您的更改。'
    r = httpx.post(f"{live_server}/v2/translate", timeout=TIMEOUT, data={
        "text": text, "source_lang": "ZH", "target_lang": "EN-US", "tag_handling": "xml", "ignore_tags": "x"})
    assert r.status_code == 200, r.text
    output = r.json()["translations"][0]["text"]
    assert output.count('<x id="0"></x>') == 1, output
    one_sentence(text, output, "xml")
    assert not output.startswith("<x") and re.search(r"\bsave\b", output, re.I), output


def test_docx_bold_words_and_hyperlink_keep_their_words(live_server):
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    paragraph = document.add_paragraph("请在")  # the example, with a link on 报告
    paragraph.add_run("会议开始前").bold = True
    paragraph.add_run("把")
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    paragraph._p.append(parse_xml(f'<w:hyperlink {w} w:anchor="report"><w:r><w:t>报告</w:t></w:r></w:hyperlink>'))
    paragraph.add_run("发给我。")
    buffer = io.BytesIO()
    document.save(buffer)
    result = docx.Document(io.BytesIO(translate_file(live_server, "report.docx", buffer.getvalue())))
    p = result.paragraphs[0]
    text = p._p.xpath("string(.)")
    assert not has_han(text) and text[:1].isupper(), text
    bold = " ".join(r.text for r in p.runs if r.bold)
    assert re.search(r"meeting|before|start|begin", bold, re.I), [(r.text, r.bold) for r in p.runs]
    assert re.search(r"report", p._p.xpath("string(./w:hyperlink)"), re.I), text
    assert p._p.xpath("./w:hyperlink/@w:anchor") == ["report"]


def test_pptx_and_odt_runs_keep_their_words(live_server):
    from odf import teletype
    from odf import text as odf_text
    from odf.opendocument import OpenDocumentText, load
    from odf.style import Style, TextProperties
    from pptx import Presentation

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    title = slide.shapes.title.text_frame.paragraphs[0]
    for text, bold in (("我喜欢", False), ("猫", True), ("。", False)):
        run = title.add_run()
        run.text, run.font.bold = text, bold
    buffer = io.BytesIO()
    presentation.save(buffer)
    out = Presentation(io.BytesIO(translate_file(live_server, "cat.pptx", buffer.getvalue())))
    runs = out.slides[0].shapes.title.text_frame.paragraphs[0].runs
    assert not has_han("".join(r.text for r in runs))
    assert re.search(r"cat", " ".join(r.text for r in runs if r.font.bold), re.I), [(r.text, r.font.bold)
                                                                                     for r in runs]

    document = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    document.automaticstyles.addElement(bold)
    paragraph = odf_text.P(text="我喜欢")
    paragraph.addElement(odf_text.Span(stylename=bold, text="茶"))
    paragraph.addText("。")
    document.text.addElement(paragraph)
    buffer = io.BytesIO()
    document.write(buffer)
    result = load(io.BytesIO(translate_file(live_server, "tea.odt", buffer.getvalue())))
    [span] = result.getElementsByType(odf_text.Span)
    assert re.search(r"tea", teletype.extractText(span), re.I), teletype.extractText(result.text)
    assert not has_han(teletype.extractText(result.text))


def test_markdown_inline_emphasis_link_and_code(live_server):
    source = "请点击[这里](https://example.com/s)保存**所有**文件，然后运行`make`。\n"
    out = translate_file(live_server, "save.md", source.encode()).decode()
    assert "(https://example.com/s)" in out and "`make`" in out and re.search(r"\*\*[^*]+\*\*", out), out
    assert re.search(r"\[[^\]]+\]\(https://example.com/s\)", out), out
    assert not has_han(out.replace("`make`", "")), out


def test_po_and_json_placeholders_come_back_byte_identical(live_server):
    po = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
          'msgid "%s，你有%d条新消息。"\nmsgstr ""\n\n'
          'msgid "{name}上传了{count, plural, one {# 个文件} other {# 个文件}}。"\nmsgstr ""\n')
    out = translate_file(live_server, "app.po", po.encode()).decode()
    import polib

    [printf, icu] = [e for e in polib.pofile(out) if e.msgid]
    assert printf.msgstr.count("%s") == 1 and printf.msgstr.count("%d") == 1, printf.msgstr
    assert "{name}" in icu.msgstr and re.search(r"\{count, plural, one \{# [^{}]+\} other \{# [^{}]+\}\}",
                                                icu.msgstr), icu.msgstr
    assert not has_han(printf.msgstr + icu.msgstr)
    data = json.dumps({"greeting": "欢迎回来，{0}！", "files": "已保存%1$s个文件。"}, ensure_ascii=False)
    result = json.loads(translate_file(live_server, "ui.json", data.encode()))
    assert "{0}" in result["greeting"] and "%1$s" in result["files"], result
    assert not has_han(result["greeting"] + result["files"]), result


# --- the four examples of a new user's first try: the tags on the right words, nothing lost ------

def _bold(html: str) -> str:
    match = re.search(r"<b>([^<]*)</b>", html)
    assert match, html
    return match.group(1).casefold()


def test_the_emphasis_stays_on_the_negation(live_server):
    output = translate(live_server, "<p>请<b>不要</b>关闭此窗口。</p>", "html")
    one_sentence("<p>请<b>不要</b>关闭此窗口。</p>", output)
    assert re.fullmatch(r"(do )?not|don't|never", _bold(output)), output  # not on "close"


def test_docx_bold_stays_on_the_number_and_the_overseas_market_is_kept(live_server):
    import docx

    document = docx.Document()
    first = document.add_paragraph("今年我们产品的销量增长了")
    first.add_run("百分之十五").bold = True
    first.add_run("。")
    second = document.add_paragraph("下季度我们将重点开拓")
    second.add_run("海外市场").bold = True
    second.add_run("。")
    buffer = io.BytesIO()
    document.save(buffer)
    result = docx.Document(io.BytesIO(translate_file(live_server, "sales.docx", buffer.getvalue())))
    [number, market] = [p for p in result.paragraphs if p.text.strip()]
    bold = ["".join(r.text for r in p.runs if r.bold).strip().casefold() for p in (number, market)]
    assert re.search(r"\b(15|fifteen)\b", bold[0]) and "product" not in bold[0], number.text
    assert re.search(r"overseas|foreign|international|abroad", market.text, re.I), market.text
    assert re.search(r"market", bold[1]), market.text


def test_markdown_inline_code_sits_where_the_command_is_named_and_no_word_is_glued(live_server):
    source = "运行 `make run` 启动服务，然后访问**http://127.0.0.1:8000**。\n"
    out = translate_file(live_server, "start.md", source.encode()).decode()
    assert out.count("`make run`") == 1 and out.count("**http://127.0.0.1:8000**") == 1, out
    assert re.search(r"\b(run|running|execute|use|type|enter|with)\s+`make run`", out, re.I), out
    assert re.search(r"\s\*\*http://127\.0\.0\.1:8000\*\*", out), out  # a space before the bold URL
    assert not re.search(r"`make run`\s+(service|server)\b", out, re.I), out  # not "to start the `make run` service"
