"""`mtserve eval --as-subtitles` and `--as-wrapped-text`: each pair goes through the file path as the cues
of an .srt or the lines of a wrapped .txt."""

from __future__ import annotations

import asyncio

import pytest

from mtserve.documents.formats.registry import SUBTITLES
from mtserve.eval.as_files import FileTarget, as_srt, cue_texts, cues_of, join_cues, wrap_lines
from mtserve.eval.datasets import EvalPair, EvalSet
from mtserve.eval.runner import evaluate
from mtserve.eval.targets import HttpTarget, InProcessTarget, TargetError
from mtserve.settings import Settings
from tests.eval.helpers import mtserve
from tests.quality.helpers import ScriptedEngine

OUTPUTS = {
    "他赶到机场的时候，飞机已经起飞了。": "When he got to the airport, the plane had taken off.",
    "我妹妹在学钢琴。已经学了五年了。": "My sister is learning the piano. She has been learning for five years.",
}


def test_a_source_is_cut_where_a_subtitler_cuts_speech():
    assert cues_of("我妹妹在学钢琴。已经学了五年了。", "zh") == ["我妹妹在学钢琴。", "已经学了五年了。"]
    assert cues_of("他赶到机场的时候，飞机已经起飞了。", "zh") == ["他赶到机场的时候，", "飞机已经起飞了。"]
    assert cues_of("点击“确定？”按钮继续。", "zh") == ["点击“确定？”按钮继续。"]
    assert cues_of("When he arrived, the plane had left. We went home.", "en") == \
        ["When he arrived,", "the plane had left.", "We went home."]
    assert cues_of("At 10:30 we paid 1,000 yuan.", "en") == ["At 10:30 we paid 1,000 yuan."]


def test_the_srt_reads_back_cue_by_cue_past_a_minute():
    cues = [f"第{n}句。" for n in range(40)]
    data = as_srt(cues)
    assert cue_texts(data) == cues
    assert b"00:01:18,000 --> 00:01:20,000" in data
    assert join_cues(["He left.", "", "She stayed."], "en") == "He left. She stayed."
    assert join_cues(["他走了。", "她留下了。"], "zh") == "他走了。她留下了。"


def test_pairs_go_through_the_file_path_and_are_scored_joined(tmp_path):
    requests = []

    def script(request):
        requests.append((request.text, request.guidance.context))
        return OUTPUTS.get(request.text)

    pairs = [EvalPair(str(n), source, reference) for n, (source, reference) in enumerate(OUTPUTS.items())]
    target = FileTarget(InProcessTarget(Settings(home=tmp_path), engine=ScriptedEngine(script)))
    report = asyncio.run(evaluate(EvalSet("s", "zh", "en", pairs), target))
    assert report.chrf == 100.0
    # each pair's cues went to the engine as one passage, with the subtitle format's context
    assert sorted(text for text, _ in requests) == sorted(OUTPUTS)
    assert {context for _, context in requests} == {SUBTITLES}
    assert report.system["as"] == "subtitles (4 cues for 2 pairs)"


def test_it_refuses_a_server_with_a_clear_message(tmp_path):
    with pytest.raises(TargetError, match="in process only"):
        FileTarget(HttpTarget("http://127.0.0.1:9"))
    result = mtserve("eval", "--dataset", "prose", "--as-subtitles", "--url", "http://127.0.0.1:9", "--limit", "1")
    assert result.returncode == 2 and "in process only" in result.stderr
    # an empty home, whose store has no model: the arguments are checked before a model is looked for
    result = mtserve("eval", "--dataset", "prose", "--as-wrapped-text", "4", "--limit", "1", "--home", str(tmp_path))
    assert result.returncode == 2 and "at least 10 columns" in result.stderr


def test_a_source_is_wrapped_as_an_editor_wraps_it():
    assert wrap_lines("我们昨天下午去了城外的一个小公园，那里的风景非常漂亮。", 20) == \
        ["我们昨天下午去了城外", "的一个小公园，那里的", "风景非常漂亮。"]
    assert wrap_lines("我们昨天下午去了城外的一个小公园。", 18) == ["我们昨天下午去了城", "外的一个小公园。"]
    assert wrap_lines("The quick brown fox jumped over the lazy dog.", 20) == \
        ["The quick brown fox", "jumped over the lazy", "dog."]
    assert wrap_lines("短句。", 40) == ["短句。"]


def test_a_wrapped_paragraph_reaches_the_engine_whole(tmp_path):
    paragraph = "我们昨天下午去了城外的一个小公园，那里的风景非常漂亮，湖边有很多人在散步。"
    english = "Yesterday afternoon we went to a small park outside the city; the scenery was beautiful there."
    requests = []

    def script(request):
        requests.append(request.text)
        return english if request.text == paragraph else None

    target = FileTarget(InProcessTarget(Settings(home=tmp_path), engine=ScriptedEngine(script)), "txt", 40)
    report = asyncio.run(evaluate(EvalSet("w", "zh", "en", [EvalPair("1", paragraph, english)]), target))
    assert requests == [paragraph] and report.chrf == 100.0
    assert report.system["as"] == "text wrapped at 40 columns (2 lines for 1 pairs)"
