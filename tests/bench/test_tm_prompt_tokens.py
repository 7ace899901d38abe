"""benchmarks/tm_prompt_tokens.py --mixed: each segment's own llama.cpp timings, averaged by kind."""

from __future__ import annotations

import threading

from mtserve.engines.base import Guidance
from tests.bench.helpers import benchmark_script


class TimedEngine:
    """Says, per thread as llama.cpp's engine does, what its last request computed: 50 prompt
    tokens with examples, 10 without."""

    def __init__(self) -> None:
        self._local = threading.local()
        self.requests = []
        self.warmed = []
        self.closed = False

    def translate(self, request):
        self.requests.append(request)
        self._local.timings = {"prompt_n": 50 if request.examples else 10, "cache_n": 200}

    def warm_slots(self, source, target, guidance):
        self.warmed.append((source, target, guidance))

    def last_timings(self):
        return getattr(self._local, "timings", None)

    def close(self):
        self.closed = True


def test_mixed_averages_each_kind_and_sends_every_segment_with_the_context(capsys):
    engine = TimedEngine()
    chosen = [("删除", (("删除文件", "Delete file"),)), ("保存", ()), ("打开", ()),
              ("新建", (("新建文件", "New file"),))]
    context = Guidance(context="UI strings")
    assert benchmark_script("tm_prompt_tokens").mixed(engine, chosen, context, clients=2, rounds=2) == 0
    assert engine.warmed == [("zh", "en", context)]  # every slot, untimed, before the first pass
    timed = engine.requests
    passes = [timed[i:i + 2] for i in range(0, 8, 2)]  # each round's two new strings with the memory, then without
    first, second = ["保存", "删除"], ["打开", "新建"]
    assert [sorted(r.text for r in p) for p in passes] == [first, first, second, second]
    assert [sum(1 for r in p if r.examples) for p in passes] == [1, 0, 1, 0]
    assert all(r.guidance == context for r in engine.requests) and engine.closed
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("4 dev strings in order, 2 with examples")
    rows = {line.split("prompt_n")[0].strip(): float(line.split("prompt_n")[1].split()[0]) for line in lines[1:4]}
    assert rows == {"with examples": 50.0, "without": 10.0, "all": 30.0}  # the passes with the memory
    assert lines[4].startswith("wall time, the same strings without the memory and with it, 2 rounds of new strings:")


def test_mixed_without_the_context_line_says_so_and_sends_none(capsys):
    engine = TimedEngine()
    chosen = [("删除", (("删除文件", "Delete file"),)), ("保存", ())]
    assert benchmark_script("tm_prompt_tokens").mixed(engine, chosen, Guidance(), clients=1) == 0
    assert len(engine.requests) == 4 and not any(r.guidance for r in engine.requests)  # 2 passes of 2
    assert engine.warmed == [("zh", "en", Guidance())]
    assert capsys.readouterr().out.splitlines()[0] == (
        "2 dev strings in order, 1 with examples, no context, 1 at a time; means per segment:")
