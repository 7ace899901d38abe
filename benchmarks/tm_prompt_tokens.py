"""Prompt tokens llama.cpp computes per segment, with and without TM examples and a context (QUALITY.md).

    python benchmarks/tm_prompt_tokens.py --tm OWN/software-dev-own-tm.tsv [--strings 24 --model M]
    python benchmarks/tm_prompt_tokens.py --tm OWN/software-dev-own-tm.tsv --mixed 80

Takes the first ``--strings`` software dev strings that have TM examples at the tm_k and
tm_min_similarity settings, and translates each, one at a time, in four ways: neither examples nor
context, the catalog's context line alone, the examples alone, and both. It prints llama.cpp's own
per-request means: prompt tokens computed (``prompt_n``), taken from the cache (``cache_n``), and the
milliseconds of each. A token computed per segment is time every segment pays; what the prompt's
layout keeps in the cached prefix is not.

``--mixed N`` instead takes the first N dev strings as they come, with examples where the memory has
them and without where it has none, all with the context line, and sends them ``--clients`` at a time
(as the eval and a catalog's translation do), so each lands on whichever slot is free: the prefix a
slot kept from a segment of the other kind is what it can reuse.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.documents.registry import UI_STRINGS  # noqa: E402
from mtserve.engines.base import Guidance, TranslationRequest  # noqa: E402
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
    args = parser.parse_args()
    settings = Settings(model=args.model, threads=args.threads)
    with tempfile.TemporaryDirectory(prefix="mtserve-tm-tokens-") as folder:
        memory = TranslationMemory(Path(folder) / "tm.sqlite3")
        memory.add(read_tm(args.tm.read_bytes(), format_of(args.tm.name), "zh", "en").pairs, "zh", "en")
        chosen: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        for pair in load_builtin("software", "zh", "en", split="dev").pairs:
            found = memory.similar(pair.source, "zh", "en", k=settings.tm_k, min_similarity=settings.tm_min_similarity)
            if found or args.mixed:
                chosen.append((pair.source, tuple((m.entry.source, m.entry.target) for m in found)))
            if len(chosen) == (args.mixed or args.strings):
                break
    engine = create_engine(settings)
    engine.load()
    context = Guidance(context=UI_STRINGS)
    if args.mixed:
        return mixed(engine, chosen, context, args.clients)
    print(f"{len(chosen)} dev strings with examples (k {settings.tm_k}, >= {settings.tm_min_similarity:g}), "
          f"{args.model}; means per segment:")
    for name, with_examples, guidance in (("neither", False, Guidance()), ("context line", False, context),
                                          ("examples", True, Guidance()), ("both", True, context)):
        rows = []
        engine.translate(TranslationRequest("你好。", "zh", "en", guidance=guidance))  # untimed: the prefix
        for text, examples in chosen:
            engine.translate(TranslationRequest(text, "zh", "en", examples=examples if with_examples else (),
                                                guidance=guidance))
            rows.append(engine.last_timings() or {})
        print(f"  {name:<13}" + means(rows))
    engine.close()
    return 0


def means(rows: list[dict]) -> str:
    """llama.cpp's timings, each averaged over the segments' rows."""
    return "  ".join(f"{key} {sum(row.get(key, 0) for row in rows) / len(rows):7.1f}" for key in TIMINGS)


def mixed(engine, chosen: list[tuple[str, tuple[tuple[str, str], ...]]], context: Guidance, clients: int) -> int:
    """Means per segment, by kind, when segments with and without examples share the slots."""
    def translate(item: tuple[str, tuple[tuple[str, str], ...]]) -> tuple[bool, dict]:
        text, examples = item
        engine.translate(TranslationRequest(text, "zh", "en", examples=examples, guidance=context))
        return bool(examples), engine.last_timings() or {}  # this thread's own request

    for _ in range(clients):  # untimed: the shared prefix, computed before the timed segments
        engine.translate(TranslationRequest("你好。", "zh", "en", guidance=context))
    with ThreadPoolExecutor(clients) as pool:
        results = list(pool.map(translate, chosen))
    with_examples = sum(1 for has, _ in results if has)
    print(f"{len(chosen)} dev strings in order, {with_examples} with examples, the context line, "
          f"{clients} at a time; means per segment:")
    for name, kind in (("with examples", True), ("without", False), ("all", None)):
        rows = [timings for has, timings in results if kind is None or has == kind]
        if rows:
            print(f"  {name:<14}" + means(rows))
    engine.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
