"""XLIFF 1.2/2.0 and .xlsx round trips: structure kept, text translated, inline codes and formulas exact.

No engine here (``swap`` stands in for the translation, as in test_formats);
the API round trips are in test_files_api.
"""

from __future__ import annotations

import io
import zipfile

import openpyxl
import pytest
from lxml import etree

from mtserve.documents import DocumentError, read_document
from mtserve.documents.formats.registry import ReadOptions
from mtserve.documents.formats.xliff import TOKEN, XliffDocument, encode, tokens_kept
from mtserve.documents.formats.xlsx import blocked_names, clean_sheet_name, quote_sheet, rename_in_formula
from tests.documents import samples
from tests.documents.samples import has_han, swap

X12 = "{urn:oasis:names:tc:xliff:document:1.2}"
X2 = "{urn:oasis:names:tc:xliff:document:2.0}"


def translate(name: str, data: bytes, target: str = "en", options: ReadOptions | None = None):
    document = read_document(name, data, options=options)
    assert document.segments and all(s.strip() for s in document.segments)
    return document, document.render([swap(s) for s in document.segments], target)


def inline_codes(element: etree._Element) -> list[bytes]:
    """Each inline code of a source or target as bytes, tail excluded, paired ones without content."""
    codes = []
    for child in element.iter():
        if child is element or not isinstance(child.tag, str):
            continue
        copy = etree.fromstring(etree.tostring(child, with_tail=False))
        copy.tail = None
        if etree.QName(child).localname in ("g", "pc", "mrk") and child.get("translate") != "no" \
                and child.get("mtype") != "protected":
            copy.text = None
            for grandchild in list(copy):
                copy.remove(grandchild)
        codes.append(etree.tostring(copy))
    return codes


def by_id(root: etree._Element, tag: str) -> dict[str, etree._Element]:
    return {e.get("id"): e for e in root.iter(tag)}


# --- XLIFF 1.2 -------------------------------------------------------------------------------------
def test_xliff12_translates_source_into_target_and_keeps_everything_else():
    _, output = translate("strings.xlf", samples.XLIFF12.encode(), "de")
    assert output.extension == "xlf" and output.media_type == "application/xliff+xml"
    assert output.data.startswith(b'<?xml version="1.0" encoding="UTF-8"?>\n<xliff')  # its own declaration
    before = etree.fromstring(samples.XLIFF12.encode())
    after = etree.fromstring(output.data)
    units, old = by_id(after, f"{X12}trans-unit"), by_id(before, f"{X12}trans-unit")
    assert list(units) == list(old)  # every unit, in order
    assert after.find(f"{X12}file").get("target-language") == "de"
    assert after.find(f"{X12}file").get("{urn:example:ext}owner") == "docs"  # other namespaces kept
    for unit_id in ("greeting", "price", "split", "prefilled", "segmented"):
        unit = units[unit_id]
        source = unit.find(f"{X12}seg-source")
        source = source if source is not None else unit.find(f"{X12}source")
        target = unit.find(f"{X12}target")
        assert target is not None, unit_id
        assert target.get("state") == "needs-review-translation", unit_id
        assert target.get("state-qualifier") == "mt-suggestion"
        assert not has_han("".join(target.itertext())), unit_id
        assert inline_codes(target) == inline_codes(source), unit_id  # byte for byte, in order
        assert etree.tostring(unit.find(f"{X12}source")) == etree.tostring(old[unit_id].find(f"{X12}source"))
    greeting = units["greeting"]
    assert "".join(greeting.find(f"{X12}target").itertext()) == swap("你好，世界！欢迎。")
    assert greeting.get("resname") == "hello" and greeting.get("{urn:example:ext}tag") == "keep"
    assert greeting.find(f"{X12}note").text == "问候语" and greeting.find(f"{X12}note").get("priority") == "2"
    # The new target sits on its own line after the source, indented like it.
    assert b"</source>\n        <target " in etree.tostring(greeting)
    # Text that looks like a token is text: "&lt;1&gt;" comes back as it was.
    assert "".join(units["price"].find(f"{X12}target").itertext()).endswith(" <1>")
    # seg-source's segmentation is mirrored in the target.
    segmented = units["segmented"].find(f"{X12}target")
    assert [m.get("mid") for m in segmented.iter(f"{X12}mrk")] == ["1", "2"]
    assert units["segmented"].find(f"{X12}alt-trans/{X12}target").text == "旧的建议"
    # What a translator did or locked is left as it was.
    for unit_id in ("done", "mine", "approved", "code"):
        assert etree.tostring(units[unit_id]) == etree.tostring(old[unit_id]), unit_id
    assert after.find(f"{X12}file/{X12}header/{X12}note").text == "文件说明"


def test_xliff12_inline_codes_become_numbered_tokens():
    document = read_document("strings.xlf", samples.XLIFF12.encode())
    assert document.segments[0] == "你好，<1>世界</1>！<2/>欢迎。"
    # The literal "<1>" in the text is not a token: numbering skips 1 in that unit.
    assert document.segments[1] == "价格 <2/> 元，<3/>很便宜<4/> <1>"


# --- XLIFF 2.0 -------------------------------------------------------------------------------------
def test_xliff2_translates_segments_sets_state_and_keeps_codes():
    _, output = translate("app.xliff", samples.XLIFF2.encode(), "en-US")
    before = etree.fromstring(samples.XLIFF2.encode())
    after = etree.fromstring(output.data)
    assert after.get("trgLang") == "en-US" and after.get("srcLang") == "zh-CN"
    segments, old = by_id(after, f"{X2}segment"), by_id(before, f"{X2}segment")
    for segment_id in ("s1", "s2", "s4"):  # s4: state initial, its target a copy of the source
        segment = segments[segment_id]
        target = segment.find(f"{X2}target")
        assert segment.get("state") == "translated"
        assert inline_codes(target) == inline_codes(segment.find(f"{X2}source")), segment_id
    assert segments["s4"].find(f"{X2}target").text == swap("初始的")
    assert "".join(segments["s1"].find(f"{X2}target").itertext()) == swap("点击这里继续。")
    # mrk translate="no" is kept whole, its content untranslated.
    assert "张三" in "".join(segments["s2"].find(f"{X2}target").itertext())
    for segment_id in ("s3",):
        assert etree.tostring(segments[segment_id]) == etree.tostring(old[segment_id])
    units, old_units = by_id(after, f"{X2}unit"), by_id(before, f"{X2}unit")
    for unit_id in ("u2", "u3"):  # translate="no"; a reviewed target
        assert etree.tostring(units[unit_id]) == etree.tostring(old_units[unit_id])
    assert etree.tostring(units["u1"].find(f"{X2}originalData")) == \
        etree.tostring(old_units["u1"].find(f"{X2}originalData"))
    assert units["u1"].find(f"{X2}notes/{X2}note").text == "首页"
    assert units["u1"].find(f"{X2}ignorable/{X2}target") is None  # ignorable is not a segment


@pytest.mark.parametrize("translation, kept", [
    ("A<1>B</1>C<2/>.", True),
    ("<1>B</1>A<2/>C.", True),  # a paired code may move
    ("A</1>B<1>C<2/>.", False),  # closed before opened
    ("A<1>B C<2/>.", False),  # never closed
    ("A<1>B</1>C.", False),  # a code lost
    ("A<1>B</1>C<2/><2/>.", False),  # a code twice
    ("A<1/>B C<2/>.", False),  # a paired code written as a standalone one
    ("A<1>B</1>C<2/>.<7/>", False),  # a code the source does not have: it would leak into the text
])
def test_tokens_kept_checks_balance_and_count(translation, kept):
    source = etree.fromstring(b'<source xmlns="urn:oasis:names:tc:xliff:document:2.0">'
                              b'A<pc id="1">B</pc>C<ph id="2"/>.</source>')
    assert tokens_kept(encode(source, {"pc", "mrk"}), translation) is kept


def test_codes_that_cannot_reorder_must_keep_their_order():
    source = etree.fromstring(b'<source xmlns="urn:oasis:names:tc:xliff:document:2.0">'
                              b'A<ph id="1" canReorder="no"/>B<ph id="2" canReorder="no"/>'
                              b'C<ph id="3"/></source>')
    codes = encode(source, {"pc", "mrk"})
    assert codes.text == "A<1/>B<2/>C<3/>"
    assert tokens_kept(codes, "<3/>A<1/>B<2/>C")  # the free one moved
    assert not tokens_kept(codes, "A<2/>B<1/>C<3/>")
    spans = encode(etree.fromstring(b'<source xmlns="urn:oasis:names:tc:xliff:document:2.0">'
                                    b'A<sc id="1"/>B<ec startRef="1"/>C</source>'), {"pc", "mrk"})
    assert tokens_kept(spans, "<1/>B<2/>AC")
    assert not tokens_kept(spans, "A<2/>B<1/>C")  # an end before its start is not XLIFF


def test_a_broken_translation_falls_back_to_the_source_content_not_a_broken_target():
    document = read_document("app.xliff", samples.XLIFF2.encode())
    assert isinstance(document, XliffDocument)
    broken = [TOKEN.sub("", swap(s)) for s in document.segments]  # every code dropped
    after = etree.fromstring(document.render(broken, "en").data)
    segment = by_id(after, f"{X2}segment")["s1"]
    assert inline_codes(segment.find(f"{X2}target")) == inline_codes(segment.find(f"{X2}source"))


def test_xliff_parser_resolves_no_entities_and_refuses_what_is_not_xliff(tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("TOP SECRET")
    xxe = (f'<?xml version="1.0"?><!DOCTYPE x [<!ENTITY e SYSTEM "file://{secret}">]>'
           '<xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file source-language="zh" '
           'datatype="plaintext" original="a"><body><trans-unit id="1"><source>你好&e;</source></trans-unit>'
           '</body></file></xliff>').encode()
    with pytest.raises(DocumentError, match="declares XML entities") as refused:
        read_document("x.xlf", xxe)
    assert "TOP SECRET" not in str(refused.value)
    with pytest.raises(DocumentError, match="root element is <html>"):
        read_document("x.xlf", b"<html><body>hi</body></html>")
    with pytest.raises(DocumentError, match="not well-formed"):
        read_document("x.xliff", b"<xliff")
    with pytest.raises(DocumentError, match="XLIFF 1.2 and 2.x"):
        read_document("x.xlf", b'<xliff version="1.1" xmlns="urn:oasis:names:tc:xliff:document:1.1"/>')
    laughs = ('<?xml version="1.0"?><!DOCTYPE l [<!ENTITY a "aaaaaaaaaa">'
              + "".join(f'<!ENTITY {c} "{("&" + p + ";") * 10}">' for p, c in zip("abcdefg", "bcdefgh"))
              + ']><xliff version="1.2" xmlns="urn:oasis:names:tc:xliff:document:1.2"><file><body>'
              '<trans-unit id="1"><source>你好&h;</source></trans-unit></body></file></xliff>').encode()
    with pytest.raises(DocumentError, match="entit"):  # no billion laughs (libxml2 or we refuse)
        read_document("l.xlf", laughs)
    doctype = ('<!DOCTYPE xliff PUBLIC "-//XLIFF//DTD XLIFF//EN" '
               '"http://www.oasis-open.org/committees/xliff/documents/xliff.dtd">\n')
    public = samples.XLIFF12.replace("<xliff ", doctype + "<xliff ", 1)
    _, output = translate("p.xlf", public.encode())  # a DOCTYPE without entities is fine
    assert b"<!DOCTYPE xliff PUBLIC" in output.data


def test_xliff_with_translations_into_another_language_is_refused_before_any_work():
    french = samples.XLIFF2.replace('srcLang="zh-CN"', 'srcLang="zh-CN" trgLang="fr"')
    document = read_document("app.xliff", french.encode())
    with pytest.raises(DocumentError, match=r"already holds 2 translation\(s\) into fr; translate it into"):
        document.check_target("de")
    document.check_target("fr-FR")  # the same language
    read_document("strings.xlf", samples.XLIFF12.encode()).check_target("de")  # none declared


# --- xlsx ------------------------------------------------------------------------------------------
def cell_values(data: bytes) -> dict[str, list[list]]:
    book = openpyxl.load_workbook(io.BytesIO(data))
    return {sheet.title: [[c.value for c in row] for row in sheet.iter_rows()] for sheet in book}


def test_xlsx_translates_strings_and_keeps_formulas_numbers_styles_and_parts():
    source = samples.xlsx_bytes()
    document, output = translate("budget.xlsx", source)
    assert output.extension == "xlsx"
    before, after = zipfile.ZipFile(io.BytesIO(source)), zipfile.ZipFile(io.BytesIO(output.data))
    assert after.namelist() == before.namelist()
    changed = {n for n in before.namelist() if before.read(n) != after.read(n)}
    # Only the parts that hold text change; styles, the workbook (sheet names), theme, rels are identical.
    assert changed == {"xl/sharedStrings.xml", "xl/worksheets/sheet1.xml", "xl/worksheets/sheet2.xml",
                       "xl/comments/comment1.xml"}
    book = openpyxl.load_workbook(io.BytesIO(output.data), rich_text=True)
    assert book.sheetnames == ["销售 数据", "汇总", "链接"]
    sheet = book["销售 数据"]
    assert sheet["A1"].value == swap("产品名称")
    assert sheet["A1"].font.b and sheet["A1"].font.color.rgb == "00FF0000"
    assert sheet["A1"].fill.fgColor.rgb == "00FFFF00"
    assert sheet["B1"].value == 1234.5 and sheet["B1"].number_format == "#,##0.00"
    assert sheet["C1"].value.date().isoformat() == "2024-03-01"
    assert sheet["D1"].value == "=B1*2"
    assert [str(r) for r in sheet.merged_cells.ranges] == ["A3:C3"]
    assert sheet["A3"].value == swap("合并的单元格") and sheet["A4"].value == "2024"
    assert str(sheet["A2"].value) == swap("这是加粗的文字")  # rich text: one sentence, main run's format
    assert swap("这是批注") in sheet["B2"].comment.text
    summary = book["汇总"]
    assert summary["A1"].value == "='销售 数据'!B1+1" and summary["B3"].value == swap("内联文字")
    links = book["链接"]
    assert links["A2"].value == swap("共享的字符串 ")  # its trailing space kept (xml:space="preserve")
    assert str(links["B2"].value) == swap("富文本")
    shared = after.read("xl/sharedStrings.xml").decode()
    assert '<rPh sb="0" eb="1"><t>ふ</t></rPh>' in shared  # phonetic runs are kept as they were
    for name, values in cell_values(output.data).items():
        texts = [str(v) for row in values for v in row if v and not str(v).startswith("=")]
        assert not any(has_han(text) for text in texts), name
    assert any("Sheet names are kept" in note for note in document.notes)


def test_xlsx_sheet_names_translated_when_set_and_references_follow():
    source = samples.xlsx_bytes()
    document, output = translate("budget.xlsx", source, options=ReadOptions(xlsx_sheet_names=True))
    book = openpyxl.load_workbook(io.BytesIO(output.data))
    renamed = swap("销售 数据")
    assert book.sheetnames == [renamed, swap("汇总"), "链接"]  # 链接 is named inside INDIRECT("链接!B1")
    assert book[swap("汇总")]["A1"].value == f"='{renamed}'!B1+1"
    assert book[swap("汇总")]["A2"].value == f"=SUM('{renamed}'!B1:B3)"
    assert book.defined_names["总数"].attr_text == f"'{renamed}'!$B$1"
    assert book["链接"]["A1"].value == '=INDIRECT("链接!B1")'
    assert any("'链接' keeps its name" in note for note in document.notes)


@pytest.mark.parametrize("formula, expected", [
    ("Sheet1!A1+'Sheet1'!B2", "Data!A1+Data!B2"),
    ("SUM(sheet1!A1:A3)", "SUM(Data!A1:A3)"),  # names match ignoring case
    ("[1]Sheet1!A1+Sheet10!A1", "[1]Sheet1!A1+Sheet10!A1"),  # another workbook; another sheet
    ('"Sheet1!A1"&Sheet1!A1', '"Sheet1!A1"&Data!A1'),  # inside a string: untouched (and blocked)
])
def test_rename_in_formula(formula, expected):
    assert rename_in_formula(formula, {"sheet1": "Data"}) == expected


def test_sheet_names_that_a_rename_cannot_follow():
    names = {"jan", "dec", "sales"}
    assert blocked_names('INDIRECT("Sales!A1")', names) == {"sales"}
    assert blocked_names("SUM(Jan:Dec!A1)", names) == {"jan", "dec"}
    assert blocked_names("SUM('Jan:Dec'!A1)", names) == {"jan", "dec"}
    assert blocked_names("Sales!A1+1", names) == set()
    assert quote_sheet("Data") == "Data" and quote_sheet("A1") == "'A1'" and quote_sheet("It's") == "'It''s'"
    assert clean_sheet_name("Sales: [2024]?", "x", set()) == "Sales 2024"
    assert clean_sheet_name("a" * 40, "x", set()) == "a" * 31
    assert clean_sheet_name("Data", "x", {"data"}) == "Data 2"
    assert clean_sheet_name("History", "x", set()) == "x"


def test_broken_xlsx_says_what_is_wrong():
    with pytest.raises(DocumentError, match="not a valid xlsx"):
        read_document("a.xlsx", b"not a zip")
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as z:
        z.writestr("word/document.xml", "<w/>")
    with pytest.raises(DocumentError, match="xl/workbook.xml is missing"):
        read_document("a.xlsx", archive.getvalue())


def test_xlsx_text_boxes_in_drawings_are_translated():
    drawing = ('<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
               '<xdr:wsDr xmlns:xdr="http://schemas.openxmlformats.org/drawingml/2006/spreadsheetDrawing" '
               'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main"><xdr:twoCellAnchor><xdr:sp>'
               '<xdr:txBody><a:bodyPr/><a:p><a:r><a:rPr b="1"/><a:t>文本框</a:t></a:r></a:p></xdr:txBody>'
               '</xdr:sp></xdr:twoCellAnchor></xdr:wsDr>')
    archive = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(samples.xlsx_bytes())) as source, zipfile.ZipFile(archive, "w") as target:
        for info in source.infolist():
            target.writestr(info, source.read(info))
        target.writestr("xl/drawings/drawing1.xml", drawing.encode())
    document, output = translate("boxes.xlsx", archive.getvalue())
    assert "文本框" in document.segments
    box = zipfile.ZipFile(io.BytesIO(output.data)).read("xl/drawings/drawing1.xml").decode()
    assert f'<a:rPr b="1"/><a:t>{swap("文本框")}</a:t>' in box
