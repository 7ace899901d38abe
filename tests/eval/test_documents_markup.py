"""`mtserve eval --markup --as-document FORMAT`: each item is built into a file of FORMAT, goes through the
file path, and comes back as markup that the placement scoring reads unchanged."""

from __future__ import annotations

import asyncio
import io
import re
import zipfile

import pytest

from mtserve.eval.documents_markup import (
    FORMATS,
    DocumentTarget,
    Unsupported,
    as_documents,
    build,
    parse_inline,
    read_back,
    same_markup,
    unsupported,
)
from mtserve.eval.markup import MarkupItem, evaluate_markup, load_markup_set, space_before_punctuation
from mtserve.eval.targets import HttpTarget, InProcessTarget
from mtserve.settings import Settings
from tests.eval.helpers import mtserve
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve

pytest.importorskip("pptx")
pytest.importorskip("odf")

NESTED = '请阅读<a href="/terms"><b>服务条款</b></a>，<em>立即<b>更新</b></em>并运行<code>make run</code>。'


def item(source: str) -> MarkupItem:
    return MarkupItem("x", "hand", "html", source, re.sub(r"<[^>]+>", "", source), "")


@pytest.mark.parametrize("kind", FORMATS)
def test_every_hand_checked_item_a_format_can_hold_reads_back_as_written(kind):
    mset = load_markup_set("placement", "zh", "en", "all")
    kept = as_documents(mset, kind)
    assert len(kept.items) + sum(kept.skipped.values()) == len(mset.items)
    assert len(kept.items) >= len(mset.items) - 1  # the hand set is written in tags a document has
    for found in kept.items:
        back = read_back(kind, build(kind, found.source), found.source)
        assert same_markup(back, found.source), (found.id, back)
        if kind != "md":  # Markdown moves nothing, but its emphasis markers re-nest: *a**b***
            assert back == found.source, (found.id, back)


def test_each_format_writes_the_tags_in_its_own_terms():
    docx = zipfile.ZipFile(io.BytesIO(build("docx", NESTED))).read("word/document.xml").decode()
    assert "<w:hyperlink" in docx and '<w:rStyle w:val="Code"/>' in docx and "<w:b/>" in docx and "<w:i/>" in docx
    rels = zipfile.ZipFile(io.BytesIO(build("docx", NESTED))).read("word/_rels/document.xml.rels").decode()
    assert 'Target="/terms" TargetMode="External"' in rels
    slide = zipfile.ZipFile(io.BytesIO(build("pptx", NESTED))).read("ppt/slides/slide1.xml").decode()
    assert "a:hlinkClick" in slide and 'b="1"' in slide and 'i="1"' in slide and 'typeface="Courier New"' in slide
    odt = zipfile.ZipFile(io.BytesIO(build("odt", NESTED))).read("content.xml").decode()
    assert 'xlink:href="/terms"' in odt and "<text:span" in odt and 'fo:font-weight="bold"' in odt
    assert build("md", NESTED).decode() == "请阅读[**服务条款**](/terms)，*立即**更新***并运行`make run`。\n"
    assert b"<p>" + NESTED.encode() + b"</p>" in build("html", NESTED)


def test_a_translated_file_reads_back_with_the_sources_own_tags():
    # a bold run is the source's <strong>, a link the source's opening tag for its address, attributes and all
    source = '<strong>注意</strong>：请<a href="/x" target="_blank">登录</a>。'
    english = '<strong>Note</strong>: please <a href="/x" target="_blank">log in</a>.'
    for kind in ("docx", "pptx", "odt"):
        translated = build(kind, '<b>Note</b>: please <a href="/x">log in</a>.')  # what the writer puts back
        assert read_back(kind, translated, source) == english, kind
    assert read_back("md", b"**Note**: please [log in](/x).\n", source) == english
    assert read_back("md", b"Note: please log in.\n", source) == "Note: please log in."
    assert read_back("html", build("html", english), source) == english


def test_what_a_format_cannot_hold_is_skipped_with_the_reason():
    span = item('你有<span class="hl">未保存的编辑</span>')
    assert unsupported("docx", span) == "<span>: no such format in a document"
    assert unsupported("docx", item("第一行<br>第二行")) == "<br>: a void tag"
    assert unsupported("docx", item("<b>注意</b>和<strong>警告</strong>")).startswith("<b> and <strong> both")
    assert unsupported("docx", item("<b>注意</b><b>警告</b>")).startswith("two tags of one format side by side")
    assert unsupported("md", item("超过<i>80%</i>的用户")).startswith("its .md does not read back")
    assert unsupported("md", item("运行<code>make <b>run</b></code>")).startswith("a tag inside <code>")
    assert unsupported("docx", item("运行<code>make <b>run</b></code>")) is None
    assert unsupported("html", span) is None  # HTML takes any tag
    assert unsupported("docx", MarkupItem("p", "placeholders", "text", "%s，你好", "", "")) == "placeholders, not tags"
    with pytest.raises(Unsupported, match="empty"):
        parse_inline("点击<b></b>这里")
    catalog = as_documents(load_markup_set("placement-catalog", "zh", "en", "all"), "docx")
    assert catalog.skipped["<span>: no such format in a document"] >= 1 and catalog.as_document == "docx"


def test_a_space_before_punctuation_at_a_tag_is_an_edge_error():
    assert space_before_punctuation("It grew by <b>15%</b> .", "en") == ["space before . at </b>"]
    assert space_before_punctuation("It grew by <b>15% </b>.", "en") == ["space before . at </b>"]
    assert space_before_punctuation("It grew by <b>15%</b>.", "en") == []
    assert space_before_punctuation("Click <b>Save</b> , then go.", "en") == ["space before , at </b>"]
    assert space_before_punctuation("<i><b>Yes</b></i> !", "en") == ["space before ! at </b>"]  # one junction
    assert space_before_punctuation("增长了<b>15%</b> 。", "zh") == []


# A translator of the few Chinese words these items hold, that keeps every tag where it stands: what a
# perfect model does to a sentence whose English has the same order.
WORDS = {"请阅读": "Please read the ", "服务条款": "Terms of Service", "请": "Please ", "不要": "do not",
         "关闭此窗口": " close this window", "我们的": "Our ", "新": "new ", "产品": "product",
         "明天发布": " will be released tomorrow", "运行": "Run ", "启动服务": " to start the service", "。": "."}
ITEMS = ("neg-01", "nest-01", "nest-02", "code-01")


def word_for_word(request) -> str:
    text = request.text
    for chinese in sorted(WORDS, key=len, reverse=True):
        text = text.replace(chinese, WORDS[chinese])
    return text


def hand_items(*ids: str):
    mset = load_markup_set("placement", "zh", "en", "all")
    mset.items = [i for i in mset.items if i.id in ids]
    return mset


@pytest.mark.parametrize("kind", FORMATS)
def test_a_run_scores_the_translated_files_as_the_html_path_is_scored(tmp_path, kind):
    target = DocumentTarget(InProcessTarget(Settings(home=tmp_path, markup_mode="context"),
                                            engine=ScriptedEngine(word_for_word)), kind)
    # (mtserve's Markdown reader keeps a run that closes two emphases, nest-01's "**新*产品***", as
    # syntax rather than tags: a gap the measure shows, left out of this test of the path)
    ids = [i for i in ITEMS if not (kind == "md" and i == "nest-01")]
    report = asyncio.run(evaluate_markup(as_documents(hand_items(*ids), kind), target))
    outputs = {r.id: r.output for r in report.items}
    assert outputs["neg-01"] == "Please <b>do not</b> close this window."
    if kind != "md":  # the space between the two bold runs reads as bold: a reader cannot see its weight
        assert outputs["nest-01"] == "Our <b>new <i>product</i></b> will be released tomorrow."
    assert outputs["nest-02"] == 'Please read the <a href="/terms"><b>Terms of Service</b></a>.'
    # in an office file the longest stretch is the paragraph's main format: here the code run, which then
    # takes the spaces around it ("Run<code> make run </code>to start"); a reader sees the same words
    assert same_markup(outputs["code-01"], "Run <code>make run</code> to start the service.")
    assert report.placement == 100.0 and report.integrity == 100.0 and report.edge_errors == 0
    assert report.as_document == kind and report.skipped == {}
    assert report.system["as"] == f".{kind} files ({2 * len(ids)} sent)"  # each item and its tag-free twin
    assert f"as .{kind} files" in report.summary() and "skipped: 0" in report.summary()


def test_a_server_gets_each_file_at_translate_file(tmp_path):
    with serve(ScriptedEngine(word_for_word), home=tmp_path, markup_mode="context") as url:
        target = DocumentTarget(HttpTarget(url), "docx")
        report = asyncio.run(evaluate_markup(as_documents(hand_items("neg-01", "nest-02"), "docx"), target))
        assert report.placement == 100.0 and report.system["kind"] == "http"
        result = mtserve("eval", "--markup", "--dataset", "placement", "--split", "all", "--as-document", "md",
                         "--url", url, "--limit", "3", "--quiet")
    assert result.returncode == 0, result.stderr
    assert "as .md files" in result.stdout and "placement" in result.stdout


def test_the_option_belongs_to_the_markup_eval():
    result = mtserve("eval", "--dataset", "prose", "--as-document", "docx", "--limit", "1")
    assert result.returncode == 2 and "--as-document applies to --markup" in result.stderr
