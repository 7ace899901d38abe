"""One real-model document per format family, through `mtserve serve` with the small model.

The model runs on a shared CPU, so each document has two or three short
sentences it translates reliably. Each test checks that the output parses in
its format's own library, that its structure is the source's, that no Chinese
is left, and that the English says what the source said (a key word).
"""

from __future__ import annotations

import io
import json
import re
import zipfile

import httpx
import pytest

from tests.documents import samples
from tests.documents.helpers import visible_text
from tests.documents.samples import has_han
from tests.servers import metric_value

pytestmark = pytest.mark.model
TIMEOUT = 300
BEIJING = "我们明天去北京。"
TEA = "我喜欢喝茶。"


def translate(url: str, name: str, data: bytes) -> bytes:
    r = httpx.post(f"{url}/translate_file", data={"source": "zh", "target": "en"},
                   files={"file": (name, data)}, timeout=TIMEOUT)
    assert r.status_code == 200, r.text
    download = httpx.get(r.json()["translatedFileUrl"], timeout=TIMEOUT)
    assert download.status_code == 200
    return download.content


def english(text: str, *words: str) -> None:
    assert not has_han(text), text
    for word in words:
        assert re.search(word, text, re.IGNORECASE), (word, text)


def test_markdown(live_server):
    source = f"# {TEA}\n\n{BEIJING} 运行 `pip install 茶`。\n\n```\n不要翻译()\n```\n"
    out = translate(live_server, "tea.md", source.encode()).decode()
    lines = out.split("\n")
    assert lines[0].startswith("# ") and "`pip install 茶`" in out and "```\n不要翻译()\n```" in out
    english(lines[0] + lines[2].replace("`pip install 茶`", ""), "tea", "beijing")


def test_html(live_server):
    source = f"<html><body><h1>{TEA}</h1><p>{BEIJING}<code>代码</code></p></body></html>"
    out = translate(live_server, "page.html", source.encode()).decode()
    assert re.fullmatch(r"<html><body><h1>[^<]+</h1><p>[^<]+<code>代码</code></p></body></html>", out), out
    english(visible_text("page.html", out.encode()), "tea", "beijing")


def test_subtitles(live_server):
    source = f"1\n00:00:01,000 --> 00:00:02,000\n{BEIJING}\n\n2\n00:00:02,500 --> 00:00:04,000\n{TEA}\n"
    out = translate(live_server, "film.srt", source.encode()).decode()
    assert [line for line in out.split("\n") if "-->" in line or line.isdigit()] == \
        ["1", "00:00:01,000 --> 00:00:02,000", "2", "00:00:02,500 --> 00:00:04,000"]
    english(out, "beijing", "tea")


def test_a_sentence_over_two_cues_reaches_the_model_whole(live_server):
    """The cues' passage is one segment for the engine, and its translation is shared out between them."""
    source = ("1\n00:00:01,000 --> 00:00:02,500\n他赶到机场的时候，\n\n"
              "2\n00:00:02,500 --> 00:00:04,000\n飞机已经起飞了。\n")
    before = metric_value(live_server, "mtserve_cache_misses_total")
    out = translate(live_server, "airport.srt", source.encode()).decode()
    assert metric_value(live_server, "mtserve_cache_misses_total") - before == 1  # not two halves
    blocks = out.strip().split("\n\n")
    assert [block.split("\n")[:2] for block in blocks] == \
        [["1", "00:00:01,000 --> 00:00:02,500"], ["2", "00:00:02,500 --> 00:00:04,000"]]
    assert all(len(block.split("\n")) == 3 and block.split("\n")[2].strip() for block in blocks), out
    english(out, "airport", "plane|flight|aircraft")


def test_a_paragraph_wrapped_over_two_lines_reaches_the_model_whole(live_server):
    source = "我们明天早上八点从学校出发，坐大巴去北京的动物园，\n中午在公园里吃饭，下午五点回来。\n"
    before = metric_value(live_server, "mtserve_cache_misses_total")
    out = translate(live_server, "trip.txt", source.encode()).decode()
    assert metric_value(live_server, "mtserve_cache_misses_total") - before == 1  # not two fragments
    lines = out.split("\n")
    assert len(lines) == 3 and lines[0].strip() and lines[1].strip() and lines[2] == "", out
    english(out, "beijing", "zoo")


def test_office(live_server):
    import docx

    document = docx.Document()
    document.add_heading(TEA, level=1)
    document.add_paragraph(BEIJING)
    buffer = io.BytesIO()
    document.save(buffer)
    result = docx.Document(io.BytesIO(translate(live_server, "tea.docx", buffer.getvalue())))
    assert [p.style.name for p in result.paragraphs] == ["Heading 1", "Normal"]
    english("\n".join(p.text for p in result.paragraphs), "tea", "beijing")


def test_epub(live_server):
    from ebooklib import epub

    book = epub.EpubBook()
    book.set_identifier("tea")
    book.set_title(TEA)
    book.set_language("zh")
    chapters = []
    for number, sentence in enumerate((TEA, BEIJING), 1):
        chapter = epub.EpubHtml(title=str(number), file_name=f"c{number}.xhtml", lang="zh")
        chapter.content = f"<p>{sentence}</p>"
        book.add_item(chapter)
        chapters.append(chapter)
    book.toc = tuple(chapters)
    book.add_item(epub.EpubNcx())
    book.spine = chapters
    buffer = io.BytesIO()
    epub.write_epub(buffer, book)
    out = translate(live_server, "book.epub", buffer.getvalue())
    with zipfile.ZipFile(io.BytesIO(out)) as archive:
        first, second = (archive.read(f"EPUB/c{n}.xhtml").decode() for n in (1, 2))
    english(visible_text("book.epub", out), "tea", "beijing")
    assert re.search("tea", first, re.IGNORECASE) and re.search("beijing", second, re.IGNORECASE)


def test_pdf(live_server, tmp_path):
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_font("cjk", fname=samples.pdf_font(tmp_path, TEA + BEIJING))
    pdf.add_page()
    pdf.set_font("cjk", size=18)
    pdf.cell(0, 12, TEA)
    pdf.ln(20)
    pdf.set_font("cjk", size=11)
    pdf.cell(0, 8, BEIJING)
    out = translate(live_server, "tea.pdf", bytes(pdf.output()))
    assert out.startswith(b"%PDF")
    english(visible_text("tea.pdf", out), "tea", "beijing")


def test_i18n(live_server):
    import polib

    po = ('msgid ""\nmsgstr ""\n"Content-Type: text/plain; charset=UTF-8\\n"\n\n'
          f'#, python-format\nmsgid "{TEA} %(name)s"\nmsgstr ""\n')
    catalog = polib.pofile(translate(live_server, "app.po", po.encode()).decode())
    assert catalog[0].msgid == f"{TEA} %(name)s"
    assert "%(name)s" in catalog[0].msgstr
    english(catalog[0].msgstr, "tea")
    strings = json.dumps({"home": {"beijing": BEIJING, "count": 2}})
    result = json.loads(translate(live_server, "en.json", strings.encode()))
    assert set(result) == {"home"} and result["home"]["count"] == 2
    english(result["home"]["beijing"], "beijing")


def test_xliff_inline_codes_survive_the_real_model(live_server):
    """The model sees <1>...</1> and <2/>; whatever it does with them, the codes come back exactly."""
    from lxml import etree

    source = ('<?xml version="1.0" encoding="UTF-8"?>\n'
              '<xliff xmlns="urn:oasis:names:tc:xliff:document:2.0" version="2.0" srcLang="zh"><file id="f">'
              f'<unit id="u1"><segment id="s1"><source>{TEA[:2]}<pc id="1">喝茶</pc>。</source>'
              '</segment></unit>'
              f'<unit id="u2"><segment id="s2"><source>{BEIJING[:-1]}<ph id="2"/>。</source></segment></unit>'
              '</file></xliff>')
    root = etree.fromstring(translate(live_server, "strings.xlf", source.encode()))
    ns = "{urn:oasis:names:tc:xliff:document:2.0}"
    targets = [s.find(f"{ns}target") for s in root.iter(f"{ns}segment")]
    assert [t.find(f"{ns}pc").get("id") for t in targets[:1]] == ["1"]
    assert targets[1].find(f"{ns}ph").get("id") == "2"
    english(" ".join("".join(t.itertext()) for t in targets), "tea", "beijing")
