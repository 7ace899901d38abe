"""`mtserve eval` end to end on test doubles: scoring, the report, both targets, the CLI."""

from __future__ import annotations

import asyncio
import json
from dataclasses import replace

import pytest

from mtserve.eval.datasets import EvalSet
from mtserve.eval.runner import evaluate, score
from mtserve.eval.scoring import Scorer, bleu_tokenizer
from mtserve.eval.targets import HttpTarget, InProcessTarget
from mtserve.settings import Settings
from tests.eval.helpers import PAIRS, mtserve
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve

ANSWERS = {"我喜欢猫。": "I like cats.", "今天很冷。": "It is cold today.", "他在看书。": "He reads.",
           "我们明天去北京。": "We are going to Beijing tomorrow.", "这个问题很难。": "Cats are cute."}


def answer(request):
    return ANSWERS.get(request.text)


def evalset() -> EvalSet:
    return EvalSet("five", "zh", "en", list(PAIRS), "all", "test data")


def test_tokenizer_follows_the_target():
    assert [bleu_tokenizer(t) for t in ("en", "de", "zh", "zt", "ja")] == ["13a", "13a", "zh", "zh", "char"]
    assert "tok:13a" in Scorer("en").signatures().bleu and "tok:zh" in Scorer("zh").signatures().bleu
    assert Scorer("en").corpus(["I like cats."], ["I like cats."]).bleu == 100.0
    assert "nc:6" in Scorer("en").signatures().chrf


def test_report_has_groups_worst_sentences_json_and_markdown():
    hyps = [ANSWERS[p.source] for p in PAIRS]
    report = score(evalset(), hyps, {"kind": "test"}, elapsed_s=2.0, worst=2)
    assert report.n == 5 and 0 < report.bleu < 100 and 0 < report.chrf < 100
    assert [g.group for g in report.groups] == ["hsk1", "hsk2"] and report.groups[0].bleu == 100.0
    assert [s.id for s in report.worst] == ["e", "c"]  # lowest chrF first
    data = json.loads(report.to_json())
    assert data["signatures"]["bleu"].startswith("nrefs:1|case:mixed|eff:no|tok:13a")
    assert len(data["sentences"]) == 5 and data["dataset"]["attribution"] == "test data"
    md = report.to_markdown()
    assert "| hsk2 | 3 |" in md and "worst sentences by chrF" in md and "tok:13a" in md
    assert "Cats are cute." in md
    assert "BLEU" in report.summary() and "chrF2|" in report.summary()


def test_in_process_target_scores_and_reports_what_the_guardrails_changed(tmp_path):
    def script(request):
        if request.text == "他在看书。":  # left in Chinese first; the strict retry fixes it
            return "He is reading a book." if request.strict else "He is 看书."
        return answer(request)

    target = InProcessTarget(Settings(home=tmp_path), engine=ScriptedEngine(script))
    report = asyncio.run(evaluate(evalset(), target, worst=3))
    assert report.system["kind"] == "in-process" and report.system["model"] == "fake-model"
    assert report.steps["retried"] == 1
    assert report.steps["unguarded"]["chrf"] < report.chrf
    assert report.counters == {"mtserve_guardrail_retries_total{reason=untranslated}": 1.0}
    assert report.failures == 0


def test_http_target_against_a_running_server(tmp_path):
    with serve(ScriptedEngine(answer), home=tmp_path) as url:
        report = asyncio.run(evaluate(evalset(), HttpTarget(url)))
    assert report.system == {"kind": "http", "url": url, "model": "fake-model", "engine": "fake"}
    assert report.n == 5 and report.groups[0].bleu == 100.0


def test_an_unreachable_server_is_a_clear_error():
    from mtserve.eval.targets import TargetError

    with pytest.raises(TargetError, match="is `mtserve serve` running"):
        asyncio.run(evaluate(evalset(), HttpTarget("http://127.0.0.1:9")))


def test_cli_against_a_server_writes_json_and_markdown(tmp_path):
    pairs = tmp_path / "five.tsv"
    pairs.write_text("".join(f"{p.source}\t{p.reference}\t{p.group}\n" for p in PAIRS), encoding="utf-8")
    with serve(ScriptedEngine(answer), home=tmp_path) as url:
        result = mtserve("eval", str(pairs), "--url", url, "--json", str(tmp_path / "r.json"),
                         "--markdown", str(tmp_path / "r.md"), "--quiet", "--min-chrf", "99")
    assert result.returncode == 1, result.stderr  # below the floor
    assert "below the floor: chrF" in result.stderr
    assert "BLEU|nrefs:1|case:mixed|eff:no|tok:13a" in result.stdout
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["n"] == 5 and data["source"] == "zh" and data["target"] == "en"
    assert (tmp_path / "r.md").read_text().startswith("# mtserve eval: five.tsv zh→en (all)")


def test_cli_errors_are_one_clear_line(tmp_path):
    result = mtserve("eval", str(tmp_path / "missing.tsv"), "--url", "http://127.0.0.1:9")
    assert result.returncode == 2 and "no such file" in result.stderr and "Traceback" not in result.stderr
    result = mtserve("eval", "--dataset", "hsk", "--source", "ja", "--url", "http://127.0.0.1:9")
    assert result.returncode == 2 and "no ja->en direction" in result.stderr


def test_in_process_target_warms_every_slot_before_the_timed_run(tmp_path):
    """The engine's slots get the set's fixed prompt, with its context, before the first sentence, and
    the warm-up's one-token outputs are no sentence's."""
    class SlottedEngine(ScriptedEngine):
        warmed: list = []

        def warm_slots(self, source, target, guidance):
            self.warmed.append((source, target, guidance.context))

    engine = SlottedEngine(answer)
    target = InProcessTarget(Settings(home=tmp_path), engine=engine)
    pairs = [replace(p, context="UI strings") for p in PAIRS]
    report = asyncio.run(evaluate(EvalSet("five", "zh", "en", pairs, "all"), target))
    assert engine.warmed == [("zh", "en", "UI strings")]
    assert [s.hypothesis for s in report.sentences] == [ANSWERS[p.source] for p in PAIRS]
    asyncio.run(InProcessTarget(Settings(home=tmp_path), engine=engine).warm("auto", "en"))
    assert len(engine.warmed) == 1  # nothing to warm for a language not known yet


def test_a_warm_up_that_fails_leaves_the_run_to_say_the_rest(tmp_path):
    from mtserve.engines.base import EngineError

    class FailingWarmUp(ScriptedEngine):
        def warm_slots(self, source, target, guidance):
            raise EngineError("llama.cpp rejected the request")

    report = asyncio.run(evaluate(evalset(), InProcessTarget(Settings(home=tmp_path), engine=FailingWarmUp(answer))))
    assert [s.hypothesis for s in report.sentences] == [ANSWERS[p.source] for p in PAIRS]


def test_the_report_counts_outputs_that_lost_part_of_their_source():
    """他在看书 -> "He reads." has no book (书) by the dictionary; 这个问题很难 -> "Cats are cute." has
    neither 问题 nor 很难: both count, as an upper bound; a translation that keeps its words does not."""
    hyps = [ANSWERS[p.source] for p in PAIRS]
    report = score(evalset(), hyps, {"kind": "test"}, elapsed_s=2.0)
    assert report.dropped["n"] == 5 and report.dropped["check"] == []
    assert set(report.dropped["dictionary"]) >= {"e"} and "a" not in report.dropped["dictionary"]
    assert "dropped content:" in report.summary()
    numbers = EvalSet("n", "zh", "en", [replace(PAIRS[0], source="我有3只猫。")], "all", "")
    assert score(numbers, ["I have cats."], {"kind": "test"}, elapsed_s=1.0).dropped["check"] == [PAIRS[0].id]
