"""Engine settings side by side: several LlamaCppEngine variants in one process, alternated A B A B.

Each variant is ``name:key=value,...`` over LlamaCppEngine's constructor
arguments (threads, batch_threads, n_parallel, ctx_per_slot, speculative,
draft_max, ngram_size, script_grammar) and llama.cpp params as ``p.<dotted.path>=value``.
(``queue_ahead`` needs the scheduler, so it is measured between two servers instead.)
Each round sends every variant the same number of fresh short sentences at
the given concurrency (threads calling translate), so ratios within a run hold
on a noisy machine. Prefill and decode times come from llama.cpp's timings.

    python benchmarks/engine_tuning.py --model qwen2.5-coder-0.5b-instruct-q4_k_m \\
        --variant base: --variant spec:speculative=ngram-simple --clients 1 --requests 16 --rounds 3
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
import threading
import time

from mtserve.bench.stats import percentile
from mtserve.bench.workloads import build_workload
from mtserve.engines.base import EngineRequest
from mtserve.engines.llamacpp import LlamaCppEngine
from mtserve.models.store import ModelStore
from mtserve.settings import Settings


def parse_variant(text: str) -> tuple[str, dict, dict]:
    name, _, rest = text.partition(":")
    kwargs, overrides = {}, {}
    for part in filter(None, rest.split(",")):
        key, _, raw = part.partition("=")
        try:
            value = ast.literal_eval(raw)
        except (ValueError, SyntaxError):
            value = raw
        (overrides if key.startswith("p.") else kwargs)[key.removeprefix("p.")] = value
    return name, kwargs, overrides


def build(model: str, kwargs: dict, overrides: dict) -> LlamaCppEngine:
    settings = Settings(model=model)
    resolved = ModelStore(settings.models_dir).resolve(model)
    base = dict(threads=settings.threads, n_parallel=settings.n_parallel, ctx_per_slot=settings.ctx_per_slot,
                max_output_tokens=settings.max_output_tokens)
    base.update(kwargs)
    engine = LlamaCppEngine(resolved.path, model_name=resolved.name, family=resolved.family,
                            languages=("zh", "en"), param_overrides=overrides, **base)
    engine.load()
    return engine


def run(engine: LlamaCppEngine, texts: list[str], clients: int) -> dict:
    lock = threading.Lock()
    queue = list(texts)
    rows: list[dict] = []

    def client() -> None:
        while True:
            with lock:
                if not queue:
                    return
                text = queue.pop(0)
            t0 = time.perf_counter()
            result = engine.translate(EngineRequest(text, "zh", "en"))
            latency = time.perf_counter() - t0
            timings = engine.last_timings() or {}
            with lock:
                rows.append({"latency": latency, "tokens": result.generated_tokens, **timings,
                             "text": result.text})

    t0 = time.perf_counter()
    threads = [threading.Thread(target=client) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    return {"wall": wall, "rows": rows}


def summary(runs: list[dict]) -> dict:
    rows = [r for run in runs for r in run["rows"]]
    wall = sum(run["wall"] for run in runs)
    lat = [r["latency"] * 1000 for r in rows]
    tokens = sum(r["tokens"] for r in rows)

    def mean(key):
        values = [r[key] for r in rows if key in r]
        return round(statistics.fmean(values), 1) if values else None

    return {
        "n": len(rows), "rps": round(len(rows) / wall, 3), "tok_s": round(tokens / wall, 1),
        "p50_ms": round(percentile(lat, 50), 1), "p95_ms": round(percentile(lat, 95), 1),
        "prompt_n": mean("prompt_n"), "cache_n": mean("cache_n"), "prompt_ms": mean("prompt_ms"),
        "predicted_n": mean("predicted_n"), "predicted_ms": mean("predicted_ms"),
        "decode_ms_per_token": round(sum(r.get("predicted_ms", 0) for r in rows)
                                     / max(1, sum(r.get("predicted_n", 0) for r in rows)), 2),
        "prefill_ms_per_token": round(sum(r.get("prompt_ms", 0) for r in rows)
                                      / max(1, sum(r.get("prompt_n", 0) for r in rows)), 2),
        "draft_accepted": mean("draft_n_accepted"), "draft_n": mean("draft_n"),
        # outputs with Chinese characters left in: what the guardrails would have to retry
        "cjk_left": sum(1 for r in rows if re.search(r"[\u3400-\u9fff]", r["text"])),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True)
    parser.add_argument("--variant", action="append", required=True)
    parser.add_argument("--clients", type=int, default=1)
    parser.add_argument("--requests", type=int, default=16, help="per variant and round")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", help="write the JSON here too")
    args = parser.parse_args()
    variants = [parse_variant(v) for v in args.variant]
    engines = [(name, build(args.model, kw, ov)) for name, kw, ov in variants]
    pool = build_workload("short").items
    at = 0
    for name, engine in engines:  # warm every slot's prefix cache
        run(engine, [i.text for i in pool[at:at + max(4, args.clients)]], max(4, args.clients))
        at += max(4, args.clients)
    results: dict[str, list[dict]] = {name: [] for name, _ in engines}
    outputs: dict[str, list[str]] = {name: [] for name, _ in engines}
    for _ in range(args.rounds):
        texts = [i.text for i in pool[at:at + args.requests]]
        at += args.requests
        for name, engine in engines:  # the same texts for every variant in a round
            r = run(engine, texts, args.clients)
            results[name].append(r)
            outputs[name] += [row["text"] for row in r["rows"]]
    table = {name: summary(runs) for name, runs in results.items()}
    base = variants[0][0]
    for name, row in table.items():
        row["rps_vs_first"] = round(row["rps"] / table[base]["rps"], 3)
        row["per_round_rps_vs_first"] = [
            round((len(a["rows"]) / a["wall"]) / (len(b["rows"]) / b["wall"]), 3)
            for a, b in zip(results[name], results[base])
        ]
        same = sum(x in outputs[base] for x in outputs[name])
        row["same_output_as_first"] = same / max(1, len(outputs[name]))
    print(json.dumps({"model": args.model, "clients": args.clients, "variants": args.variant,
                      "results": table}, indent=1, ensure_ascii=False))
    if args.out:
        with open(args.out, "w") as fh:
            json.dump({"args": vars(args), "results": table}, fh, indent=1)


if __name__ == "__main__":
    main()
