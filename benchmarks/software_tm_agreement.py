"""How often another project's translation of the very same string is this project's English (QUALITY.md).

    python benchmarks/software_tm_agreement.py [--cache DIR]

The software set drops every dev and test string whose source the TM holds exactly, so that it
measures new strings. This looks at the strings it dropped: it reads the same pinned catalogs as
``python -m mtserve.eval.build_software`` (pip downloads them; ``--cache`` keeps them), takes each
dev and test project's capped sample *before* that drop (sources deduplicated within dev and test
only), and counts how many the TM holds exactly and how many of those the TM would answer with
the project's own English: exactly, and ignoring case and a final stop.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.eval.build_software import PROJECTS, Catalog, cap, download, read_project  # noqa: E402
from mtserve.text.punctuation import match_key  # noqa: E402


def loose(text: str) -> str:
    return text.strip().rstrip(".:").casefold()


def agreement(catalogs: list[Catalog]) -> dict[str, list[int]]:
    """group -> [strings, exact TM hits, hits with the same English, the same ignoring case and stop],
    for catalogs in ``PROJECTS`` order (the TM's first)."""
    memory: dict[str, str] = {}  # the TM's English per source key, the first project's (as the TM keeps it)
    for catalog in catalogs:
        if catalog.project.group == "tm":
            for zh, en in catalog.pairs:
                memory.setdefault(match_key(zh), en)
    counts: dict[str, list[int]] = {}
    seen: set[str] = set()
    for catalog in catalogs:
        project = catalog.project
        if project.group == "tm":
            continue
        kept = cap([p for p in catalog.pairs if match_key(p[0]) not in seen], project.name, project.cap)
        seen.update(match_key(zh) for zh, _ in kept)
        hits = [(en, memory[match_key(zh)]) for zh, en in kept if match_key(zh) in memory]
        row = counts.setdefault(project.group, [0, 0, 0, 0])
        row[0] += len(kept)
        row[1] += len(hits)
        row[2] += sum(own == stored for own, stored in hits)
        row[3] += sum(loose(own) == loose(stored) for own, stored in hits)
    return counts


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cache", type=Path, default=None, help="keep the downloaded archives here")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="mtserve-software-") as folder:
        cache = args.cache or Path(folder)
        counts = agreement([read_project(project, download(project, cache)) for project in PROJECTS])
    print("| group | strings | the TM holds the source | same English | same ignoring case and final stop |")
    print("|---|---|---|---|---|")
    for group, (strings, hits, same, similar) in counts.items():
        print(f"| {group} | {strings} | {hits} ({hits / strings:.0%}) | {same} ({same / max(hits, 1):.0%}) "
              f"| {similar} ({similar / max(hits, 1):.0%}) |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
