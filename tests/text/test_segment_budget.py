"""Segments of several sentences (``budget``): whole sentences of one line, grouped up to the budget."""

from __future__ import annotations

import random

import pytest

from mtserve.text import markup
from mtserve.text.segment import Piece, count_sentences, join_pieces, segment_size, split_text

ISSUE_EXAMPLES = ['请在搜索框中输入"?"来匹配任意字符。', "点击“确定？”按钮继续。", "他问：“你去哪儿？”然后走了。"]


def segments(text: str, lang: str, budget: int, max_chars: int = 400) -> list[str]:
    return [piece.text for piece in split_text(text, lang, max_chars, budget) if piece.translate]


def assert_invariants(text: str, lang: str, budget: int, max_chars: int = 400) -> list[Piece]:
    pieces = split_text(text, lang, max_chars, budget)
    assert "".join(piece.text for piece in pieces) == text
    assert join_pieces(pieces, [piece.text for piece in pieces if piece.translate]) == text
    for piece in pieces:
        assert piece.text
        if piece.translate:
            assert piece.text == piece.text.strip()
            assert segment_size(piece.text) <= max_chars or len(piece.text) == 1, piece.text
        else:
            assert piece.text.isspace()
    return pieces


def test_a_ui_string_of_three_sentences_is_one_segment() -> None:
    text = "Your changes were saved. Reload the page? Click OK to continue!"
    assert segments(text, "en", 400) == [text]
    assert segments(text, "en", 0) == ["Your changes were saved.", "Reload the page?", "Click OK to continue!"]


def test_cjk_sentences_with_nothing_between_them_are_grouped() -> None:
    assert segments("你好。我很好。谢谢！", "zh", 400) == ["你好。我很好。谢谢！"]
    assert segments("こんにちは。元気です。", "ja", 400) == ["こんにちは。元気です。"]


def test_the_issues_quoted_marks_stay_inside_one_sentence_and_group_whole() -> None:
    text = "".join(ISSUE_EXAMPLES)
    assert segments(text, "zh", 0) == ISSUE_EXAMPLES  # each one sentence, as before
    assert segments(text, "zh", 400) == [text]
    assert count_sentences(text, "zh") == 3
    # a budget that holds two of them: the cut falls between whole sentences only
    two = segment_size(ISSUE_EXAMPLES[0] + ISSUE_EXAMPLES[1])
    assert segments(text, "zh", two) == [ISSUE_EXAMPLES[0] + ISSUE_EXAMPLES[1], ISSUE_EXAMPLES[2]]


def test_a_group_never_crosses_a_line_break_or_a_blank_line() -> None:
    text = "One. Two.\nThree. Four.\n\nFive."
    assert segments(text, "en", 400) == ["One. Two.", "Three. Four.", "Five."]
    assert segments("你好。我很好。\r\n谢谢！再见。", "zh", 400) == ["你好。我很好。", "谢谢！再见。"]


def test_the_budget_is_filled_with_whole_sentences() -> None:
    text = "One. Two. Three. Four. Five."
    assert segments(text, "en", 9) == ["One. Two.", "Three.", "Four.", "Five."]
    assert segments(text, "en", 11) == ["One. Two.", "Three.", "Four. Five."]
    assert segments(text, "en", 16) == ["One. Two. Three.", "Four. Five."]


def test_a_sentence_longer_than_the_budget_stays_alone_and_is_cut_only_at_max_chars() -> None:
    long = "This sentence is a good deal longer than the budget allows."
    text = f"Short. {long} Tail."
    assert segments(text, "en", 20) == ["Short.", long, "Tail."]
    cut = segments(text, "en", 20, max_chars=30)
    assert cut[0] == "Short." and cut[-1] == "Tail." and all(len(s) <= 30 for s in cut)
    assert "".join(cut[1:-1]).replace(" ", "") == long.replace(" ", "")


def test_the_budget_never_goes_past_max_chars() -> None:
    text = " ".join(f"Sentence number {i} is here." for i in range(20))
    for piece in assert_invariants(text, "en", budget=10_000, max_chars=100):
        assert segment_size(piece.text) <= 100
    assert len(segments(text, "en", 10_000, max_chars=100)) == 7  # three of 27-28 characters fit in 100


def test_astral_characters_count_three_against_the_budget() -> None:
    text = "𠀀𠀀。𠀀𠀀。"  # each sentence: 2 x 3 + 1 = 7
    assert segments(text, "zh", 13) == ["𠀀𠀀。", "𠀀𠀀。"]
    assert segments(text, "zh", 14) == [text]


def test_join_spaces_latin_translations_of_cjk_groups_as_it_did_sentences() -> None:
    pieces = split_text("你好。我很好。谢谢！再见。", "zh", 400, budget=7)
    assert [p.text for p in pieces] == ["你好。我很好。", "谢谢！再见。"]
    assert join_pieces(pieces, ["Hello. I am fine.", "Thanks! Bye."]) == "Hello. I am fine. Thanks! Bye."


def whole(run: str) -> bool:
    return "<" not in run or markup.balanced(run)


def test_a_markup_group_ends_only_where_no_tag_is_open() -> None:
    view = "One two. Three <b1>four. Five</b1> six. Seven. Eight."
    grouped = {budget: [p.text for p in markup.keep_tags_whole(split_text(view, "en", 400, budget, whole))
                        if p.translate] for budget in (0, 16, 30, 45, 400)}
    assert grouped[0] == ["One two.", "Three <b1>four. Five</b1> six.", "Seven.", "Eight."]  # as before
    assert grouped[16] == grouped[30] == ["One two.", "Three <b1>four. Five</b1> six.", "Seven. Eight."]
    assert grouped[45] == ["One two. Three <b1>four. Five</b1> six.", "Seven. Eight."]
    assert grouped[400] == [view]
    # without ``whole`` a group may end inside the tag, and keep_tags_whole joins past the budget
    loose = [p.text for p in markup.keep_tags_whole(split_text(view, "en", 400, 30)) if p.translate]
    assert loose == [view]
    for budget in range(3, 60, 3):  # (budget 0 groups nothing: keep_tags_whole joins as before)
        pieces = split_text(view, "en", 400, budget, whole)
        assert "".join(p.text for p in pieces) == view
        assert all(markup.balanced(p.text) for p in pieces if p.translate), (budget, pieces)


def test_count_sentences() -> None:
    assert count_sentences("One. Two! Three?", "en") == 3
    assert count_sentences("你好。我很好。", "zh") == 2
    assert count_sentences("Dr. Smith arrived.", "en") == 1
    assert count_sentences("One.\nTwo.", "en") == 2
    assert count_sentences("", "en") == 0
    assert count_sentences("x" * 1000, "en") == 1  # no cut at max_chars when counting


@pytest.mark.parametrize("lang", ["en", "zh", "ja"])
def test_random_texts_keep_every_invariant_under_any_budget(lang: str) -> None:
    rng = random.Random(18)
    alphabet = list("ab Cd.!?。！？，,\n \"“”「」()") + ["Mr.", "你好", "テスト", "𠀀", "😀"]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 80)))
        budget, max_chars = rng.choice([0, 1, 5, 20, 400]), rng.choice([3, 10, 400])
        pieces = assert_invariants(text, lang, budget, max_chars)
        # a group is made of whole sentences: it never holds a line break
        assert not any("\n" in p.text for p in pieces if p.translate)
        # with a budget there are never more segments than without one
        assert len([p for p in pieces if p.translate]) <= len(segments(text, lang, 0, max_chars))


def test_a_long_run_of_clause_marks_is_cut_in_one_pass():
    """A run of colons or commas with no space after it is tried as a clause end once, from its start
    (100,000 colons took about 9 s when it was tried again from each one)."""
    for text in (":" * 100_000, "a," * 50_000, "x" + ";" * 100_000 + " y"):
        pieces = assert_invariants(text, "en", 200)
        assert all(segment_size(piece.text) <= 400 for piece in pieces)
