"""A plain-text paragraph hard-wrapped over several lines is translated as one text and shared out
among the same lines; every other line is translated on its own, as before."""

from __future__ import annotations

import pytest

from mtserve.documents import read_document

WRAPPED_ZH = ("我们昨天下午去了城外的一个小公园，那里的风景非常漂亮，\n"
              "湖边有很多人在散步。后来下雨了，我们只好回家。\n")
WRAPPED_EN = ("The quick brown fox jumped over the lazy dog and then it ran\n"
              "away into the forest, where nobody could find it again.\n")


def test_a_wrapped_paragraph_is_one_segment_and_fills_the_same_lines():
    text = "第一章\n\n" + WRAPPED_ZH + "- 第一项内容\n- 第二项内容\n"
    document = read_document("story.txt", text.encode())
    assert document.segments == ["第一章", WRAPPED_ZH.replace("\n", ""), "- 第一项内容", "- 第二项内容"]
    english = ("Yesterday afternoon we went to a small park outside the city. The scenery was beautiful, "
               "and many people were walking by the lake. Later it rained, so we had to go home.")
    out = document.render(["Chapter One", english, "- Item one", "- Item two"], "en").data.decode()
    lines = out.split("\n")
    assert lines[:2] == ["Chapter One", ""] and lines[4:] == ["- Item one", "- Item two", ""]
    assert lines[2].endswith("beautiful,") and lines[3].startswith("and many people")
    assert " ".join(lines[2:4]) == english


def test_latin_text_wraps_into_a_cjk_target_and_keeps_its_indent_and_line_endings():
    text = "    " + WRAPPED_EN.replace("\n", "\r\n", 1)
    document = read_document("fox.txt", text.encode())
    assert document.segments == ["The quick brown fox jumped over the lazy dog and then it ran away into the "
                                 "forest, where nobody could find it again."]
    out = document.render(["敏捷的棕色狐狸跳过了懒狗，然后跑进了森林，在那里再也没有人能找到它。"], "zh").data.decode()
    first, second = out.split("\r\n")[0], out.split("\r\n")[1].split("\n")[0]
    assert first.startswith("    ") and first.strip() and second.strip()
    assert first.strip() + second.strip() == "敏捷的棕色狐狸跳过了懒狗，然后跑进了森林，在那里再也没有人能找到它。"


@pytest.mark.parametrize("text", [
    # short lines: verse, a list without markers, an address
    "床前明月光，\n疑是地上霜。\n",
    "苹果\n香蕉\n橙子\n",
    # a line that ends its sentence: the next starts a new one
    "这是第一句话，它写得很长很长很长很长很长很长很长。\n这是第二句话，也写得很长很长很长很长很长。\n",
    # a list item, a heading or a quote next
    "下面这些步骤都必须按照顺序完成，否则安装会失败，比如\n1. 下载安装包\n",
    "下面这些步骤都必须按照顺序完成，否则安装会失败，比如\n# 第一步\n",
    # deeper indentation next: code or a quote
    "运行下面的命令之前请先确认你已经安装好了所有的依赖\n    pip install mtserve\n",
])
def test_lines_that_are_not_a_wrapped_paragraph_stay_alone(text):
    document = read_document("a.txt", text.encode())
    assert document.segments == [line.strip() for line in text.split("\n") if line.strip()]


def test_a_number_that_opens_a_wrapped_line_is_no_list_item():
    text = ("The census of that year counted the people of the city and found\n"
            "2.5 million of them, twice as many as ten years before.\n")
    assert len(read_document("census.txt", text.encode()).segments) == 1


def test_a_wrapped_paragraph_is_bounded():
    line = "这是一段非常长的文字，它被编辑器在页边折行，" * 2  # 44 characters, ends mid-sentence
    document = read_document("long.txt", ((line + "\n") * 200).encode())
    assert all(len(segment) <= 2000 for segment in document.segments)
    assert 4 <= len(document.segments) <= 6
    rendered = document.render(["word " * 400] * len(document.segments), "en").data.decode()
    assert len(rendered.split("\n")) == 201 and all(row.strip() for row in rendered.split("\n")[:200])
