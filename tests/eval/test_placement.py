"""The placement measure: its sets are fixed and well-formed, and a tag counts as right only on its words."""

from __future__ import annotations

import asyncio
import json
from collections import Counter

import pytest

from mtserve.eval.markup import MarkupSet, build_placement, evaluate_markup, load_markup_set
from mtserve.eval.placement import (
    EMPTY,
    TagExpectation,
    catalog_split,
    elements,
    load_catalog,
    load_hand,
    normalise,
    score_tags,
    tag_key,
    well_formed,
)
from mtserve.eval.targets import InProcessTarget
from mtserve.settings import Settings
from tests.eval.helpers import mtserve
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve


def expect(tag: str, *renderings: str, beside: tuple[str, ...] = ()) -> TagExpectation:
    return TagExpectation(tag, renderings, ("case",), beside)


def verdicts(expected: list[TagExpectation], output: str) -> list[tuple[str | None, bool, bool]]:
    return [(r.got, r.right, r.overlap) for r in score_tags(tuple(expected), output)]


def test_normalising_folds_case_inflection_contractions_articles_and_edges():
    assert normalise("Don’t") == normalise("do not") == ("do", "not")
    assert normalise("can't") == normalise("Cannot") == normalise("can not")
    assert normalise("The Overseas Markets,") == normalise("overseas market")
    assert normalise("“Résumé”") == normalise("resume")
    assert normalise("3,999 Yuan") == normalise("3999 yuan") and normalise("15 %") == normalise("15%")
    assert normalise("10 a.m.") == normalise("10am") == normalise("10 AM")
    assert normalise("a") == normalise("?") == normalise("") == ()
    assert normalise("15%") != normalise("15")  # a percent sign is not punctuation at an edge


def test_a_tag_is_right_on_its_words_and_wrong_one_word_off():
    negation = [expect("<b>", "do not", "don't", "not")]
    assert verdicts(negation, "Please <b>do not</b> close this window.") == [("do not", True, True)]
    assert verdicts(negation, "<b>Don't</b> close this window.") == [("Don't", True, True)]  # contraction
    assert verdicts(negation, "Do not <b>close</b> this window.") == [("close", False, False)]  # the issue's
    assert verdicts(negation, "Please <b>do not close</b> this window.") == [("do not close", False, True)]
    assert verdicts(negation, "Please do not close this window.") == [(None, False, False)]  # lost
    markets = [expect("<b>", "overseas markets")]
    assert verdicts(markets, "We will expand into <b>the overseas market</b>.")[0][1]  # inflection, article
    assert verdicts(markets, "We will <b>expand overseas markets</b>.")[0][1:] == (False, True)
    percent = [expect("<b>", "15%", "15 percent")]
    assert verdicts(percent, "Sales grew <b>by 15%</b>.")[0][1]  # a function word with no source word
    assert not verdicts(percent, "Sales of our <b>products</b> grew by 15%.")[0][1]


def test_nested_and_repeated_tags():
    nested = [expect("<b>", "new product"), expect("<i>", "product")]
    assert verdicts(nested, "Our <b>new <i>products</i></b> ship today.") == [
        ("new products", True, True), ("products", True, True)]
    assert verdicts(nested, "Our <b>new</b> <i>products</i> ship today.") == [
        ("new", False, True), ("products", True, True)]
    both = [expect("<b>", "save"), expect("<b>", "cancel")]
    assert [v[1] for v in verdicts(both, "Click <b>Cancel</b> or <b>Save</b>.")] == [True, True]  # any order
    assert verdicts(both, "Click <b>Save</b> or Cancel.") == [("Save", True, True), (None, False, False)]
    link = [TagExpectation('<a href="/x" class="c">', ("here",))]
    assert verdicts(link, "Click <a class='c' href=\"/x\">here</a>.")[0][1]  # attributes in any order
    assert verdicts(link, 'Click <a href="/y" class="c">here</a>.')[0][0] is None  # another link
    crossed = verdicts(nested, "Our <b>new <i>product</b></i>.")  # <i> ends after </b>: not a tag on words
    assert crossed == [("new product", True, True), (None, False, False)]


def test_an_empty_tag_counts_beside_its_words_and_code_where_it_sits():
    measure = [expect("<b>", EMPTY, "books", "three")]
    assert verdicts(measure, "I bought three <b></b>books.")[0][1]
    assert verdicts(measure, "I bought <b>three</b> books.")[0][1]
    assert not verdicts(measure, "I <b></b>bought three books.")[0][1]
    assert verdicts([expect("<b>", EMPTY)], "<b></b>Anywhere.")[0][1]  # nothing named: anywhere
    code = [expect("<code>", "make run", beside=("run", "to", "command"))]
    assert verdicts(code, "Run <code>make run</code> to start the service.")[0][1:] == (True, True)
    assert verdicts(code, "To start the service, run <code>make run</code>.")[0][1]
    assert verdicts(code, "Run to start the <code>make run</code> service.")[0][1:] == (False, True)


def test_the_hand_set_is_fixed_split_and_well_formed():
    dev, test, every = load_hand("dev"), load_hand("test"), load_hand("all")
    assert load_hand("dev") == dev and len(every) >= 80
    assert {i.id for i in dev} | {i.id for i in test} == {i.id for i in every}
    assert not {i.id for i in dev} & {i.id for i in test}
    assert abs(len(dev) - len(test)) <= len(every) // 8  # about half each
    assert len({i.id for i in every}) == len(every)
    firsts = Counter((i.categories[0], i.split) for i in every)
    for category in {i.categories[0] for i in every}:
        assert firsts[(category, "dev")] and firsts[(category, "test")], category
    for wanted in ("negation", "number", "two-tags", "nested", "no-counterpart", "link", "code", "issue"):
        assert any(wanted in i.categories for i in every), wanted
    for item in every:
        assert well_formed(item.source) and well_formed(item.reference), item.id
        assert sorted(e.key for e in elements(item.source)) == sorted(e.key for e in elements(item.reference))
        assert item.expected and all(e.renderings for e in item.expected), item.id
        # the reference puts every tag on words its own list accepts
        assert all(r.right for r in score_tags(item.expected, item.reference)), item.id
    sources = {i.source for i in every}
    assert "请<b>不要</b>关闭此窗口。" in sources and "下季度我们将重点开拓<b>海外市场</b>。" in sources
    assert "运行<code>make run</code>启动服务。" in sources


def test_the_catalog_set_keeps_the_software_split_and_splits_the_tm_by_source():
    from mtserve.eval.datasets import load_software

    dev, test = load_catalog("dev"), load_catalog("test")
    assert load_catalog("dev") == dev and len(dev) > 30 and len(test) > 30
    assert not {i.id for i in dev} & {i.id for i in test}
    software = {p.id: "dev" for p in load_software(split="dev").pairs} | {
        p.id: "test" for p in load_software(split="test").pairs}
    for item in dev + test:
        if item.id.startswith("tm-"):
            assert item.split == catalog_split(item.source)
        else:
            assert item.split == software[item.id]
        assert Counter(tag_key(e.opening) for e in elements(item.source)) == Counter(
            tag_key(e.opening) for e in elements(item.reference))
        assert any("placeholder" not in e.categories for e in item.expected)
        assert all(r.right for r in score_tags(item.expected, item.reference)), item.id
    kinds = Counter(c for item in dev + test for e in item.expected for c in e.categories)
    assert kinds["words"] > 50 and kinds["verbatim"] > 10


def test_a_run_reports_placement_per_category_and_each_tag(tmp_path):
    """The issue's misplacements, through the service and a scripted engine: they count as wrong."""
    answers = {
        "请<b1>不要</b1>关闭此窗口。": "Do not <b1>close</b1> this window.",
        "请不要关闭此窗口。": "Do not close this window.",
        "我们的<b1>新<i2>产品</i2></b1>明天发布。": "Our <b1>new <i2>product</i2></b1> will be released tomorrow.",
        "我们的新产品明天发布。": "Our new product will be released tomorrow.",
        "运行<x1/>启动服务。": "Run to start the <x1/> service.",
        "运行make run启动服务。": "Run to start the make run service.",
    }
    engine = ScriptedEngine(lambda r: answers.get(r.text))
    items = [i for i in build_placement("placement", "all") if i.id in ("neg-01", "nest-01", "code-01")]
    target = InProcessTarget(Settings(home=tmp_path, markup_mode="context"), engine=engine)
    report = asyncio.run(evaluate_markup(MarkupSet("p", "zh", "en", "all", items), target))
    assert report.integrity == 100.0 and report.placement_tags == 4
    assert report.placement == 50.0 and report.placement_overlap == 75.0  # code: the words, not the place
    assert report.placement_by_category["negation"] == {"tags": 1, "right": 0.0, "overlap": 0.0}
    assert report.placement_by_category["nested"]["right"] == 100.0
    assert report.placement_by_category["issue"] == {"tags": 2, "right": 0.0, "overlap": 50.0}
    data = json.loads(report.to_json())
    [negation] = [i for i in data["items"] if i["id"] == "neg-01"]
    assert negation["tags"] == [{"tag": "<b>", "expected": ["do not", "don't", "not"], "got": "close",
                                 "right": False, "overlap": False, "categories": ["negation", "issue"]}]
    assert "placement 50.0% of 4 tags on the right words (overlap 75.0%)" in report.summary()
    assert "neg-01 <b>: got 'close'" in report.summary()


def test_cli_placement_sets_against_a_server(tmp_path):
    with serve(ScriptedEngine(), home=tmp_path, markup_mode="context") as url:  # echoes: nothing is placed
        result = mtserve("eval", "--markup", "--dataset", "placement", "--limit", "3", "--url", url, "--quiet",
                         "--json", str(tmp_path / "hand.json"))
        catalog = mtserve("eval", "--markup", "--dataset", "placement-catalog", "--split", "test", "--limit", "2",
                          "--url", url, "--quiet")
    assert result.returncode == 0, result.stderr
    assert "markup eval markup-placement zh->en (dev, n=3" in result.stdout
    assert "placement 0.0% of" in result.stdout
    data = json.loads((tmp_path / "hand.json").read_text())
    assert data["n"] == 3 and data["placement"] == 0.0 and data["placement_by_category"]
    tags = [t for item in data["items"] for t in item["tags"]]
    assert tags and all(t["expected"] and t["right"] is False for t in tags)
    assert catalog.returncode == 0, catalog.stderr
    assert "markup-placement-catalog zh->en (test, n=2" in catalog.stdout and "placement " in catalog.stdout
    wrong = mtserve("eval", "--markup", "--dataset", "placement", "--target", "de", "--url", "http://127.0.0.1:9")
    assert wrong.returncode == 2 and "zh->en" in wrong.stderr


def test_the_placement_sets_load_through_the_markup_eval():
    hand = load_markup_set("placement", "zh", "en", "dev")
    assert hand.items and all(i.fmt == "html" and i.expected and "<" not in i.plain for i in hand.items)
    with pytest.raises(ValueError, match="zh->en"):
        load_markup_set("placement-catalog", "en", "zh", "dev")
