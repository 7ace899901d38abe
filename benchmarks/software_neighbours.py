"""The software set as TSV files whose context column carries neighbouring strings (docs/decisions/017-tm-retrieval.md).

    python benchmarks/software_neighbours.py OUT_DIR [--split dev] [--previous 2]
    mtserve eval OUT_DIR/software-dev-line.tsv --limit 200 --model qwen2.5-coder-1.5b-instruct-q4_k_m
    mtserve eval OUT_DIR/software-dev-neighbours.tsv --limit 200 --model qwen2.5-coder-1.5b-instruct-q4_k_m

Two files of the same pairs in the same order (so ``--limit`` samples the same ones): the catalog
context line alone, and the line with the ``--previous`` strings before each one from its project.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.documents.formats.registry import UI_STRINGS  # noqa: E402
from mtserve.eval.datasets import load_software  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--previous", type=int, default=2)
    args = parser.parse_args()
    pairs = load_software(split=args.split).pairs
    args.out.mkdir(parents=True, exist_ok=True)
    for name, previous in (("line", 0), ("neighbours", args.previous)):
        rows = ["id\tgroup\tsource\treference\tcontext"]
        for i, pair in enumerate(pairs):
            before = [p.source for p in pairs[max(0, i - previous):i] if p.group == pair.group]
            context = UI_STRINGS + (" Strings next to it in the same catalog: " + " / ".join(before) if before else "")
            rows.append("\t".join(f.replace("\t", " ") for f in (pair.id, pair.group, pair.source,
                                                                  pair.reference, context)))
        path = args.out / f"software-{args.split}-{name}.tsv"
        path.write_text("\n".join(rows) + "\n", encoding="utf-8")
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
