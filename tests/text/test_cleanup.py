"""Cleanup of model output: drop the chatter, never the translation."""

from __future__ import annotations

import pytest

from mtserve.text.cleanup import clean_translation, hold_back_partial_token, strip_special_tokens


@pytest.mark.parametrize("output", [
    "Hello<|im_end|>",
    "<|im_start|>assistant\nHello<|im_end|>",
    "Hello<|endoftext|>",
    "<s>Hello</s>",
    "Hello<|eot_id|>",
    "Hello [/INST]",
    "<|custom_token|>Hello",
    "Hello<|im_end|>\n<|im_start|>user\nTranslate more please",
])
def test_special_tokens_are_removed(output: str) -> None:
    assert clean_translation(output, "你好") == "Hello"


@pytest.mark.parametrize(("chunk", "expected"), [
    ("Hello<|im_end|>", "Hello"),
    (" world ", " world "),
    ("\n<|im_start|>assistant\nHi", "\nHi"),
    ("a < b and c > d", "a < b and c > d"),
    ("<|im_", "<|im_"),  # a partial token is not touched; see hold_back_partial_token
])
def test_strip_special_tokens_keeps_chunk_whitespace(chunk: str, expected: str) -> None:
    assert strip_special_tokens(chunk) == expected


@pytest.mark.parametrize(("chunk", "expected"), [
    ("Hello <|im_", ("Hello ", "<|im_")),
    ("Hello <", ("Hello ", "<")),
    ("Hello </", ("Hello ", "</")),
    ("Hello [/IN", ("Hello ", "[/IN")),
    ("a < b", ("a < b", "")),
    ("x<|im_end|>", ("x<|im_end|>", "")),
    ("[1] ref", ("[1] ref", "")),
    ("plain", ("plain", "")),
])
def test_hold_back_partial_token(chunk: str, expected: tuple[str, str]) -> None:
    assert hold_back_partial_token(chunk) == expected


def test_streamed_chunks_clean_to_the_same_text() -> None:
    chunks = ["Hel", "lo <|im", "_end|", ">"]
    emitted, pending = [], ""
    for chunk in chunks:
        safe, pending = hold_back_partial_token(pending + chunk)
        emitted.append(strip_special_tokens(safe))
    emitted.append(strip_special_tokens(pending))
    assert "".join(emitted) == "Hello "


@pytest.mark.parametrize("output", [
    "Translation: Hello world",
    "translation: Hello world",
    "English translation: Hello world",
    "Translated text: Hello world",
    "Here is the translation: Hello world",
    "Here's the English translation of the text:\nHello world",
    "Sure, here's the translation: Hello world",
    "Sure! Here is the translation:\n\nHello world",
    "The translation is: Hello world",
    "译文：Hello world",
    "翻译：Hello world",
    "English: Hello world",
    "Output: Hello world",
    "**Translation:** Hello world",
    "**Translation**: Hello world",
    "Translation:\nHello world",
    "Sure, here's the translation:\n\n**English:** Hello world",
])
def test_leading_labels_are_removed(output: str) -> None:
    assert clean_translation(output, "你好世界") == "Hello world"


@pytest.mark.parametrize(("output", "source"), [
    ("Output: 5 volts", "输出：5伏"),
    ("Translation: the art of", "翻译：艺术"),
    ("English: a global language", "英语：一种全球语言"),
])
def test_label_kept_when_it_translates_the_sources_own_label(output: str, source: str) -> None:
    assert clean_translation(output, source) == output


def test_label_dropped_when_a_second_label_follows() -> None:
    assert clean_translation("Translation: Output: 5 volts", "输出：5伏") == "Output: 5 volts"


@pytest.mark.parametrize("output", [
    '"Hello world"', "“Hello world”", "'Hello world'", "‘Hello world’",
    "「Hello world」", "`Hello world`", "```\nHello world\n```", "```text\nHello world\n```",
    "```Hello world```", 'Translation: "Hello world"',
])
def test_wrapping_quotes_removed_when_source_unquoted(output: str) -> None:
    assert clean_translation(output, "你好世界") == "Hello world"


@pytest.mark.parametrize("source", ["“你好世界”", "「你好世界」", '"你好世界"', "‘你好’"])
def test_wrapping_quotes_kept_when_source_quoted(source: str) -> None:
    assert clean_translation('"Hello world"', source) == '"Hello world"'


@pytest.mark.parametrize(("output", "expected"), [
    ("'It's fine'", "It's fine"),
    ('"Yes" and "no"', '"Yes" and "no"'),
    ("'a' or 'b'", "'a' or 'b'"),
    ('"She said "hi""', '"She said "hi""'),
])
def test_quotes_only_unwrapped_when_they_wrap_everything(output: str, expected: str) -> None:
    assert clean_translation(output, "来源") == expected


@pytest.mark.parametrize("chatter", [
    "Note: I kept the formal tone.",
    "(Note: the idiom has no direct equivalent.)",
    "Explanation: 你好 means hello.",
    "This translation keeps the original meaning.",
    "I translated it literally.",
    "Please note that this is informal.",
    "注：这是直译。",
    "注意：这是直译。",
    "Alternatively, you could say \"Hi there\".",
    "**Note:** formal register.",
])
@pytest.mark.parametrize("separator", ["\n\n", "\n"])
def test_trailing_chatter_is_removed(chatter: str, separator: str) -> None:
    assert clean_translation(f"Hello world.{separator}{chatter}", "你好世界。") == "Hello world."


def test_multi_line_note_is_removed_entirely() -> None:
    output = "Hello world.\n\nNote: first line of the note\nsecond line of the note"
    assert clean_translation(output, "你好世界。") == "Hello world."


def test_note_kept_when_the_source_starts_with_one() -> None:
    assert clean_translation("Note: be careful.", "注意：小心。") == "Note: be careful."
    assert clean_translation("Note: keep dry", "Remarque : garder au sec") == "Note: keep dry"


def test_note_kept_when_the_source_has_a_matching_paragraph() -> None:
    output = "Mix the flour.\n\nNote: use cold water."
    assert clean_translation(output, "把面粉拌匀。\n\n注：用冷水。") == output


def test_only_extra_paragraphs_beyond_the_source_are_dropped() -> None:
    output = "Mix the flour.\n\nNote: use cold water.\n\nNote: I translated 注 as Note."
    source = "把面粉拌匀。\n\n注：用冷水。"
    assert clean_translation(output, source) == "Mix the flour.\n\nNote: use cold water."


@pytest.mark.parametrize(("output", "source", "expected"), [
    ("你好世界\nHello world", "你好世界", "Hello world"),
    ("你好世界\n\nHello world", "你好世界", "Hello world"),
    ("你好\n世界\nHello\nworld", "你好\n世界", "Hello\nworld"),
    ("你好世界\nTranslation: Hello world", "你好世界", "Hello world"),
    ("OK", "OK", "OK"),
])
def test_echoed_source_is_removed(output: str, source: str, expected: str) -> None:
    assert clean_translation(output, source) == expected


def test_internal_newlines_kept_and_edges_stripped() -> None:
    output = "\n  First line.\n\n  Second line.  \n"
    assert clean_translation(output, "第一行。\n\n第二行。") == "First line.\n\n  Second line."


@pytest.mark.parametrize("output", ["Translation:", '""', "<|im_end|>", "   "])
def test_never_returns_more_than_was_there(output: str) -> None:
    cleaned = clean_translation(output, "你好")
    assert cleaned == strip_special_tokens(output).strip()


def test_plain_translation_is_untouched() -> None:
    text = "The weather is nice today: sunny, warm, and calm."
    assert clean_translation(text, "今天天气很好：晴朗、温暖、平静。") == text


@pytest.mark.parametrize(("output", "source", "expected"), [
    ("Save.", "保存", "Save"),  # a button label gets no full stop the source did not have
    ("Delete %s.", "删除 %s", "Delete %s"),
    ("<b1>Save</b1>.", "<b1>保存</b1>", "<b1>Save</b1>"),
    ("保存。", "Save", "保存"),
    ("Save.", "保存。", "Save."),  # the source has one: kept
    ("Saved!", "已保存", "Saved!"),  # only a full stop is taken off
    ("Tools, etc.", "工具等", "Tools, etc."),  # an abbreviation keeps its point
    ("U.S.", "美国", "U.S."),
    ("Wait...", "等等", "Wait..."),
    ("This is A. This is B.", "这是A。这是B", "This is A. This is B."),  # more than one sentence: untouched
    ("Click “Save.”", "点击“保存”", "Click “Save.”"),
])
def test_final_full_stop_follows_the_source(output: str, source: str, expected: str) -> None:
    assert clean_translation(output, source) == expected
