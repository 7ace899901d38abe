"""HTML translation: markup survives byte for byte, only text changes."""

from __future__ import annotations

import random

import pytest

from mtserve.text import markup
from mtserve.text.html import parse_html


def upper(segment: str) -> str:
    """A visibly different translation that keeps the segment's tags."""
    return "".join(t.text.upper() if t.kind == "text" else t.text for t in markup.tokens(segment))


def shout(html: str) -> str:
    """Render with every segment replaced by a visibly different translation."""
    document = parse_html(html)
    return document.render([upper(segment) for segment in document.segments])


@pytest.mark.parametrize("html", [
    "",
    "plain text, no tags",
    "<!DOCTYPE html>\n<html lang=\"zh\">\n<head><meta charset=\"utf-8\"><title>标题</title></head>\n"
    "<body>\n  <p>你好，<b>世界</b>！</p>\n</body>\n</html>\n",
    "<p>unclosed <b>bold <i>italic",
    "</div>stray end tags</span></p>",
    "a < b and c > d",
    "<",
    "text <",
    "<a href=\"x",
    "<!-- unclosed comment",
    "<script>unclosed script",
    "<a title='a>b' data-x=\"it's\">x</a>",
    "<p>&nbsp;&amp;&lt;&#39;&#x27;&foo;&amp no semicolon &</p>",
    "<![CDATA[raw]]><?php echo 1 ?><!weird>",
    "hello</>world",
    "<DIV CLASS=Upper>Mixed case</Div>",
    "<p>\r\n  CRLF\r\n</p>\r\n",
    "<img src=x alt=unquoted><img alt=\"\"><img alt>",
    "<br/><br><hr />text<wbr>",
    "<p>😀 emoji &#128512;</p>",
])
def test_round_trip_is_exact(html: str) -> None:
    document = parse_html(html)
    assert document.render(document.segments) == html


def test_random_markup_round_trips() -> None:
    fragments = ["<p>", "</p>", "<b>", "</b>", "<a href='x'>", "</a>", "<br>", "<img alt=\"猫\"/>",
                 "<script>", "</script>", "<!-- c -->", "&amp;", "&nbsp;", "&#39;", "<", ">", "&",
                 "\"", "'", " ", "\n", "\t", "你好", "Hello", "world.", "<span title=t>", "</span>",
                 "<code>", "</code>", "<p translate=\"no\">", "<", "=", "/"]
    rng = random.Random(7)
    for _ in range(500):
        html = "".join(rng.choice(fragments) for _ in range(rng.randint(0, 25)))
        document = parse_html(html)
        assert document.render(document.segments) == html
        assert all(segment.strip() for segment in document.segments)


def test_a_block_with_inline_tags_is_one_marked_segment() -> None:
    html = "<p>Hello <b>big <i>wide</i></b> world.</p>"
    document = parse_html(html)
    assert document.segments == ["Hello <b1>big <i2>wide</i2></b1> world."]
    assert document.render(["你好<b1>大<i2>宽</i2></b1>世界。"]) == "<p>你好<b>大<i>宽</i></b>世界。</p>"


def test_the_translation_may_move_and_reorder_the_tags() -> None:
    html = '<p>他<i class="t">昨天</i>去了<a href="/bj">北京</a>。</p>'
    document = parse_html(html)
    assert document.segments == ["他<i1>昨天</i1>去了<a2>北京</a2>。"]
    rendered = document.render(["He went to <a2>Beijing</a2> <i1>yesterday</i1>."])
    assert rendered == '<p>He went to <a href="/bj">Beijing</a> <i class="t">yesterday</i>.</p>'


def test_blocks_split_segments_and_wrapping_tags_stay_outside() -> None:
    html = "<div><h1><b>标题</b></h1><ul><li>一<em>二</em>三</li><li><img src=a.png>四</li></ul></div>"
    document = parse_html(html)
    assert document.segments == ["标题", "一<i1>二</i1>三", "四"]
    assert document.render(["Title", "one <i1>two</i1> three", "four"]) == (
        "<div><h1><b>Title</b></h1><ul><li>one <em>two</em> three</li><li><img src=a.png>four</li></ul></div>")


def test_text_that_reads_as_a_view_tag_is_kept_as_a_void_tag() -> None:
    html = "<p>写 &lt;b1&gt; 表示<b>粗体</b></p>"
    document = parse_html(html)
    assert document.segments == ["写 <x1/> 表示<b2>粗体</b2>"]
    assert document.render(["Write <x1/> for <b2>bold</b2>"]) == "<p>Write &lt;b1&gt; for <b>bold</b></p>"


def test_whitespace_only_nodes_are_not_segments() -> None:
    html = "<ul>\n  <li>One</li>\n  <li> Two </li>\n</ul>"
    document = parse_html(html)
    assert document.segments == ["One", "Two"]
    assert document.render(["Un", "Deux"]) == "<ul>\n  <li>Un</li>\n  <li> Deux </li>\n</ul>"


def test_entities_are_decoded_for_the_engine() -> None:
    document = parse_html("<p>Tom &amp; Jerry &lt;3 &#39;quoted&#39; &copy;</p>")
    assert document.segments == ["Tom & Jerry <3 'quoted' ©"]


def test_nbsp_edges_stay_outside_the_segment() -> None:
    document = parse_html("<p>&nbsp;Hello&nbsp;</p>")
    assert document.segments == ["Hello"]
    assert document.render(["Hi"]) == "<p>&nbsp;Hi&nbsp;</p>"


def test_translated_text_is_escaped() -> None:
    document = parse_html("<p>比较</p>")
    assert document.render(["a < b & c > d \"q\""]) == "<p>a &lt; b &amp; c &gt; d \"q\"</p>"


def test_unchanged_segment_keeps_its_original_entities() -> None:
    html = "<p>Tom &amp; Jerry</p><p>Hello</p>"
    document = parse_html(html)
    assert document.render(["Tom & Jerry", "Bonjour"]) == "<p>Tom &amp; Jerry</p><p>Bonjour</p>"


@pytest.mark.parametrize("html", [
    "<script>var s = \"Hello world\";</script>",
    "<style>p::after { content: \"Hello\"; }</style>",
    "<code>print('hello')</code>",
    "<pre>  keep\n  this </pre>",
    "<kbd>Ctrl</kbd><samp>Output</samp><var>x</var>",
    "<textarea>user text</textarea>",
    "<div translate=\"no\">Brand <b>Name</b></div>",
    "<span class=\"brand notranslate\">Acme</span>",
    "<pre>outer <b>inner</b> tail</pre>",
])
def test_untranslated_elements_give_no_segments(html: str) -> None:
    document = parse_html(html)
    assert document.segments == []
    assert document.render([]) == html


def test_text_after_untranslated_element_is_translated() -> None:
    html = "<p>Run <code>ls -l</code> now.</p><script>x()</script><p>Done</p>"
    document = parse_html(html)
    assert document.segments == ["Run <code1>ls -l</code1> now.", "Done"]
    assert shout(html) == "<p>RUN <code>ls -l</code> NOW.</p><script>x()</script><p>DONE</p>"


def test_inline_code_carries_its_words_into_the_sentence_and_comes_back_byte_identical() -> None:
    """The engine sees the command among the sentence's words, so it can say where it goes; whatever
    the engine writes inside the pair, the element comes back as it was."""
    document = parse_html("<p>运行<code>make &amp;&amp; run</code>启动服务，<code>a<b>b</b></code>除外。</p>")
    assert document.segments == ["运行<code1>make && run</code1>启动服务，<x2/>除外。"]
    out = document.render(["Run <code1>MAKE && RUN</code1> to start the service, except <x2/>."])
    assert out == "<p>Run <code>make &amp;&amp; run</code> to start the service, except <code>a<b>b</b></code>.</p>"


def test_translate_yes_reenables_inside_translate_no() -> None:
    html = "<div translate=\"no\">Acme <span translate=\"yes\">makes tools</span></div>"
    assert parse_html(html).segments == ["makes tools"]


def test_stray_end_tag_does_not_end_untranslated_region() -> None:
    html = "<code>a</b>b</code>c"
    assert parse_html(html).segments == ["c"]


def test_attributes_are_segments() -> None:
    html = "<img src=\"cat.png\" alt=\"一只猫\"><input placeholder='名字' title=提示><a href=\"/\">首页</a>"
    document = parse_html(html)
    assert document.segments == ["一只猫", "名字", "提示", "首页"]
    rendered = document.render(["A \"cat\"", "Name's", "A hint", "Home & <away>"])
    assert rendered == (
        "<img src=\"cat.png\" alt=\"A &quot;cat&quot;\"><input placeholder='Name&#x27;s' "
        "title=\"A hint\"><a href=\"/\">Home &amp; &lt;away&gt;</a>"
    )


def test_attribute_entities_are_decoded() -> None:
    document = parse_html("<abbr title=\"Tom &amp; Jerry\">T&amp;J</abbr>")
    assert document.segments == ["Tom & Jerry", "T&J"]


def test_other_attributes_are_never_segments() -> None:
    html = "<a href=\"Hello\" class=\"Hello\" data-title=\"Hello\" id=alt>x</a>"
    assert parse_html(html).segments == ["x"]


def test_attributes_inside_untranslated_region_are_kept() -> None:
    html = "<div translate=\"no\"><img alt=\"logo\"></div><img alt=\"photo\">"
    assert parse_html(html).segments == ["photo"]


def test_attribute_with_gt_and_quotes_inside() -> None:
    html = "<a title=\"a > b 'c'\" href='x>y'>link</a>"
    document = parse_html(html)
    assert document.segments == ["a > b 'c'", "link"]
    assert shout(html) == "<a title=\"A &gt; B &#x27;C&#x27;\" href='x>y'>LINK</a>"


def test_malformed_markup_survives_translation() -> None:
    html = "<p>Hello <b>world</p> trailing <"
    document = parse_html(html)
    assert document.segments == ["Hello <x1/>world", "trailing <"]  # the <b> that never closes stays
    assert document.render([upper(segment) for segment in document.segments]) == (
        "<p>HELLO <b>WORLD</p> TRAILING &lt;"
    )


def test_render_requires_one_translation_per_segment() -> None:
    document = parse_html("<p>a</p><p>b</p>")
    with pytest.raises(ValueError):
        document.render(["only one"])


@pytest.mark.parametrize(("translation", "expected"), [
    ("Hint", "<a title=Hint>x</a>"),
    ("A hint", "<a title=\"A hint\">x</a>"),
    ("a=b", "<a title=\"a=b\">x</a>"),
    ("and/or", "<a title=\"and/or\">x</a>"),
    ("\"q\"", "<a title=&quot;q&quot;>x</a>"),
])
def test_unquoted_attribute_is_quoted_only_when_needed(translation: str, expected: str) -> None:
    document = parse_html("<a title=提示>x</a>")
    assert document.segments == ["提示", "x"]
    assert document.render([translation, "x"]) == expected


def test_parser_errors_on_bogus_declarations_are_contained() -> None:
    # html.parser raises on some malformed "<![" sections; the rest must still be translated.
    html = "<p>Before</p><![<<img alt=]\n-=]/<p>After</p>"
    document = parse_html(html)
    assert document.render(document.segments) == html
    assert document.segments[0] == "Before" and document.segments[-1] == "After"
