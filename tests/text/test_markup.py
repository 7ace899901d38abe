"""The inline-markup model: checking a tagged translation, edges, and the fallback that places tags."""

from __future__ import annotations

import pytest

from mtserve.text import markup


def test_a_translation_with_the_same_tags_passes() -> None:
    source = "我们的<b1>新产品</b1>明天在<i2>上海</i2>发布<x3/>。"
    output = "Our <b1>new product</b1> will be launched in <i2>Shanghai</i2> tomorrow<x3/>."
    assert markup.check(source, output) is None


@pytest.mark.parametrize("output, problem", [
    ("Our new product is out.", "missing <b1>"),
    ("Our <b1>new</b1> <b1>product</b1>.", "appears twice"),
    ("Our <b1>new <i2>product</b1></i2>.", "not the innermost"),
    ("Our <b1>new product.", "never closed"),
    ("Our <b1>new</b1> <u7>product</u7>.", "unknown <u7>"),
    ("Our <i1>new product</i1>.", "should be <b1>"),
    ("Our <b1></b1>new product.", "lost its content"),
])
def test_what_a_broken_translation_gets_wrong_is_named(output: str, problem: str) -> None:
    assert problem in (markup.check("我们的<b1>新产品</b1>。", output) or "")


@pytest.mark.parametrize("source, output", [
    ("你好，%s！你有{count}条新消息。", "Hello, %s! You have %s new messages."),
    ("第%1$s页，共%2$d页", "Page %1$s of %d"),
    ("欢迎{{ user.name }}", "Welcome {{user.name}}"),
    ("访问 https://example.com/a?b=1 或写信给 ops@example.com",
     "Visit https://example.com or write to ops@example.com"),
    ("$HOME 目录", "the home directory"),
])
def test_placeholders_must_come_back_byte_identical(source: str, output: str) -> None:
    assert "placeholders changed" in (markup.check(source, output) or "")


def test_placeholders_that_come_back_pass() -> None:
    assert markup.check("你好，%(name)s！{0} 有 &amp; $VAR", "Hello, %(name)s! {0} has &amp; $VAR") is None


@pytest.mark.parametrize("source, output, target, fixed", [
    # a word glued to a tag gets its space; a space the model put inside a tag goes outside
    ("我喜欢<b1>猫</b1>。", "I like<b1>cats </b1>.", "en", "I like <b1>cats</b1>."),
    ("点击<a1>这里</a1>保存。", "Click<a1>here</a1>to save.", "en", "Click <a1>here</a1> to save."),
    ("请点击<x1/>保存。", "Please click<x1/>to save.", "en", "Please click <x1/> to save."),
    ("这条<x1/>路封闭了。", "The <x1/>road is closed.", "en", "The <x1/> road is closed."),
    ("<x1/>请点击保存。", "<x1/>Please click save.", "en", "<x1/>Please click save."),
    # no space at a tag between Chinese or Japanese characters
    ("I like <b1>cats</b1>.", "我喜欢 <b1> 猫 </b1> 。", "zh", "我喜欢<b1>猫</b1>。"),
    ("Press <b1>Start</b1> now.", "今すぐ <b1>スタート</b1> を押してください。", "ja",
     "今すぐ<b1>スタート</b1>を押してください。"),
    # a tag inside a word in the source stays inside the word
    ("un<b1>believ</b1>able", "un<b1>glaub</b1>lich", "de", "un<b1>glaub</b1>lich"),
    # no capital after a tag in mid-sentence, unless the source had one there
    ("Click <a1>here</a1> now.", "Klicken Sie <a1>Hier</a1> jetzt.", "en", "Klicken Sie <a1>hier</a1> jetzt."),
    ("Meet <b1>Anna</b1> today.", "Treffen Sie <b1>Anna</b1> heute.", "de", "Treffen Sie <b1>Anna</b1> heute."),
    ("点击<a1>这里</a1>。", "Click <a1>Here</a1>.", "en", "Click <a1>here</a1>."),
    ("<b1>这里</b1>很好。", "<b1>Here</b1> is fine.", "en", "<b1>Here</b1> is fine."),
])
def test_edges_follow_the_target_language(source: str, output: str, target: str, fixed: str) -> None:
    assert markup.fix_edges(source, output, target) == fixed


def test_the_fallback_puts_each_tag_on_the_words_of_its_content() -> None:
    source = "他<i1>昨天</i1>去了<b2>北京</b2>。"
    placed = markup.project(source, "He went to Beijing yesterday.", {1: "Yesterday", 2: "Beijing"}, "en")
    assert placed == "He went to <b2>Beijing</b2> <i1>yesterday</i1>."
    assert markup.check(source, placed) is None


def test_the_fallback_matches_approximately_and_nests_inside_the_parent() -> None:
    source = "<b1>请在<i2>会议开始前</i2>把报告发给我。</b1>"
    placed = markup.project(source, "Please send me the report before the meetings start.",
                            {1: "Please send the report to me before the meeting starts.",
                             2: "Before the meeting starts"}, "en")
    assert placed == "<b1>Please send me the report <i2>before the meetings start</i2>.</b1>"


def test_the_fallback_into_chinese() -> None:
    placed = markup.project("I like <b1>cats</b1> and <i2>dogs</i2>.", "我喜欢猫和狗。", {1: "猫", 2: "狗"}, "zh")
    assert placed == "我喜欢<b1>猫</b1>和<i2>狗</i2>。"


def test_the_fallback_never_loses_a_tag_it_cannot_find() -> None:
    source = "<x1/>请<b2>立刻</b2>点击<a3>这里</a3>保存<x4/>"
    placed = markup.project(source, "Please click save.", {2: "immediately", 3: "here"}, "en")
    assert markup.check(source, placed) is None
    assert placed.startswith("<x1/>") and placed.endswith("<x4/>")


def test_the_fallback_restores_a_placeholder_the_model_changed() -> None:
    source = "你好，%s！你有{count}条新消息。"
    assert markup.project(source, "Hello, %s! You have %s new messages.", {}, "en") == \
        "Hello, %s! You have {count} new messages."
    restored = markup.project(source, "Hello! You have new messages.", {}, "en")
    assert markup.check(source, restored) is None


def test_strip_and_structure() -> None:
    plain, elements = markup.structure("a<b1>b<x2/>c</b1>d")
    assert plain == "abcd"
    assert (elements[1].start, elements[1].end, elements[2].parent) == (1, 3, 1)
    assert markup.strip_tags("a<b1>b</b1>") == "ab"
    assert not markup.balanced("a<b1>b")


def test_anchors_are_contents_found_once_at_word_edges():
    _, elements = markup.structure("请在<b1>会议开始前</b1>把<a2>报告</a2>发给我<i3>了</i3>。")
    found = markup.anchors("Please send the report to me before the meeting starts.",
                           {1: "Before the meeting starts.", 2: "Report", 3: "e"}, elements)
    assert found == {1: (29, 54), 2: (16, 22)}  # "e" is inside words only


def test_icu_arguments_pair_each_branch_with_its_own_closing_brace():
    message = "{g, select, male {He {n, plural, one {# cat} other {# cats}}} other {They}} left"
    [argument] = markup.icu_arguments(message)
    assert (argument.name, argument.kind) == ("g", "select")
    assert [text for _, text in argument.branches] == ["He {n, plural, one {# cat} other {# cats}}", "They"]
    assert argument.render(["Er", "Sie"]) == "{g, select, male {Er} other {Sie}}"
    assert markup.icu_arguments("{n, plural, one {# file} other {# files}") == []  # never closed: not an argument
    assert markup.icu_arguments("} {n, plural, one {x}} {") != []  # stray braces around it change nothing


def test_thousands_of_unclosed_icu_branches_are_read_in_one_pass():
    """Each branch's closing brace is looked up, not searched for to the end of the text from every
    branch: 8,000 unclosed ones ("{a,select,x{" again and again) took 1.4 s for 16,000 characters."""
    assert markup.icu_arguments("{a,select,x{" * 8_000) == []
    assert len(markup.icu_arguments("{a,select,x{y}}" * 8_000)) == 8_000


def test_a_tag_moved_to_the_end_is_kept_empty_before_the_closing_punctuation():
    assert markup.move_to_end("He is <b1>happy</b1>.", 1) == "He is happy<b1></b1>."
    moved = markup.move_to_end("<i2>He</i2> is <b1>very <x3/>happy</b1>!”", 1)
    assert moved == "<i2>He</i2> is very <x3/>happy<b1></b1>!”"
    assert markup.move_to_end("No tags here.", 1) == "No tags here."
