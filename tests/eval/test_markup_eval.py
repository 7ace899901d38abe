"""The markup eval: its set is fixed and split like the HSK set, and its four figures mean what they say."""

from __future__ import annotations

import asyncio

import pytest

from mtserve.eval.datasets import split_of
from mtserve.eval.markup import (
    MarkupItem,
    MarkupSet,
    build_everyday,
    edge_errors,
    evaluate_markup,
    intact,
    load_markup_set,
    tags_intact,
)
from mtserve.eval.targets import InProcessTarget
from mtserve.settings import Settings
from tests.quality.helpers import ScriptedEngine

hsk = pytest.importorskip("hsk_sentences_audio")


def test_the_set_is_deterministic_and_keeps_each_sentence_in_its_split():
    first = load_markup_set("hsk", "zh", "en", "test")
    again = load_markup_set("hsk", "zh", "en", "test")
    assert first.items == again.items and len(first.items) > 1000
    assert all(split_of(item.id.split(":")[0]) == "test" for item in first.items)
    groups = {item.group for item in first.items}
    assert groups == {"tags", "xml", "placeholders", "icu"}
    for item in first.items:
        if item.fmt != "text":
            assert tags_intact(item.source, item.source), item  # every item is well-formed markup
            assert item.plain and "<" not in item.plain
    everyday = build_everyday("ja", "dev") + build_everyday("ja", "test")
    assert len(everyday) == 60


def test_integrity_needs_every_tag_nested_and_every_placeholder():
    tags = MarkupItem("a", "tags", "html", '我喜欢<b>猫</b>和<a href="/d">狗</a>。', "我喜欢猫和狗。", "")
    assert intact(tags, 'I like <b>cats</b> and <a href="/d">dogs</a>.')
    assert not intact(tags, 'I like <b>cats and <a href="/d">dogs</b></a>.')  # crossed
    assert not intact(tags, 'I like cats and <a href="/d">dogs</a>.')  # lost
    assert not intact(tags, 'I like <b>cats</b> and <a href="/x">dogs</a>.')  # changed
    icu = MarkupItem("b", "icu", "text", "你有{n, plural, one {# 本书} other {# 本书}}。", "", "")
    assert intact(icu, "You have {n, plural, one {# book} other {# books}}.")
    assert not intact(icu, "You have {n, plural, other {# books}}.")
    printf = MarkupItem("c", "placeholders", "text", "%s，你好", "", "")
    assert not intact(printf, "Hello, {name}")


def test_edge_errors_are_glued_words_spaces_in_cjk_and_capitals_after_a_tag():
    item = MarkupItem("a", "tags", "html", "点击<a>这里</a>保存。", "点击这里保存。", "")
    assert edge_errors(item, "Click <a>here</a> to save.", "Click here to save.", "en") == []
    assert edge_errors(item, "Click<a>here</a>to save.", "Click here to save.", "en") == [
        "glued at <a>", "glued at </a>"]
    assert edge_errors(item, "Click <a>Here</a> to save.", "Click here to save.", "en") == [
        "capital after <a>: Here"]
    assert edge_errors(item, "Visit <a>Shanghai</a> now.", "Visit Shanghai now.", "en") == []  # a name
    xml = MarkupItem("c", "xml", "xml", '这条<x id="0"></x>路封闭了。', "这条路封闭了。", "")
    assert edge_errors(xml, 'The <x id="0"></x>road is closed.', "The road is closed.", "en") == [
        "glued at </x>"]
    assert edge_errors(xml, 'The <x id="0"></x> road is closed.', "The road is closed.", "en") == []
    english = MarkupItem("b", "tags", "html", "Click <b>here</b>.", "Click here.", "")
    assert edge_errors(english, "请点击 <b>这里</b>。", "请点击这里。", "ja") == ["space at <b>"]


def test_a_run_reports_integrity_fallbacks_cost_and_edges(tmp_path):
    answers = {
        "我喜欢<b1>猫</b1>。": "I like <b1>cats</b1>.",
        "我喜欢猫。": "I like cats.",
        "他<i1>昨天</i1>来了。": "He came yesterday.",  # loses the tag: retried, then the fallback
        "他昨天来了。": "He came yesterday.",
        "昨天": "yesterday",
    }
    engine = ScriptedEngine(lambda r: answers.get(r.text, "%s, hello." if "%s" in r.text else None))
    items = [MarkupItem("1", "tags", "html", "我喜欢<b>猫</b>。", "我喜欢猫。", "I like cats."),
             MarkupItem("2", "tags", "html", "他<i>昨天</i>来了。", "他昨天来了。", "He came yesterday."),
             MarkupItem("3", "placeholders", "text", "%s，你好。", "", "Hello, %s.")]
    target = InProcessTarget(Settings(home=tmp_path, markup_mode="context"), engine=engine)
    report = asyncio.run(evaluate_markup(MarkupSet("m", "zh", "en", "dev", items), target))
    assert report.n == 3 and report.integrity == 100.0
    assert report.fallbacks == 1 and report.retries == 1 and report.fallback_percent == pytest.approx(33.3)
    assert report.markup_cost == 0.0 and report.edge_errors == 0
    [second] = [r for r in report.items if r.id == "2"]
    assert second.output == "He came <i>yesterday</i>."
    assert "integrity 100.0%" in report.summary()
