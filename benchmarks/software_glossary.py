"""A product glossary for the software set's dev or test, mined from the products' own catalogs (QUALITY.md).

    python benchmarks/software_own_tm.py OWN                 # the products' other strings
    python benchmarks/software_glossary.py OWN [--agreed]    # OWN/software-{dev,test}-glossary[-agreed].tsv
    mtserve eval --dataset software --split dev --limit 200 --glossary-file OWN/software-dev-glossary-agreed.tsv

A glossary is what a product's translators keep of its short labels: 插件 → plugin, 页面 → page. This
takes, from each group's own-strings memory, every entry whose Chinese is 2 to 6 Han characters and
whose English is 1 to 3 words, where the memory gives the term one translation only. ``--agreed``
keeps only the terms whose translation is in at least half of the references of the split's strings
that hold them: a glossary kept in step with the product's strings, as a maintained one is. It reads
the split's references, so it measures how a prompt carries terms (cost, and whether the model uses
them), not what a glossary is worth on unseen strings.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.eval.datasets import load_software  # noqa: E402
from mtserve.service.glossary import matching_entries  # noqa: E402

TERM = re.compile(r"[\u4e00-\u9fff]{2,6}")
LABEL = re.compile(r"[A-Za-z][A-Za-z '\-]*")


def mine(memory: Path) -> dict[str, str]:
    """The memory's short labels that have one translation."""
    translations: dict[str, set[str]] = defaultdict(set)
    for line in memory.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or "\t" not in line:
            continue
        source, target = line.split("\t")[:2]
        if TERM.fullmatch(source) and LABEL.fullmatch(target) and len(target.split()) <= 3:
            translations[source].add(target)
    return {term: next(iter(found)) for term, found in sorted(translations.items()) if len(found) == 1}


def agreed(glossary: dict[str, str], split: str) -> dict[str, str]:
    """The terms whose translation the split's references use at least half the time they hold the term."""
    held, used = Counter(), Counter()
    for pair in load_software(split=split).pairs:
        for term, translation in matching_entries(glossary, pair.source).items():
            held[term] += 1
            used[term] += translation.lower() in pair.reference.lower()
    return {term: glossary[term] for term in sorted(held) if 2 * used[term] >= held[term]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("own", type=Path, help="the folder benchmarks/software_own_tm.py wrote")
    parser.add_argument("--agreed", action="store_true", help="only the terms the split's references use")
    args = parser.parse_args()
    for split in ("dev", "test"):
        glossary = mine(args.own / f"software-{split}-own-tm.tsv")
        if args.agreed:
            glossary = agreed(glossary, split)
        out = args.own / f"software-{split}-glossary{'-agreed' if args.agreed else ''}.tsv"
        out.write_text("".join(f"{term}\t{translation}\n" for term, translation in glossary.items()),
                       encoding="utf-8")
        print(f"{out}: {len(glossary)} terms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
