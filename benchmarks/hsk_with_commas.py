"""The HSK 4-6 sentences with a comma inside, as TSV files for ``mtserve eval --as-subtitles`` (QUALITY.md).

    python benchmarks/hsk_with_commas.py OUT_DIR
    mtserve eval OUT_DIR/hsk-commas-test.tsv --as-subtitles --model qwen2.5-coder-1.5b-instruct-q4_k_m

``--as-subtitles`` cuts a sentence into cues after its commas, as a subtitler cuts speech at its
pauses; these are the sentences it cuts (most HSK sentences have no comma and stay one cue).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.eval.datasets import load_builtin, parse_levels  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    for split in ("dev", "test"):
        pairs = load_builtin("hsk", "zh", "en", split, parse_levels("4-6")).pairs
        inside = [p for p in pairs if "，" in p.source.strip()[:-1]]
        path = args.out / f"hsk-commas-{split}.tsv"
        with path.open("w", encoding="utf-8") as out:
            out.write("id\tsource\treference\n")
            out.writelines(f"{p.id}\t{p.source}\t{p.reference}\n" for p in inside)
        print(f"{path}: {len(inside)} of {len(pairs)} sentences")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
