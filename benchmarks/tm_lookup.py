"""Fuzzy translation-memory lookup: time per segment with 100,000 entries, k=4.

    python benchmarks/tm_lookup.py [--entries 100000] [--queries 2000] [--k 4] [--db PATH] [--json OUT]

The store is built from the 4,354 HSK sentences (hsk-sentences-audio) and the
Japanese sentences of mtserve/eval/data/everyday.tsv, with variations so the
n-gram distribution is that of real text, not of random characters: a word
of one sentence swapped for a word of another (by the package's own word
segmentation), two clauses of different sentences joined, numbers changed,
and short UI-like frames ("请确认", "失败：") around a sentence. Queries are
fresh variations (new edits of the same sentences, so most have near matches
and some have none) and 10% exact entries. Each query runs
``TranslationMemory.similar`` (the index lookup and the rapidfuzz ranking)
with k=4 and the default candidates; the figures are p50/p95/p99 of the wall
time per call (and of its CPU time, thread_time, which a busy machine
inflates less), after a warm-up. The target (BENCHMARKS.md) is p95 <= 2 ms. The
index's recall is checked against an exhaustive rapidfuzz scan over every
entry (untimed): how often the lookup's best score reaches the scan's, is
within 5 points of it, and the mean gap.

Speed depends on the machine: report the command and whether the machine was
quiet.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.service.tm import DEFAULT_CANDIDATES, TranslationMemory

FRAMES = ["{}", "请确认：{}", "{}失败。", "错误：{}", "{}（可选）", "是否{}", "无法{}", "正在{}……", "已{}", "{}？"]


def base_sentences() -> list[list[str]]:
    """Sentences as word lists: HSK (its own segmentation) and everyday.tsv's Japanese (by character)."""
    from hsk_sentences_audio import load_sentences

    sentences = [[t["word"] for t in r["tokens"]] or list(r["chinese"]) for r in load_sentences()]
    with open(ROOT / "mtserve/eval/data/everyday.tsv", encoding="utf-8") as handle:
        rows = [row for row in csv.reader(handle, delimiter="\t") if row and not row[0].startswith("#")]
    sentences += [list(row[3]) for row in rows[1:] if len(row) > 3]
    return [s for s in sentences if "".join(s).strip()]


def variation(rng: random.Random, sentences: list[list[str]], words: list[str]) -> str:
    words_of = list(rng.choice(sentences))
    for _ in range(rng.choice((0, 1, 1, 2, 3))):  # swap words for words of other sentences
        words_of[rng.randrange(len(words_of))] = rng.choice(words)
    text = "".join(words_of)
    if rng.random() < 0.25:  # join a clause of another sentence
        other = "".join(rng.choice(sentences)).rstrip("。！？.!?")
        text = f"{text.rstrip('。！？.!?')}，{other}。"
    if rng.random() < 0.2:
        text = text.replace("一", str(rng.randint(2, 999)), 1)
    return rng.choice(FRAMES).format(text.rstrip("。") if rng.random() < 0.5 else text)


def build(tm: TranslationMemory, count: int, rng: random.Random, sentences, words) -> float:
    started = time.perf_counter()
    batch: list[tuple[str, str]] = []
    stored = 0
    seen: set[str] = set()
    for sentence in sentences:  # every base sentence is in the TM once
        text = "".join(sentence)
        if text not in seen:
            seen.add(text)
            batch.append((text, f"translation {len(seen)}"))
    while len(seen) < count:
        text = variation(rng, sentences, words)
        if text not in seen:
            seen.add(text)
            batch.append((text, f"translation {len(seen)}"))
        if len(batch) >= 5000:
            stored += tm.add(batch, "zh", "en", origin="bench").added
            batch = []
    stored += tm.add(batch, "zh", "en", origin="bench").added
    return time.perf_counter() - started


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=2000)
    parser.add_argument("--k", type=int, default=4)
    parser.add_argument("--candidates", type=int, default=DEFAULT_CANDIDATES)
    parser.add_argument("--recall-queries", type=int, default=200,
                        help="queries checked against an exhaustive rapidfuzz scan")
    parser.add_argument("--db", help="reuse (or build) the store here instead of a temporary file")
    parser.add_argument("--json", help="write the figures here")
    args = parser.parse_args()

    rng = random.Random(18)
    sentences = base_sentences()
    words = [w for s in sentences for w in s if len(w) >= 2]
    folder = tempfile.TemporaryDirectory(prefix="mtserve-tm-bench-")
    path = Path(args.db) if args.db else Path(folder.name) / "tm.sqlite3"
    tm = TranslationMemory(path)
    build_s = build(tm, args.entries, rng, sentences, words) if len(tm) < args.entries else 0.0
    entries = len(tm)
    stored = [e.source for e in tm.entries()]

    qrng = random.Random(1818)
    queries = [qrng.choice(stored) if qrng.random() < 0.1 else variation(qrng, sentences, words)
               for _ in range(args.queries)]
    for query in queries[:100]:  # warm the page cache and rapidfuzz
        tm.similar(query, "zh", "en", k=args.k, candidates=args.candidates)
    times_ms, cpu_ms, top_scores, found = [], [], [], 0
    for query in queries:
        started, cpu_started = time.perf_counter(), time.thread_time()
        matches = tm.similar(query, "zh", "en", k=args.k, candidates=args.candidates)
        cpu_ms.append((time.thread_time() - cpu_started) * 1000)
        times_ms.append((time.perf_counter() - started) * 1000)
        if matches:
            found += 1
            top_scores.append(matches[0].score)
    # recall of the index: does it find the best match an exhaustive rapidfuzz scan finds? (not timed)
    from rapidfuzz import fuzz, process

    from mtserve.text.punctuation import match_key

    keys = [match_key(source) for source in stored]
    gaps, checked = [], queries[: args.recall_queries]
    for query in checked:
        best = process.extractOne(match_key(query), keys, scorer=fuzz.ratio)
        matches = tm.similar(query, "zh", "en", k=1, candidates=args.candidates)
        gaps.append(best[1] - (matches[0].score if matches else 0.0))
    exact_ms = []
    for query in queries[:500]:
        started = time.perf_counter()
        tm.exact(query, "zh", "en")
        exact_ms.append((time.perf_counter() - started) * 1000)
    tm.close()

    figures = {
        "entries": entries, "queries": len(queries), "k": args.k, "candidates": args.candidates,
        "build_s": round(build_s, 1), "db_mib": round(path.stat().st_size / 2**20, 1),
        "similar_ms": {p: round(percentile(times_ms, int(p[1:])), 3) for p in ("p50", "p95", "p99")},
        "similar_mean_ms": round(statistics.fmean(times_ms), 3),
        "similar_cpu_ms": {p: round(percentile(cpu_ms, int(p[1:])), 3) for p in ("p50", "p95", "p99")},
        "exact_ms": {p: round(percentile(exact_ms, int(p[1:])), 3) for p in ("p50", "p95", "p99")},
        "recall_vs_exhaustive_scan": {
            "queries": len(checked), "best_score_reached": sum(g <= 1e-6 for g in gaps),
            "within_5_points": sum(g <= 5 for g in gaps), "mean_gap": round(statistics.fmean(gaps), 2)},
        "queries_with_a_match": found, "mean_top_score": round(statistics.fmean(top_scores), 1) if top_scores else 0,
    }
    print(json.dumps(figures, indent=2))
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")
    folder.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
