"""A sentence that runs over several subtitle cues is translated whole and shared out among its cues."""

from __future__ import annotations

import re

import pytest

from mtserve.documents import read_document
from mtserve.documents.formats.share import share_out

TIMING = re.compile(r"\d\d:\d\d:\d\d,\d{3} --> \d\d:\d\d:\d\d,\d{3}")


def srt(*cues: str, pause: int = 0) -> bytes:
    """Cues of one second each, ``pause`` seconds apart."""
    def at(seconds: int) -> str:
        return f"00:{seconds // 60:02d}:{seconds % 60:02d},000"

    return "\n".join(f"{n}\n{at(n * (1 + pause))} --> {at(n * (1 + pause) + 1)}\n{cue}\n"
                     for n, cue in enumerate(cues, 1)).encode()


def cue_texts(data: bytes) -> list[str]:
    blocks = data.decode().strip().split("\n\n")
    for number, block in enumerate(blocks, 1):
        lines = block.split("\n")
        assert lines[0] == str(number) and TIMING.fullmatch(lines[1]), block
    return ["\n".join(block.split("\n")[2:]) for block in blocks]


def test_a_sentence_over_two_cues_is_one_segment_and_comes_back_in_both():
    document = read_document("film.srt", srt("他赶到机场的时候，", "飞机已经起飞了。", "我们只好回家。"))
    assert document.segments == ["他赶到机场的时候，飞机已经起飞了。我们只好回家。"]
    out = document.render(["When he got to the airport, the plane had already taken off. We had to go home."],
                          "en")
    assert cue_texts(out.data) == ["When he got to the airport,", "the plane had already taken off.",
                                   "We had to go home."]


def test_after_a_pause_a_whole_sentence_starts_a_new_passage_and_a_run_on_one_does_not():
    assert read_document("a.srt", srt("我妹妹在学钢琴。", "已经学了五年了。", pause=2)).segments == \
        ["我妹妹在学钢琴。", "已经学了五年了。"]
    assert read_document("a.srt", srt("他赶到机场的时候，", "飞机已经起飞了。", pause=2)).segments == \
        ["他赶到机场的时候，飞机已经起飞了。"]
    assert read_document("a.srt", srt("我妹妹在学钢琴。", "已经学了五年了。", pause=1)).segments == \
        ["我妹妹在学钢琴。已经学了五年了。"]


@pytest.mark.parametrize("cues, segments", [
    # whole sentences without a pause: a passage, as speech runs on
    (("你好。", "你是谁？", "我是老师！"), ["你好。你是谁？我是老师！"]),
    # no punctuation at the end of a cue: the sentence goes on
    (("我昨天在商店里", "看到了你的老师。"), ["我昨天在商店里看到了你的老师。"]),
    # an ellipsis carries a sentence on, Latin text joins with a space
    (("I was going to tell you...", "but you left."), ["I was going to tell you... but you left."]),
    # an abbreviation's full stop does not end the sentence
    (("I met Dr.", "Smith today."), ["I met Dr. Smith today."]),
    # at most three cues go together
    (("一，", "二，", "三，", "四。"), ["一，二，三，", "四。"]),
    (("一。", "二。", "三。", "四。", "五。"), ["一。二。三。", "四。五。"]),
    # a cue with tags or speakers stays alone, and so does what follows it
    (("<i>他说，</i>", "明天见。"), ["他说，", "明天见。"]),
    (("你好，", "- 你是谁？\n- 我是老师。"), ["你好，", "你是谁？", "我是老师。"]),
])
def test_which_cues_go_together(cues, segments):
    assert read_document("a.srt", srt(*cues)).segments == segments


def test_a_passage_is_bounded_in_characters():
    long = "这是一句很长很长的字幕" * 7 + "，"
    document = read_document("a.srt", srt(long, long, long, "完。"))
    assert all(len(segment) <= 200 for segment in document.segments)
    assert document.segments == [long + long, long + "完。"]


def test_vtt_cues_run_on_too_and_keep_their_settings():
    vtt = ("WEBVTT\n\n00:01.000 --> 00:02.000 align:start\n如果明天下雨，\n\n"
           "00:02.000 --> 00:03.000\n我们就不去了。\n").encode()
    document = read_document("a.vtt", vtt)
    assert document.segments == ["如果明天下雨，我们就不去了。"]
    assert [(cue.start_s, cue.end_s) for cue in document.cues] == [(1.0, 2.0), (2.0, 3.0)]
    text = document.render(["If it rains tomorrow, we will not go."], "en").data.decode()
    assert "00:01.000 --> 00:02.000 align:start\nIf it rains tomorrow,\n" in text
    assert "00:02.000 --> 00:03.000\nwe will not go." in text


@pytest.mark.parametrize("translation, sources, pieces", [
    # at the clause mark the source cue ends with
    ("When he got to the airport, the plane had taken off.", ["他赶到机场的时候，", "飞机已经起飞了。"],
     ["When he got to the airport,", "the plane had taken off."]),
    # at the sentence end, though the proportion points elsewhere
    ("My sister is learning piano. She has been learning it for five years now.",
     ["我妹妹在学钢琴。", "已经学了五年了。"],
     ["My sister is learning piano.", "She has been learning it for five years now."]),
    # no pause in the translation: the word nearest the source's proportion
    ("I saw your teacher in the shop yesterday", ["我昨天在商店里", "看到了你的老师"],
     ["I saw your teacher", "in the shop yesterday"]),
    # before a conjunction or a relative word, as subtitle style guides break English lines
    ("I saw the man who sold me the car.", ["我看见了", "卖给我车的那个人。"],
     ["I saw the man", "who sold me the car."]),
    # a comma before a conjunction
    ("In the year two thousand and one, Beijing hosted the Games.", ["公元两千年以后，", "北京举办过运动会。"],
     ["In the year two thousand and one,", "Beijing hosted the Games."]),
    # into Chinese: between characters, after the comma
    ("我到机场的时候，飞机已经起飞了。", ["When I got to the airport,", "the plane had left."],
     ["我到机场的时候，", "飞机已经起飞了。"]),
    # three cues
    ("If it rains tomorrow, we will stay at home, and we will watch a film.",
     ["如果明天下雨，", "我们就待在家里，", "看一部电影。"],
     ["If it rains tomorrow,", "we will stay at home,", "and we will watch a film."]),
])
def test_share_out_cuts_where_the_translation_pauses(translation, sources, pieces):
    assert share_out(translation, sources) == pieces


def test_share_out_gives_every_cue_text():
    assert share_out("Yes.", ["是的，", "没错。"]) == ["Yes.", "…"]
    assert share_out("", ["是的，", "没错。"]) == ["", ""]  # nothing came back: each cue keeps its source
    pieces = share_out("One two three four five", ["一", "二", "三", "四", "五"])
    assert pieces == ["One", "two", "three", "four", "five"]
    assert share_out("  spaced   out  text ", ["甲"]) == ["spaced out text"]
