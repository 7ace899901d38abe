"""Translation memory: earlier translations, looked up exactly or by similarity.

One SQLite file (``$MTSERVE_HOME/tm.sqlite3``) holds segment pairs: source,
target, language pair, origin (the file, user or key that brought them), the
time they came, an owner and a ``suggestion`` flag.

- **Exact lookup** compares a key, ``mtserve.text.punctuation.match_key``: the
  source with punctuation in one width and only word-separating spaces, so
  "确定，取消" finds "确定, 取消". It is an index lookup.
- **Fuzzy lookup** finds the k most similar sources. An SQLite FTS5 index of
  each key's character bigrams pre-selects candidates that share the query's
  rarest bigrams (bm25 order, ``candidates`` of them), and ``rapidfuzz``'s
  ratio scores and ranks them (0-100, as CAT tools show a "75% match").
  Nothing ever scans the table in Python. Bigrams, not FTS5's trigram
  tokenizer: Chinese words are mostly two characters, and "打开这个文件"
  shares no trigram with "打开文件" but two bigrams. The bigrams are written
  as hex tokens (``mtserve_grams``, a function the connection registers), so
  FTS5's tokenizer never splits them at punctuation. A Python whose SQLite
  lacks FTS5 cannot build the index: the store then refuses with a message
  that says so.
- **Ownership**: ``owner`` is None for the operator's entries (the CLI, the
  server-wide TM) or an API key's id. A key sees its own entries and the
  operator's, and deletes only its own; a caller without a key sees the
  operator's; the operator's tools pass ``ALL_OWNERS`` to see and manage all.
- **Suggestions** (LibreTranslate's ``/suggest``) are stored with
  ``suggestion`` set and take part in no lookup until the operator accepts
  them (``accept``, ``mtserve tm accept``).

Safe to share between threads: one connection, behind a lock (WAL mode, so a
CLI import and a running server can use the file at once).
"""

from __future__ import annotations

import re
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mtserve.text.punctuation import match_key

ALL_OWNERS = "*"  # the operator's view: every owner's entries (key ids are hex, never "*")
MAX_SEGMENT_CHARS = 5000
DEFAULT_CANDIDATES = 50
QUERY_GRAMS = 24  # the rarest bigrams of a query that pre-select candidates

_LANGUAGE = re.compile(r"[a-z]{2,3}")
_TRADITIONAL = {"hant", "tw", "hk", "mo"}


class TMError(ValueError):
    """Bad translation-memory input or an unusable store; the message says what to fix."""


@dataclass(frozen=True)
class TMEntry:
    id: int
    source: str
    target: str
    source_lang: str
    target_lang: str
    origin: str
    owner: str | None
    created: str  # ISO 8601, UTC
    suggestion: bool = False


@dataclass(frozen=True)
class TMMatch:
    entry: TMEntry
    score: float  # rapidfuzz ratio of the match keys, 0-100 (100: the same key)


@dataclass
class AddReport:
    """What an import did: entries added, duplicates already there, and entries skipped, by reason."""

    added: int = 0
    duplicates: int = 0
    skipped: dict[str, int] = field(default_factory=dict)

    def skip(self, reason: str, count: int = 1) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + count

    def describe(self) -> str:
        parts = [f"{self.added} added", f"{self.duplicates} already there"]
        parts += [f"{n} skipped: {reason}" for reason, n in sorted(self.skipped.items())]
        return ", ".join(parts)


@dataclass(frozen=True)
class PairStats:
    source_lang: str
    target_lang: str
    entries: int
    suggestions: int
    origins: int


def language_code(code: str, role: str = "language") -> str:
    """An mtserve code for a tag as TMX, gettext or a user writes it: zh-CN -> zh, zh_TW, zh-Hant -> zt."""
    if not isinstance(code, str) or not code.strip():
        raise TMError(f"{role} is missing; give a language code such as 'zh' or 'en'")
    base, *rest = re.split(r"[-_@.]", code.strip().lower())
    if base == "zh" and _TRADITIONAL & set(rest):
        return "zt"
    if not _LANGUAGE.fullmatch(base):
        raise TMError(f"{role} {code!r} is not a language code such as 'zh', 'en' or 'zh-CN'")
    return base


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _fts5_available() -> bool:
    try:
        db = sqlite3.connect(":memory:")
        db.execute("CREATE VIRTUAL TABLE probe USING fts5(x)")
        db.close()
        return True
    except sqlite3.OperationalError:
        return False


_SCHEMA = """
CREATE TABLE IF NOT EXISTS tm (
    id INTEGER PRIMARY KEY,
    source TEXT NOT NULL, target TEXT NOT NULL,
    source_lang TEXT NOT NULL, target_lang TEXT NOT NULL,
    key TEXT NOT NULL,                       -- match_key(source): exact lookups and the fuzzy index
    origin TEXT NOT NULL DEFAULT '',         -- the file, user or key the entry came from
    owner TEXT,                              -- an API key's id; NULL: the operator's
    created TEXT NOT NULL,
    suggestion INTEGER NOT NULL DEFAULT 0    -- from /suggest, not used until accepted
);
CREATE INDEX IF NOT EXISTS tm_exact ON tm (source_lang, target_lang, key);
CREATE INDEX IF NOT EXISTS tm_origin ON tm (origin);
CREATE UNIQUE INDEX IF NOT EXISTS tm_unique
    ON tm (source_lang, target_lang, key, target, ifnull(owner, ''), suggestion);
-- the fuzzy index: each key's character bigrams as hex tokens; contentless, since nothing reads it back
CREATE VIRTUAL TABLE IF NOT EXISTS tm_fts USING fts5 (grams, content='');
CREATE VIRTUAL TABLE IF NOT EXISTS tm_vocab USING fts5vocab (tm_fts, row);
CREATE TRIGGER IF NOT EXISTS tm_fts_insert AFTER INSERT ON tm BEGIN
    INSERT INTO tm_fts (rowid, grams) VALUES (new.id, mtserve_grams(new.key));
END;
CREATE TRIGGER IF NOT EXISTS tm_fts_delete AFTER DELETE ON tm BEGIN
    INSERT INTO tm_fts (tm_fts, rowid, grams) VALUES ('delete', old.id, mtserve_grams(old.key));
END;
"""
_COLUMNS = "id, source, target, source_lang, target_lang, origin, owner, created, suggestion"


def _entry(row: Sequence) -> TMEntry:
    return TMEntry(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], bool(row[8]))


def _visible(owner: str | None) -> tuple[str, tuple]:
    """The SQL condition (and its parameters) for the entries ``owner`` may see."""
    if owner == ALL_OWNERS:
        return "1", ()
    if owner is None:
        return "owner IS NULL", ()
    return "(owner IS NULL OR owner = ?)", (owner,)


def _owned(owner: str | None) -> tuple[str, tuple]:
    """The SQL condition for the entries ``owner`` may delete: a key its own, the operator all."""
    if owner == ALL_OWNERS:
        return "1", ()
    if owner is None:
        return "owner IS NULL", ()
    return "owner = ?", (owner,)


def gram_tokens(key: str) -> list[str]:
    """The distinct character bigrams of ``key`` (case-folded; a one-character key is its own gram), in hex.

    Each character is six hex digits, so a token is one word to any FTS5
    tokenizer and can hold punctuation, spaces or quotes.
    """
    folded = key.lower()
    grams = [folded[i:i + 2] for i in range(len(folded) - 1)] or ([folded] if folded else [])
    return list(dict.fromkeys("".join(f"{ord(ch):06x}" for ch in gram) for gram in grams))


def _index_text(key: str) -> str:
    return " ".join(gram_tokens(key))


class TranslationMemory:
    """Segment pairs in one SQLite file, with an exact and a fuzzy index. Safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None  # opened (and the file made) on first use

    # --- the connection ------------------------------------------------------------------
    def _conn(self) -> sqlite3.Connection:
        if self._db is None:
            if not _fts5_available():
                raise TMError(f"this Python's SQLite {sqlite3.sqlite_version} was built without FTS5, so the "
                              "translation memory's fuzzy index cannot be built; use a Python whose sqlite3 "
                              "module has FTS5 (python.org and distribution builds do)")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)
            db.create_function("mtserve_grams", 1, _index_text, deterministic=True)
            db.execute("PRAGMA journal_mode = WAL")
            db.executescript(_SCHEMA)
            self._db = db
        return self._db

    def close(self) -> None:
        with self._lock:
            if self._db is not None:
                self._db.close()
                self._db = None

    # --- writing -------------------------------------------------------------------------
    def add(self, pairs: Iterable[tuple[str, str]], source_lang: str, target_lang: str, origin: str = "",
            owner: str | None = None, suggestion: bool = False, report: AddReport | None = None) -> AddReport:
        """Store (source, target) pairs; empty, over-long and duplicate pairs are counted, not stored."""
        if owner == ALL_OWNERS:
            raise TMError(f"{ALL_OWNERS!r} is not an owner; entries belong to a key id or to the operator (None)")
        source_lang = language_code(source_lang, "source language")
        target_lang = language_code(target_lang, "target language")
        report = report or AddReport()
        created = _now()
        rows = []
        for source, target in pairs:
            source, target = (source or "").strip(), (target or "").strip()
            if not source or not target:
                report.skip("empty source or target")
            elif len(source) > MAX_SEGMENT_CHARS or len(target) > MAX_SEGMENT_CHARS:
                report.skip(f"longer than {MAX_SEGMENT_CHARS} characters")
            else:
                rows.append((source, target, source_lang, target_lang, match_key(source), origin, owner,
                             created, int(suggestion)))
        with self._lock:
            db = self._conn()
            with db:  # one transaction
                db.execute("BEGIN")
                added = db.executemany("INSERT OR IGNORE INTO tm (source, target, source_lang, target_lang, key, origin, "
                               "owner, created, suggestion) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows).rowcount
        report.added += added
        report.duplicates += len(rows) - added
        return report

    def remove(self, *, origin: str | None = None, ids: Iterable[int] | None = None, everything: bool = False,
               owner: str | None = ALL_OWNERS) -> int:
        """Delete by origin, by id, or everything the caller owns; returns how many went."""
        if sum((origin is not None, ids is not None, everything)) != 1:
            raise TMError("remove needs exactly one of: an origin, entry ids, or everything")
        condition, params = _owned(owner)
        if origin is not None:
            condition, params = f"{condition} AND origin = ?", (*params, origin)
        elif ids is not None:
            wanted = [int(i) for i in ids]
            if not wanted:
                return 0
            condition = f"{condition} AND id IN ({', '.join('?' * len(wanted))})"
            params = (*params, *wanted)
        with self._lock:
            db = self._conn()
            with db:
                db.execute("BEGIN")
                return db.execute(f"DELETE FROM tm WHERE {condition}", params).rowcount

    def accept(self, ids: Iterable[int] | None = None) -> int:
        """Turn suggestions (all, or those ``ids``) into TM entries; returns how many were accepted.

        A suggestion the TM already holds as an entry is dropped, not doubled.
        """
        condition, params = "suggestion = 1", ()
        if ids is not None:
            wanted = [int(i) for i in ids]
            if not wanted:
                return 0
            condition += f" AND id IN ({', '.join('?' * len(wanted))})"
            params = tuple(wanted)
        with self._lock:
            db = self._conn()
            with db:
                db.execute("BEGIN")
                accepted = db.execute(f"UPDATE OR IGNORE tm SET suggestion = 0 WHERE {condition}", params).rowcount
                db.execute(f"DELETE FROM tm WHERE {condition}", params)  # those already in the TM
        return accepted

    # --- lookups -------------------------------------------------------------------------
    def exact(self, text: str, source_lang: str, target_lang: str, owner: str | None = None) -> TMEntry | None:
        """The entry whose source matches ``text`` after normalising, the caller's own and newest first."""
        key = match_key(text)
        if not key:
            return None
        condition, params = _visible(owner)
        with self._lock:
            row = self._conn().execute(
                f"SELECT {_COLUMNS} FROM tm WHERE source_lang = ? AND target_lang = ? AND key = ? "
                f"AND suggestion = 0 AND {condition} ORDER BY owner IS NULL, id DESC LIMIT 1",
                (source_lang, target_lang, key, *params)).fetchone()
        return _entry(row) if row else None

    def similar(self, text: str, source_lang: str, target_lang: str, k: int = 4, min_similarity: float = 0.0,
                owner: str | None = None, candidates: int = DEFAULT_CANDIDATES) -> list[TMMatch]:
        """The ``k`` entries most similar to ``text`` scoring at least ``min_similarity``, best first.

        The bigram index gives up to ``candidates`` entries of the pair that
        share the query's rarest bigrams (bm25 order); rapidfuzz ranks those.
        An exact match (score 100) is included.
        """
        from rapidfuzz import fuzz, process

        key = match_key(text)
        grams = gram_tokens(key)
        if k <= 0 or not grams:
            return []
        condition, params = _visible(owner)
        with self._lock:
            db = self._conn()
            grams = self._rarest(db, grams)
            if not grams:  # no bigram of the query occurs in the TM
                return []
            query = " OR ".join(grams)
            rows = db.execute(
                f"SELECT {_COLUMNS}, tm.key FROM tm_fts JOIN tm ON tm.id = tm_fts.rowid "
                f"WHERE tm_fts MATCH ? AND source_lang = ? AND target_lang = ? AND suggestion = 0 "
                f"AND {condition} ORDER BY tm_fts.rank LIMIT ?",
                (query, source_lang, target_lang, *params, max(candidates, k))).fetchall()
        ranked = process.extract(key, [row[9] for row in rows], scorer=fuzz.ratio, limit=k,
                                 score_cutoff=min_similarity)
        return [TMMatch(_entry(rows[index]), round(score, 1)) for _, score, index in ranked]

    @staticmethod
    def _rarest(db: sqlite3.Connection, grams: list[str]) -> list[str]:
        """The query's bigrams that occur in the TM, rarest first, at most QUERY_GRAMS of them.

        A common bigram ("一个") matches thousands of rows and says little;
        querying only the rare ones bounds the rows bm25 must rank.
        """
        found = dict(db.execute(f"SELECT term, doc FROM tm_vocab WHERE term IN ({', '.join('?' * len(grams))})",
                                grams).fetchall())
        present = [g for g in grams if g in found]
        return sorted(present, key=lambda g: found[g])[:QUERY_GRAMS]

    # --- listing -------------------------------------------------------------------------
    def entries(self, source_lang: str | None = None, target_lang: str | None = None,
                owner: str | None = ALL_OWNERS, suggestions: bool = False) -> Iterator[TMEntry]:
        """Entries (or, with ``suggestions``, the suggestions) in insertion order, optionally of one pair."""
        condition, params = _visible(owner)
        where = [condition, "suggestion = ?"]
        params = (*params, int(suggestions))
        if source_lang:
            where.append("source_lang = ?")
            params = (*params, language_code(source_lang, "source language"))
        if target_lang:
            where.append("target_lang = ?")
            params = (*params, language_code(target_lang, "target language"))
        with self._lock:
            rows = self._conn().execute(f"SELECT {_COLUMNS} FROM tm WHERE {' AND '.join(where)} ORDER BY id",
                                        params).fetchall()
        return (_entry(row) for row in rows)

    def get(self, entry_id: int) -> TMEntry | None:
        with self._lock:
            row = self._conn().execute(f"SELECT {_COLUMNS} FROM tm WHERE id = ?", (int(entry_id),)).fetchone()
        return _entry(row) if row else None

    def stats(self, owner: str | None = ALL_OWNERS) -> list[PairStats]:
        """Entries, suggestions and origins per language pair."""
        condition, params = _visible(owner)
        with self._lock:
            rows = self._conn().execute(
                f"SELECT source_lang, target_lang, sum(suggestion = 0), sum(suggestion), "
                f"count(DISTINCT origin) FROM tm WHERE {condition} GROUP BY source_lang, target_lang "
                f"ORDER BY source_lang, target_lang", params).fetchall()
        return [PairStats(*row) for row in rows]

    def __len__(self) -> int:
        with self._lock:
            return self._conn().execute("SELECT count(*) FROM tm WHERE suggestion = 0").fetchone()[0]
