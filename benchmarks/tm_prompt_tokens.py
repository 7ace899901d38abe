"""Prompt tokens llama.cpp computes per segment, with and without TM examples and a context (QUALITY.md).

    python benchmarks/tm_prompt_tokens.py --tm OWN/software-dev-own-tm.tsv [--strings 24 --model M]
    python benchmarks/tm_prompt_tokens.py --tm OWN/software-dev-own-tm.tsv --mixed 80 [--rounds 3 --no-context]

Takes the first ``--strings`` software dev strings that have TM examples at the tm_k and
tm_min_similarity settings, and translates each, one at a time, in four ways: neither examples nor
context, the catalog's context line alone, the examples alone, and both. It prints llama.cpp's own
per-request means: prompt tokens computed (``prompt_n``), taken from the cache (``cache_n``), and the
milliseconds of each. A token computed per segment is time every segment pays; what the prompt's
layout keeps in the cached prefix is not.

``--mixed N`` instead takes the first N dev strings as they come, with examples where the memory has
them and without where it has none, all with the context line (none with ``--no-context``), and sends
them ``--clients`` at a time (as the eval and a catalog's translation do), so each lands on whichever
slot is free: the prefix a slot kept from a segment of the other kind is what it can reuse.

Each round's strings are first sent with their examples, then with none; ``--rounds R`` takes R rounds
of N new strings (a string sent in two rounds would find its prompt in llama.cpp's RAM cache). The
wall-clock ratio of the two passes is the memory's cost in time (the issue's target: at most 1.3x),
measured in one run, where an eval's time alone moves by about 12% from run to run.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.documents.formats.registry import UI_STRINGS  # noqa: E402
from mtserve.engines.base import EngineRequest, Guidance  # noqa: E402
from mtserve.engines.factory import create_engine  # noqa: E402
from mtserve.eval.datasets import load_builtin  # noqa: E402
from mtserve.service.tm import TranslationMemory  # noqa: E402
from mtserve.service.tm_files import format_of, read_tm  # noqa: E402
from mtserve.settings import Settings  # noqa: E402

TIMINGS = ("prompt_n", "cache_n", "prompt_ms", "predicted_ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tm", type=Path, required=True, help="a .tsv, .tmx, .po or .xliff file of zh->en pairs")
    parser.add_argument("--strings", type=int, default=24)
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--mixed", type=int, default=0, metavar="N",
                        help="the first N dev strings, with and without examples, sent --clients at a time")
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --mixed: rounds of N new strings, each sent with the memory, then without it")
    parser.add_argument("--no-context", action="store_true",
                        help="with --mixed: send the strings without the context line (the memory's cost alone)")
    args = parser.parse_args()
    settings = Settings(model=args.model, threads=args.threads)
    rounds = max(1, args.rounds)
    with tempfile.TemporaryDirectory(prefix="mtserve-tm-tokens-") as folder:
        memory = TranslationMemory(Path(folder) / "tm.sqlite3")
        memory.add(read_tm(args.tm.read_bytes(), format_of(args.tm.name), "zh", "en").pairs, "zh", "en")
        chosen: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        for pair in load_builtin("software", "zh", "en", split="dev").pairs:
            found = memory.similar(pair.source, "zh", "en", k=settings.tm_k, min_similarity=settings.tm_min_similarity)
            if found or args.mixed:
                chosen.append((pair.source, tuple((m.entry.source, m.entry.target) for m in found)))
            if len(chosen) == (args.mixed * rounds or args.strings):
                break
    engine = create_engine(settings)
    engine.load()
    context = Guidance(context=UI_STRINGS)
    if args.mixed:
        return mixed(engine, chosen, Guidance() if args.no_context else context, args.clients, rounds)
    print(f"{len(chosen)} dev strings with examples (k {settings.tm_k}, >= {settings.tm_min_similarity:g}), "
          f"{args.model}; means per segment:")
    for name, with_examples, guidance in (("neither", False, Guidance()), ("context line", False, context),
                                          ("examples", True, Guidance()), ("both", True, context)):
        rows = []
        engine.translate(EngineRequest("你好。", "zh", "en", guidance=guidance))  # untimed: the prefix
        for text, examples in chosen:
            engine.translate(EngineRequest(text, "zh", "en", examples=examples if with_examples else (),
                                                guidance=guidance))
            rows.append(engine.last_timings() or {})
        print(f"  {name:<13}" + means(rows))
    engine.close()
    return 0


def means(rows: list[dict]) -> str:
    """llama.cpp's timings, each averaged over the segments' rows."""
    return "  ".join(f"{key} {sum(row.get(key, 0) for row in rows) / len(rows):7.1f}" for key in TIMINGS)


def mixed(engine, chosen: list[tuple[str, tuple[tuple[str, str], ...]]], context: Guidance, clients: int,
          rounds: int = 1) -> int:
    """Means per segment, by kind, when segments with and without examples share the slots; and the
    wall time of the same strings sent with the memory and without it, in ``rounds`` rounds of new strings."""
    def translate(item: tuple[str, tuple[tuple[str, str], ...]]) -> tuple[bool, dict]:
        text, examples = item
        engine.translate(EngineRequest(text, "zh", "en", examples=examples, guidance=context))
        return bool(examples), engine.last_timings() or {}  # this thread's own request

    # untimed: the shared prefix computed on every slot before the timed segments, each slot pinned (sent one
    # after another these all landed on one slot; sent together, on three of four)
    engine.warm_slots("zh", "en", context)
    results: list[tuple[bool, dict]] = []
    walls: dict[bool, list[float]] = {False: [], True: []}
    size = len(chosen) // rounds
    for round_ in range(rounds):  # new strings each round: llama.cpp's RAM cache holds the last round's
        strings = chosen[round_ * size:(round_ + 1) * size]
        # with the memory first: a string without examples is then sent twice alike, and what llama.cpp's RAM
        # cache restores of it helps the pass without the memory, so the ratio errs against the memory
        for memory in (True, False):
            items = strings if memory else [(text, ()) for text, _ in strings]
            started = time.perf_counter()
            with ThreadPoolExecutor(clients) as pool:
                done = list(pool.map(translate, items))
            walls[memory].append(time.perf_counter() - started)
            if memory:
                results += done
    with_examples = sum(1 for has, _ in results if has)
    print(f"{len(results)} dev strings in order, {with_examples} with examples, "
          f"{'the context line' if context else 'no context'}, {clients} at a time; means per segment:")
    for name, kind in (("with examples", True), ("without", False), ("all", None)):
        rows = [timings for has, timings in results if kind is None or has == kind]
        if rows:
            print(f"  {name:<14}" + means(rows))
    ratios = ", ".join(f"{on / off:.2f}" for off, on in zip(walls[False], walls[True]))
    print(f"wall time, the same strings without the memory and with it, {rounds} rounds of new strings: "
          f"{sum(walls[False]):.1f} s and {sum(walls[True]):.1f} s, "
          f"{sum(walls[True]) / sum(walls[False]):.2f}x (per round {ratios})")
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
