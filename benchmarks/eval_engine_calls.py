"""Where an eval's engine time goes: llama.cpp's timings of every engine call the service makes
(docs/decisions/014-prompt-cache-ram.md).

    python benchmarks/eval_engine_calls.py [--split test --limit 200 --context LINE --tm FILE --model M]
        [--glossary-file FILE]

Runs the software set the way ``mtserve eval --dataset software`` does (the same in-process service, the
same sample, the untimed warm-up of every slot) with each engine call timed, and prints the wall time,
how many calls were in llama.cpp at once, the per-call means of llama.cpp's own timings (prompt tokens
computed and taken from a cache, and the milliseconds of each), and the calls that computed a long
prompt: a slot that held the prompt of another kind (a segment with placeholders after plain ones, or
back) and could not restore it from llama.cpp's host-RAM cache. Set MTSERVE_PROMPT_CACHE_RAM_MIB to
compare cache sizes, one run after another on a quiet machine.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.eval.datasets import load_software, sample, with_context  # noqa: E402
from mtserve.eval.runner import translate_all  # noqa: E402
from mtserve.eval.targets import InProcessTarget  # noqa: E402
from mtserve.settings import Settings  # noqa: E402

TIMINGS = ("prompt_n", "cache_n", "prompt_ms", "predicted_n", "predicted_ms")
LONG_PROMPT = 100  # tokens computed by one call: more than a text and its examples need


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--split", default="test")
    parser.add_argument("--limit", type=int, default=200)
    parser.add_argument("--context", default="", help="every string's context, as `mtserve eval --context`")
    parser.add_argument("--tm", type=Path, help="a translation memory, as `mtserve eval --tm`")
    parser.add_argument("--glossary-file", type=Path, help="as `mtserve eval --glossary-file`")
    parser.add_argument("--model", default="qwen2.5-coder-1.5b-instruct-q4_k_m")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    evalset = load_software(split=args.split)
    evalset.pairs = sample(evalset.pairs, args.limit, 0)
    if args.context:
        evalset = with_context(evalset, args.context)
    target = InProcessTarget(Settings(model=args.model, threads=args.threads, glossary_file=args.glossary_file))
    if args.tm:
        target.use_memory(args.tm, "zh", "en")
    engine = target.runtime.engine
    calls: list[dict] = []
    lock = threading.Lock()
    translate = engine.translate

    def timed(request, cancel=None, on_delta=None):
        started = time.perf_counter()
        result = translate(request, cancel, on_delta)
        timings = engine.last_timings() or {}
        with lock:
            calls.append({"start": started, "end": time.perf_counter(), "text": request.text,
                          **{key: timings.get(key, 0) for key in TIMINGS}})
        return result

    engine.translate = timed  # before start: the scheduler takes engine.translate then

    async def run() -> float:
        await target.start()
        try:
            await target.warm(evalset.source_lang, evalset.target_lang, evalset.pairs[0].context)
            started = time.perf_counter()
            await translate_all(evalset, target)
            return time.perf_counter() - started
        finally:
            await target.stop()

    wall = asyncio.run(run())
    busy = sum(call["end"] - call["start"] for call in calls)
    print(f"{len(evalset.pairs)} software {args.split} strings, {args.model}, context {bool(args.context)}, "
          f"TM {args.tm.name if args.tm else 'none'}, "
          f"glossary {args.glossary_file.name if args.glossary_file else 'none'}: "
          f"wall {wall:.1f} s, {len(calls)} engine calls, "
          f"{busy / wall:.2f} in llama.cpp at once on average")
    print("  means per call: " + "  ".join(f"{key} {sum(c[key] for c in calls) / len(calls):.1f}" for key in TIMINGS))
    long = [c for c in calls if c["prompt_n"] > LONG_PROMPT]
    print(f"  calls that computed over {LONG_PROMPT} prompt tokens: {len(long)}, "
          f"{sum(c['prompt_n'] for c in long)} of the {sum(c['prompt_n'] for c in calls)} tokens computed")
    for call in sorted(long, key=lambda c: c["start"]):
        print(f"    {call['prompt_n']:4d} computed, {call['cache_n']:4d} from a cache: {call['text'][:50]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
