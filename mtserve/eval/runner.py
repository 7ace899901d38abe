"""Run an evaluation: translate every pair through a target, score, and build the report."""

from __future__ import annotations

import asyncio
import re
import time
from datetime import datetime, timezone
from typing import Callable

from mtserve import __version__
from mtserve.eval.datasets import EvalPair, EvalSet
from mtserve.eval.report import EvalReport, GroupScore, SentenceResult
from mtserve.eval.scoring import Scorer
from mtserve.eval.targets import EvalTarget, MemoryUse

Progress = Callable[[int, int], None]
RETRY_WAIT_S = 5.0


class EvalFailed(RuntimeError):
    """Too many sentences failed to translate for the scores to mean anything."""


async def translate_all(evalset: EvalSet, target: EvalTarget, progress: Progress | None = None) -> list[str]:
    """Outputs in the set's order, ``target.concurrency`` sentences in flight."""
    gate = asyncio.Semaphore(target.concurrency)
    done = 0

    failures: list[str] = []

    async def one(pair: EvalPair) -> str:
        nonlocal done
        # a pair's context goes with it as the request's context (a target without any keeps the old call)
        extra = {"context": pair.context} if pair.context else {}
        async with gate:
            try:
                output = await target.translate(pair.source, evalset.source_lang, evalset.target_lang, **extra)
            except Exception as first:  # a busy machine, a restart: one more try, then count it
                await asyncio.sleep(RETRY_WAIT_S)
                try:
                    output = await target.translate(pair.source, evalset.source_lang, evalset.target_lang,
                                                    **extra)
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc or first}")
                    output = ""
        done += 1
        if progress is not None:
            progress(done, len(evalset.pairs))
        return output

    outputs = list(await asyncio.gather(*(one(p) for p in evalset.pairs)))
    if len(failures) > max(1, len(outputs) // 20):
        raise EvalFailed(f"{len(failures)} of {len(outputs)} sentences failed; the first: {failures[0]}")
    translate_all.failures = len(failures)  # type: ignore[attr-defined]
    return outputs


def score(evalset: EvalSet, hypotheses: list[str], system: dict, elapsed_s: float,
          worst: int = 10, counters: dict[str, float] | None = None,
          variants: list[dict[str, str]] | None = None, failures: int = 0,
          memory: list[MemoryUse | None] | None = None) -> EvalReport:
    scorer = Scorer(evalset.target_lang)
    references = [p.reference for p in evalset.pairs]
    overall = scorer.corpus(hypotheses, references)
    uses = memory if memory and "tm" in system and all(memory) else [None] * len(hypotheses)
    sentences = [
        SentenceResult(p.id, p.group, p.source, p.reference, h,
                       scorer.sentence_chrf(h, p.reference), scorer.sentence_bleu(h, p.reference),
                       "" if use is None else "exact" if use.exact else "examples" if use.examples else "")
        for p, h, use in zip(evalset.pairs, hypotheses, uses)
    ]
    groups = []
    for name in sorted({p.group for p in evalset.pairs if p.group}):
        idx = [i for i, p in enumerate(evalset.pairs) if p.group == name]
        g = scorer.corpus([hypotheses[i] for i in idx], [references[i] for i in idx])
        groups.append(GroupScore(name, g.n, g.bleu, g.chrf))
    steps = {}
    if variants and all(v for v in variants):
        # the same outputs without the guardrails' retry, and without any cleanup either
        for name in ("unguarded", "raw"):
            s = scorer.corpus([v[name] for v in variants], references)
            steps[name] = {"bleu": s.bleu, "chrf": s.chrf}
        steps["retried"] = sum(v["retried"] == "True" for v in variants)
    signatures = scorer.signatures()
    kinds = [_not_a_translation(p.source, h, evalset) for p, h in zip(evalset.pairs, hypotheses)]
    not_translations = [p.id for p, kind in zip(evalset.pairs, kinds) if kind]
    by_kind = {kind: kinds.count(kind) for kind in NOT_A_TRANSLATION if kind in kinds}
    dropped = _dropped_content(evalset, hypotheses)
    expected = [(p, h) for p, h in zip(evalset.pairs, hypotheses) if p.expect]
    matched = {"n": len(expected), "matched": sum(bool(re.search(p.expect, h, re.IGNORECASE)) for p, h in expected),
               "missed": [p.id for p, h in expected if not re.search(p.expect, h, re.IGNORECASE)]} if expected else {}
    return EvalReport(
        dataset=evalset.describe(), system=system, source=evalset.source_lang, target=evalset.target_lang,
        n=overall.n, bleu=overall.bleu, chrf=overall.chrf, tokenizer=scorer.tokenizer,
        signatures={"bleu": signatures.bleu, "chrf": signatures.chrf}, groups=groups,
        worst=sorted(sentences, key=lambda s: (s.chrf, s.id))[:worst],
        elapsed_s=round(elapsed_s, 2), sentences_per_s=round(len(hypotheses) / elapsed_s, 3) if elapsed_s else 0.0,
        created=datetime.now(timezone.utc).isoformat(timespec="seconds"), mtserve_version=__version__,
        counters=counters or {}, sentences=sentences, steps=steps, failures=failures,
        not_translations=not_translations, not_translation_kinds=by_kind,
        memory=_memory_summary(scorer, sentences, memory) if "tm" in system else {},
        expected=matched, dropped=dropped,
    )


def _memory_summary(scorer: Scorer, sentences: list[SentenceResult], memory: list[MemoryUse | None] | None) -> dict:
    """Segments served exactly by the TM or sent with its examples, and the scores of the sentences that
    got examples and of those that did not; {} where the target cannot tell."""
    if not memory or any(use is None for use in memory):
        return {}
    summary: dict = {
        "segments": sum(use.segments for use in memory),
        "exact_segments": sum(use.exact for use in memory),
        "example_segments": sum(use.examples for use in memory),
        "sentences_exact": sum(use.exact > 0 for use in memory),
        "sentences_with_examples": sum(use.examples > 0 for use in memory),
    }
    for name, chosen in (("with_examples", [s for s, use in zip(sentences, memory) if use.examples]),
                         ("without_examples", [s for s, use in zip(sentences, memory) if not use.examples])):
        if chosen:
            scored = scorer.corpus([s.hypothesis for s in chosen], [s.reference for s in chosen])
            summary[name] = {"n": scored.n, "bleu": scored.bleu, "chrf": scored.chrf}
    return summary


def _dropped_content(evalset: EvalSet, hypotheses: list[str]) -> dict:
    """How many outputs lack part of their source: by the guardrails' content check (a number, or
    a word in Latin letters of a CJK source, missing), and, Chinese into English, by the dictionary
    (a content word of the source no word of the output translates by CC-CEDICT: an upper bound,
    since a good paraphrase counts too). {"n", "check": [ids], "dictionary": [ids]}."""
    from mtserve.service.guardrails import check
    from mtserve.text import dictionary

    by_check = []
    by_dictionary = []
    for pair, output in zip(evalset.pairs, hypotheses):
        problem = check(pair.source, output, evalset.source_lang, evalset.target_lang)
        if problem is not None and problem.kind == "content":
            by_check.append(pair.id)
        if evalset.source_lang in ("zh", "zt") and evalset.target_lang == "en" and output.strip() \
                and dictionary.without_counterpart(pair.source, output):
            by_dictionary.append(pair.id)
    return {"n": len(hypotheses), "check": by_check, "dictionary": by_dictionary}


NOT_A_TRANSLATION = ("answer", "refusal", "explanation")


def _not_a_translation(source: str, output: str, evalset: EvalSet) -> str | None:
    """The guardrails' name for an output that answers, refuses or comments instead of translating."""
    from mtserve.service.guardrails import check

    problem = check(source, output, evalset.source_lang, evalset.target_lang)
    return problem.kind if problem is not None and problem.kind in NOT_A_TRANSLATION else None


async def evaluate(evalset: EvalSet, target: EvalTarget, worst: int = 10,
                   progress: Progress | None = None) -> EvalReport:
    """Start the target, translate the set, stop the target, and score."""
    if not evalset.pairs:
        raise ValueError(f"the {evalset.name} {evalset.split} set is empty; nothing to evaluate")
    await target.start()
    try:
        await target.warm(evalset.source_lang, evalset.target_lang, evalset.pairs[0].context)
        started = time.perf_counter()
        hypotheses = await translate_all(evalset, target, progress)
        elapsed = time.perf_counter() - started
        system, counters = target.describe(), target.counters()
        variants = [target.variants(p.source, evalset.source_lang, evalset.target_lang,
                                    **({"context": p.context} if p.context else {})) for p in evalset.pairs]
        memory = [target.memory_use(p.source) for p in evalset.pairs]
    finally:
        await target.stop()
    return score(evalset, hypotheses, system, elapsed, worst, counters, variants,
                 getattr(translate_all, "failures", 0), memory)
