"""Every format round-trips: same structure, no source text left, and the output parses in its own library.

These tests need no engine: each segment's "translation" is ``swap`` (Han
characters to Latin letters), so the expected output is known exactly.
"""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from lxml import etree

from mtserve.documents import DocumentError, read_document
from mtserve.documents.formats.registry import FORMATS, enabled_formats, format_for
from tests.documents import samples
from tests.documents.samples import has_han, swap


def translate(name: str, data: bytes, target: str = "en"):
    document = read_document(name, data)
    assert document.segments, "a sample with text must yield segments"
    assert all(s.strip() for s in document.segments), "segments are never blank"
    return document, document.render([swap(s) for s in document.segments], target)


# --- text formats ------------------------------------------------------------------------------
def test_txt_keeps_every_line_and_its_whitespace():
    document, out = translate("notes.txt", samples.TXT.encode())
    text = out.data.decode()
    source_lines = samples.TXT.split("\n")
    lines = text.split("\n")
    assert len(lines) == len(source_lines)
    for before, after in zip(source_lines, lines):
        assert after == (before[: len(before) - len(before.lstrip())] + swap(before.strip())
                         + before[len(before.rstrip()):] if before.strip() else before)
    assert not has_han(text)


def test_txt_keeps_crlf_and_bom():
    data = "\ufeff第一行\r\n第二行\r\n".encode("utf-8")
    _, out = translate("a.txt", b"\xef\xbb\xbf" + data[3:])
    assert out.data.startswith(b"\xef\xbb\xbf")
    assert out.data.decode("utf-8-sig").split("\r\n") == [swap("第一行"), swap("第二行"), ""]


def test_markdown_keeps_its_syntax_code_and_link_targets():
    from markdown_it import MarkdownIt

    document, out = translate("readme.md", samples.MARKDOWN.encode())
    text = out.data.decode()
    parser = MarkdownIt("commonmark").enable(["table", "strikethrough"])

    def blocks(src):
        return [(t.type, t.tag) for t in parser.parse(src) if t.type != "inline"]

    def inline_kinds(src):
        return [c.type for t in parser.parse(src) if t.type == "inline" for c in t.children
                if c.type not in ("text", "softbreak")]

    assert blocks(text) == blocks(samples.MARKDOWN)
    assert inline_kinds(text) == inline_kinds(samples.MARKDOWN)
    # Untouched: front matter, code block, inline code, link and image targets, the reference.
    for kept in ("title: 不要翻译", 'print("代码块不翻译")', "`代码不翻译`",
                 "(https://example.com/路径 \"标题\")", "(images/图.png)", "[ref]: https://example.com/参考",
                 "][ref]"):
        assert kept in text, kept
    for words in ("标题", "链接文字", "强调", "第一项", "加粗", "苹果", "红色的水果", "图片说明", "参考"):
        assert any(words in segment for segment in document.segments), words
    # The wrapped paragraph is one marked segment, joined across its soft line break: the code
    # span is a void tag and the link's text sits in a tag, so the sentence is translated whole.
    assert "第一段有 <x1/> 和 <a2>链接文字</a2>，这一行接着第一段。" in document.segments
    assert "第二项 <b1>加粗</b1>" in document.segments
    prose = text.replace('print("代码块不翻译")', "").replace("`代码不翻译`", "")
    prose = prose.replace("title: 不要翻译", "")
    prose = "\n".join(line for line in prose.split("\n")
                      if "example.com" not in line and "图.png" not in line)
    assert not has_han(prose), prose


def test_markdown_emphasis_and_links_follow_their_words():
    document = read_document("a.md", "请在**会议开始前**阅读[手册](https://example.com/m)和`README`。\n".encode())
    assert document.segments == ["请在<b1>会议开始前</b1>阅读<a2>手册</a2>和<code3>README</code3>。"]
    # the code span's words travel with the sentence; whatever the engine writes inside, the span is kept
    out = document.render(["Read the <a2>manual</a2> and <code3>Readme</code3> <b1>before the meeting</b1>."], "en")
    assert out.data.decode() == "Read the [manual](https://example.com/m) and `README` **before the meeting**.\n"


def test_markdown_escapes_syntax_the_translation_brings_in():
    document = read_document("a.md", "你好世界\n".encode())
    out = document.render(["*not emphasis* and `not code`"], "en").data.decode()
    assert out == "\\*not emphasis\\* and \\`not code\\`\n"


def test_html_translates_text_nodes_only():
    _, out = translate("page.html", samples.HTML.encode())
    text = out.data.decode()
    source_tree = etree.HTML(samples.HTML.encode())
    tree = etree.HTML(out.data)
    assert [el.tag for el in tree.iter()] == [el.tag for el in source_tree.iter()]
    assert tree.find(".//script").text == source_tree.find(".//script").text
    assert tree.find(".//code").text == "代码 = 1"
    assert tree.find(".//img").get("alt") == swap("图片描述")
    assert tree.find(".//img").get("src") == "a.png"
    assert '<html lang="en">' in text
    body = etree.tostring(tree.find(".//body"), method="text", encoding="unicode")
    assert not has_han(body.replace("代码 = 1", "").replace("脚本", ""))


@pytest.mark.parametrize("name, source", [("film.srt", samples.SRT), ("film.vtt", samples.VTT)])
def test_subtitles_keep_numbering_and_timings_exactly(name, source):
    _, out = translate(name, source.encode())
    text = out.data.decode()
    kept = [line for line in source.split("\n") if "-->" in line or line.strip().isdigit()
            or line.startswith(("WEBVTT", "Kind:", "NOTE", "intro"))]
    out_kept = [line for line in text.split("\n") if "-->" in line or line.strip().isdigit()
                or line.startswith(("WEBVTT", "Kind:", "NOTE", "intro"))]
    assert out_kept == kept
    cue_text = [line for line in text.split("\n") if line not in kept]
    assert not has_han("\n".join(cue_text).replace("张三", ""))
    if name.endswith(".srt"):
        assert swap("你好，欢迎来到这里。") in text  # two lines translated together (CJK: no space)
        assert f"<i>{swap('这是第二条字幕')}</i>" in text
        assert f"- {swap('你是谁？')}\n- {swap('我是老师。')}" in text  # one line per speaker
    else:
        assert f"<v 张三>{swap('大家好')}</v>" in text


def test_subtitles_parse_in_a_subtitle_reader():
    """Every cue still has its index, timing and non-empty text, in the SubRip grammar."""
    import re

    _, out = translate("film.srt", samples.SRT.encode())
    blocks = [b for b in out.data.decode().strip().split("\n\n")]
    assert len(blocks) == 3
    for number, block in enumerate(blocks, 1):
        lines = block.split("\n")
        assert lines[0] == str(number)
        assert re.fullmatch(r"\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}", lines[1])
        assert all(line.strip() for line in lines[2:]) and len(lines) >= 3


def test_po_translates_msgstr_and_keeps_ids_and_placeholders():
    import polib

    _, out = translate("messages.po", samples.PO.encode())
    source = polib.pofile(samples.PO)
    result = polib.pofile(out.data.decode())
    assert [(e.msgctxt, e.msgid, e.msgid_plural) for e in result] == \
        [(e.msgctxt, e.msgid, e.msgid_plural) for e in source]
    first, second, third = result
    assert first.msgstr == swap(first.msgid) and "%(name)s" in first.msgstr and "{count}" in first.msgstr
    assert first.flags == ["python-format"] and first.occurrences == [("app.py", "10")]
    assert second.msgstr == swap("打开文件 %s")
    assert third.msgstr_plural == {0: swap("一个文件"), 1: swap("%d 个文件")}
    assert result.metadata["Language"] == "en"
    assert "注释保留" in out.data.decode()


def test_po_without_a_header_comment_gets_none():
    catalog = 'msgid ""\nmsgstr ""\n"Language: zh_CN\\n"\n\nmsgid "保存"\nmsgstr ""\n'
    _, out = translate("bare.po", catalog.encode())
    assert out.data.decode().startswith('msgid ""\n')
    _, out = translate("commented.po", ("# 注释\n" + catalog).encode())
    assert out.data.decode().startswith("# 注释\nmsgid")


def test_json_translates_values_and_keeps_keys():
    _, out = translate("strings.json", samples.JSON_I18N.encode())
    source = json.loads(samples.JSON_I18N)
    result = json.loads(out.data)

    def shape(value):
        if isinstance(value, dict):
            return {k: shape(v) for k, v in value.items()}
        if isinstance(value, list):
            return [shape(v) for v in value]
        return type(value).__name__

    assert shape(result) == shape(source)
    assert list(result) == list(source)
    assert result["app"]["greeting"] == swap("你好，{name}！")
    assert result["items"][1] == swap("第二项 %s")
    assert result["count"] == 3 and result["enabled"] is True
    # an ICU message is a segment now: the service keeps its skeleton and translates its branches
    assert result["plural"] == swap(source["plural"])
    assert out.data.decode().startswith('{\n  "app"')  # the source's two-space indent


def test_i18n_strings_keep_inline_tags_and_menu_accelerators():
    data = json.dumps({"save": "点击<b>这里</b>保存<0>文件</0>", "menu": "_File", "open": "&Open",
                       "legal": "R&D 部门"}, ensure_ascii=False).encode()
    document = read_document("ui.json", data)
    assert document.segments == ["点击<b1>这里</b1>保存<g2>文件</g2>", "File", "Open", "R&D 部门"]
    out = document.render(["Click <b1>here</b1> to save the <g2>file</g2>", "Datei", "Öffnen", "R&D"], "de")
    assert json.loads(out.data) == {"save": "Click <b>here</b> to save the <0>file</0>", "menu": "_Datei",
                                    "open": "&Öffnen", "legal": "R&D"}
    zh = document.render(["点击<b1>这里</b1>保存<g2>文件</g2>", "文件", "打开", "研发部门"], "zh")
    assert json.loads(zh.data)["menu"] == "文件(_F)" and json.loads(zh.data)["open"] == "打开(&O)"


# --- office formats ------------------------------------------------------------------------------
def all_text_docx(document) -> str:
    parts = [p.text for p in document.paragraphs]
    parts += [cell.text for table in document.tables for row in table.rows for cell in row.cells]
    for section in document.sections:
        parts += [p.text for p in section.header.paragraphs + section.footer.paragraphs]
    return "\n".join(parts)


def test_docx_keeps_styles_tables_images_headers():
    import docx

    data = samples.docx_bytes()
    _, out = translate("report.docx", data)
    source, result = docx.Document(io.BytesIO(data)), docx.Document(io.BytesIO(out.data))
    assert [p.style.name for p in result.paragraphs] == [p.style.name for p in source.paragraphs]
    assert [len(p.runs) for p in result.paragraphs] == [len(p.runs) for p in source.paragraphs]
    assert [p.text for p in result.paragraphs] == [swap(p.text) for p in source.paragraphs]
    assert [[c.text for c in row.cells] for row in result.tables[0].rows] == \
        [[swap(c.text) for c in row.cells] for row in source.tables[0].rows]
    assert len(result.inline_shapes) == len(source.inline_shapes) == 1
    assert result.sections[0].header.paragraphs[0].text == swap("页眉文字")
    assert result.sections[0].footer.paragraphs[0].text == swap("页脚文字")
    assert not has_han(all_text_docx(result))
    # Untranslated parts are byte-identical.
    with zipfile.ZipFile(io.BytesIO(data)) as a, zipfile.ZipFile(io.BytesIO(out.data)) as b:
        assert a.namelist() == b.namelist()
        assert a.read("word/styles.xml") == b.read("word/styles.xml")
        assert a.read("word/media/image1.png") == b.read("word/media/image1.png")


def test_docx_mixed_runs_are_one_sentence_with_the_bold_on_its_words():
    import docx

    data = samples.docx_bytes()
    document, out = translate("report.docx", data)
    assert "这是第一段，<b1>其中有加粗的词</b1>，然后继续说明情况。" in document.segments
    mixed = docx.Document(io.BytesIO(out.data)).paragraphs[1]
    assert mixed.text == swap("这是第一段，其中有加粗的词，然后继续说明情况。")
    assert [(r.text, bool(r.bold)) for r in mixed.runs if r.text] == [
        (swap("这是第一段，"), False), (swap("其中有加粗的词"), True), (swap("，然后继续说明情况。"), False)]


def test_docx_formats_follow_their_words_when_the_translation_reorders_them():
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    paragraph = document.add_paragraph("请在")
    bold = paragraph.add_run("会议开始前")
    bold.bold = True
    paragraph.add_run("阅读")
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    paragraph._p.append(parse_xml(f'<w:hyperlink {w} w:anchor="manual"><w:r><w:rPr><w:i/></w:rPr>'
                                  '<w:t>手册</w:t></w:r></w:hyperlink>'))
    paragraph._p.append(parse_xml(f'<w:r {w}><w:rPr><w:rStyle w:val="FootnoteReference"/></w:rPr>'
                                  '<w:footnoteReference w:id="1"/></w:r>'))
    paragraph.add_run("。")
    buffer = io.BytesIO()
    document.save(buffer)
    parsed = read_document("meeting.docx", buffer.getvalue())
    assert parsed.segments == ["请在<b1>会议开始前</b1>阅读<a2>手册</a2><x3/>。"]
    out = parsed.render(["Please read the <a2>manual</a2><x3/> <b1>before the meeting starts</b1>."], "en")
    result = docx.Document(io.BytesIO(out.data)).paragraphs[0]
    assert result.text == "Please read the manual before the meeting starts."
    p = result._p
    assert p.xpath("string(./w:hyperlink)") == "manual" and p.xpath("./w:hyperlink/@w:anchor") == ["manual"]
    assert p.xpath("./w:hyperlink/w:r/w:rPr/w:i")  # the link keeps its italic
    assert [r.text for r in result.runs if r.bold] == ["before the meeting starts"]
    children = [etree.QName(c).localname for c in p if etree.QName(c).localname in ("r", "hyperlink")]
    references = p.xpath("./w:r[w:footnoteReference]")
    assert len(references) == 1 and children.index("hyperlink") < list(p).index(references[0])


def test_pptx_keeps_slides_shapes_positions_and_notes():
    from pptx import Presentation

    data = samples.pptx_bytes()
    document, out = translate("slides.pptx", data)
    source, result = Presentation(io.BytesIO(data)), Presentation(io.BytesIO(out.data))
    assert len(result.slides) == len(source.slides) == 2
    for a, b in zip(source.slides, result.slides):
        assert [(s.shape_type, s.name, s.left, s.top, s.width, s.height) for s in b.shapes] == \
            [(s.shape_type, s.name, s.left, s.top, s.width, s.height) for s in a.shapes]
        for sa, sb in zip(a.shapes, b.shapes):
            if sa.has_text_frame:
                assert sb.text_frame.text == swap(sa.text_frame.text)
            if sa.has_table:
                cells = [c.text for c in sb.table.iter_cells()]
                assert cells == [swap(c.text) for c in sa.table.iter_cells()]
    assert result.slides[0].notes_slide.notes_text_frame.text == swap("演讲者备注内容")
    assert [label for label, _ in document.sections] == ["slide 1", "slide 2", "notes 1"]


def test_odt_keeps_styles_and_spans():
    from odf import teletype
    from odf import text as odf_text
    from odf.opendocument import load

    data = samples.odt_bytes()
    _, out = translate("letter.odt", data)
    source, result = load(io.BytesIO(data)), load(io.BytesIO(out.data))
    for kind in (odf_text.P, odf_text.H, odf_text.Span):
        a, b = source.getElementsByType(kind), result.getElementsByType(kind)
        assert len(a) == len(b)
        assert [str(x.getAttribute("stylename")) for x in a] == [str(x.getAttribute("stylename")) for x in b]
    texts = [teletype.extractText(p) for p in result.getElementsByType(odf_text.P)]
    assert texts == [swap(teletype.extractText(p)) for p in source.getElementsByType(odf_text.P)]
    assert not has_han("".join(texts))
    with zipfile.ZipFile(io.BytesIO(out.data)) as archive:
        first = archive.infolist()[0]
        assert first.filename == "mimetype" and first.compress_type == zipfile.ZIP_STORED


def test_epub_chapter_by_chapter():
    from ebooklib import ITEM_DOCUMENT, epub

    data = samples.epub_bytes()
    document, out = translate("book.epub", data)
    assert [label.split(" (")[0] for label, _ in document.sections[:2]] == ["chapter 1", "chapter 2"]
    path = io.BytesIO(out.data)
    with zipfile.ZipFile(path) as archive:
        for name in archive.namelist():
            if name.endswith((".xhtml", ".opf", ".ncx")):
                etree.fromstring(archive.read(name))  # every part is still well-formed XML
    import tempfile

    with tempfile.NamedTemporaryFile(suffix=".epub") as handle:
        handle.write(out.data)
        handle.flush()
        book = epub.read_epub(handle.name)
    assert book.get_metadata("DC", "title")[0][0] == swap("测试之书")
    assert book.get_metadata("DC", "language")[0][0] == "en"
    chapters = [item for item in book.get_items_of_type(ITEM_DOCUMENT) if "chapter" in item.file_name]
    assert len(chapters) == 2
    for chapter in chapters:
        text = etree.tostring(etree.fromstring(chapter.get_content()), method="text", encoding="unicode")
        assert text.strip() and not has_han(text)
    assert "<b>" in chapters[0].get_content().decode()


# --- PDF ---------------------------------------------------------------------------------------------
def pdf_text(data: bytes) -> str:
    from pdfminer.high_level import extract_text

    return extract_text(io.BytesIO(data))


def english_swap(text: str) -> str:
    return swap(text).replace("，", ", ").replace("。", ".")


def test_pdf_text_is_replaced_in_place_and_graphics_kept():
    import pypdf

    data = samples.pdf_bytes()
    document = read_document("report.pdf", data)
    out = document.render([english_swap(s) for s in document.segments], "en")
    assert out.extension == "pdf"
    assert document.segments[0] == samples.PDF_TITLE
    assert samples.PDF_BODY in document.segments  # wrapped lines come back as one block
    assert [label for label, _ in document.sections] == ["page 1", "page 2"]
    source, result = pypdf.PdfReader(io.BytesIO(data)), pypdf.PdfReader(io.BytesIO(out.data))
    assert len(result.pages) == len(source.pages)
    assert [p.mediabox for p in result.pages] == [p.mediabox for p in source.pages]
    assert len(result.pages[0].images) == len(source.pages[0].images) == 1
    text = pdf_text(out.data)
    assert not has_han(text), text
    assert english_swap(samples.PDF_TITLE) in text
    assert english_swap(samples.PDF_SECOND) in " ".join(text.split())


def test_pdf_into_a_cjk_target_embeds_a_font_readers_can_extract():
    data = samples.pdf_bytes()
    document = read_document("report.pdf", data)
    out = document.render(["中文译文第%d块" % i for i in range(len(document.segments))], "zh")
    assert out.extension == "pdf"
    text = pdf_text(out.data)
    assert "中文译文第0块" in text and samples.PDF_TITLE not in text


def test_pdf_falls_back_to_docx_when_no_font_covers_the_text(monkeypatch):
    import docx

    from mtserve.documents.formats import pdf as pdf_module

    monkeypatch.setattr(pdf_module, "pick_fonts", lambda *args, **kwargs: None)
    document = read_document("report.pdf", samples.pdf_bytes())
    out = document.render([swap(s) for s in document.segments], "en")
    assert out.extension == "docx"
    paragraphs = [p.text for p in docx.Document(io.BytesIO(out.data)).paragraphs if p.text]
    assert paragraphs == [swap(s) for s in document.segments]
    assert any("DOCX" in note for note in document.notes)


def test_scanned_pdf_says_ocr_is_not_supported():
    with pytest.raises(DocumentError, match="no text layer.*OCR is not supported"):
        read_document("scan.pdf", samples.scanned_pdf_bytes())


# --- broken input and the registry -------------------------------------------------------------------
@pytest.mark.parametrize("name, data, message", [
    ("a.docx", b"PK\x03\x04 not really a zip", "could not read the .docx file"),
    ("a.docx", b"plain text", "could not read the .docx file"),
    ("a.pptx", samples.docx_bytes(), "could not read the .pptx file: ppt/presentation.xml is missing"),
    ("a.odt", b"", "is empty"),
    ("a.epub", samples.docx_bytes(), "could not read the .epub file"),
    ("a.pdf", b"%PDF-1.4\n garbage", "could not read the .pdf file"),
    ("a.pdf", b"hello", "does not start with %PDF"),
    ("a.json", b"{\"a\": ", "could not read the .json file"),
    ("a.json", b"\"just a string\"", "an i18n file is an object"),
    ("a.po", b"msgid \"a\"\nmsgstr \"b\" junk\n", "could not read the .po file"),
    ("a.srt", "只是文字".encode(), "it has no cues"),
    ("a.vtt", b"00:01.000 --> 00:02.000\nhi\n", "starts with the line WEBVTT"),
    ("a.txt", b"\xff\xfe\x00\xd8 bad", "could not read the .txt file"),
    ("a.txt", "中文".encode("gb18030"), "not UTF-8"),
])
def test_broken_files_say_what_is_wrong(name, data, message):
    with pytest.raises(DocumentError, match=message):
        read_document(name, data)


def test_unknown_extension_lists_the_allowed_formats():
    with pytest.raises(DocumentError) as caught:
        read_document("virus.exe", b"MZ")
    message = str(caught.value)
    assert "'.exe'" in message
    for fmt in FORMATS:
        assert f".{fmt.extensions[0]}" in message


def test_the_setting_limits_the_formats():
    formats = enabled_formats("txt, .md")
    assert [f.name for f in formats] == ["txt", "md"]
    assert format_for("a.markdown", formats).name == "md"
    with pytest.raises(DocumentError, match="allowed formats: .txt, .md, .markdown"):
        format_for("a.docx", formats)
    assert enabled_formats("all") == FORMATS
    assert enabled_formats("") == ()


def test_docx_hyperlinks_stay_links_and_fields_are_kept():
    import docx
    from docx.oxml import parse_xml

    document = docx.Document()
    paragraph = document.add_paragraph("请阅读")
    w = 'xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"'
    link = f'<w:hyperlink {w} w:anchor="top"><w:r><w:t>使用手册</w:t></w:r></w:hyperlink>'
    paragraph._p.append(parse_xml(link))
    paragraph._p.append(parse_xml(f'<w:r {w}><w:t>了解详情。</w:t></w:r>'))
    paragraph._p.append(parse_xml(f'<w:fldSimple {w} w:instr="PAGE"><w:r><w:t>7</w:t></w:r></w:fldSimple>'))
    buffer = io.BytesIO()
    document.save(buffer)
    translated, out = translate("link.docx", buffer.getvalue())
    assert translated.segments == ["请阅读<a1>使用手册</a1>了解详情。"]  # a field's result is not text
    result = docx.Document(io.BytesIO(out.data)).paragraphs[0]._p
    assert result.xpath("string(./w:hyperlink)") == swap("使用手册")
    assert result.xpath("./w:hyperlink/@w:anchor") == ["top"]
    assert result.xpath("string(./w:fldSimple)") == "7"
    assert "".join(result.xpath(".//w:t/text()")) == swap("请阅读使用手册了解详情。") + "7"


def test_odt_notes_links_and_line_breaks():
    from odf import teletype
    from odf import text as odf_text
    from odf.opendocument import OpenDocumentText, load

    document = OpenDocumentText()
    paragraph = odf_text.P(text="第一行")
    paragraph.addElement(odf_text.LineBreak())
    paragraph.addText("第二行，见")
    paragraph.addElement(odf_text.A(href="https://example.com/", text="网站"))
    note = odf_text.Note(id="n1", noteclass="footnote")
    note.addElement(odf_text.NoteCitation(text="1"))
    body = odf_text.NoteBody()
    body.addElement(odf_text.P(text="脚注内容"))
    note.addElement(body)
    paragraph.addElement(note)
    paragraph.addText("。")
    document.text.addElement(paragraph)
    buffer = io.BytesIO()
    document.write(buffer)
    translated, out = translate("notes.odt", buffer.getvalue())
    assert translated.segments == ["第一行", "第二行，见", "网站", "。", "脚注内容"]
    result = load(io.BytesIO(out.data))
    assert len(result.getElementsByType(odf_text.LineBreak)) == 1
    [link] = result.getElementsByType(odf_text.A)
    assert str(link.getAttribute("href")) == "https://example.com/"
    assert teletype.extractText(link) == swap("网站")
    assert teletype.extractText(result.getElementsByType(odf_text.NoteCitation)[0]) == "1"
    assert teletype.extractText(result.getElementsByType(odf_text.NoteBody)[0]) == swap("脚注内容")


def test_pptx_slide_number_fields_are_kept():
    from pptx import Presentation
    from pptx.oxml import parse_xml

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    slide.shapes.title.text = "第"
    a = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"'
    paragraph = slide.shapes.title.text_frame.paragraphs[0]._p
    paragraph.append(parse_xml(f'<a:fld {a} id="{{B6F15528-21DE-4FAA-801E-634DDDAF4B2B}}" type="slidenum">'
                               '<a:t>1</a:t></a:fld>'))
    paragraph.append(parse_xml(f'<a:r {a}><a:t>页</a:t></a:r>'))
    buffer = io.BytesIO()
    presentation.save(buffer)
    translated, out = translate("number.pptx", buffer.getvalue())
    assert translated.segments == ["第<x1/>页"]  # the slide number sits in the sentence
    title = Presentation(io.BytesIO(out.data)).slides[0].shapes.title.text_frame.paragraphs[0]._p
    assert title.xpath("string(./a:fld)") == "1"


def test_password_protected_pdf_says_so():
    import pypdf

    writer = pypdf.PdfWriter(clone_from=pypdf.PdfReader(io.BytesIO(samples.pdf_bytes())))
    writer.encrypt("secret")
    buffer = io.BytesIO()
    writer.write(buffer)
    with pytest.raises(DocumentError, match="password-protected"):
        read_document("locked.pdf", buffer.getvalue())


def test_pptx_runs_keep_their_format_on_their_words():
    from pptx import Presentation

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[5])
    paragraph = slide.shapes.title.text_frame.paragraphs[0]
    for text, bold in (("我们的", False), ("新产品", True), ("明天发布。", False)):
        run = paragraph.add_run()
        run.text, run.font.bold = text, bold
    buffer = io.BytesIO()
    presentation.save(buffer)
    parsed = read_document("launch.pptx", buffer.getvalue())
    assert parsed.segments == ["我们的<b1>新产品</b1>明天发布。"]
    out = parsed.render(["Our <b1>new product</b1> launches tomorrow."], "en")
    title = Presentation(io.BytesIO(out.data)).slides[0].shapes.title.text_frame.paragraphs[0]
    assert [(r.text, bool(r.font.bold)) for r in title.runs] == [
        ("Our ", False), ("new product", True), (" launches tomorrow.", False)]


def test_odt_spans_links_and_notes_follow_their_words():
    from odf import teletype
    from odf import text as odf_text
    from odf.opendocument import OpenDocumentText, load
    from odf.style import Style, TextProperties

    document = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    document.automaticstyles.addElement(bold)
    paragraph = odf_text.P(text="他")
    paragraph.addElement(odf_text.Span(stylename=bold, text="昨天"))
    paragraph.addText("去了")
    paragraph.addElement(odf_text.A(href="https://example.com/bj", text="北京"))
    note = odf_text.Note(id="n1", noteclass="footnote")
    note.addElement(odf_text.NoteCitation(text="1"))
    body = odf_text.NoteBody()
    body.addElement(odf_text.P(text="首都"))
    note.addElement(body)
    paragraph.addElement(note)
    paragraph.addText("。")
    document.text.addElement(paragraph)
    buffer = io.BytesIO()
    document.write(buffer)
    parsed = read_document("trip.odt", buffer.getvalue())
    assert parsed.segments == ["他<g1>昨天</g1>去了<a2>北京</a2><x3/>。", "首都"]
    out = parsed.render(["He went to <a2>Beijing</a2><x3/> <g1>yesterday</g1>.", "the capital"], "en")
    result = load(io.BytesIO(out.data))
    [p, _] = result.getElementsByType(odf_text.P)
    [link] = result.getElementsByType(odf_text.A)
    [span] = [s for s in result.getElementsByType(odf_text.Span)]
    assert str(link.getAttribute("href")) == "https://example.com/bj" and teletype.extractText(link) == "Beijing"
    assert teletype.extractText(span) == "yesterday" and str(span.getAttribute("stylename")) == "Bold"
    assert teletype.extractText(result.getElementsByType(odf_text.NoteBody)[0]) == "the capital"
    assert teletype.extractText(p) == "He went to Beijing1the capital yesterday."  # the note holds its body
