"""What a tagged sentence costs against its plain translation, on the placement set.

In process, one request at a time, the translation cache off: each item of the hand-checked
placement set (mtserve/eval/data/markup-placement.tsv) is translated as plain text, then as HTML
with its tags (which of the two goes first alternates, since the second finds the sentence's prompt
in llama.cpp's cache), and the two times are compared per sentence. The tagged request does everything
the service does for a tag: the tag-free translation, the question of where each tag's words
went, the tags put in under the grammar, and any retry. The criterion (issue 47) is that a
tagged sentence costs at most 1.5x its plain translation: the report gives the ratio of the
totals and the median of the per-sentence ratios.

    python benchmarks/markup_time.py [--model NAME] [--split dev|test|all] [--json OUT]

Speed depends on the machine: run it on a quiet one and report the command.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.eval.markup import load_markup_set  # noqa: E402
from mtserve.models.store import ModelStore  # noqa: E402
from mtserve.service.request import TranslationRequest, Usage  # noqa: E402
from mtserve.service.runtime import Runtime  # noqa: E402
from mtserve.settings import Settings  # noqa: E402


async def measure(model: str, split: str) -> dict:
    items = load_markup_set("placement", "zh", "en", split).items
    path = ModelStore(Settings().models_dir).resolve(model).path
    with tempfile.TemporaryDirectory() as home:
        runtime = Runtime(Settings(home=Path(home), model=str(path), cache_size=0))
        await runtime.start()
        await runtime.wait_ready()
        rows = []
        try:
            for k, item in enumerate(items):
                timed = {}
                pair = [("plain", item.plain, "text"), ("tagged", item.source, "html")]
                # whichever goes second finds the sentence's prompt in llama.cpp's cache: alternate
                for name, text, fmt in pair if k % 2 == 0 else pair[::-1]:
                    usage = Usage()
                    started = time.perf_counter()
                    await runtime.service.translate(TranslationRequest([text], "en", source="zh", format=fmt), usage)
                    timed[name] = time.perf_counter() - started
                    timed[f"{name}_tokens"] = usage.generated_tokens
                rows.append({"id": item.id, **timed})
        finally:
            await runtime.stop()
    plain = sum(r["plain"] for r in rows)
    tagged = sum(r["tagged"] for r in rows)
    return {
        "model": model, "split": split, "sentences": len(rows),
        "plain_s": round(plain, 2), "tagged_s": round(tagged, 2),
        "ratio_of_totals": round(tagged / plain, 2),
        "median_ratio": round(statistics.median(r["tagged"] / r["plain"] for r in rows), 2),
        "p90_ratio": round(sorted(r["tagged"] / r["plain"] for r in rows)[int(0.9 * (len(rows) - 1))], 2),
        "rows": rows,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", default=Settings().model)
    parser.add_argument("--split", default="dev", choices=("dev", "test", "all"))
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = asyncio.run(measure(args.model, args.split))
    summary = {k: v for k, v in result.items() if k != "rows"}
    print(json.dumps(summary, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
