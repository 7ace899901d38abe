"""Small documents of every format, built by each format's own library, and a translation double.

``swap`` stands in for a translation: it turns every Han character into a Latin
letter and leaves everything else (ASCII, punctuation, placeholders) alone, so a
test can tell exactly what a translated segment must be and check that no
source text is left.
"""

from __future__ import annotations

import functools
import io
import json
import re
import tempfile
from pathlib import Path

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff]")
LETTERS = "abcdefghijklmnopqrstuvwxyz"


def swap(text: str) -> str:
    return HAN.sub(lambda m: LETTERS[ord(m.group()) % 26], text)


def has_han(text: str) -> bool:
    return bool(HAN.search(text))


def png(color=(200, 30, 30)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", (8, 8), color).save(out, "PNG")
    return out.getvalue()


# --- text formats -----------------------------------------------------------------------
TXT = "第一行文字。\n\n  缩进的第二行，还有一句。  \n最后一行\n"

MARKDOWN = """---
title: 不要翻译
---
# 标题 ##

第一段有 `代码不翻译` 和 [链接文字](https://example.com/路径 "标题")，
这一行接着第一段。

> 引用里的 *强调* 文字

- 第一项
- 第二项 **加粗**

| 名称 | 说明 |
|---|---|
| 苹果 | 红色的水果 |

```python
print("代码块不翻译")
```

![图片说明](images/图.png)

[参考][ref]

[ref]: https://example.com/参考
"""

HTML = """<!DOCTYPE html>
<html lang="zh">
<head><meta charset="utf-8"><title>页面标题</title>
<style>p { color: red; } /* 样式 */</style></head>
<body>
<h1>欢迎</h1>
<p>这是<b>加粗</b>的段落。<img src="a.png" alt="图片描述"></p>
<pre><code>代码 = 1</code></pre>
<script>var s = "脚本";</script>
</body>
</html>
"""

SRT = """1
00:00:01,000 --> 00:00:03,500
你好，
欢迎来到这里。

2
00:00:04,000 --> 00:00:06,000
<i>这是第二条字幕</i>

3
00:00:06,500 --> 00:00:08,000
- 你是谁？
- 我是老师。
"""

VTT = """WEBVTT
Kind: captions

NOTE 这是注释，不翻译

intro
00:01.000 --> 00:03.000 align:start position:10%
<v 张三>大家好</v>

00:03.500 --> 00:05.000
第二句话
"""

PO = """# 注释保留
msgid ""
msgstr ""
"Content-Type: text/plain; charset=UTF-8\\n"
"Plural-Forms: nplurals=2; plural=(n != 1);\\n"

#: app.py:10
#, python-format
msgid "你好，%(name)s！你有 {count} 条消息。"
msgstr ""

msgctxt "菜单"
msgid "打开文件 %s"
msgstr ""

msgid "一个文件"
msgid_plural "%d 个文件"
msgstr[0] ""
msgstr[1] ""
"""

JSON_I18N = json.dumps({
    "app": {"title": "我的应用", "greeting": "你好，{name}！"},
    "items": ["第一项", "第二项 %s"],
    "count": 3,
    "enabled": True,
    "plural": "{n, plural, one {# 个} other {# 个}}",
}, ensure_ascii=False, indent=2) + "\n"


# --- exchange formats -----------------------------------------------------------------------------
XLIFF12 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2" xmlns:my="urn:example:ext">
  <file source-language="zh-CN" datatype="html" original="page.html" my:owner="docs">
    <header><note>文件说明</note></header>
    <body>
      <trans-unit id="greeting" resname="hello" my:tag="keep">
        <source>你好，<g id="1" ctype="bold">世界</g>！<x id="2" ctype="lb"/>欢迎。</source>
        <note from="dev" priority="2">问候语</note>
      </trans-unit>
      <group id="g1" restype="x-menu">
        <trans-unit id="price">
          <source>价格 <ph id="3">{0}</ph> 元，<bpt id="4">&lt;b&gt;</bpt>很便宜<ept id="4">&lt;/b&gt;</ept> &lt;1&gt;</source>
          <target/>
        </trans-unit>
        <trans-unit id="split"><source>换行<bx id="5"/>前后<ex id="5"/>和<it id="6" pos="open">&lt;i&gt;</it>斜体</source></trans-unit>
        <trans-unit id="prefilled"><source>复制的原文</source><target state="needs-translation">复制的原文</target></trans-unit>
      </group>
      <trans-unit id="done"><source>已经翻译</source><target state="final">Already translated</target></trans-unit>
      <trans-unit id="mine"><source>人工翻译</source><target state="translated">Human translation</target></trans-unit>
      <trans-unit id="approved" approved="yes"><source>批准的</source><target></target></trans-unit>
      <trans-unit id="code" translate="no"><source>不要翻译</source></trans-unit>
      <trans-unit id="segmented">
        <source>第一句。第二句。</source>
        <seg-source><mrk mtype="seg" mid="1">第一句。</mrk><mrk mtype="seg" mid="2">第二句。</mrk></seg-source>
        <alt-trans><target>旧的建议</target></alt-trans>
      </trans-unit>
    </body>
  </file>
</xliff>
"""

XLIFF2 = """<?xml version="1.0" encoding="UTF-8"?>
<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="zh-CN">
  <file id="f1" original="app.json">
    <notes><note id="n1">文件备注</note></notes>
    <unit id="u1" name="welcome">
      <notes><note category="context">首页</note></notes>
      <originalData><data id="d1">&lt;a href="/"&gt;</data><data id="d2">&lt;/a&gt;</data></originalData>
      <segment id="s1">
        <source>点击<pc id="1" dataRefStart="d1" dataRefEnd="d2">这里</pc>继续<ph id="2" canReorder="no"/>。</source>
      </segment>
      <ignorable><source> </source></ignorable>
      <segment id="s2">
        <source>名字是<mrk id="m1" translate="no">张三</mrk>，<sc id="3"/>加粗<ec startRef="3"/>。</source>
        <target></target>
      </segment>
      <segment id="s3" state="final"><source>最终的</source><target>Final</target></segment>
    </unit>
    <unit id="u2" translate="no"><segment><source>不要翻译</source></segment></unit>
    <unit id="u3"><segment state="reviewed"><source>审校过</source><target>Reviewed</target></segment></unit>
    <unit id="u4"><segment id="s4" state="initial"><source>初始的</source><target>初始的</target></segment></unit>
  </file>
</xliff>
"""


def xlsx_bytes() -> bytes:
    """A workbook with styles, numbers, a date, formulas, a merged range, rich text, a comment and an
    inline string (openpyxl writes none, so one is put into the sheet's XML by hand)."""
    import datetime
    import zipfile

    import openpyxl
    from openpyxl.cell.rich_text import CellRichText, TextBlock
    from openpyxl.cell.text import InlineFont
    from openpyxl.comments import Comment
    from openpyxl.styles import Font, PatternFill

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.title = "销售 数据"
    sheet["A1"] = "产品名称"
    sheet["A1"].font = Font(bold=True, color="FF0000")
    sheet["A1"].fill = PatternFill("solid", fgColor="FFFF00")
    sheet["B1"] = 1234.5
    sheet["B1"].number_format = "#,##0.00"
    sheet["C1"] = datetime.date(2024, 3, 1)
    sheet["D1"] = "=B1*2"
    sheet["A2"] = CellRichText(["这是", TextBlock(InlineFont(b=True), "加粗"), "的文字"])
    sheet.merge_cells("A3:C3")
    sheet["A3"] = "合并的单元格"
    sheet["A4"] = "2024"  # a string without words: left alone
    sheet["B2"].comment = Comment("这是批注", "作者")
    summary = book.create_sheet("汇总")
    summary["A1"] = "='销售 数据'!B1+1"
    summary["A2"] = "=SUM('销售 数据'!B1:B3)"
    summary["A3"] = "合计"
    total = openpyxl.workbook.defined_name.DefinedName("总数", attr_text="'销售 数据'!$B$1")
    book.defined_names["总数"] = total
    links = book.create_sheet("链接")
    links["A1"] = '=INDIRECT("链接!B1")'  # a sheet named inside a string: it keeps its name
    out = io.BytesIO()
    book.save(out)
    source = zipfile.ZipFile(io.BytesIO(out.getvalue()))
    result = io.BytesIO()
    with zipfile.ZipFile(result, "w", zipfile.ZIP_DEFLATED) as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename == "xl/worksheets/sheet2.xml":
                data = data.replace(b'<row r="3">', b'<row r="3"><c r="B3" t="inlineStr"><is><t>'
                                    + "内联文字".encode() + b"</t></is></c>", 1)
                assert "内联文字".encode() in data
            if info.filename == "xl/worksheets/sheet3.xml":  # cells that use the shared string table
                data = data.replace(b"</sheetData>", b'<row r="2"><c r="A2" t="s"><v>0</v></c>'
                                    b'<c r="B2" t="s"><v>1</v></c></row></sheetData>', 1)
                assert b'r="A2"' in data
            if info.filename == "xl/_rels/workbook.xml.rels":
                data = data.replace(b"</Relationships>", b'<Relationship Id="rIdSst" Type="http://schemas.'
                                    b'openxmlformats.org/officeDocument/2006/relationships/sharedStrings" '
                                    b'Target="sharedStrings.xml"/></Relationships>')
            if info.filename == "[Content_Types].xml":
                data = data.replace(b"</Types>", b'<Override PartName="/xl/sharedStrings.xml" ContentType='
                                    b'"application/vnd.openxmlformats-officedocument.spreadsheetml.sharedStrings'
                                    b'+xml"/></Types>')
            target.writestr(info, data)
        target.writestr("xl/sharedStrings.xml", SHARED_STRINGS.encode())
    return result.getvalue()


SHARED_STRINGS = """<?xml version="1.0" encoding="UTF-8" standalone="yes"?>
<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" count="2" uniqueCount="2">\
<si><t xml:space="preserve">共享的字符串 </t></si>\
<si><r><rPr><b/><sz val="11"/></rPr><t>富</t></r><r><rPr><i/></rPr><t>文本</t></r>\
<rPh sb="0" eb="1"><t>ふ</t></rPh><phoneticPr fontId="1"/></si></sst>"""


# --- office formats -------------------------------------------------------------------------
def docx_bytes() -> bytes:
    import docx

    document = docx.Document()
    document.add_heading("年度报告", level=1)
    paragraph = document.add_paragraph("这是第一段，")
    paragraph.add_run("其中有加粗的词").bold = True
    paragraph.add_run("，然后继续说明情况。")
    document.add_paragraph("第二段只有一种样式。", style="List Bullet")
    table = document.add_table(rows=2, cols=2)
    for r, row in enumerate(table.rows):
        for c, cell in enumerate(row.cells):
            cell.text = f"单元格{'一二'[r]}{'甲乙'[c]}"
    document.add_picture(io.BytesIO(png()))
    document.sections[0].header.paragraphs[0].text = "页眉文字"
    document.sections[0].footer.paragraphs[0].text = "页脚文字"
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def pptx_bytes() -> bytes:
    from pptx import Presentation
    from pptx.util import Inches

    presentation = Presentation()
    slide = presentation.slides.add_slide(presentation.slide_layouts[1])
    slide.shapes.title.text = "项目介绍"
    body = slide.placeholders[1].text_frame
    body.text = "第一个要点"
    body.add_paragraph().text = "第二个要点"
    slide.notes_slide.notes_text_frame.text = "演讲者备注内容"
    second = presentation.slides.add_slide(presentation.slide_layouts[5])
    second.shapes.title.text = "数据表"
    table = second.shapes.add_table(2, 2, Inches(1), Inches(2), Inches(4), Inches(1)).table
    for r in range(2):
        for c in range(2):
            table.cell(r, c).text = f"表格{r}{c}内容"
    second.shapes.add_picture(io.BytesIO(png()), Inches(6), Inches(2))
    out = io.BytesIO()
    presentation.save(out)
    return out.getvalue()


def odt_bytes() -> bytes:
    from odf.opendocument import OpenDocumentText
    from odf.style import Style, TextProperties
    from odf.table import Table, TableCell, TableColumn, TableRow
    from odf.text import H, P, Span

    document = OpenDocumentText()
    bold = Style(name="Bold", family="text")
    bold.addElement(TextProperties(fontweight="bold"))
    document.automaticstyles.addElement(bold)
    document.text.addElement(H(outlinelevel=1, text="文档标题"))
    paragraph = P(text="这是普通的文字，")
    paragraph.addElement(Span(stylename=bold, text="这是加粗的文字"))
    paragraph.addText("，最后还有一句。")
    document.text.addElement(paragraph)
    table = Table(name="表格")
    table.addElement(TableColumn(numbercolumnsrepeated=2))
    row = TableRow()
    for text in ("左边单元格", "右边单元格"):
        cell = TableCell()
        cell.addElement(P(text=text))
        row.addElement(cell)
    table.addElement(row)
    document.text.addElement(table)
    out = io.BytesIO()
    document.write(out)
    return out.getvalue()


def epub_bytes() -> bytes:
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("mtserve-test")
    book.set_title("测试之书")
    book.set_language("zh")
    chapters = []
    for number, (title, body) in enumerate([("第一章", "<p>很久以前，有一座<b>山</b>。</p>"),
                                            ("第二章", "<p>山上有一座庙。</p><p>庙里有个和尚。</p>")], 1):
        chapter = epub.EpubHtml(title=title, file_name=f"chapter{number}.xhtml", lang="zh")
        chapter.content = f"<h1>{title}</h1>{body}"
        book.add_item(chapter)
        chapters.append(chapter)
    book.add_item(epub.EpubItem(uid="style", file_name="style.css", media_type="text/css",
                                content=b"p { margin: 0; }"))
    book.toc = tuple(chapters)
    book.add_item(epub.EpubNcx())
    book.add_item(epub.EpubNav())
    book.spine = chapters
    out = io.BytesIO()
    epub.write_epub(out, book)
    return out.getvalue()


# --- PDF ----------------------------------------------------------------------------------------
PDF_TITLE = "项目报告"
PDF_BODY = "这是一份测试用的文件，它有两个段落。第一段讲背景。"
PDF_SECOND = "第二段在另一页上，讲结论。"


def pdf_font(tmp: Path, text: str) -> str:
    from mtserve.documents.formats.pdf import NOTO_CJK, _first, cjk_truetype

    noto = _first(NOTO_CJK)
    if noto is None:
        import pytest

        pytest.skip("Noto Sans CJK is not installed; it builds the test PDF (`make test` installs it)")
    return cjk_truetype(noto, "SC", text, tmp / "source-font.ttf")


@functools.cache
def pdf_bytes() -> bytes:
    """Two pages of Chinese text, with a filled rectangle and an image to be kept (built once)."""
    from fpdf import FPDF

    pdf = FPDF()
    with tempfile.TemporaryDirectory() as tmp:
        pdf.add_font("cjk", fname=pdf_font(Path(tmp), PDF_TITLE + PDF_BODY + PDF_SECOND))
        pdf.add_page()
        pdf.set_font("cjk", size=20)
        pdf.cell(0, 12, PDF_TITLE)
        pdf.ln(16)
        pdf.set_font("cjk", size=11)
        pdf.multi_cell(120, 6, PDF_BODY)
        pdf.set_fill_color(200, 220, 255)
        pdf.rect(10, 120, 60, 20, style="F")
        pdf.image(io.BytesIO(png()), x=100, y=120, w=20)
        pdf.add_page()
        pdf.set_font("cjk", size=11)
        pdf.multi_cell(120, 6, PDF_SECOND)
        return bytes(pdf.output())


def scanned_pdf_bytes() -> bytes:
    """A page that is only an image: what a scanner produces."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.image(io.BytesIO(png((240, 240, 240))), x=10, y=10, w=180)
    return bytes(pdf.output())


def text_samples() -> dict[str, bytes]:
    return {
        "notes.txt": TXT.encode(),
        "readme.md": MARKDOWN.encode(),
        "page.html": HTML.encode(),
        "film.srt": SRT.encode(),
        "film.vtt": VTT.encode(),
        "messages.po": PO.encode(),
        "strings.json": JSON_I18N.encode(),
    }


def all_samples() -> dict[str, bytes]:
    return {
        **text_samples(),
        "report.docx": docx_bytes(),
        "slides.pptx": pptx_bytes(),
        "letter.odt": odt_bytes(),
        "book.epub": epub_bytes(),
        "report.pdf": pdf_bytes(),
        "strings.xlf": XLIFF12.encode(),
        "app.xliff": XLIFF2.encode(),
        "budget.xlsx": xlsx_bytes(),
    }
