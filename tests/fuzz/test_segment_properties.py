"""Hypothesis properties of segmentation and reassembly: any Unicode string round-trips."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from mtserve.text.html import parse_html
from mtserve.text.segment import join_pieces, split_text
from mtserve.text.spacing import respace_for_target

LANGS = st.sampled_from(["zh", "ja", "en", "de", "ar", "he"])
# Every code point class, plus the ones that break naive code: NUL, combining marks, RTL, emoji, CRLF.
TRICKY = st.sampled_from(["\x00", "\u0301", "\u200f", "שלום", "مرحبا", "👩‍👩‍👧", "\r\n", "\u3000",
                          "。", ". ", "!?", "\n\n"])
TEXT = st.lists(st.one_of(st.text(max_size=20), TRICKY), max_size=30).map("".join)


@settings(max_examples=400, deadline=None)
@given(TEXT, LANGS, st.integers(min_value=5, max_value=400))
def test_split_then_join_returns_the_input_exactly(text, lang, max_chars):
    pieces = split_text(text, lang, max_chars)
    assert "".join(p.text for p in pieces) == text
    assert join_pieces(pieces, [p.text for p in pieces if p.translate]) == text
    for piece in pieces:
        if piece.translate:
            assert piece.text and piece.text == piece.text.strip()


@settings(max_examples=300, deadline=None)
@given(TEXT, LANGS, st.sampled_from(["en", "zh"]))
def test_translations_come_back_in_order_with_whitespace_kept(text, lang, target):
    pieces = respace_for_target(split_text(text, lang, 400), target)
    marked = [f"<{i}>" for i, p in enumerate(pieces) if p.translate]
    out = join_pieces(pieces, marked)
    positions = [out.index(m) for m in marked]
    assert positions == sorted(positions)
    newlines = [p.text.count("\n") for p in pieces if not p.translate]
    assert out.count("\n") == sum(newlines)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=10), st.sampled_from(
    ["<b>", "</b>", "<p class='x'>", "</p>", "<script>", "</script>", "&amp;", "&#x4e2d;", "<!--c-->",
     "<img alt=\"图\" src=x>", "<", ">", "<br/>"])), max_size=25).map("".join))
def test_html_round_trips_any_markup(html):
    doc = parse_html(html)
    assert doc.render(doc.segments) == html
