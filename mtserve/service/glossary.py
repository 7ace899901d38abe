"""Glossaries (terminology): which source terms must come out as which target terms.

Three sources feed a request's glossary, later ones winning on the same term:

1. the server-wide glossary file (setting ``glossary_file``, TSV or JSON),
2. a named glossary from the store, by id (``glossary_id``; created with
   DeepL's ``POST /v2/glossaries`` or ``mtserve glossary add``), if its
   language pair is the request's (``GlossaryStore.for_pair``),
3. the request's own ``glossary`` object.

Only the entries whose term occurs in a segment reach the prompt
(``matching_entries``), so a 5,000-entry glossary costs a sentence nothing
but the two terms it really contains, and segments without terms keep
sharing the cache with glossary-free requests.

The store keeps named glossaries in SQLite under ``$MTSERVE_HOME`` with the
shape DeepL's ``/v2/glossaries`` has: id, name, language pair, entries,
creation time.
"""

from __future__ import annotations

import csv
import io
import json
import re
import sqlite3
import threading
import uuid
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Iterable, Mapping

MAX_TERM_CHARS = 200
ENTRY_FORMATS = ("tsv", "csv", "json")
ANY_LANGUAGE = "*"


class GlossaryError(ValueError):
    """Invalid glossary data or an unknown glossary; the message says what to fix."""


class UnknownGlossary(GlossaryError):
    """No stored glossary has that id (a 404 over HTTP)."""


class GlossaryMismatch(GlossaryError):
    """A stored glossary that does not fit the request's language pair (a 400 over HTTP)."""


@dataclass(frozen=True)
class Glossary:
    id: str
    name: str
    source_lang: str
    target_lang: str
    entries: dict[str, str]
    created: str  # ISO 8601, UTC

    @property
    def entry_count(self) -> int:
        return len(self.entries)

    def describe(self) -> dict:
        """The metadata without the entries, as a listing shows it."""
        return {"glossary_id": self.id, "name": self.name, "source_lang": self.source_lang,
                "target_lang": self.target_lang, "creation_time": self.created,
                "entry_count": self.entry_count, "ready": True}


# --- entries: validation and parsing ------------------------------------------------------
def validate_entries(entries: object, where: str = "glossary") -> dict[str, str]:
    """A clean {term: translation} dict, or a GlossaryError saying what is wrong."""
    if not isinstance(entries, Mapping):
        raise GlossaryError(f"{where} must be an object of term -> translation, "
                            'e.g. {"国际商业机器公司": "IBM"}')
    clean: dict[str, str] = {}
    for term, translation in entries.items():
        if not isinstance(term, str) or not isinstance(translation, str):
            raise GlossaryError(f"{where}: every term and translation must be a string; got {term!r}: {translation!r}")
        term, translation = term.strip(), translation.strip()
        if not term or not translation:
            raise GlossaryError(f"{where}: empty term or translation in {term!r}: {translation!r}")
        if len(term) > MAX_TERM_CHARS or len(translation) > MAX_TERM_CHARS:
            raise GlossaryError(f"{where}: {term[:40]!r} is longer than {MAX_TERM_CHARS} characters")
        if "\n" in term or "\n" in translation or "\t" in term or "\t" in translation:
            raise GlossaryError(f"{where}: {term[:40]!r} holds a tab or newline")
        clean[term] = translation
    return clean


def parse_entries(text: str, fmt: str = "tsv") -> dict[str, str]:
    """Entries from DeepL's formats: ``tsv`` (term<TAB>translation), ``csv``, or a ``json`` object."""
    if fmt not in ENTRY_FORMATS:
        raise GlossaryError(f"unknown entries format {fmt!r}; use one of {', '.join(ENTRY_FORMATS)}")
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GlossaryError(f"glossary entries are not valid JSON: {exc.msg} (line {exc.lineno})") from None
        except (ValueError, RecursionError):  # an integer past Python's digit limit; nesting past the stack
            raise GlossaryError("glossary entries must be one flat JSON object of term -> translation") \
                from None
        return validate_entries(data, "glossary entries")
    rows = csv.reader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ",",
                      quoting=csv.QUOTE_NONE if fmt == "tsv" else csv.QUOTE_MINIMAL)
    pairs: dict[str, str] = {}
    try:
        for number, row in enumerate(rows, 1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if len(row) < 2:
                raise GlossaryError(f"glossary entries, line {number}: expected term"
                                    f"{'<TAB>' if fmt == 'tsv' else ','}translation, got {row[0][:40]!r}")
            pairs[row[0]] = row[1]
    except csv.Error as exc:  # a field past csv's field_size_limit, an unclosed quote
        raise GlossaryError(f"glossary entries, line {rows.line_num}: {exc}; a term or translation may have "
                            f"at most {MAX_TERM_CHARS} characters") from None
    return validate_entries(pairs, "glossary entries")


def format_entries(entries: Mapping[str, str], fmt: str = "tsv") -> str:
    if fmt == "json":
        return json.dumps(dict(entries), ensure_ascii=False)
    out = io.StringIO()
    writer = csv.writer(out, delimiter="\t" if fmt == "tsv" else ",", lineterminator="\n",
                        quoting=csv.QUOTE_NONE if fmt == "tsv" else csv.QUOTE_MINIMAL)
    for term, translation in entries.items():
        writer.writerow([term, translation])
    return out.getvalue()


# --- matching --------------------------------------------------------------------------
_ALNUM = "A-Za-z0-9\u00C0-\u024F\u0370-\u03FF\u0400-\u04FF"
_SPACED_SCRIPT = re.compile(f"[{_ALNUM}]")


def _pattern(term: str) -> re.Pattern[str]:
    """Latin, Greek and Cyrillic terms match as whole words, case-insensitively; CJK terms anywhere.

    A word's edge is where the spaced-script letters stop, so "Mac" matches in
    "我用Mac电脑" but not in "Macintosh".
    """
    escaped = re.escape(term)
    if _SPACED_SCRIPT.search(term):
        left = f"(?<![{_ALNUM}])" if _SPACED_SCRIPT.match(term[0]) else ""
        right = f"(?![{_ALNUM}])" if _SPACED_SCRIPT.match(term[-1]) else ""
        return re.compile(left + escaped + right, re.IGNORECASE)
    return re.compile(escaped)


def matching_entries(entries: Mapping[str, str], text: str) -> dict[str, str]:
    """The entries whose term occurs in ``text``, longest first.

    A term found only inside a longer matched term does not count: with
    {"机器": "machine", "国际商业机器公司": "IBM"}, the text "国际商业机器公司" gets
    the IBM entry alone.
    """
    if not entries or not text:
        return {}
    taken: list[tuple[int, int]] = []
    found: dict[str, str] = {}
    for term in sorted(entries, key=lambda t: (-len(t), t)):
        if term not in text and term.lower() not in text.lower():
            continue
        spans = [(m.start(), m.end()) for m in _pattern(term).finditer(text)]
        free = [s for s in spans if not any(a <= s[0] and s[1] <= b for a, b in taken)]
        if free:
            found[term] = entries[term]
            taken.extend(free)
    return found


def term_in_output(translation: str, output: str) -> bool:
    """Whether the glossary's ``translation`` appears in ``output`` (case-insensitive for spaced scripts)."""
    return bool(_pattern(translation).search(output))


def canonical(entries: Mapping[str, str]) -> str:
    """A stable string for cache keys."""
    return json.dumps(sorted(entries.items()), ensure_ascii=False, separators=(",", ":")) if entries else ""


# --- the server-wide file ------------------------------------------------------------
@dataclass
class GlossaryFile:
    """The server-wide glossary: entries for any pair, or for one language pair.

    TSV lines are ``term<TAB>translation[<TAB>source_lang<TAB>target_lang]``
    (``#`` starts a comment; ``*`` or an empty column means any language).
    JSON is either a flat object {term: translation} for any pair, or a list of
    {"source": term, "target": translation, "source_lang"?, "target_lang"?}.
    """

    path: Path | None = None
    _entries: dict[tuple[str, str], dict[str, str]] = field(default_factory=dict)

    @classmethod
    def load(cls, path: str | Path) -> "GlossaryFile":
        path = Path(path).expanduser()
        if not path.is_file():
            raise GlossaryError(f"glossary file {path} does not exist; fix MTSERVE_GLOSSARY_FILE or create it")
        text = path.read_text(encoding="utf-8")
        glossary = cls(path)
        if path.suffix.lower() == ".json":
            glossary._load_json(text, path)
        else:
            glossary._load_tsv(text, path)
        return glossary

    def _add(self, term: str, translation: str, source: str, target: str, where: str) -> None:
        clean = validate_entries({term: translation}, where)
        key = (source.strip() or ANY_LANGUAGE, target.strip() or ANY_LANGUAGE)
        self._entries.setdefault(key, {}).update(clean)

    def _load_tsv(self, text: str, path: Path) -> None:
        for number, line in enumerate(text.splitlines(), 1):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            cols = line.split("\t")
            if len(cols) not in (2, 4):
                raise GlossaryError(f"{path}:{number}: expected term<TAB>translation"
                                    f"[<TAB>source_lang<TAB>target_lang], got {len(cols)} column(s)")
            source, target = (cols[2], cols[3]) if len(cols) == 4 else ("", "")
            self._add(cols[0], cols[1], source, target, f"{path}:{number}")

    def _load_json(self, text: str, path: Path) -> None:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GlossaryError(f"{path}: not valid JSON: {exc.msg} (line {exc.lineno})") from None
        if isinstance(data, dict):
            for term, translation in validate_entries(data, str(path)).items():
                self._add(term, translation, "", "", str(path))
            return
        if not isinstance(data, list):
            raise GlossaryError(f"{path}: expected an object or a list of entries")
        for number, item in enumerate(data, 1):
            if not isinstance(item, dict) or not isinstance(item.get("source"), str) \
                    or not isinstance(item.get("target"), str):
                raise GlossaryError(f"{path}: entry {number} needs string fields 'source' and 'target'")
            self._add(item["source"], item["target"], str(item.get("source_lang") or ""),
                      str(item.get("target_lang") or ""), f"{path} entry {number}")

    def entries_for(self, source: str, target: str) -> dict[str, str]:
        """Entries that apply to source->target; the more specific pair wins on the same term."""
        merged: dict[str, str] = {}
        for key in ((ANY_LANGUAGE, ANY_LANGUAGE), (source, ANY_LANGUAGE), (ANY_LANGUAGE, target), (source, target)):
            merged.update(self._entries.get(key, {}))
        return merged

    def __len__(self) -> int:
        return sum(len(v) for v in self._entries.values())


# --- the store of named glossaries ---------------------------------------------------------
_SCHEMA = """
CREATE TABLE IF NOT EXISTS glossaries (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL, created TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS entries (
    glossary_id TEXT NOT NULL REFERENCES glossaries(id) ON DELETE CASCADE,
    position INTEGER NOT NULL, term TEXT NOT NULL, translation TEXT NOT NULL,
    PRIMARY KEY (glossary_id, term)
);
"""


class GlossaryStore:
    """Named glossaries, persisted in one SQLite file. Safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._created = False  # the file and its tables are made on first use, not by the constructor

    def _connect(self) -> sqlite3.Connection:
        if not self._created:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(self.path, timeout=10)
        db.execute("PRAGMA foreign_keys = ON")
        if not self._created:
            db.executescript(_SCHEMA)
            self._created = True
        return db

    def create(self, name: str, source: str, target: str, entries: Mapping[str, str]) -> Glossary:
        if not isinstance(name, str) or not name.strip():
            raise GlossaryError("a glossary needs a non-empty name")
        for role, code in (("source_lang", source), ("target_lang", target)):
            if not isinstance(code, str) or not re.fullmatch(r"[a-z]{2,3}(?:-[A-Za-z]{2,4})?", code):
                raise GlossaryError(f"{role} must be a language code such as 'zh' or 'en', got {code!r}")
        clean = validate_entries(entries, "entries")
        if not clean:
            raise GlossaryError("a glossary needs at least one entry")
        glossary = Glossary(uuid.uuid4().hex, name.strip(), source, target, clean,
                            datetime.now(timezone.utc).isoformat(timespec="seconds"))
        with self._lock, self._connect() as db:
            db.execute("INSERT INTO glossaries VALUES (?, ?, ?, ?, ?)",
                       (glossary.id, glossary.name, source, target, glossary.created))
            db.executemany("INSERT INTO entries VALUES (?, ?, ?, ?)",
                           [(glossary.id, i, t, tr) for i, (t, tr) in enumerate(clean.items())])
        return glossary

    def get(self, glossary_id: str) -> Glossary:
        with self._lock, self._connect() as db:
            row = db.execute("SELECT id, name, source_lang, target_lang, created FROM glossaries WHERE id = ?",
                             (glossary_id,)).fetchone()
            if row is None:
                raise UnknownGlossary(f"no glossary with id {glossary_id!r}; list the ids with "
                                      "`mtserve glossary list` or GET /v2/glossaries")
            entries = db.execute("SELECT term, translation FROM entries WHERE glossary_id = ? ORDER BY position",
                                 (glossary_id,)).fetchall()
        return Glossary(row[0], row[1], row[2], row[3], dict(entries), row[4])

    def entries(self, glossary_id: str) -> dict[str, str]:
        return self.get(glossary_id).entries

    def for_pair(self, glossary_id: str, source: str, target: str) -> dict[str, str]:
        """The entries of glossary ``glossary_id`` for a request from ``source`` to ``target``.

        The rule DeepL has: a glossary serves its own language pair only, and
        only a request that names its source (``auto`` is refused, since the
        detected language of each text could differ). Raises UnknownGlossary
        or GlossaryMismatch, with what to send instead.
        """
        found = self.get(glossary_id)
        pair = f"{found.source_lang}->{found.target_lang}"
        which = f"glossary {found.id!r} ({found.name!r})"
        if source == "auto":
            raise GlossaryMismatch(f"a glossary needs an explicit source language: {which} is for {pair}, "
                                   f"so send source {found.source_lang!r} instead of 'auto'")
        if (found.source_lang, found.target_lang) != (source, target):
            raise GlossaryMismatch(f"{which} is for {pair}, but the request is {source}->{target}; "
                                   f"translate {pair} with it, or use a glossary made for {source}->{target}")
        return found.entries

    def list(self) -> list[Glossary]:
        with self._lock, self._connect() as db:
            ids = [r[0] for r in db.execute("SELECT id FROM glossaries ORDER BY created, name")]
        return [self.get(i) for i in ids]

    def delete(self, glossary_id: str) -> bool:
        """True if it existed."""
        with self._lock, self._connect() as db:
            deleted = db.execute("DELETE FROM glossaries WHERE id = ?", (glossary_id,)).rowcount
        return bool(deleted)


def merge(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """Later layers win on the same term."""
    merged: dict[str, str] = {}
    for layer in layers:
        if layer:
            merged.update(layer)
    return merged


def terms_for_prompt(entries: Mapping[str, str]) -> Iterable[tuple[str, str]]:
    return sorted(entries.items(), key=lambda kv: (-len(kv[0]), kv[0]))
