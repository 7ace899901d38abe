"""What each part of mtserve's prompt costs in the engine alone: no HTTP, no service, one llama.cpp.

    python benchmarks/prompt_cost.py [--model qwen2.5-coder-0.5b-instruct-q4_k_m] [--requests 32]
        [--rounds 4] [--clients 8] [--variants wrapper,mtserve,no-grammar,no-examples]
        [--set flash_attn_type=0 --set cache_type_k=8]   # llama.cpp params of the shared server
    python benchmarks/prompt_cost.py --sequential [--requests 32 --rounds 4 --variants ...]

One xllamacpp server (the wrapper's: ``WrapperTarget.llama_server``, the server's slots and
threads) takes every variant's requests, so the only difference is the request body:

- ``wrapper``: the bare wrapper's one-line prompt (``WrapperTarget.body``), what the speed target compares with;
- ``mtserve``: the body mtserve's engine builds for the sentence (``LlamaCppEngine.build_request``):
  system prompt, fixed few-shot examples, the script grammar;
- ``no-grammar``: that body without the grammar;
- ``no-examples``: that body with the system prompt and the sentence only (and the grammar);
- ``wrapper-grammar``: the wrapper's body with mtserve's script grammar;
- ``wrapper-filler``: the wrapper's body with a system prompt padded to about mtserve's length, with
  words that say nothing new: what the length of the context costs, whatever it says.

``--clients`` threads call the server in a closed loop over the same short HSK sentences for each
variant; the variants take turns, round by round, and each round starts with one untimed request
per slot, so every variant finds its own prefix in the slots. The figures are requests/s, tokens
per request, and llama.cpp's own timings (prompt tokens computed and taken from the cache, ms per
generated token). Run it on a quiet machine: it is one process on every core. ``--set`` changes the
one server for every variant, so it shows whether a setting shrinks the prompt's share; whether it
makes either faster needs runs with and without it, one after the other.

At 8 clients the rounds' own spread (several per cent) is wider than what a part of the prompt
costs. ``--sequential`` sends one request at a time instead and reports the CPU time of the process
(every thread, ``time.process_time``) per request, with its wall time and tokens: the work a body
asks of llama.cpp, which hardly moves from one repetition to the next. The variants take turns,
their order reversed every other round.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.bench.targets import WrapperTarget  # noqa: E402
from mtserve.bench.workloads import short_sentences  # noqa: E402
from mtserve.engines.base import EngineRequest  # noqa: E402
from mtserve.engines.factory import create_engine  # noqa: E402
from mtserve.engines.llamacpp import LlamaCppEngine  # noqa: E402
from mtserve.engines.prompts import script_grammar  # noqa: E402
from mtserve.settings import Settings  # noqa: E402

VARIANTS = ("wrapper", "mtserve", "no-grammar", "no-examples", "wrapper-grammar", "wrapper-filler")
FILLER = " ".join(["Translate carefully."] * 64)  # ~190 tokens: the wrapper's context grown to mtserve's


def bodies(variant: str, texts: list[str], engine: LlamaCppEngine, max_output_tokens: int) -> list[dict]:
    """``engine`` (never loaded) builds mtserve's requests."""
    out = []
    for text in texts:
        if variant.startswith("wrapper"):
            body = {**WrapperTarget.body(text, "zh", "en", max_output_tokens),
                    "stream": True, "stream_options": {"include_usage": True}}
            if variant == "wrapper-grammar":
                body["grammar"] = script_grammar("zh", "en")
            elif variant == "wrapper-filler":
                body["messages"][0] = {"role": "system", "content": f"{body['messages'][0]['content']} {FILLER}"}
        else:
            body = engine.build_request(EngineRequest(text=text, source="zh", target="en"))
            if variant == "no-grammar":
                body.pop("grammar", None)
            elif variant == "no-examples":
                system = [m for m in body["messages"] if m["role"] == "system"]
                body["messages"] = system + body["messages"][-1:]
        out.append(body)
    return out


def call(server, body: dict) -> dict:
    state: dict = {"tokens": 0}

    def on_chunk(chunk: dict) -> bool:
        if chunk.get("usage"):
            state["tokens"] = chunk["usage"].get("completion_tokens", 0)
        if chunk.get("timings"):
            state["timings"] = chunk["timings"]
        return False

    server.handle_chat_completions(body, on_chunk)
    return state


def closed_loop(server, requests: list[dict], clients: int) -> tuple[float, list[dict]]:
    """Each of ``clients`` threads sends its next request as soon as its last one is answered."""
    started = time.perf_counter()
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(lambda body: call(server, body), requests))
    return time.perf_counter() - started, results


def sequential(server, variants: list[str], texts: list[str], engine: LlamaCppEngine, max_output_tokens: int,
               rounds: int) -> None:
    """One request at a time: CPU and wall time per request, each variant on the same sentences."""
    figures = {v: {"cpu": [], "wall": [], "tokens": []} for v in variants}
    for round_ in range(rounds):
        for variant in variants if round_ % 2 == 0 else variants[::-1]:
            requests = bodies(variant, texts, engine, max_output_tokens)
            call(server, requests[0])  # untimed: its prefix into a slot
            f = figures[variant]
            for body in requests:
                cpu, wall = time.process_time(), time.perf_counter()
                result = call(server, body)
                f["cpu"].append(time.process_time() - cpu)
                f["wall"].append(time.perf_counter() - wall)
                f["tokens"].append(result["tokens"])
            print(f"round {round_ + 1} {variant:16} {statistics.mean(f['cpu'][-len(texts):]) * 1000:.1f} ms CPU "
                  "a request", flush=True)
    base = statistics.mean(figures[variants[0]]["cpu"])
    print(f"\n| variant | CPU a request | vs {variants[0]} | wall a request | tokens/request |")
    print("|---|---|---|---|---|")
    for variant in variants:
        f = figures[variant]
        cpu = statistics.mean(f["cpu"])
        print(f"| {variant} | {cpu * 1000:.0f} ms | {cpu / base:.3f} | {statistics.mean(f['wall']) * 1000:.0f} ms "
              f"| {statistics.mean(f['tokens']):.2f} |")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default="qwen2.5-coder-0.5b-instruct-q4_k_m")
    parser.add_argument("--requests", type=int, default=32, help="sentences per variant and round")
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--variants", default=",".join(VARIANTS[:4]))
    parser.add_argument("--sequential", action="store_true",
                        help="one request at a time; report CPU time per request instead of requests/s")
    parser.add_argument("--set", action="append", default=[], metavar="PARAM=INT",
                        help="a llama.cpp param of the server by dotted path (enums by number)")
    args = parser.parse_args()
    try:
        overrides = {key: int(value) for key, value in (item.split("=", 1) for item in args.set)}
    except ValueError:
        parser.error("--set takes PARAM=INT, for example flash_attn_type=0")
    variants = [v for v in args.variants.split(",") if v]
    if unknown := set(variants) - set(VARIANTS):
        parser.error(f"unknown variants {sorted(unknown)}; use {', '.join(VARIANTS)}")
    settings = Settings(model=args.model)
    texts, origin = short_sentences(limit=args.requests if args.sequential else args.requests * args.rounds)
    engine = create_engine(settings)  # resolves the model file and builds mtserve's requests; never loaded
    server = WrapperTarget.llama_server(str(engine.model_path), settings.threads, settings.n_parallel,
                                        settings.ctx_per_slot, overrides)
    print(f"{args.model}, {settings.threads} threads, {settings.n_parallel} slots, "
          f"{'one request at a time' if args.sequential else f'{args.clients} clients'}, "
          f"{args.requests} sentences a round ({origin})" + "".join(f", {item}" for item in args.set))
    if args.sequential:
        sequential(server, variants, texts, engine, settings.max_output_tokens, args.rounds)
        return 0
    figures: dict[str, dict[str, list[float]]] = {v: {"wall": [], "n": [], "tokens": [], "prompt": [],
                                                      "cached": [], "ms_per_token": []} for v in variants}
    for round_ in range(args.rounds):
        chunk = texts[round_ * args.requests:(round_ + 1) * args.requests]
        for variant in variants:
            requests = bodies(variant, chunk, engine, settings.max_output_tokens)
            closed_loop(server, requests[:settings.n_parallel], settings.n_parallel)  # untimed: the prefix
            wall, results = closed_loop(server, requests, args.clients)
            f = figures[variant]
            f["wall"].append(wall)
            f["n"].append(len(results))
            f["tokens"] += [r["tokens"] for r in results]
            for r in results:
                t = r.get("timings") or {}
                f["prompt"].append(t.get("prompt_n", 0))
                f["cached"].append(t.get("cache_n", 0))
                if t.get("predicted_per_token_ms"):
                    f["ms_per_token"].append(t["predicted_per_token_ms"])
            print(f"round {round_ + 1} {variant:12} {len(results) / wall:.3f} req/s", flush=True)
    base = sum(figures[variants[0]]["n"]) / sum(figures[variants[0]]["wall"])
    print(f"\n| variant | req/s | vs {variants[0]} | per round | tokens/request | prompt tokens computed "
          "| from cache | ms per generated token |")
    print("|---|---|---|---|---|---|---|---|")
    for variant in variants:
        f = figures[variant]
        rps = sum(f["n"]) / sum(f["wall"])
        per_round = ", ".join(f"{n / w / (b_n / b_w):.2f}" for n, w, b_n, b_w in
                              zip(f["n"], f["wall"], figures[variants[0]]["n"], figures[variants[0]]["wall"]))
        print(f"| {variant} | {rps:.3f} | {rps / base:.3f}× | {per_round} | {statistics.mean(f['tokens']):.2f} "
              f"| {statistics.mean(f['prompt']):.1f} | {statistics.mean(f['cached']):.1f} "
              f"| {statistics.mean(f['ms_per_token'] or [0]):.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
