"""Evaluation data: source/reference pairs, the built-in sets, and a fixed dev/test split.

A pair's split is a pure function of its id (a salted SHA-256), so it never
changes between runs, machines or releases, and adding sentences to a set does
not move the old ones across. Tune on ``dev``; report on ``test``.

Built-in sets:

- ``hsk``: the 4,354 graded sentences of the ``hsk-sentences-audio`` package
  (HSK 3.0 levels 1-6, Simplified and Traditional Chinese with English
  translations; data CC-BY-SA-4.0, https://github.com/no7z/hsk-sentences-audio).
  It serves zh->en, zt->en, en->zh and en->zt. Its unusable references are
  dropped: 65 are the literal word "placeholder" and a few still hold Chinese.
- ``hsk-paragraphs``: the same HSK sentences, consecutive ones of one level and one split joined
  into paragraphs of 2, 3 and 4 sentences in turn (zh->en and the other HSK directions), to
  measure segments of several sentences (``segment_budget_chars``). A paragraph is in the split
  of its sentences: its dev half holds only dev sentences.
- ``context``: 27 Chinese sentences and UI strings whose translation depends on what
  surrounds them, each with a context line (sent as the request's ``context``) and
  the reference for that reading, most of them twice with two readings, written for
  mtserve (``data/context.tsv``), zh->en. Each has an ``expect`` pattern the right
  reading matches. Run it with and without ``--no-context``.
- ``everyday``: 60 short everyday English sentences with Japanese and German
  translations, written for mtserve (see ``data/everyday.tsv``), for ja->en,
  de->en, en->ja and en->de. It is small and only reported, never tuned on.
- ``instructions``: questions, commands and prompt injections (zh<->en) whose
  right output is their translation; the report counts what was answered,
  refused or commented on instead.
- ``software``: user-interface strings of open-source Python packages, from
  their own gettext catalogs (zh->en: the Chinese msgstr as source, the
  English msgid as reference; ``data/SOFTWARE_SOURCES.md``). Its dev and test
  splits are by project, not by hash, and ``data/software-tm.tsv`` is a
  translation memory of other projects for ``mtserve eval --tm software``.
  Built by ``python -m mtserve.eval.build_software``.
"""

from __future__ import annotations

import csv
import hashlib
import json
import random
import re
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Iterable

SPLITS = ("dev", "test", "all")
SPLIT_SALT = "mtserve-eval-split-v1"
DEV_PERCENT = 50
DATA_DIR = Path(__file__).with_name("data")

HSK_ATTRIBUTION = (
    "HSK sentences from the hsk-sentences-audio package "
    "(https://github.com/no7z/hsk-sentences-audio), CC-BY-SA-4.0."
)
EVERYDAY_ATTRIBUTION = "The mtserve everyday set: sentences and translations written for mtserve."


class DatasetError(ValueError):
    """The data cannot be read or does not fit the request; the message says why."""


@dataclass(frozen=True)
class EvalPair:
    id: str
    source: str
    reference: str
    group: str = ""  # reported separately, e.g. "hsk4"
    context: str = ""  # sent as the request's context: informs the translation, is not translated
    expect: str = ""  # a regular expression (case-insensitive) the right reading matches, if any


@dataclass
class EvalSet:
    name: str
    source_lang: str
    target_lang: str
    pairs: list[EvalPair]
    split: str = "all"
    attribution: str = ""
    notes: list[str] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.pairs)

    def describe(self) -> dict:
        return {
            "name": self.name, "source": self.source_lang, "target": self.target_lang,
            "split": self.split, "size": len(self.pairs), "attribution": self.attribution,
            "notes": self.notes,
        }


# --- the split ---------------------------------------------------------------------
def split_of(pair_id: str) -> str:
    """'dev' or 'test', fixed forever by the id."""
    digest = hashlib.sha256(f"{SPLIT_SALT}:{pair_id}".encode()).hexdigest()
    return "dev" if int(digest[:8], 16) % 100 < DEV_PERCENT else "test"


def select(pairs: Iterable[EvalPair], split: str) -> list[EvalPair]:
    if split not in SPLITS:
        raise DatasetError(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    return [p for p in pairs if split == "all" or split_of(p.id) == split]


def sample(pairs: list[EvalPair], limit: int | None, seed: int = 0) -> list[EvalPair]:
    """``limit`` pairs drawn with ``random.Random(seed)``, kept in the set's order."""
    if limit is None or limit >= len(pairs):
        return list(pairs)
    chosen = set(random.Random(seed).sample(range(len(pairs)), limit))
    return [p for i, p in enumerate(pairs) if i in chosen]


def parse_levels(spec: str | None) -> set[int] | None:
    """'4-6' -> {4, 5, 6}; '1,3' -> {1, 3}; None or '' -> every level."""
    if not spec:
        return None
    levels: set[int] = set()
    for part in spec.split(","):
        part = part.strip()
        lo, sep, hi = part.partition("-")
        try:
            levels.update(range(int(lo), int(hi) + 1) if sep else {int(part)})
        except ValueError:
            raise DatasetError(f"levels must look like '4-6' or '1,3', got {spec!r}") from None
    return levels


# --- the HSK set ---------------------------------------------------------------------
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff]")
HSK_DIRECTIONS = {("zh", "en"), ("zt", "en"), ("en", "zh"), ("en", "zt")}


def hsk_usable(record: dict) -> bool:
    english = record["translation"]["en"].strip()
    return bool(english) and not english.lower().startswith("placeholder") and not _CJK.search(english)


def load_hsk(source: str = "zh", target: str = "en", split: str = "all",
             levels: set[int] | None = None) -> EvalSet:
    if (source, target) not in HSK_DIRECTIONS:
        pairs = ", ".join(f"{s}->{t}" for s, t in sorted(HSK_DIRECTIONS))
        raise DatasetError(f"the hsk set has no {source}->{target} direction; it has {pairs}")
    try:
        from hsk_sentences_audio import load_sentences
    except ImportError:
        raise DatasetError("the hsk set needs the hsk-sentences-audio package, in the eval extra: "
                           "pip install 'mtserve[eval]' (the other built-in sets need nothing more: "
                           "--dataset prose, everyday, software, context, instructions)") from None
    records = load_sentences()
    usable = [r for r in records if hsk_usable(r)]
    chinese_field = "traditional" if "zt" in (source, target) else "chinese"
    pairs = []
    for r in usable:
        if levels is not None and r["hsk_level"] not in levels:
            continue
        chinese, english = r[chinese_field].strip(), r["translation"]["en"].strip()
        src, ref = (chinese, english) if target == "en" else (english, chinese)
        pairs.append(EvalPair(id=r["id"], source=src, reference=ref, group=f"hsk{r['hsk_level']}"))
    notes = [f"{len(records) - len(usable)} of {len(records)} records dropped: placeholder or non-English reference"]
    if levels is not None:
        notes.append("levels " + ",".join(str(v) for v in sorted(levels)))
    return EvalSet("hsk", source, target, select(pairs, split), split, HSK_ATTRIBUTION, notes)


PARAGRAPH_SIZES = (2, 3, 4)  # sentences per paragraph, in turn
_SENTENCE_END = re.compile(r"[.!?。！？…][\"'”’」』)）]*$")


def load_hsk_paragraphs(source: str = "zh", target: str = "en", split: str = "all",
                        levels: set[int] | None = None) -> EvalSet:
    """Consecutive HSK sentences of one level and one split, joined into paragraphs (deterministic).

    Only sentences that end with a sentence mark on both sides are used, so that a paragraph of n
    sentences is n sentences to the segmenter too. Chinese is joined with nothing between the
    sentences, English with one space.
    """
    sentences = load_hsk(source, target, "all", levels)
    joiner = {lang: "" if lang in ("zh", "zt") else " " for lang in (source, target)}
    pairs: list[EvalPair] = []
    for part in (("dev", "test") if split == "all" else (split,)):
        by_level: dict[str, list[EvalPair]] = {}
        for pair in select(sentences.pairs, part):
            if _SENTENCE_END.search(pair.source) and _SENTENCE_END.search(pair.reference):
                by_level.setdefault(pair.group, []).append(pair)
        for group, members in by_level.items():
            at, turn = 0, 0
            while at + PARAGRAPH_SIZES[turn % len(PARAGRAPH_SIZES)] <= len(members):
                chunk = members[at:at + PARAGRAPH_SIZES[turn % len(PARAGRAPH_SIZES)]]
                at, turn = at + len(chunk), turn + 1
                pairs.append(EvalPair(id="+".join(p.id for p in chunk),
                                      source=joiner[source].join(p.source for p in chunk),
                                      reference=joiner[target].join(p.reference for p in chunk),
                                      group=f"{group}x{len(chunk)}"))
    notes = sentences.notes + [f"paragraphs of {', '.join(map(str, PARAGRAPH_SIZES))} consecutive sentences "
                               "of one level and one split"]
    return EvalSet("hsk-paragraphs", source, target, pairs, split, HSK_ATTRIBUTION, notes)


def _builtin_rows(filename: str) -> list[dict[str, str]]:
    """A built-in set's rows (a commented TSV with a header under DATA_DIR), each by column name."""
    header, *body = _read_tsv_rows(DATA_DIR / filename, comments=True)
    return [dict(zip(header, row)) for row in body]


# --- the everyday set ----------------------------------------------------------------
EVERYDAY_LANGS = ("en", "ja", "de")


def load_everyday(source: str, target: str, split: str = "all") -> EvalSet:
    if source == target or {source, target} - set(EVERYDAY_LANGS) or "en" not in (source, target):
        raise DatasetError(f"the everyday set pairs English with ja or de; {source}->{target} is not one of them")
    pairs = [EvalPair(id=row["id"], source=row[source], reference=row[target], group=row["group"])
             for row in _builtin_rows("everyday.tsv")]
    return EvalSet("everyday", source, target, select(pairs, split), split, EVERYDAY_ATTRIBUTION)


# --- the instruction-like set -------------------------------------------------------------
INSTRUCTIONS_ATTRIBUTION = ("The mtserve instruction-like set: questions, commands and requests written for "
                            "mtserve, whose correct output is their translation.")


def load_instructions(source: str, target: str, split: str = "all") -> EvalSet:
    """Questions, commands and prompt injections: an engine that only translates gets them all right."""
    if (source, target) not in (("zh", "en"), ("en", "zh")):
        raise DatasetError(f"the instructions set is zh<->en; {source}->{target} is not one of them")
    pairs = [EvalPair(id=row["id"], source=row[source], reference=row[target], group=row["group"])
             for row in _builtin_rows("instructions.tsv")]
    return EvalSet("instructions", source, target, select(pairs, split), split, INSTRUCTIONS_ATTRIBUTION)


# --- the software-strings set -------------------------------------------------------------
SOFTWARE_TM = DATA_DIR / "software-tm.tsv"
SOFTWARE_ATTRIBUTION = ("User-interface strings from the gettext catalogs of open-source Python packages "
                        "(BSD, MIT and Apache-2.0 licensed); projects, versions and licences in "
                        "mtserve/eval/data/SOFTWARE_SOURCES.md.")


def load_software(source: str = "zh", target: str = "en", split: str = "dev") -> EvalSet:
    """UI strings, grouped by project; dev and test are fixed lists of projects, and none of their
    sources is in the set's translation memory (``SOFTWARE_TM``) exactly."""
    if (source, target) != ("zh", "en"):
        raise DatasetError(f"the software set is zh->en (Chinese UI strings, English originals); "
                           f"{source}->{target} is not it")
    if split not in SPLITS:
        raise DatasetError(f"unknown split {split!r}; use one of: {', '.join(SPLITS)}")
    pairs = [EvalPair(id=row["id"], source=row["zh"], reference=row["en"], group=row["project"])
             for row in _builtin_rows("software.tsv") if split in ("all", row["split"])]
    projects = len({p.group for p in pairs})
    notes = [f"{projects} projects; split by project (the TM, mtserve eval --tm software, holds others)"]
    return EvalSet("software", source, target, pairs, split, SOFTWARE_ATTRIBUTION, notes)


# --- the context set ----------------------------------------------------------------------
CONTEXT_ATTRIBUTION = ("The mtserve context set: ambiguous Chinese sentences and UI strings with a context line "
                       "and the reference for its reading, written for mtserve.")


def load_context(source: str, target: str, split: str = "all") -> EvalSet:
    """Sentences whose right translation needs their context: with it, the ``expect`` patterns match."""
    if (source, target) != ("zh", "en"):
        raise DatasetError(f"the context set is zh->en; {source}->{target} is not it")
    pairs = [EvalPair(id=row["id"], source=row["zh"], reference=row["en"], group=row["group"],
                      context=row["context"], expect=row["expect"]) for row in _builtin_rows("context.tsv")]
    return EvalSet("context", source, target, select(pairs, split), split, CONTEXT_ATTRIBUTION)


# --- the prose set --------------------------------------------------------------------------------
PROSE_ATTRIBUTION = ("The mtserve prose set: short passages of connected Chinese sentences whose later sentences "
                     "need the earlier ones, written for mtserve.")


def load_prose(source: str, target: str, split: str = "all") -> EvalSet:
    """Passages whose later sentence leaves out what an earlier one said (a subject, an object, a time,
    a plural): translated sentence by sentence it loses it, and the ``expect`` pattern does not match."""
    if (source, target) != ("zh", "en"):
        raise DatasetError(f"the prose set is zh->en; {source}->{target} is not it")
    pairs = [EvalPair(id=row["id"], source=row["zh"], reference=row["en"], group=row["group"],
                      expect=row["expect"]) for row in _builtin_rows("prose.tsv")]
    return EvalSet("prose", source, target, select(pairs, split), split, PROSE_ATTRIBUTION)


BUILTIN = {"hsk": "HSK 1-6 (zh, zt <-> en)",
           "hsk-paragraphs": "HSK sentences joined into paragraphs of 2-4 (zh, zt <-> en)",
           "everyday": "everyday sentences (ja, de <-> en)",
           "instructions": "questions, commands and prompt injections to translate, never obey (zh <-> en)",
           "software": "UI strings of open-source packages, split by project (zh -> en; --tm software)",
           "context": "ambiguous sentences with a context line (zh -> en)",
           "prose": "passages whose later sentences need the earlier ones (zh -> en)"}


# The built-in sets without HSK levels, by name.
LEVELLESS = {"everyday": load_everyday, "instructions": load_instructions, "software": load_software,
             "context": load_context, "prose": load_prose}


def load_builtin(name: str, source: str, target: str, split: str = "all",
                 levels: set[int] | None = None) -> EvalSet:
    if name == "hsk":
        return load_hsk(source, target, split, levels)
    if name == "hsk-paragraphs":
        return load_hsk_paragraphs(source, target, split, levels)
    loader = LEVELLESS.get(name)
    if loader is not None:
        if levels:
            raise DatasetError("--levels applies to the hsk set only")
        return loader(source, target, split)
    raise DatasetError(f"unknown dataset {name!r}; built in: {', '.join(BUILTIN)}, or give a TSV/JSONL file")


# --- files ---------------------------------------------------------------------------------
def _read_tsv_rows(path: Path, comments: bool = False) -> list[list[str]]:
    with path.open(encoding="utf-8", newline="") as handle:
        lines = (line for line in handle if not (comments and line.startswith("#")))
        return [row for row in csv.reader(lines, delimiter="\t", quoting=csv.QUOTE_NONE) if row and any(row)]


def read_pairs(path: str | Path) -> list[EvalPair]:
    """Pairs from a TSV or JSONL file.

    TSV: ``source<TAB>reference[<TAB>group]`` per line; a first line that names
    ``source`` and ``reference`` (or ``src``/``ref``) is a header, and may name
    ``id``, ``group``, ``context`` and ``expect`` columns too, in any order. JSONL:
    one object per line with ``source`` and ``reference`` (aliases
    ``src``/``ref``), and optional ``id``, ``group``, ``context`` (sent as the
    request's context) and ``expect`` (a pattern the right reading matches).
    Lines without an id get their line number.
    """
    path = Path(path)
    if not path.is_file():
        raise DatasetError(f"no such file: {path}")
    suffix = path.suffix.lower()
    pairs: list[EvalPair] = []
    if suffix in (".jsonl", ".ndjson", ".json"):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DatasetError(f"{path}:{number}: not a JSON object ({exc.msg})") from None
            source = obj.get("source", obj.get("src")) if isinstance(obj, dict) else None
            reference = obj.get("reference", obj.get("ref")) if isinstance(obj, dict) else None
            if not isinstance(source, str) or not isinstance(reference, str):
                raise DatasetError(f"{path}:{number}: needs string fields 'source' and 'reference'")
            extra = {name: obj.get(name) for name in ("context", "expect")}
            if not all(value is None or isinstance(value, str) for value in extra.values()):
                raise DatasetError(f"{path}:{number}: 'context' and 'expect' must be strings")
            pairs.append(EvalPair(str(obj.get("id", number)), source.strip(), reference.strip(),
                                  str(obj.get("group", "")), (extra["context"] or "").strip(),
                                  _pattern(extra["expect"] or "", f"{path}:{number}")))
    else:
        rows = _read_tsv_rows(path)
        names = [c.strip().lower() for c in rows[0]] if rows else []
        names = [{"src": "source", "ref": "reference"}.get(n, n) for n in names]
        col = {"source": 0, "reference": 1, "group": 2}
        if {"source", "reference"} <= set(names):
            col = {name: i for i, name in enumerate(names)}
            rows = rows[1:]
        for number, row in enumerate(rows, 1):
            if len(row) < 2:
                raise DatasetError(f"{path}: row {number} has {len(row)} column(s); "
                                   "each row needs source<TAB>reference")

            def cell(name: str) -> str:
                return row[col[name]].strip() if name in col and col[name] < len(row) else ""

            pairs.append(EvalPair(cell("id") or str(number), cell("source"), cell("reference"), cell("group"),
                                  cell("context"), _pattern(cell("expect"), f"{path}: row {number}")))
    if not pairs:
        raise DatasetError(f"{path} holds no pairs")
    return pairs


def _pattern(expect: str, where: str) -> str:
    """An ``expect`` pattern, checked now: a broken one is a DatasetError, not a failure mid-run."""
    try:
        re.compile(expect)
    except re.error as exc:
        raise DatasetError(f"{where}: 'expect' is not a regular expression ({exc})") from None
    return expect


def without_context(evalset: EvalSet) -> EvalSet:
    """The same set with every pair's context left out (the baseline of a context run)."""
    pairs = [replace(p, context="") for p in evalset.pairs]
    return EvalSet(evalset.name, evalset.source_lang, evalset.target_lang, pairs, evalset.split,
                   evalset.attribution, evalset.notes + ["contexts left out (--no-context)"])


def with_context(evalset: EvalSet, context: str) -> EvalSet:
    """The same set with ``context`` sent for every pair that has none of its own: what a line
    such as "user-interface strings of a software application" adds on its own."""
    pairs = [p if p.context else replace(p, context=context) for p in evalset.pairs]
    return EvalSet(evalset.name, evalset.source_lang, evalset.target_lang, pairs, evalset.split,
                   evalset.attribution, evalset.notes + [f"context for every pair without one: {context!r}"])


def load_file(path: str | Path, source: str, target: str, split: str = "all") -> EvalSet:
    pairs = read_pairs(path)
    return EvalSet(Path(path).name, source, target, select(pairs, split), split)
