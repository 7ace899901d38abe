"""`mtserve eval` with a context per pair: read from TSV and JSONL, sent as the request's context by both
targets (or left out with --no-context), and the right reading counted by each pair's ``expect`` pattern."""

from __future__ import annotations

import asyncio
import json

import pytest

from mtserve.eval.datasets import DatasetError, EvalPair, EvalSet, load_builtin, read_pairs
from mtserve.eval.runner import evaluate
from mtserve.eval.targets import HttpTarget, InProcessTarget
from mtserve.settings import Settings
from tests.eval.helpers import mtserve
from tests.quality.helpers import ScriptedEngine
from tests.servers import serve

PAIRS = [EvalPair("git", "提交", "Commit", "ui", "Git 客户端里的按钮", r"\bcommit"),
         EvalPair("form", "提交", "Submit", "ui", "网页表单的按钮", r"\bsubmit")]


def by_context(request) -> str:
    """Commit for a Git button, Submit otherwise: a model that reads the context."""
    return "Commit" if "Git" in request.guidance.context else "Submit"


def test_tsv_with_a_header_and_jsonl_carry_context_and_expect(tmp_path):
    tsv = tmp_path / "pairs.tsv"
    tsv.write_text("id\tcontext\tsource\treference\texpect\ngit\tGit 客户端里的按钮\t提交\tCommit\t\\bcommit\n"
                   "plain\t\t你好\tHello\t\n", encoding="utf-8")
    assert read_pairs(tsv) == [EvalPair("git", "提交", "Commit", "", "Git 客户端里的按钮", r"\bcommit"),
                               EvalPair("plain", "你好", "Hello")]
    jsonl = tmp_path / "pairs.jsonl"
    jsonl.write_text(json.dumps({"source": "提交", "reference": "Submit", "context": "网页表单的按钮",
                                 "expect": "submit"}, ensure_ascii=False) + "\n", encoding="utf-8")
    assert read_pairs(jsonl) == [EvalPair("1", "提交", "Submit", "", "网页表单的按钮", "submit")]
    jsonl.write_text('{"source": "a", "reference": "b", "expect": "("}\n')
    with pytest.raises(DatasetError, match="not a regular expression"):
        read_pairs(jsonl)
    old = tmp_path / "old.tsv"  # the old shape still reads: source, reference, group
    old.write_text("我喜欢猫。\tI like cats.\thsk1\n", encoding="utf-8")
    assert read_pairs(old) == [EvalPair("1", "我喜欢猫。", "I like cats.", "hsk1")]


def test_the_built_in_context_set_reads_and_its_patterns_fit_their_references():
    import re

    evalset = load_builtin("context", "zh", "en", "all")
    assert len(evalset.pairs) >= 20 and all(p.context and p.expect for p in evalset.pairs)
    assert all(re.search(p.expect, p.reference, re.IGNORECASE) for p in evalset.pairs)
    sources = [p.source for p in evalset.pairs]
    assert sum(sources.count(s) == 2 for s in set(sources)) >= 10  # most sentences with two readings


def test_the_in_process_target_sends_the_context_and_counts_the_right_readings(tmp_path):
    evalset = EvalSet("ui", "zh", "en", list(PAIRS))
    target = InProcessTarget(Settings(home=tmp_path), engine=ScriptedEngine(by_context))
    report = asyncio.run(evaluate(evalset, target))
    assert report.expected == {"n": 2, "matched": 2, "missed": []} and report.chrf == 100.0
    assert "right reading 2/2" in report.summary() and "right reading (the `expect` pattern): 2 of 2" in \
        report.to_markdown()


def test_the_http_target_and_the_cli_with_and_without_context(tmp_path):
    pairs = tmp_path / "ui.jsonl"
    pairs.write_text("".join(json.dumps(p.__dict__, ensure_ascii=False) + "\n" for p in PAIRS), encoding="utf-8")
    with serve(ScriptedEngine(by_context), home=tmp_path) as url:
        report = asyncio.run(evaluate(EvalSet("ui", "zh", "en", list(PAIRS)), HttpTarget(url)))
        with_context = mtserve("eval", str(pairs), "--url", url, "--quiet")
        without = mtserve("eval", str(pairs), "--url", url, "--quiet", "--no-context",
                          "--json", str(tmp_path / "r.json"))
    assert report.expected["matched"] == 2
    assert "right reading 2/2" in with_context.stdout, with_context.stderr
    assert "right reading 1/2" in without.stdout, without.stderr  # Submit both times: the Git button missed
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["expected"]["missed"] == ["git"] and "contexts left out (--no-context)" in data["dataset"]["notes"]


def test_a_context_for_every_pair_without_one_reaches_each_request(tmp_path):
    pairs = tmp_path / "ui.tsv"
    pairs.write_text("id\tcontext\tsource\treference\nown\t网页表单的按钮\t提交\tSubmit\nbare\t\t提交\tCommit\n",
                     encoding="utf-8")
    with serve(ScriptedEngine(lambda request: request.guidance.context or "none"), home=tmp_path) as url:
        run = mtserve("eval", str(pairs), "--url", url, "--quiet", "--context", "Git 客户端里的按钮",
                      "--json", str(tmp_path / "r.json"))
    assert run.returncode == 0, run.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    outputs = {s["id"]: s["hypothesis"] for s in data["sentences"]}
    assert outputs == {"own": "网页表单的按钮", "bare": "Git 客户端里的按钮"}  # a pair's own context wins
    assert "context for every pair without one: 'Git 客户端里的按钮'" in data["dataset"]["notes"]
