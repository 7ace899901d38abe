"""Translation memory: earlier translations, looked up exactly or by similarity.

One SQLite file (``$MTSERVE_HOME/tm.sqlite3``) holds segment pairs: source,
target, language pair, origin (the file, user or key that brought them), the
time they came, an owner and a ``suggestion`` flag.

- **Exact lookup** compares a key, ``mtserve.text.punctuation.match_key``: the
  source with punctuation in one width and only word-separating spaces, so
  "确定，取消" finds "确定, 取消". It is an index lookup.
- **Fuzzy lookup** finds the k most similar sources. An inverted index in
  SQL (``tm_grams``: each key's character bigrams, per language pair, with
  their document frequencies in ``tm_gram_df``, both kept by triggers)
  pre-selects the entries that share most of the query's rarest bigrams (at
  most ``QUERY_GRAMS`` grams and about ``POSTINGS_BUDGET`` postings read per
  lookup; twice ``candidates`` ids, so that suggestions and other keys'
  entries do not crowd out the ``candidates`` kept), and ``rapidfuzz``'s
  ratio scores and ranks those (0-100, as CAT tools show a "75% match").
  Nothing ever scans the table in Python. Why not FTS5: its
  trigram tokenizer misses Chinese near matches (words are mostly two
  characters: "打开这个文件" shares no trigram with "打开文件", but two
  bigrams), and ranking an OR of a segment's n-grams with bm25 took 6.7 ms
  per lookup at 20,000 entries, since every entry holding a common n-gram
  is ranked; and its vocabulary table answers document frequencies at about
  50 µs a term.
- **Ownership**: ``owner`` is None for the operator's entries (the CLI, the
  server-wide TM) or an API key's id. A key sees its own entries and the
  operator's, and deletes only its own; a caller without a key sees the
  operator's; the operator's tools pass ``ALL_OWNERS`` to see and manage all.
  ``shared=False`` narrows a key's view to its own entries (the HTTP API's
  listings: a key uses the operator's entries at translate time, but does not
  read them out).
- **Suggestions** (LibreTranslate's ``/suggest``) are stored with
  ``suggestion`` set and take part in no lookup until the operator accepts
  them (``accept``, ``mtserve tm accept``). Nor are they indexed until then
  (a 5,000-character suggestion would add about 5,000 index rows that no
  lookup reads): the triggers skip them, and accepting one writes its grams.
- **Readers never wait for a writer.** Lookups and listings each take a
  connection of their own from a small pool; writes go through one writer
  connection behind a lock. In WAL mode a reader sees the last committed
  state while a write transaction is open, so a translation is never held up
  by an import (BENCHMARKS.md, *TM import isolation*). A write is cut into
  transactions of at most ``WRITE_BATCH_GRAMS`` index rows, so other writers
  (a /suggest, another key's import) wait one batch at most, and an import
  asked to stop (``cancel``: its request was cancelled, the server is
  shutting down) stops at the next batch boundary, keeping what it committed.

Safe to share between threads, and a CLI import and a running server can use
the file at once.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from mtserve.text.punctuation import match_key

ALL_OWNERS = "*"  # the operator's view: every owner's entries (key ids are hex, never "*")
MAX_SEGMENT_CHARS = 5000
ADD_CHUNK = 1000  # most pairs stored per write transaction
# Most index rows (the bigrams of the keys: about one per character) one write transaction adds;
# a 5,000-character entry writes about 5,000, so a batch of long entries is a few of them. Bounds
# how long another writer waits and how soon a cancelled import stops, at a few tenths of a second.
WRITE_BATCH_GRAMS = 20_000
SCHEMA_VERSION = 1  # PRAGMA user_version; 1: suggestions are not indexed
MIN_SQLITE = (3, 24, 0)  # INSERT ... ON CONFLICT DO UPDATE, in the index triggers
DEFAULT_CANDIDATES = 50
QUERY_GRAMS = 8  # at most this many of a query's rarest bigrams pre-select candidates
POSTINGS_BUDGET = 2000  # and only as many as keep the postings read under this (the rarest always counts)

_LANGUAGE = re.compile(r"[a-z]{2,3}")
_TRADITIONAL = {"hant", "tw", "hk", "mo"}


class TMError(ValueError):
    """Bad translation-memory input or an unusable store; the message says what to fix."""


class TMTooLarge(TMError):
    """Reading a file took more memory, CPU or time than the parse limits allow (413); the message names the
    setting."""


class TMBusy(TMError):
    """The store's file is locked by a long write elsewhere (a CLI import in another process): retry shortly."""


class TMCancelled(TMError):
    """A write stopped at a batch boundary because it was asked to (its request ended, the server stops)."""


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
class Usage:
    """What an owner holds: entries (or suggestions), and the UTF-8 bytes of their sources and targets."""

    entries: int
    bytes: int


def pair_bytes(source: str, target: str) -> int:
    """What a pair counts against a cap on stored bytes: its text in UTF-8."""
    return len(source.encode("utf-8", "surrogatepass")) + len(target.encode("utf-8", "surrogatepass"))


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
CREATE INDEX IF NOT EXISTS tm_owner ON tm (owner, suggestion, origin);  -- a key's entries, its caps
CREATE UNIQUE INDEX IF NOT EXISTS tm_unique
    ON tm (source_lang, target_lang, key, target, ifnull(owner, ''), suggestion);
-- the fuzzy index: one row per (language pair + bigram of the key, entry); a one-character key is its own gram
CREATE TABLE IF NOT EXISTS tm_grams (gram TEXT NOT NULL, id INTEGER NOT NULL, PRIMARY KEY (gram, id))
    WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tm_gram_df (gram TEXT PRIMARY KEY, df INTEGER NOT NULL) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS tm_positions (n INTEGER PRIMARY KEY);  -- 1..MAX_SEGMENT_CHARS, for the triggers
"""
# The index triggers, made by _setup (remade for a file from before: user_version 0).
# Suggestions are not indexed: no lookup reads them, and one is up to 5,000 index rows.
_INDEX_GRAMS = """
    INSERT OR IGNORE INTO tm_grams (gram, id)
        SELECT new.source_lang || '>' || new.target_lang || ' ' || substr(new.key, n, 2), new.id
        FROM tm_positions WHERE n <= max(1, length(new.key) - 1);"""
_TRIGGERS = f"""
DROP TRIGGER IF EXISTS tm_index_insert;
DROP TRIGGER IF EXISTS tm_index_accept;
DROP TRIGGER IF EXISTS tm_index_delete;
CREATE TRIGGER tm_index_insert AFTER INSERT ON tm WHEN new.suggestion = 0 BEGIN{_INDEX_GRAMS}
END;
CREATE TRIGGER tm_index_accept AFTER UPDATE OF suggestion ON tm
    WHEN old.suggestion = 1 AND new.suggestion = 0 BEGIN{_INDEX_GRAMS}
END;
CREATE TRIGGER tm_index_delete AFTER DELETE ON tm WHEN old.suggestion = 0 BEGIN
    DELETE FROM tm_grams WHERE id = old.id AND gram IN (
        SELECT old.source_lang || '>' || old.target_lang || ' ' || substr(old.key, n, 2)
        FROM tm_positions WHERE n <= max(1, length(old.key) - 1));
END;
CREATE TRIGGER IF NOT EXISTS tm_df_insert AFTER INSERT ON tm_grams BEGIN
    INSERT INTO tm_gram_df (gram, df) VALUES (new.gram, 1) ON CONFLICT (gram) DO UPDATE SET df = df + 1;
END;
CREATE TRIGGER IF NOT EXISTS tm_df_delete AFTER DELETE ON tm_grams BEGIN
    UPDATE tm_gram_df SET df = df - 1 WHERE gram = old.gram;
END;
DELETE FROM tm_grams WHERE id IN (SELECT id FROM tm WHERE suggestion = 1);  -- indexed before version 1
PRAGMA user_version = {SCHEMA_VERSION};
"""
_COLUMNS = "id, source, target, source_lang, target_lang, origin, owner, created, suggestion"


def _entry(row: Sequence) -> TMEntry:
    return TMEntry(row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7], bool(row[8]))


def _visible(owner: str | None, shared: bool = True) -> tuple[str, tuple]:
    """The SQL condition (and its parameters) for the entries ``owner`` may see; without ``shared``, a key
    sees its own entries only, not the operator's."""
    if owner == ALL_OWNERS:
        return "1", ()
    if owner is None:
        return "owner IS NULL", ()
    return ("(owner IS NULL OR owner = ?)" if shared else "owner = ?"), (owner,)


def _owned(owner: str | None) -> tuple[str, tuple]:
    """The SQL condition for the entries ``owner`` may delete: a key its own, the operator all."""
    if owner == ALL_OWNERS:
        return "1", ()
    if owner is None:
        return "owner IS NULL", ()
    return "owner = ?", (owner,)


def _held(owner: str | None, suggestions: bool, origin: str | None) -> tuple[str, list]:
    """The SQL condition for what ``owner`` holds itself (ALL_OWNERS: anyone), optionally of one origin."""
    where, params = ["suggestion = ?"], [int(suggestions)]
    if owner != ALL_OWNERS:
        where.append("owner IS ?")
        params.append(owner)
    if origin is not None:
        where.append("origin = ?")
        params.append(origin)
    return " AND ".join(where), params


def query_grams(key: str, source_lang: str, target_lang: str) -> list[str]:
    """The distinct index grams of ``key`` for a pair, as the insert trigger writes them."""
    grams = [key[i:i + 2] for i in range(len(key) - 1)] or ([key] if key else [])
    return list(dict.fromkeys(f"{source_lang}>{target_lang} {gram}" for gram in grams))


class TranslationMemory:
    """Segment pairs in one SQLite file, with an exact and a fuzzy index. Safe to share between threads."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self._setup_lock = threading.Lock()
        self._ready = False  # the file, its tables and triggers are made on first use
        self._write_lock = threading.Lock()  # one writer at a time, on the writer connection
        self._writer: sqlite3.Connection | None = None
        self._pool_lock = threading.Lock()  # guards the idle readers only, never held across a query
        self._idle: list[sqlite3.Connection] = []
        self._epoch = 0  # close() starts a new one: readers of an older one are closed when handed back
        self.generation = 0  # counts this object's writes that changed rows: readers may cache what they saw
        # (when read, the pairs_version it was read at, the pairs): the pairs holding entries, for pairs()
        self._pairs: tuple[float, int, frozenset[tuple[str, str]]] | None = None
        self._pairs_version = 0  # moved by a write that may have changed which pairs hold entries

    # --- the connections -----------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(self.path, timeout=10, check_same_thread=False, isolation_level=None)

    def _setup(self) -> None:
        """Make the file, its tables and its index positions, once."""
        if self._ready:
            return
        with self._setup_lock:
            if self._ready:
                return
            if sqlite3.sqlite_version_info < MIN_SQLITE:
                raise TMError(f"the translation memory needs SQLite {'.'.join(map(str, MIN_SQLITE))} or later "
                              f"(its index triggers upsert); this Python has {sqlite3.sqlite_version}: use a "
                              "Python built with a newer SQLite")
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = self._connect()
            try:
                db.execute("PRAGMA journal_mode = WAL")
                db.executescript(_SCHEMA)
                if db.execute("PRAGMA user_version").fetchone()[0] < SCHEMA_VERSION:
                    db.executescript(f"BEGIN IMMEDIATE; {_TRIGGERS} COMMIT;")
                if db.execute("SELECT count(*) FROM tm_positions").fetchone()[0] < MAX_SEGMENT_CHARS:
                    with db:
                        db.execute("BEGIN")
                        db.executemany("INSERT OR IGNORE INTO tm_positions (n) VALUES (?)",
                                       [(n,) for n in range(1, MAX_SEGMENT_CHARS + 1)])
            finally:
                db.close()
            self._ready = True

    @contextlib.contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """The writer connection in one transaction, committed at the end (rolled back on an error)."""
        self._setup()
        with self._write_lock:
            if self._writer is None:
                self._writer = self._connect()
            db = self._writer
            with db:
                db.execute("BEGIN IMMEDIATE")
                yield db

    @contextlib.contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection]:
        """A reader connection of the pool's for one call: it sees committed writes and waits for none."""
        self._setup()
        with self._pool_lock:
            db = self._idle.pop() if self._idle else None
            epoch = self._epoch
        if db is None:
            db = self._connect()
            db.execute("PRAGMA query_only = ON")
        try:
            yield db
        finally:
            with self._pool_lock:
                if epoch == self._epoch:
                    self._idle.append(db)
                    db = None
            if db is not None:
                db.close()

    def _in_write_batch(self) -> None:
        """Called inside each write transaction, before it commits: nothing here (tests hold a write
        open at this point to show that lookups go on meanwhile)."""

    def close(self) -> None:
        with self._pool_lock:
            idle, self._idle = self._idle, []
            self._epoch += 1
        for db in idle:
            db.close()
        with self._write_lock:
            if self._writer is not None:
                self._writer.close()
                self._writer = None

    def _wrote(self, pairs: Iterable[tuple[str, str]] | None) -> None:
        """After a write that changed rows has committed: ``pairs`` gained entries; None: any pair may
        have gained or lost some."""
        with self._write_lock:
            self.generation += 1
            known = self._pairs
            if pairs is None or known is None or not set(pairs) <= known[2]:
                self._pairs_version += 1

    # --- writing -------------------------------------------------------------------------
    def add(self, pairs: Iterable[tuple[str, str]], source_lang: str, target_lang: str, origin: str = "",
            owner: str | None = None, suggestion: bool = False, report: AddReport | None = None,
            cancel: threading.Event | None = None) -> AddReport:
        """Store (source, target) pairs; empty, over-long and duplicate pairs are counted, not stored.

        Stored in batches (ADD_CHUNK pairs, WRITE_BATCH_GRAMS index rows), one transaction each, so
        an import that fails or is cancelled half-way keeps the batches before. ``cancel`` set: stop
        at the next batch boundary with TMCancelled.
        """
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
        for batch in _batches(rows, grams=lambda row: 0 if suggestion else len(row[4])):
            if cancel is not None and cancel.is_set():
                raise TMCancelled(f"the import stopped before its end (its request ended, or the server is "
                                  f"stopping) with {report.added:,} entries stored; import the file again "
                                  "to store the rest")
            with self._writing() as db:
                added = db.executemany(
                    "INSERT OR IGNORE INTO tm (source, target, source_lang, target_lang, key, origin, owner, "
                    "created, suggestion) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", batch).rowcount
                self._in_write_batch()
            if added:
                self._wrote([] if suggestion else [(source_lang, target_lang)])
            report.added += added
            report.duplicates += len(batch) - added
        return report

    def remove(self, *, origin: str | None = None, ids: Iterable[int] | None = None, everything: bool = False,
               owner: str | None = None) -> int:
        """Delete by origin, by id, or everything the caller owns; returns how many went.

        ``owner`` as everywhere: None, the operator's entries; a key id, that key's; ALL_OWNERS, anyone's.
        """
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
        with self._writing() as db:
            removed = db.execute(f"DELETE FROM tm WHERE {condition}", params).rowcount
        if removed:
            self._wrote(None)
        return removed

    def accept(self, ids: Iterable[int] | None = None) -> int:
        """Turn suggestions (all, or those ``ids``) into TM entries; returns how many were accepted.

        A suggestion the TM already holds as an entry is dropped, not doubled. Accepting indexes
        them, in batches as add() writes.
        """
        condition, params = "suggestion = 1", ()
        if ids is not None:
            wanted = [int(i) for i in ids]
            if not wanted:
                return 0
            condition += f" AND id IN ({', '.join('?' * len(wanted))})"
            params = tuple(wanted)
        with self._reading() as db:
            found = db.execute(f"SELECT id, length(key) FROM tm WHERE {condition} ORDER BY id", params).fetchall()
        accepted = 0
        for batch in _batches(found, grams=lambda row: row[1]):
            chosen = [row[0] for row in batch]
            which = f"suggestion = 1 AND id IN ({', '.join('?' * len(chosen))})"
            with self._writing() as db:
                done = db.execute(f"UPDATE OR IGNORE tm SET suggestion = 0 WHERE {which}", chosen).rowcount
                db.execute(f"DELETE FROM tm WHERE {which}", chosen)  # those already in the TM
                self._in_write_batch()
            if done:
                self._wrote(None)
            accepted += done
        return accepted

    # --- lookups -------------------------------------------------------------------------
    def pairs(self, max_age_s: float) -> frozenset[tuple[str, str]]:
        """The language pairs that hold entries (not only suggestions).

        Read again after ``max_age_s`` (another process, `mtserve tm import`, may write the file) or
        once this object's writes may have changed the answer; an import into a pair that already
        holds entries does not, so a translation of another pair costs no read while one runs.
        """
        known, version = self._pairs, self._pairs_version
        if known is None or known[1] != version or time.monotonic() - known[0] > max_age_s:
            read_at = time.monotonic()
            with self._reading() as db:
                found = self._read_pairs(db)
            self._pairs = known = (read_at, version, found)
        return known[2]

    @staticmethod
    def _read_pairs(db: sqlite3.Connection) -> frozenset[tuple[str, str]]:
        """The pairs holding entries, skipping along the exact index (source, then target within it): a few
        seeks a pair, not a scan of every entry (a translation may ask this on the event loop)."""
        found: set[tuple[str, str]] = set()
        source = ""
        while row := db.execute("SELECT source_lang FROM tm WHERE source_lang > ? ORDER BY source_lang LIMIT 1",
                                (source,)).fetchone():
            source, target = row[0], ""
            while row := db.execute("SELECT target_lang FROM tm WHERE source_lang = ? AND target_lang > ? "
                                    "ORDER BY target_lang LIMIT 1", (source, target)).fetchone():
                target = row[0]
                if db.execute("SELECT 1 FROM tm WHERE source_lang = ? AND target_lang = ? AND suggestion = 0 "
                              "LIMIT 1", (source, target)).fetchone():
                    found.add((source, target))
        return frozenset(found)

    def exact(self, text: str, source_lang: str, target_lang: str, owner: str | None = None,
              shared: bool = True) -> TMEntry | None:
        """The entry whose source matches ``text`` after normalising, the caller's own and newest first."""
        key = match_key(text)
        if not key:
            return None
        condition, params = _visible(owner, shared)
        with self._reading() as db:
            row = db.execute(
                f"SELECT {_COLUMNS} FROM tm WHERE source_lang = ? AND target_lang = ? AND key = ? "
                f"AND suggestion = 0 AND {condition} ORDER BY owner IS NULL, id DESC LIMIT 1",
                (source_lang, target_lang, key, *params)).fetchone()
        return _entry(row) if row else None

    def similar(self, text: str, source_lang: str, target_lang: str, k: int = 4, min_similarity: float = 0.0,
                owner: str | None = None, candidates: int = DEFAULT_CANDIDATES,
                shared: bool = True) -> list[TMMatch]:
        """The ``k`` entries most similar to ``text`` scoring at least ``min_similarity``, best first.

        The bigram index gives up to ``candidates`` entries of the pair that
        share most of the query's rarest bigrams; rapidfuzz ranks those.
        An exact match (score 100) is included.
        """
        from rapidfuzz import fuzz, process

        key = match_key(text)
        if k <= 0 or not key:
            return []
        grams = query_grams(key, source_lang, target_lang)
        condition, params = _visible(owner, shared)
        with self._reading() as db:
            grams = self._rarest(db, grams)
            if not grams:  # no bigram of the query occurs in the TM
                return []
            # the postings alone first (the pair is part of each gram), then the few entries they point at
            ids = [row[0] for row in db.execute(
                f"SELECT id FROM tm_grams WHERE gram IN ({', '.join('?' * len(grams))}) "
                f"GROUP BY id ORDER BY count(*) DESC, id DESC LIMIT ?", (*grams, 2 * max(candidates, k)))]
            # NOT INDEXED: by rowid, the few candidates; the planner otherwise took tm_owner and read
            # every entry of the owner (benchmarks/tm_lookup.py: p95 26 ms at 100k entries, 1.8 ms so)
            rows = db.execute(
                f"SELECT {_COLUMNS}, key FROM tm NOT INDEXED WHERE id IN ({', '.join('?' * len(ids))}) "
                f"AND suggestion = 0 AND {condition}", (*ids, *params)).fetchall()
        order = {entry_id: rank for rank, entry_id in enumerate(ids)}
        rows = sorted(rows, key=lambda row: order[row[0]])[:max(candidates, k)]
        ranked = process.extract(key, [row[9] for row in rows], scorer=fuzz.ratio, limit=k,
                                 score_cutoff=min_similarity)
        return [TMMatch(_entry(rows[index]), round(score, 1)) for _, score, index in ranked]

    @staticmethod
    def _rarest(db: sqlite3.Connection, grams: list[str]) -> list[str]:
        """The query's grams that occur in the TM, rarest first, as many as the postings budget allows.

        A common bigram ("我们") is held by thousands of entries and says
        little; the rare ones find the near matches, and bound the rows read.
        """
        found = db.execute(f"SELECT gram, df FROM tm_gram_df WHERE df > 0 AND gram IN "
                           f"({', '.join('?' * len(grams))}) ORDER BY df", grams).fetchall()
        chosen, postings = [], 0
        for gram, df in found[:QUERY_GRAMS]:
            if chosen and postings + df > POSTINGS_BUDGET:
                break
            chosen.append(gram)
            postings += df
        return chosen

    # --- listing -------------------------------------------------------------------------
    def entries(self, source_lang: str | None = None, target_lang: str | None = None,
                owner: str | None = None, suggestions: bool = False, *, shared: bool = True,
                origin: str | None = None, after: int = 0, limit: int | None = None) -> Iterator[TMEntry]:
        """Entries (or, with ``suggestions``, the suggestions) in insertion order, optionally of one pair
        or origin; a page of them with ``after`` (the last id seen) and ``limit``."""
        condition, params = _visible(owner, shared)
        where = [condition, "suggestion = ?", "id > ?"]
        params = (*params, int(suggestions), int(after))
        if source_lang:
            where.append("source_lang = ?")
            params = (*params, language_code(source_lang, "source language"))
        if target_lang:
            where.append("target_lang = ?")
            params = (*params, language_code(target_lang, "target language"))
        if origin is not None:
            where.append("origin = ?")
            params = (*params, origin)
        page = "" if limit is None else f" LIMIT {max(0, int(limit))}"
        with self._reading() as db:
            rows = db.execute(f"SELECT {_COLUMNS} FROM tm WHERE {' AND '.join(where)} ORDER BY id{page}",
                              params).fetchall()
        return (_entry(row) for row in rows)

    def get(self, entry_id: int) -> TMEntry | None:
        with self._reading() as db:
            row = db.execute(f"SELECT {_COLUMNS} FROM tm WHERE id = ?", (int(entry_id),)).fetchone()
        return _entry(row) if row else None

    def stats(self, owner: str | None = None, shared: bool = True) -> list[PairStats]:
        """Entries, suggestions and origins per language pair."""
        condition, params = _visible(owner, shared)
        with self._reading() as db:
            rows = db.execute(
                f"SELECT source_lang, target_lang, sum(suggestion = 0), sum(suggestion), "
                f"count(DISTINCT origin) FROM tm WHERE {condition} GROUP BY source_lang, target_lang "
                f"ORDER BY source_lang, target_lang", params).fetchall()
        return [PairStats(*row) for row in rows]

    def count(self, owner: str | None, *, suggestions: bool = False, origin: str | None = None) -> int:
        """How many entries (or suggestions) ``owner`` holds itself (None: the operator; ALL_OWNERS: anyone),
        optionally from one origin: what a cap on a key's entries counts."""
        where, params = _held(owner, suggestions, origin)
        with self._reading() as db:
            return db.execute(f"SELECT count(*) FROM tm WHERE {where}", params).fetchone()[0]

    def usage(self, owner: str | None, *, suggestions: bool = False, origin: str | None = None) -> Usage:
        """count()'s entries and the bytes of their text: what the caps on a key's holdings count. It reads
        the rows themselves (count() reads only an index), so it is for imports and /suggest, not lookups."""
        where, params = _held(owner, suggestions, origin)
        with self._reading() as db:
            entries, size = db.execute(
                "SELECT count(*), coalesce(sum(length(CAST(source AS BLOB)) + length(CAST(target AS BLOB))), 0) "
                f"FROM tm WHERE {where}", params).fetchone()
        return Usage(entries, size)

    def __len__(self) -> int:
        with self._reading() as db:
            return db.execute("SELECT count(*) FROM tm WHERE suggestion = 0").fetchone()[0]


def _batches(rows: list[tuple], grams: Callable[[tuple], int]) -> Iterator[list[tuple]]:
    """``rows`` in runs of at most ADD_CHUNK rows and WRITE_BATCH_GRAMS index rows (``grams``: about
    the length of a row's key, or 0 for one that is not indexed); a larger row is a run of its own."""
    batch: list[tuple] = []
    total = 0
    for row in rows:
        size = grams(row)
        if batch and (len(batch) >= ADD_CHUNK or total + size > WRITE_BATCH_GRAMS):
            yield batch
            batch, total = [], 0
        batch.append(row)
        total += size
    if batch:
        yield batch
