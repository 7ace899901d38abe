"""Sentence splitting: exact reassembly first, then where the cuts fall."""

from __future__ import annotations

import os
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import pytest

from mtserve.text.segment import Piece, is_cjk, join_pieces, segment_size, split_text


def sentences(text: str, lang: str, max_chars: int = 400) -> list[str]:
    return [piece.text for piece in split_text(text, lang, max_chars) if piece.translate]


def assert_invariants(text: str, lang: str, max_chars: int = 400) -> list[Piece]:
    pieces = split_text(text, lang, max_chars)
    assert "".join(piece.text for piece in pieces) == text
    assert join_pieces(pieces, [piece.text for piece in pieces if piece.translate]) == text
    for piece in pieces:
        assert piece.text, "no empty pieces"
        if piece.translate:
            assert piece.text == piece.text.strip(), f"edge whitespace in {piece.text!r}"
            # the engine's context holds every segment (a lone astral character may pass a tiny bound)
            assert segment_size(piece.text) <= max_chars or len(piece.text) == 1, piece.text
        else:
            assert piece.text.isspace(), f"separator with content: {piece.text!r}"
    for left, right in zip(pieces, pieces[1:]):
        assert left.translate or right.translate, "separators are merged"
    return pieces


# ---------------------------------------------------------------- round trips

_ALPHABET = (
    list("的一是在不了有和人这中大为上个国我以要他时来用们生到作地于出就分对成会可主发年动")
    + list("あいうえおカキクケコ한국어")
    + list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list("。！？；，、：“”‘’「」『』（）【】……!?.,;:'\"()[]-$%@/")
    + [" ", " ", " ", "\t", "\n", "\n\n", "\r\n", "\r", "\u3000", "\xa0", "\u2028"]
    + ["😀", "👍🏽", "é", "ß", "Ω", "Mr.", "e.g.", "3.14", "...", "U.S.", "http://a.b/c?d=1"]
)


def _random_text(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 60)))


def test_random_texts_reassemble_exactly() -> None:
    rng = random.Random(20240601)
    for _ in range(500):
        text = _random_text(rng)
        lang = rng.choice(["zh", "zt", "ja", "en", "fr", "ko"])
        assert_invariants(text, lang, max_chars=rng.choice([1, 3, 8, 20, 400]))


@pytest.mark.parametrize("text", [
    "", " ", "\n", "\n\n\n", "\r\n\r\n", " \t \n ", "\u3000", "a", "。", "...", "!?",
    "  Hello.  \r\n\r\n\tWorld!  ", "😀👍🏽", "第一段。\n\n第二段！\n", "\n\nLeading and trailing\n\n",
])
@pytest.mark.parametrize("lang", ["zh", "en"])
def test_edge_cases_reassemble(text: str, lang: str) -> None:
    assert_invariants(text, lang)


def test_whitespace_only_text_has_nothing_to_translate() -> None:
    assert split_text(" \n\t\r\n ", "en") == [Piece(" \n\t\r\n ", False)]
    assert split_text("", "zh") == []


DETERMINISM_TEXT = "他说：“你好。”然后走了。 Mr. Smith left. Then, he came back!"
DETERMINISM_PIECES = [
    Piece("他说：“你好。”", True), Piece("然后走了。", True), Piece(" ", False),
    Piece("Mr. Smith left.", True), Piece(" ", False), Piece("Then, he came back!", True),
]


def test_splitting_is_deterministic() -> None:
    """The same cuts every time, and in another process with another hash seed (the cache keys
    on the segments, so a cut that moved between runs or replicas would miss it)."""
    assert split_text(DETERMINISM_TEXT, "zh") == DETERMINISM_PIECES
    script = ("import sys; from mtserve.text.segment import split_text; "
              "print(repr([(p.text, p.translate) for p in split_text(sys.argv[1], 'zh')]))")
    root = Path(__file__).resolve().parents[2]
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(root)}
        out = subprocess.run([sys.executable, "-c", script, DETERMINISM_TEXT], capture_output=True, text=True,
                             check=True, env=env).stdout
        assert out.strip() == repr([(p.text, p.translate) for p in DETERMINISM_PIECES])


# ---------------------------------------------------------------- layout

def test_paragraphs_and_indent_are_separators() -> None:
    pieces = split_text("  First one. Second one.\n\n  Next paragraph.\n", "en")
    assert pieces == [
        Piece("  ", False), Piece("First one.", True), Piece(" ", False), Piece("Second one.", True),
        Piece("\n\n  ", False), Piece("Next paragraph.", True), Piece("\n", False),
    ]


@pytest.mark.parametrize("text", ["line one\nline two", "line one\r\nline two", "行一\n行二"])
def test_a_newline_always_ends_a_sentence(text: str) -> None:
    pieces = split_text(text, "en")
    assert [piece.translate for piece in pieces] == [True, False, True]
    assert not pieces[1].text.strip()


# ---------------------------------------------------------------- CJK rules

@pytest.mark.parametrize(("text", "expected"), [
    ("他说：“你好。”然后走了。", ["他说：“你好。”", "然后走了。"]),
    ("今天天气很好。我们去公园吧！你去吗？", ["今天天气很好。", "我们去公园吧！", "你去吗？"]),
    ("真的吗？！我不信。", ["真的吗？！", "我不信。"]),
    ("他想了想……说：“好吧。”", ["他想了想……说：“好吧。”"]),
    ("等等……。然后呢", ["等等……。", "然后呢"]),
    ("第一；第二；第三", ["第一；", "第二；", "第三"]),
    ("「行こう。」彼は言った。", ["「行こう。」", "彼は言った。"]),
    ("（注意安全。）请慢走。", ["（注意安全。）", "请慢走。"]),
    ("太好了!我们赢了?是的;没错", ["太好了!", "我们赢了?", "是的;", "没错"]),
    ("他说“Hi!”然后笑了", ["他说“Hi!”然后笑了"]),  # an exclamation inside quotes is inside the sentence
    ("版本1.0发布了。价格是3.5元。", ["版本1.0发布了。", "价格是3.5元。"]),
    ("你好。 我很好。", ["你好。", "我很好。"]),
    ("他说 Hello. How are you? 然后走了。", ["他说 Hello.", "How are you?", "然后走了。"]),
])
def test_cjk_sentences(text: str, expected: list[str]) -> None:
    assert sentences(text, "zh") == expected
    assert_invariants(text, "zh")


@pytest.mark.parametrize(("text", "expected"), [
    ('请在搜索框中输入"?"来匹配任意字符。', ['请在搜索框中输入"?"来匹配任意字符。']),
    ("点击“确定？”按钮继续。", ["点击“确定？”按钮继续。"]),
    ("他问：“你去哪儿？”然后走了。", ["他问：“你去哪儿？”然后走了。"]),
    ("他喊道（“快跑！”）然后跑了。下一句。", ["他喊道（“快跑！”）然后跑了。", "下一句。"]),
    ("「本当？」と彼は聞いた。", ["「本当？」と彼は聞いた。"]),
    # a full stop inside quotes still ends the sentence, and quotes that never close change nothing
    ("他说：“你好。”然后走了。", ["他说：“你好。”", "然后走了。"]),
    ("他说：“你去哪儿？我不知道。", ["他说：“你去哪儿？", "我不知道。"]),
    ("你知道吗？我不知道。", ["你知道吗？", "我不知道。"]),
])
def test_a_question_or_exclamation_inside_quotes_does_not_end_the_sentence(text: str, expected: list[str]) -> None:
    assert sentences(text, "zh") == expected
    assert_invariants(text, "zh")


def test_unmatched_brackets_are_scanned_in_linear_time() -> None:
    import time

    text = "（" * 50_000 + "」？" * 50_000 + "。"
    started = time.perf_counter()
    assert "".join(p.text for p in split_text(text, "zh", 10**9)) == text
    elapsed = time.perf_counter() - started
    print(f"100,000 unmatched brackets split in {elapsed:.2f} s")
    assert elapsed < 10  # quadratic would take minutes


def test_latin_text_keeps_its_own_rules_at_quotes() -> None:
    assert sentences('"Where are you?" He left.', "en") == ['"Where are you?"', "He left."]


def test_japanese_uses_cjk_rules() -> None:
    assert sentences("今日は晴れです。明日は雨でしょう！", "ja") == ["今日は晴れです。", "明日は雨でしょう！"]


def test_mostly_cjk_text_uses_cjk_rules_whatever_the_language() -> None:
    assert sentences("今天很好。明天也好。", "en") == ["今天很好。", "明天也好。"]


def test_ascii_marks_in_english_do_not_split_without_space() -> None:
    assert sentences("Wait!What?No;never", "en") == ["Wait!What?No;never"]


# ---------------------------------------------------------------- Latin rules

@pytest.mark.parametrize(("text", "expected"), [
    ("Hello world. This is a test! Is it? Yes.", ["Hello world.", "This is a test!", "Is it?", "Yes."]),
    ("Mr. Smith met Mrs. Jones and Dr. Who.", ["Mr. Smith met Mrs. Jones and Dr. Who."]),
    ("Prof. X lives on Baker St. London is big.", ["Prof. X lives on Baker St. London is big."]),
    ("Fruit, e.g. Apples, i.e. Red ones, etc. Are good.",
     ["Fruit, e.g. Apples, i.e. Red ones, etc. Are good."]),
    ("Acme Inc. Sells to Foo Ltd. Every year.", ["Acme Inc. Sells to Foo Ltd. Every year."]),
    ("Made in the U.S. And sold in the U.K. Too.", ["Made in the U.S. And sold in the U.K. Too."]),
    ("Martin Luther King Jr. Spoke. Then he left.", ["Martin Luther King Jr. Spoke.", "Then he left."]),
    ("See Fig. 3 and No. 5 here.", ["See Fig. 3 and No. 5 here."]),
    ("He said no. Then he left.", ["He said no.", "Then he left."]),
    ("It ends at 5 p.m. Tomorrow at 9 a.m. We start.", ["It ends at 5 p.m. Tomorrow at 9 a.m. We start."]),
    ("Apples vs. Oranges is old.", ["Apples vs. Oranges is old."]),
    ("J. K. Rowling wrote it. So did I. Then we read it.",
     ["J. K. Rowling wrote it.", "So did I.", "Then we read it."]),
    ("Pi is 3.14 today. It cost $2.50 in total.", ["Pi is 3.14 today.", "It cost $2.50 in total."]),
    ("Install v1.2.3 now. Then reboot.", ["Install v1.2.3 now.", "Then reboot."]),
    ("Visit www.example.com or mail a.b@c.de today. Thanks.",
     ["Visit www.example.com or mail a.b@c.de today.", "Thanks."]),
    ("Go to https://example.com/a.html. It works.", ["Go to https://example.com/a.html.", "It works."]),
    ("I waited... and waited. Then... Nothing.", ["I waited... and waited.", "Then...", "Nothing."]),
    ("Well… maybe. Sure… Why not?", ["Well… maybe.", "Sure…", "Why not?"]),
    ('He said "Stop." Then he ran.', ['He said "Stop."', "Then he ran."]),
    ('He left. "Why?" she asked.', ["He left.", '"Why?" she asked.']),
    ("There were 3. 4 came later.", ["There were 3.", "4 came later."]),
    ("Really?! Yes!!! Okay.", ["Really?!", "Yes!!!", "Okay."]),
    ("Il est là. Où ça? À côté.", ["Il est là.", "Où ça?", "À côté."]),
    ("그는 갔다. 그녀는 남았다.", ["그는 갔다.", "그녀는 남았다."]),
    ("The end. 然后呢", ["The end.", "然后呢"]),
])
def test_latin_sentences(text: str, expected: list[str]) -> None:
    lang = "ko" if text[0] == "그" else "en"
    assert sentences(text, lang) == expected
    assert_invariants(text, lang)


# ---------------------------------------------------------------- max_chars

def test_long_sentence_splits_at_clauses_first() -> None:
    text = "We came here early, we stayed for a long while, and then we all went home."
    parts = sentences(text, "en", max_chars=30)
    assert parts == ["We came here early,", "we stayed for a long while,", "and then we all went home."]
    assert_invariants(text, "en", max_chars=30)


def test_long_clause_splits_between_words_never_inside_one() -> None:
    words = [f"word{index}" for index in range(60)]
    text = " ".join(words) + "."
    parts = sentences(text, "en", max_chars=40)
    assert len(parts) > 1
    assert all(len(part) <= 40 for part in parts)
    assert " ".join(parts).rstrip(".").split() == words
    assert_invariants(text, "en", max_chars=40)


def test_long_cjk_sentence_splits_at_commas_then_characters() -> None:
    text = "我们很早就来了，" + "在这里待了很长时间" * 5 + "，然后回家了。"
    parts = sentences(text, "zh", max_chars=20)
    assert parts[0] == "我们很早就来了，"
    assert parts[-2].endswith("，") and parts[-1] == "然后回家了。"
    assert all(len(part) <= 20 for part in parts)
    assert "".join(parts) == text


def test_cjk_hard_split_keeps_latin_words_whole() -> None:
    text = "中文" * 8 + "Transformer" + "中文" * 8
    parts = sentences(text, "zh", max_chars=12)
    assert all(len(part) <= 12 for part in parts)
    assert any(part.startswith("Transformer") for part in parts)
    assert "".join(parts) == text


def test_a_token_longer_than_max_chars_is_cut_to_fit() -> None:
    url = "https://example.com/" + "x" * 80
    parts = sentences(f"See {url} now.", "en", max_chars=30)
    assert parts == ["See", url[:30], url[30:60], url[60:90], url[90:], "now."]
    assert_invariants(f"See {url} now.", "en", max_chars=30)


@pytest.mark.parametrize("text, lang", [
    ("a" * 1_000_000, "en"),                      # one "word" of a million characters
    ("字" * 100_000, "zh"),                        # CJK with no punctuation
    ("!" * 100_000 + "a" * 100_000, "en"),        # long runs of a single character
    ("x" * 5000 + "，" + "y" * 5000, "zh"),        # clause marks, then words still too long
    ("  " + "b" * 1000 + "  ", "en"),              # the whitespace around it stays a separator
])
def test_a_huge_word_is_cut_into_segments_that_fit(text: str, lang: str) -> None:
    pieces = assert_invariants(text, lang, max_chars=400)
    segments = [piece.text for piece in pieces if piece.translate]
    assert len(segments) >= len(text.strip()) // 400
    assert join_pieces(pieces, segments) == text  # the cut pieces join back with nothing added


def test_characters_beyond_the_bmp_count_three_so_a_segment_still_fits_the_context() -> None:
    # 400 of U+20000 were 1,235 tokens for the test model: past its 1,024-token slot
    for text, lang in (("\U00020000" * 400, "zh"), ("😀" * 400, "en"), ("ab😀" * 200, "en")):
        segments = sentences(text, lang, max_chars=400)
        assert "".join(segments) == text
        assert all(segment_size(segment) <= 400 for segment in segments)
    assert max(len(segment) for segment in sentences("\U00020000" * 400, "zh", max_chars=400)) == 133
    assert segment_size("字" * 400) == 400 and segment_size("\U00020000") == 3


def test_a_hard_cut_keeps_letters_with_their_marks_and_emoji_whole() -> None:
    accented = "e\u0301" * 300  # e + combining acute: a cut must not land between them
    family = "👨\u200d👩\u200d👧" * 100  # zero-width-joiner sequences
    thumbs = "👍🏽" * 300  # emoji + skin-tone modifier
    for text in (accented, family, thumbs):
        segments = sentences(text, "en", max_chars=50)
        assert "".join(segments) == text
        for segment in segments:
            assert len(segment) <= 50
            assert not unicodedata.combining(segment[0]), segment[:3]
            assert segment[0] not in "\u200d\U0001f3fd" and segment[-1] != "\u200d"


def test_comma_inside_number_is_not_a_clause_boundary() -> None:
    text = "It cost 3,000,000 dollars in total and nobody complained about it"
    parts = sentences(text, "en", max_chars=25)
    assert parts == ["It cost 3,000,000 dollars", "in total and nobody", "complained about it"]


# ---------------------------------------------------------------- join_pieces

def test_join_adds_a_space_between_translated_cjk_sentences() -> None:
    pieces = split_text("你好。我很好。\n谢谢！", "zh")
    result = join_pieces(pieces, ["Hello.", "I am fine.", "Thanks!"])
    assert result == "Hello. I am fine.\nThanks!"


def test_join_adds_no_space_between_cjk_translations() -> None:
    pieces = split_text("Hello. I am fine.", "en")
    assert join_pieces(pieces, ["你好。", "我很好。"]) == "你好。 我很好。"
    pieces = split_text("你好。我很好。", "zh")
    assert join_pieces(pieces, ["こんにちは。", "元気です。"]) == "こんにちは。元気です。"


def test_join_keeps_separators_verbatim() -> None:
    pieces = split_text("\n  One.  Two.\r\n\r\n", "en")
    assert join_pieces(pieces, ["Un.", "Deux."]) == "\n  Un.  Deux.\r\n\r\n"


def test_join_requires_one_translation_per_sentence() -> None:
    pieces = split_text("One. Two.", "en")
    with pytest.raises(ValueError):
        join_pieces(pieces, ["Un."])


# ---------------------------------------------------------------- robustness

@pytest.mark.parametrize("text", [
    " " * 200_000 + "a.\n",
    "x" * 100_000 + " " * 100_000 + "y",
    " \n" * 100_000,
    "Mr. Smith left. " * 20_000,
])
def test_long_inputs_are_handled_in_linear_time(text: str) -> None:
    # A quadratic scan (e.g. ``\s*\n`` on long space runs) would take minutes here.
    pieces = split_text(text, "en", max_chars=50)
    assert "".join(piece.text for piece in pieces) == text


@pytest.mark.parametrize(("char", "expected"), [
    ("中", True), ("あ", True), ("カ", True), ("。", True), ("，", True), ("！", True),
    ("a", False), ("1", False), (" ", False), ("\u3000", False), ("한", False), ("😀", False),
])
def test_is_cjk(char: str, expected: bool) -> None:
    assert is_cjk(char) is expected
