"""Translation-tool batches: separator lines recognised, ordinary multi-line text left alone."""

from __future__ import annotations

import pytest

from mtserve.text.batch import split_batch


@pytest.mark.parametrize("text, separators, blocks", [
    ("你好\n==PART==\n再见", ["==PART==\n"], ["你好\n", "再见"]),
    ("一\n---\n二\n---\n三\n", ["---\n", "---\n"], ["一\n", "二\n", "三\n"]),
    ("### 1 ###\n一\n### 2 ###\n二", ["### 1 ###\n", "### 2 ###\n"], ["", "一\n", "二"]),
    ("甲\r\n<<<SEP>>>\r\n乙", ["<<<SEP>>>\r\n"], ["甲\r\n", "乙"]),
    ("第一段\n第二行\n\n[[1]]\n第二段", ["[[1]]\n"], ["第一段\n第二行\n\n", "第二段"]),
    ("a\n--- PART 2 ---\nb", ["--- PART 2 ---\n"], ["a\n", "b"]),
    ("x\n**Note**\ny\n**Note**\nz", ["**Note**\n", "**Note**\n"], ["x\n", "y\n", "z"]),  # twice: a separator
])
def test_separator_lines_are_found_and_the_text_comes_back_whole(text, separators, blocks):
    batch = split_batch(text)
    assert batch is not None
    assert batch.separators == separators and batch.blocks == blocks
    assert "".join(batch.parts) == text
    assert batch.join([b.upper() for b in batch.blocks]) == "".join(
        part if i % 2 else part.upper() for i, part in enumerate(batch.parts))


@pytest.mark.parametrize("text", [
    "第一行\n第二行",  # plain multi-line text
    "请注意：\n**Note** 这是重要的。",  # emphasis inside a line of text
    "**Note**\n注意这个",  # one emphasised line: more likely text than a separator
    "**WARNING**\n不要删除。",
    "## Intro ##\n介绍\n## Usage ##\n用法",  # headings: each its own shape
    "# Title\n\n---\n\n**Note**\n\nText",  # two shapes
    "==part==\n小写的一次",  # a lowercase name, once
    "```\n==PART==\n```",  # a code block
    "C++ 和 C#\n-- Bob",  # symbols beside words are not separators
    "……\n他走了。",  # CJK punctuation is text
    "没有换行 ==PART== 的文本",
    "==PART==",  # no text around it
])
def test_ordinary_text_is_no_batch(text):
    assert split_batch(text) is None
