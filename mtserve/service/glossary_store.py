"""The store of named glossaries: SQLite under ``$MTSERVE_HOME``, in the shape DeepL's glossaries have.

A glossary has an id, a name, a creation time, an owner and one or more *dictionaries*, each the
entries of one language pair (DeepL's v3 ``/v3/glossaries``: one glossary can hold en->de and
de->en). A v2 glossary (``/v2/glossaries``, ``mtserve glossary add``) is a glossary with one
dictionary; v2 shows a glossary by its first dictionary. A request's ``glossary_id`` uses the
dictionary of the request's own pair (``GlossaryStore.for_pair``).

A glossary made through the API while API keys are on belongs to the key that made it; one made with
``mtserve glossary`` (or while keys are off) belongs to the operator (no owner). Who may see, use,
change and delete which is the caller's ``GlossaryScope`` (``mtserve.service.glossary``): a key
changes and deletes its own only; another key's glossary is not there for it.

Glossaries can be edited (renamed, a dictionary merged into or replaced), so each has a version, raised
by every change: the entries of the most used dictionaries are kept in memory with the version they
were read at, and a request with a ``glossary_id`` costs one primary-key lookup (the glossary may have
changed or gone since, in this process or another), not a read of every entry.
"""

from __future__ import annotations

import contextlib
import re
import sqlite3
import threading
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from mtserve.service.glossary import (
    MAX_NAME_CHARS,
    OPERATOR,
    GlossaryError,
    GlossaryForbidden,
    GlossaryMismatch,
    GlossaryQuota,
    GlossaryScope,
    UnknownGlossary,
    check_entry_count,
    shown_value,
    validate_entries,
)

CACHED_DICTIONARIES = 32  # dictionaries whose entries stay in memory, most recently used first
_LANGUAGE = re.compile(r"[a-z]{2,3}(?:-[A-Za-z]{2,4})?")


class UnknownDictionary(GlossaryError):
    """The glossary has no dictionary for that language pair (a 404 over HTTP)."""


@dataclass(frozen=True)
class DictionaryInfo:
    """One language pair of a glossary and how many entries it holds."""

    source_lang: str
    target_lang: str
    entry_count: int

    @property
    def pair(self) -> str:
        return f"{self.source_lang}->{self.target_lang}"


@dataclass(frozen=True)
class Dictionary:
    """The entries of one language pair, as a caller hands them in."""

    source_lang: str
    target_lang: str
    entries: Mapping[str, str]


@dataclass(frozen=True)
class GlossaryInfo:
    """A glossary's metadata and its dictionaries' entry counts: what a listing shows, read without entries."""

    id: str
    name: str
    created: str  # ISO 8601, UTC
    owner: str | None  # the id of the API key that made it; None: the operator's
    dictionaries: tuple[DictionaryInfo, ...]
    version: int = 0  # raised by every change

    @property
    def source_lang(self) -> str:
        """The first dictionary's source: what v2, which knows one pair per glossary, shows."""
        return self.dictionaries[0].source_lang if self.dictionaries else ""

    @property
    def target_lang(self) -> str:
        return self.dictionaries[0].target_lang if self.dictionaries else ""

    @property
    def entry_count(self) -> int:
        """The entries of all its dictionaries."""
        return sum(d.entry_count for d in self.dictionaries)

    @property
    def pairs(self) -> str:
        return ", ".join(d.pair for d in self.dictionaries)

    def dictionary(self, source: str, target: str) -> DictionaryInfo | None:
        return next((d for d in self.dictionaries if (d.source_lang, d.target_lang) == (source, target)), None)


@dataclass(frozen=True)
class Glossary(GlossaryInfo):
    """A glossary with its first dictionary's entries: what v2 and ``mtserve glossary show`` read."""

    entries: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Caps:
    """What a change to a caller's glossaries must stay within; 0 is no cap. ``owned``: glossaries an owner
    may hold; ``entries``: entries in one glossary; ``bytes``: bytes of entries an owner's glossaries hold."""

    owned: int = 0
    entries: int = 0
    bytes: int = 0


NO_CAPS = Caps()

_SCHEMA = """
CREATE TABLE IF NOT EXISTS glossaries (
    id TEXT PRIMARY KEY, name TEXT NOT NULL, source_lang TEXT NOT NULL,
    target_lang TEXT NOT NULL, created TEXT NOT NULL, owner TEXT
);
CREATE TABLE IF NOT EXISTS dictionaries (
    glossary_id TEXT NOT NULL REFERENCES glossaries(id) ON DELETE CASCADE,
    source_lang TEXT NOT NULL, target_lang TEXT NOT NULL, position INTEGER NOT NULL,
    PRIMARY KEY (glossary_id, source_lang, target_lang)
);
CREATE TABLE IF NOT EXISTS dictionary_entries (
    glossary_id TEXT NOT NULL, source_lang TEXT NOT NULL, target_lang TEXT NOT NULL,
    position INTEGER NOT NULL, term TEXT NOT NULL, translation TEXT NOT NULL,
    PRIMARY KEY (glossary_id, source_lang, target_lang, term),
    FOREIGN KEY (glossary_id, source_lang, target_lang)
        REFERENCES dictionaries (glossary_id, source_lang, target_lang) ON DELETE CASCADE
);
"""
# glossaries.source_lang and target_lang: the pair it was created with (a file from before
# dictionaries has its entries under that pair); dictionaries are what is read.
_COUNT = ("(SELECT COUNT(*) FROM dictionary_entries e WHERE e.glossary_id = d.glossary_id "
          "AND e.source_lang = d.source_lang AND e.target_lang = d.target_lang)")
_BYTES = ("SELECT coalesce(sum(length(CAST(e.term AS BLOB)) + length(CAST(e.translation AS BLOB))), 0) "
          "FROM dictionary_entries e JOIN glossaries g ON g.id = e.glossary_id WHERE g.owner IS ?")


def _who(owner: str | None) -> str:
    return f"API key {owner}" if owner else "the server (API keys are off)"


def check_language(code: object, role: str) -> str:
    if not isinstance(code, str) or not _LANGUAGE.fullmatch(code):
        raise GlossaryError(f"{role} must be a language code such as 'zh' or 'en', got {shown_value(code)}")
    return code


def _checked(dictionary: Dictionary, caps: Caps) -> Dictionary:
    """A dictionary's languages and entries checked: at least one entry, within the cap on entries."""
    check_language(dictionary.source_lang, "the source language")
    check_language(dictionary.target_lang, "the target language")
    if isinstance(dictionary.entries, Mapping):
        check_entry_count(len(dictionary.entries), caps.entries)
    clean = validate_entries(dictionary.entries, "entries")
    if not clean:
        raise GlossaryError(f"the {dictionary.source_lang}->{dictionary.target_lang} dictionary needs at "
                            "least one entry")
    return Dictionary(dictionary.source_lang, dictionary.target_lang, clean)


def _name(name: object) -> str:
    if not isinstance(name, str) or not name.strip():
        raise GlossaryError("a glossary needs a non-empty name")
    if len(name.strip()) > MAX_NAME_CHARS:
        raise GlossaryError(f"a glossary's name has at most {MAX_NAME_CHARS} characters")
    return name.strip()


class SqliteFile:
    """A store in one SQLite file: made (``_migrate``) on first use, one connection per call, each
    call one transaction. Safe to share between threads and processes."""

    def __init__(self, path: str | Path):
        self.path = Path(path).expanduser()
        self._lock = threading.Lock()
        self._ready = False  # the file, its tables and columns are made on first use

    @contextlib.contextmanager
    def _db(self, write: bool = False) -> Iterator[sqlite3.Connection]:
        """One connection per call, closed after; a write holds SQLite's write lock from its start."""
        with self._lock:
            if not self._ready:
                self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=10, isolation_level=None)
            try:
                db.execute("PRAGMA foreign_keys = ON")
                if not self._ready:
                    self._migrate(db)
                    self._ready = True
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                try:
                    yield db
                except BaseException:
                    db.execute("ROLLBACK")
                    raise
                db.execute("COMMIT")
            finally:
                db.close()

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        raise NotImplementedError


class GlossaryStore(SqliteFile):
    """Named glossaries, persisted in one SQLite file. Safe to share between threads and processes.

    Every method takes the caller's ``GlossaryScope`` (default: the operator, who sees all). A
    glossary outside the scope is an UnknownGlossary, exactly like one that does not exist, so a
    key cannot probe for others' ids.
    """

    def __init__(self, path: str | Path):
        super().__init__(path)
        # (id, source, target) -> (the glossary's version, the entries), most recent last
        self._cache: OrderedDict[tuple[str, str, str], tuple[int, dict[str, str]]] = OrderedDict()

    @staticmethod
    def _migrate(db: sqlite3.Connection) -> None:
        """Make the tables. A file from before owners gets the column (its glossaries are the operator's);
        one from before versions gets that; one from before dictionaries has each glossary's entries moved
        into one dictionary of the glossary's pair."""
        db.executescript(_SCHEMA)
        for column, kind in (("owner", "TEXT"), ("version", "INTEGER NOT NULL DEFAULT 0")):
            if column not in {row[1] for row in db.execute("PRAGMA table_info(glossaries)")}:
                with contextlib.suppress(sqlite3.OperationalError):  # another process added it first
                    db.execute(f"ALTER TABLE glossaries ADD COLUMN {column} {kind}")
        db.execute("CREATE INDEX IF NOT EXISTS glossaries_by_owner ON glossaries (owner)")
        db.execute("BEGIN IMMEDIATE")
        try:
            if db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'entries'").fetchone():
                db.execute("INSERT OR IGNORE INTO dictionaries SELECT id, source_lang, target_lang, 0 FROM glossaries")
                db.execute("INSERT OR IGNORE INTO dictionary_entries SELECT e.glossary_id, g.source_lang, "
                           "g.target_lang, e.position, e.term, e.translation FROM entries e "
                           "JOIN glossaries g ON g.id = e.glossary_id")
                db.execute("DROP TABLE entries")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        db.execute("COMMIT")

    # --- creating ---------------------------------------------------------------------------------
    def create(self, name: str, source: str, target: str, entries: Mapping[str, str], *,
               scope: GlossaryScope = OPERATOR, max_entries: int = 0, max_owned: int = 0,
               max_bytes: int = 0) -> Glossary:
        """A new glossary of one dictionary (DeepL's v2 glossary) owned by the scope's key (or the operator's).

        ``max_entries`` caps its entries (GlossaryTooLarge), ``max_owned`` the glossaries its owner
        may hold and ``max_bytes`` the bytes of their entries together (GlossaryQuota); 0 is no cap.
        """
        caps = Caps(owned=max_owned, entries=max_entries, bytes=max_bytes)
        made = self.create_multilingual(name, [Dictionary(source, target, entries)], scope=scope, caps=caps)
        return Glossary(**made.__dict__, entries=self._entries(made, source, target))

    def create_multilingual(self, name: str, dictionaries: Sequence[Dictionary], *,
                            scope: GlossaryScope = OPERATOR, caps: Caps = NO_CAPS) -> GlossaryInfo:
        """A new glossary of one or more dictionaries, each its own language pair (DeepL's v3 glossary).
        The caps are checked, and the glossary written, in one transaction."""
        owner = scope.owner_of_new()
        name = _name(name)
        if not dictionaries:
            raise GlossaryError("a glossary needs at least one dictionary: a source_lang, a target_lang "
                                "and entries")
        clean = [_checked(d, caps) for d in dictionaries]
        pairs = [(d.source_lang, d.target_lang) for d in clean]
        if len(set(pairs)) < len(pairs):
            twice = next(p for p in pairs if pairs.count(p) > 1)
            raise GlossaryError(f"two dictionaries for {twice[0]}->{twice[1]}; send one per language pair")
        glossary_id = uuid.uuid4().hex
        created = datetime.now(timezone.utc).isoformat(timespec="seconds")
        with self._db(write=True) as db:
            if caps.owned > 0:
                held = db.execute("SELECT COUNT(*) FROM glossaries WHERE owner IS ?", (owner,)).fetchone()[0]
                if held >= caps.owned:
                    raise GlossaryQuota(f"{_who(owner)} already has {held:,} glossaries, the limit "
                                        "(MTSERVE_GLOSSARIES_PER_KEY); delete one before creating another")
            held_bytes = db.execute(_BYTES, (owner,)).fetchone()[0] if caps.bytes > 0 else 0
            db.execute("INSERT INTO glossaries (id, name, source_lang, target_lang, created, owner, version) "
                       "VALUES (?, ?, ?, ?, ?, ?, 0)", (glossary_id, name, *pairs[0], created, owner))
            for position, dictionary in enumerate(clean):
                self._write_dictionary(db, glossary_id, dictionary, position)
            self._check_caps(db, glossary_id, owner, caps, held_bytes)
            return self._read_info(db, glossary_id)

    @staticmethod
    def _write_dictionary(db: sqlite3.Connection, glossary_id: str, dictionary: Dictionary, position: int) -> None:
        db.execute("INSERT INTO dictionaries VALUES (?, ?, ?, ?)",
                   (glossary_id, dictionary.source_lang, dictionary.target_lang, position))
        db.executemany("INSERT INTO dictionary_entries VALUES (?, ?, ?, ?, ?, ?)",
                       [(glossary_id, dictionary.source_lang, dictionary.target_lang, i, term, translation)
                        for i, (term, translation) in enumerate(dictionary.entries.items())])

    @staticmethod
    def _check_caps(db: sqlite3.Connection, glossary_id: str, owner: str | None, caps: Caps,
                    held_bytes: int) -> None:
        """After a write, in its transaction: the glossary within the cap on entries, and its owner's bytes
        within theirs unless the change shrank them (``held_bytes``: what they held before)."""
        if caps.entries > 0:
            count = db.execute("SELECT COUNT(*) FROM dictionary_entries WHERE glossary_id = ?",
                               (glossary_id,)).fetchone()[0]
            check_entry_count(count, caps.entries)
        if caps.bytes > 0:
            now = db.execute(_BYTES, (owner,)).fetchone()[0]
            if now > caps.bytes and now > held_bytes:
                raise GlossaryQuota(f"the glossaries of {_who(owner)} hold {held_bytes:,} bytes of entries and "
                                    f"this one has {now - held_bytes:,} more, past the limit of {caps.bytes:,} "
                                    "bytes (MTSERVE_GLOSSARY_BYTES_PER_KEY); delete a glossary or send a "
                                    "smaller one")

    # --- reading ----------------------------------------------------------------------------------
    @staticmethod
    def _read_info(db: sqlite3.Connection, glossary_id: str, scope: GlossaryScope = OPERATOR) -> GlossaryInfo:
        where, args = scope.where()
        row = db.execute(f"SELECT id, name, created, owner, version FROM glossaries WHERE id = ? AND {where}",
                         (glossary_id, *args)).fetchone()
        if row is None:
            raise UnknownGlossary(f"no glossary with id {glossary_id!r}; list the ids with "
                                  "`mtserve glossary list` or GET /v2/glossaries", glossary_id)
        dictionaries = db.execute(f"SELECT d.source_lang, d.target_lang, {_COUNT} FROM dictionaries d "
                                  "WHERE d.glossary_id = ? ORDER BY d.position", (glossary_id,)).fetchall()
        ident, name, created, owner, version = row
        return GlossaryInfo(ident, name, created, owner, tuple(DictionaryInfo(*d) for d in dictionaries), version)

    def info(self, glossary_id: str, scope: GlossaryScope = OPERATOR) -> GlossaryInfo:
        """The metadata and each dictionary's entry count, without reading the entries."""
        with self._db() as db:
            return self._read_info(db, glossary_id, scope)

    def get(self, glossary_id: str, scope: GlossaryScope = OPERATOR) -> Glossary:
        """The glossary with its first dictionary's entries (v2's one pair)."""
        found = self.info(glossary_id, scope)
        entries = self._entries(found, found.source_lang, found.target_lang) if found.dictionaries else {}
        return Glossary(**found.__dict__, entries=entries)

    def entries(self, glossary_id: str, scope: GlossaryScope = OPERATOR) -> dict[str, str]:
        return self.get(glossary_id, scope).entries

    def dictionary_entries(self, glossary_id: str, source: str, target: str,
                           scope: GlossaryScope = OPERATOR) -> dict[str, str]:
        """The entries of the glossary's ``source``->``target`` dictionary; UnknownDictionary if it has none."""
        found = self.info(glossary_id, scope)
        if found.dictionary(source, target) is None:
            raise UnknownDictionary(f"glossary {glossary_id!r} has no {source}->{target} dictionary; it has "
                                    f"{found.pairs or 'none'}")
        return self._entries(found, source, target)

    def _entries(self, found: GlossaryInfo, source: str, target: str) -> dict[str, str]:
        """A dictionary's entries, from memory if read lately at the glossary's present version."""
        key = (found.id, source, target)
        with self._lock:
            cached = self._cache.get(key)
            if cached is not None and cached[0] == found.version:
                self._cache.move_to_end(key)
                return cached[1]
        with self._db() as db:
            entries = dict(db.execute("SELECT term, translation FROM dictionary_entries WHERE glossary_id = ? "
                                      "AND source_lang = ? AND target_lang = ? ORDER BY position",
                                      key).fetchall())
        with self._lock:
            self._cache[key] = (found.version, entries)
            self._cache.move_to_end(key)
            while len(self._cache) > CACHED_DICTIONARIES:
                self._cache.popitem(last=False)
        return entries

    def for_pair(self, glossary_id: str, source: str, target: str,
                 scope: GlossaryScope = OPERATOR) -> dict[str, str]:
        """The entries of glossary ``glossary_id`` for a request from ``source`` to ``target``: those of
        its dictionary for that pair.

        The rule DeepL has: a glossary serves the pairs of its dictionaries only, and only a request
        that names its source (``auto`` is refused, since the detected language of each text could
        differ). Raises UnknownGlossary (also for a glossary outside the scope) or GlossaryMismatch,
        with what to send instead.
        """
        found = self.info(glossary_id, scope)
        which = f"glossary {found.id!r} ({found.name!r})"
        if source == "auto":
            sources = [d.source_lang for d in found.dictionaries if d.target_lang == target] \
                or [d.source_lang for d in found.dictionaries]
            shown = " or ".join(repr(s) for s in dict.fromkeys(sources))
            raise GlossaryMismatch(f"a glossary needs an explicit source language: {which} is for {found.pairs}, "
                                   f"so send source {shown} instead of 'auto'")
        if found.dictionary(source, target) is None:
            raise GlossaryMismatch(f"{which} is for {found.pairs}, but the request is {source}->{target}; "
                                   f"translate {found.pairs} with it, or use a glossary with a {source}->{target} "
                                   "dictionary")
        return self._entries(found, source, target)

    def list(self, scope: GlossaryScope = OPERATOR) -> list[GlossaryInfo]:
        """Metadata and entry counts (counted in SQL), never the entries."""
        where, args = scope.where()
        with self._db() as db:
            rows = db.execute(f"SELECT id, name, created, owner, version FROM glossaries WHERE {where} "
                              "ORDER BY created, name", args).fetchall()
            counts = db.execute(f"SELECT d.glossary_id, d.source_lang, d.target_lang, {_COUNT} FROM dictionaries d "
                                f"JOIN glossaries g ON g.id = d.glossary_id WHERE {where} ORDER BY d.position",
                                args).fetchall()
        dictionaries: dict[str, list[DictionaryInfo]] = {}
        for glossary_id, source, target, count in counts:
            dictionaries.setdefault(glossary_id, []).append(DictionaryInfo(source, target, count))
        return [GlossaryInfo(ident, name, created, owner, tuple(dictionaries.get(ident, ())), version)
                for ident, name, created, owner, version in rows]

    # --- changing ---------------------------------------------------------------------------------
    def _changeable(self, db: sqlite3.Connection, glossary_id: str, scope: GlossaryScope, what: str) -> str | None:
        """The glossary's owner, if the scope may change it: UnknownGlossary where it sees none,
        GlossaryForbidden for the operator's (which a key uses but does not change)."""
        where, args = scope.where()
        row = db.execute(f"SELECT owner FROM glossaries WHERE id = ? AND {where}", (glossary_id, *args)).fetchone()
        if row is None:
            raise UnknownGlossary(f"no glossary with id {glossary_id!r}", glossary_id)
        if not scope.may_delete(row[0]):
            raise GlossaryForbidden(f"glossary {glossary_id!r} belongs to the server's operator; it can be "
                                    f"used but not {what} through the API (`mtserve glossary remove` removes it)")
        return row[0]

    def edit(self, glossary_id: str, *, name: str | None = None, merge: Dictionary | None = None,
             replace: Dictionary | None = None, scope: GlossaryScope = OPERATOR,
             caps: Caps = NO_CAPS) -> GlossaryInfo:
        """Rename the glossary, and merge a dictionary into it (entries added, and those of a term it has
        replaced; a pair it lacks becomes a new dictionary) or replace one (a pair it lacks is added): one
        transaction, within the caps on entries and bytes."""
        name = None if name is None else _name(name)
        merge = None if merge is None else _checked(merge, caps)
        replace = None if replace is None else _checked(replace, caps)
        with self._db(write=True) as db:
            owner = self._changeable(db, glossary_id, scope, "changed")
            held_bytes = db.execute(_BYTES, (owner,)).fetchone()[0] if caps.bytes > 0 else 0
            if name is not None:
                db.execute("UPDATE glossaries SET name = ? WHERE id = ?", (name, glossary_id))
            for dictionary, merging in ((merge, True), (replace, False)):
                if dictionary is not None:
                    self._put_dictionary(db, glossary_id, dictionary, merging)
            db.execute("UPDATE glossaries SET version = version + 1 WHERE id = ?", (glossary_id,))
            self._check_caps(db, glossary_id, owner, caps, held_bytes)
            return self._read_info(db, glossary_id)

    def _put_dictionary(self, db: sqlite3.Connection, glossary_id: str, dictionary: Dictionary,
                        merging: bool) -> None:
        pair = (glossary_id, dictionary.source_lang, dictionary.target_lang)
        exists = db.execute("SELECT 1 FROM dictionaries WHERE glossary_id = ? AND source_lang = ? "
                            "AND target_lang = ?", pair).fetchone()
        if not exists:
            position = db.execute("SELECT coalesce(max(position), -1) + 1 FROM dictionaries WHERE glossary_id = ?",
                                  (glossary_id,)).fetchone()[0]
            self._write_dictionary(db, glossary_id, dictionary, position)
            return
        if not merging:
            db.execute("DELETE FROM dictionary_entries WHERE glossary_id = ? AND source_lang = ? "
                       "AND target_lang = ?", pair)
        start = db.execute("SELECT coalesce(max(position), -1) + 1 FROM dictionary_entries WHERE glossary_id = ? "
                           "AND source_lang = ? AND target_lang = ?", pair).fetchone()[0]
        db.executemany("INSERT INTO dictionary_entries VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT "
                       "(glossary_id, source_lang, target_lang, term) DO UPDATE SET translation = excluded.translation",
                       [(*pair, start + i, term, translation)
                        for i, (term, translation) in enumerate(dictionary.entries.items())])

    def delete_dictionary(self, glossary_id: str, source: str, target: str,
                          scope: GlossaryScope = OPERATOR) -> None:
        """Remove one dictionary; UnknownDictionary if there is none for the pair. The last one stays: a
        glossary without dictionaries serves nothing (delete the glossary instead)."""
        with self._db(write=True) as db:
            self._changeable(db, glossary_id, scope, "changed")
            pairs = db.execute("SELECT source_lang, target_lang FROM dictionaries WHERE glossary_id = ?",
                               (glossary_id,)).fetchall()
            if (source, target) not in pairs:
                raise UnknownDictionary(f"glossary {glossary_id!r} has no {source}->{target} dictionary")
            if len(pairs) == 1:
                raise GlossaryError(f"the {source}->{target} dictionary is the glossary's last; delete the "
                                    "glossary instead")
            db.execute("DELETE FROM dictionaries WHERE glossary_id = ? AND source_lang = ? AND target_lang = ?",
                       (glossary_id, source, target))
            db.execute("UPDATE glossaries SET version = version + 1 WHERE id = ?", (glossary_id,))

    def delete(self, glossary_id: str, scope: GlossaryScope = OPERATOR) -> bool:
        """True if it existed (in the scope). GlossaryForbidden for one the scope sees but may not delete."""
        try:
            with self._db(write=True) as db:
                self._changeable(db, glossary_id, scope, "deleted")
                db.execute("DELETE FROM glossaries WHERE id = ?", (glossary_id,))
        except UnknownGlossary:
            return False
        with self._lock:
            for key in [k for k in self._cache if k[0] == glossary_id]:
                del self._cache[key]
        return True
