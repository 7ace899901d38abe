"""Who may do what with the translation memory through the API, and within which caps.

The HTTP API (``mtserve.api.tm``: ``/tm/...`` and LibreTranslate's ``/suggest``) goes through
``MemoryAccess``; the CLI (``mtserve tm``) is the operator and uses ``TranslationMemory`` itself.

- **Scopes** (``TMScope``), as stored glossaries have them. With API keys off every caller is the
  operator: it imports entries that serve every caller, and sees, deletes and accepts everything.
  With keys on, a caller with a key imports entries it owns, and lists, searches and deletes those
  only; at translate time it uses them and the operator's (``TranslationService``), but it does not
  read the operator's out through the API. A caller without a key (keys on, not required) may not
  use the TM API (403: ownership needs an identity). Accepting suggestions is the operator's alone.
- **Caps**, on entries and on bytes (the UTF-8 text of sources and targets): ``tm_entries_per_key``
  entries and ``tm_bytes_per_key`` bytes a key holds (an import that would pass either is refused
  whole, before anything is stored), ``tm_suggestions_per_key`` suggestions and
  ``tm_suggestion_bytes_per_key`` bytes of them waiting from one key. One owner's imports are
  serialised, so two at once cannot both slip under its caps; different keys import side by side.
- **Suggestions** are stored as the operator's (owner None, since once accepted they serve every
  caller) with ``suggestion`` set and origin ``suggest:<key id>`` (``suggest:anonymous`` without a
  key); they take part in no lookup until the operator accepts them.

Every method is blocking (SQLite, file parsing): the API calls them in a worker thread.
"""

from __future__ import annotations

import functools
import sqlite3
import threading
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass

from mtserve.service.tm import (
    ALL_OWNERS,
    MAX_SEGMENT_CHARS,
    AddReport,
    PairStats,
    TMBusy,
    TMEntry,
    TMError,
    TMMatch,
    TranslationMemory,
    Usage,
    language_code,
    pair_bytes,
)
from mtserve.service.tm_files import PastCap, ReadCaps, TMFile, format_of, read_tm
from mtserve.settings import Settings

SUGGEST_ORIGIN = "suggest:"
MAX_ORIGIN_CHARS = 200
MAX_PAGE = 1000  # entries per listing page
MAX_SEARCH = 100  # matches per search


# reads a file's pairs: (file name, data, format, source, target, caps, cancel) -> TMFile
TMReader = Callable[[str, bytes, str, "str | None", "str | None", ReadCaps, "threading.Event | None"], TMFile]


def read_here(filename: str, data: bytes, fmt: str, source: str | None, target: str | None, caps: ReadCaps,
              cancel: threading.Event | None = None) -> TMFile:
    """A file's pairs read in this process; the server reads them in the document sandbox instead
    (``mtserve.documents.jobs.sandbox.read_tm_file``, which the API passes)."""
    return read_tm(data, fmt, source, target, caps)


class TMForbidden(TMError):
    """The caller may not do this (403)."""


class TMQuota(TMForbidden):
    """Over a per-key cap (403); the message names the setting."""


class UnknownEntry(TMError):
    """No entry of the caller's matched (404)."""


class SuggestionsOff(TMForbidden):
    """/suggest while MTSERVE_SUGGESTIONS is off (403, in LibreTranslate's words)."""


class UnknownMemory(TMError):
    """No view of the caller's has that id (404)."""

    def __init__(self, message: str, memory_id: str = ""):
        super().__init__(message)
        self.memory_id = memory_id


@dataclass(frozen=True)
class MemoryView:
    """What a caller's translations from one source language use of the TM, listed as DeepL lists a
    translation memory: one id per (caller, source language), the targets it has entries for, and
    how many. A view, not a store: its entries are the caller's own and the operator's, as at
    translate time; its id is derived from both, so another key's id is never one of the caller's."""

    id: str
    source_lang: str
    target_langs: tuple[str, ...]
    entries: int


def _view_id(key_id: str | None, source_lang: str) -> str:
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"mtserve:translation-memory:{key_id or ''}:{source_lang}"))


@dataclass(frozen=True)
class TMScope:
    """What one API caller may do with the translation memory.

    ``everything``: the operator (any caller while API keys are off). Otherwise the caller with
    ``key_id`` imports, lists, searches and deletes its own entries; one without a key nothing.
    """

    key_id: str | None = None
    everything: bool = False

    @property
    def owner(self) -> str | None:
        """Whose entries this scope lists, searches and deletes (``ALL_OWNERS`` for the operator)."""
        return ALL_OWNERS if self.everything else self.key_id

    def check_identity(self) -> None:
        if not self.everything and self.key_id is None:
            raise TMForbidden("the translation memory API needs an API key, since entries belong to a key: "
                              "send it as Authorization: Bearer <key> (keys: `mtserve keys add`)")

    def owner_of_new(self) -> str | None:
        """The owner an imported entry gets: the key, or None (the operator's, shared with every caller)."""
        self.check_identity()
        return None if self.everything else self.key_id

    def check_operator(self, what: str) -> None:
        if not self.everything:
            raise TMForbidden(f"{what} is for the operator: run `mtserve tm accept` on the server (with "
                              "API keys on, no API caller is the operator)")


OPERATOR = TMScope(everything=True)


def scope_for(key_id: str | None, keys_on: bool) -> TMScope:
    """The scope of an API caller: with keys off everyone is the operator, with keys on its key decides."""
    return TMScope(key_id=key_id) if keys_on else OPERATOR


@dataclass(frozen=True)
class ImportResult:
    source_lang: str
    target_lang: str
    origin: str
    report: AddReport
    held: int  # entries the owner holds after the import


def _language(code: object, role: str, languages: Collection[str] | None) -> str:
    if code is not None and not isinstance(code, str):
        raise TMError(f"{role} must be a string, such as 'zh' or 'en'")
    found = language_code(code, role)  # type: ignore[arg-type]
    if languages is not None and found not in languages:
        raise TMError(f"{role} {code!r} is not a language this server translates (see GET /languages)")
    return found


def _who(owner: str | None) -> str:
    return f"API key {owner}" if owner else "the operator (API keys are off)"


def _text(value: object, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TMError(f"{name} is missing; send the text")
    if len(value) > MAX_SEGMENT_CHARS:
        raise TMError(f"{name} has {len(value):,} characters; the translation memory keeps segments of at "
                      f"most {MAX_SEGMENT_CHARS:,}")
    return value


def _busy_is_an_error(method: Callable) -> Callable:
    """SQLite's "database is locked" (a long write in another process) as the TM's own TMBusy."""
    @functools.wraps(method)
    def call(*args, **kwargs):
        try:
            return method(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            raise TMBusy(f"the translation memory is busy ({exc}); retry shortly") from None
    return call


class MemoryAccess:
    """The translation memory as API callers reach it: scoped, capped, validated. Every public
    method raises TMError subclasses only, which the API's one status table maps."""

    def __init__(self, memory: TranslationMemory, settings: Settings):
        self.memory = memory
        self.settings = settings
        # a cap check and the write it allows happen together: per owner for imports, and for suggestions
        self._importing: dict[str | None, threading.Lock] = {}
        self._locks = threading.Lock()
        self._suggesting = threading.Lock()

    def _import_lock(self, owner: str | None) -> threading.Lock:
        with self._locks:
            return self._importing.setdefault(owner, threading.Lock())

    # --- importing -----------------------------------------------------------------------
    @_busy_is_an_error
    def import_file(self, scope: TMScope, data: bytes, filename: str, fmt: str | None = None,
                    source: str | None = None, target: str | None = None, origin: str | None = None,
                    languages: Collection[str] | None = None, read: TMReader = read_here,
                    cancel: threading.Event | None = None) -> ImportResult:
        """Parse a .tmx/.po/.xliff/.tsv file with ``read`` and store its pairs as ``scope``'s entries, within
        the caps: the reader stops at the first pair past what the owner may still hold. ``cancel`` set:
        the parse or the write stops (TMCancelled), keeping the batches already stored."""
        owner = scope.owner_of_new()
        origin = (origin or "").strip() or filename.strip() or "upload"
        if len(origin) > MAX_ORIGIN_CHARS or not origin.isprintable():
            raise TMError(f"origin must be printable text of at most {MAX_ORIGIN_CHARS} characters")
        fmt = format_of(filename or "upload", fmt or None)
        held = self.memory.usage(owner)
        entry_cap, byte_cap = self.settings.tm_entries_per_key, self.settings.tm_bytes_per_key
        caps = ReadCaps(pairs=max(0, entry_cap - held.entries) if entry_cap else None,
                        bytes=max(0, byte_cap - held.bytes) if byte_cap else None)
        try:
            found = read(filename or "upload", data, fmt, source or None, target or None, caps, cancel)
        except PastCap as past:  # the reader stopped at the first pair past what the owner may still hold
            more = f"more than the {past.limit:,} left under"
            raise (self._over_entries if past.pairs else self._over_bytes)(owner, held, more) from None
        _language(found.source_lang, "the source language", languages)
        _language(found.target_lang, "the target language", languages)
        with self._import_lock(owner):  # again, with the write: another import of the owner's may have landed
            held = self.memory.usage(owner)
            if entry_cap and held.entries + len(found.pairs) > entry_cap:
                raise self._over_entries(owner, held, f"{len(found.pairs):,} more, past")
            if byte_cap and held.bytes + found.bytes > byte_cap:
                raise self._over_bytes(owner, held, f"{found.bytes:,} more, past")
            report = AddReport(skipped=dict(found.skipped))
            self.memory.add(found.pairs, found.source_lang, found.target_lang, origin=origin, owner=owner,
                            report=report, cancel=cancel)
            held = self.memory.usage(owner)
        return ImportResult(found.source_lang, found.target_lang, origin, report, held.entries)

    def _over_entries(self, owner: str | None, held: Usage, more: str) -> TMQuota:
        """The refusal of an import with ``more`` entries ("2 more, past", "more than the 1 left under")."""
        cap = self.settings.tm_entries_per_key
        return TMQuota(f"{_who(owner)} holds {held.entries:,} translation-memory entries and this file has {more} "
                       f"the limit of {cap:,} (MTSERVE_TM_ENTRIES_PER_KEY); delete some "
                       "(DELETE /tm/entries?origin=...) or import a smaller file")

    def _over_bytes(self, owner: str | None, held: Usage, more: str) -> TMQuota:
        cap = self.settings.tm_bytes_per_key
        return TMQuota(f"{_who(owner)} holds {held.bytes:,} bytes of translation-memory text and this file has "
                       f"{more} the limit of {cap:,} bytes (MTSERVE_TM_BYTES_PER_KEY); delete some "
                       "entries (DELETE /tm/entries?origin=...) or import a smaller file")

    # --- reading -------------------------------------------------------------------------
    @_busy_is_an_error
    def search(self, scope: TMScope, text: object, source: object, target: object, limit: int = 10,
               min_similarity: float = 0.0) -> list[TMMatch]:
        """The entries (of the caller's own) most similar to ``text``, best first; an exact match scores 100."""
        scope.check_identity()
        text = _text(text, "the text to search for")
        source_lang = _language(source, "source", None)
        target_lang = _language(target, "target", None)
        if not 1 <= limit <= MAX_SEARCH:
            raise TMError(f"limit must be between 1 and {MAX_SEARCH}")
        if not 0 <= min_similarity <= 100:
            raise TMError("min_similarity must be between 0 and 100")
        owner = scope.owner
        matches = self.memory.similar(text, source_lang, target_lang, k=limit, min_similarity=min_similarity,
                                      owner=owner, candidates=self.settings.tm_candidates, shared=False)
        exact = self.memory.exact(text, source_lang, target_lang, owner=owner, shared=False)
        if exact is not None and all(m.entry.id != exact.id for m in matches):
            matches = [TMMatch(exact, 100.0), *matches][:limit]
        return matches

    @_busy_is_an_error
    def stats(self, scope: TMScope) -> tuple[list[PairStats], Usage]:
        """Per language pair: the caller's entries, suggestions and origins; and what it holds (entries, bytes)."""
        scope.check_identity()
        held = self.memory.usage(scope.owner)
        return self.memory.stats(owner=scope.owner, shared=False), held

    @_busy_is_an_error
    def views(self, key_id: str | None) -> list[MemoryView]:
        """The caller's views (API key ``key_id``; None: no key, or keys off), one per source language
        with entries it uses at translate time: its own and the operator's (the whole TM with keys off)."""
        targets: dict[str, dict[str, int]] = {}
        for pair in self.memory.stats(owner=key_id, shared=True):
            if pair.entries:
                targets.setdefault(pair.source_lang, {})[pair.target_lang] = pair.entries
        return [MemoryView(_view_id(key_id, source), source, tuple(by_target), sum(by_target.values()))
                for source, by_target in sorted(targets.items())]

    def view(self, key_id: str | None, memory_id: str) -> MemoryView:
        """One of the caller's views by id; UnknownMemory for any other id (another key's included)."""
        found = next((v for v in self.views(key_id) if v.id == memory_id.strip().lower()), None)
        if found is None:
            raise UnknownMemory(f"Translation memory not found: {memory_id}; list yours with "
                                "GET /v3/translation_memories", memory_id)
        return found

    @_busy_is_an_error
    def entries(self, scope: TMScope, source: str | None = None, target: str | None = None,
                origin: str | None = None, after: int = 0, limit: int = 100,
                suggestions: bool = False) -> list[TMEntry]:
        """A page of the caller's entries (the operator: anyone's) in the order they came."""
        scope.check_identity()
        if suggestions:
            scope.check_operator("listing suggestions")
        if not 1 <= limit <= MAX_PAGE:
            raise TMError(f"limit must be between 1 and {MAX_PAGE}")
        return list(self.memory.entries(source or None, target or None, owner=scope.owner,
                                        suggestions=suggestions, shared=False, origin=origin, after=after,
                                        limit=limit))

    # --- deleting ------------------------------------------------------------------------
    @_busy_is_an_error
    def delete(self, scope: TMScope, *, ids: Iterable[int] | None = None, origin: str | None = None) -> int:
        """Delete the caller's entries by id or by origin (the operator: anyone's, suggestions too)."""
        scope.check_identity()
        if (ids is None) == (origin is None):
            raise TMError("delete by id (DELETE /tm/entries/{id}) or by origin (DELETE /tm/entries?origin=...)")
        removed = self.memory.remove(ids=ids, origin=origin, owner=scope.owner)
        if not removed:
            which = f"origin {origin!r}" if origin is not None else "that id"
            whose = "" if scope.everything else f" of API key {scope.key_id}"
            raise UnknownEntry(f"no entry{whose} has {which}; see GET /tm/entries")
        return removed

    # --- suggestions ---------------------------------------------------------------------
    @_busy_is_an_error
    def suggest(self, key_id: str | None, q: object, s: object, source: object, target: object,
                languages: Collection[str] | None = None) -> None:
        """Store a suggested translation, to be accepted by the operator before it serves anyone."""
        if not self.settings.suggestions:
            raise SuggestionsOff("Suggestions are disabled on this server.")
        q, s = _text(q, "the text"), _text(s, "the suggested translation")
        source_lang = _language(source, "source", languages)
        target_lang = _language(target, "target", languages)
        if source_lang == target_lang:
            raise TMError(f"source and target are both {source_lang!r}; give two different languages")
        origin = SUGGEST_ORIGIN + (key_id or "anonymous")
        who = f"API key {key_id}" if key_id else "callers without an API key"
        size = pair_bytes(q, s)
        with self._suggesting:
            waiting = self.memory.usage(None, suggestions=True, origin=origin)
            cap = self.settings.tm_suggestions_per_key
            if cap and waiting.entries >= cap:
                raise TMQuota(f"{waiting.entries:,} suggestions from {who} are waiting for the operator, the limit "
                              "(MTSERVE_TM_SUGGESTIONS_PER_KEY); send more once some are accepted")
            cap = self.settings.tm_suggestion_bytes_per_key
            if cap and waiting.bytes + size > cap:
                raise TMQuota(f"the suggestions from {who} waiting for the operator hold {waiting.bytes:,} bytes "
                              f"and this one has {size:,} more, past the limit of {cap:,} bytes "
                              "(MTSERVE_TM_SUGGESTION_BYTES_PER_KEY); send more once some are accepted")
            self.memory.add([(q, s)], source_lang, target_lang, origin=origin, owner=None, suggestion=True)

    @_busy_is_an_error
    def accept(self, scope: TMScope, ids: Iterable[int] | None = None) -> int:
        """Turn suggestions (those ``ids``, or all) into entries that serve every caller: the operator's."""
        scope.check_operator("accepting suggestions")
        return self.memory.accept(None if ids is None else list(ids))
