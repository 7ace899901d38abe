"""Glossaries (terminology): which source terms must come out as which target terms.

Three sources feed a request's glossary, later ones winning on the same term:

1. the server-wide glossary file (setting ``glossary_file``, TSV or JSON),
2. a named glossary from the store (``mtserve.service.glossary_store``), by id
   (``glossary_id``; created with DeepL's ``POST /v2/glossaries`` or
   ``/v3/glossaries``, or ``mtserve glossary add``): its dictionary for the
   request's language pair (``GlossaryStore.for_pair``),
3. the request's own ``glossary`` object.

Only the entries whose term occurs in a segment reach the prompt
(``matching_entries``), so a 5,000-entry glossary costs a sentence nothing
but the two terms it really contains, and segments without terms keep
sharing the cache with glossary-free requests.

A ``GlossaryScope`` says what a caller may do with stored glossaries: a key
lists, reads and uses its own glossaries and the operator's, and changes and
deletes only its own; a caller without a key (keys on, not required) reads and
uses the operator's only, and creates, changes or deletes none, since a
glossary it made would belong to nobody it could prove to be. With keys off
there are no identities: every caller is the operator.
"""

from __future__ import annotations

import csv
import io
import json
import re
import threading
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Callable, Mapping

MAX_TERM_CHARS = 200
MAX_NAME_CHARS = 200  # DeepL allows 1,024 bytes
ENTRY_FORMATS = ("tsv", "csv", "json")
ANY_LANGUAGE = "*"


class GlossaryError(ValueError):
    """Invalid glossary data or an unknown glossary; the message says what to fix."""


class UnknownGlossary(GlossaryError):
    """No stored glossary has that id, or none the caller may see (a 404 over HTTP)."""

    def __init__(self, message: str, glossary_id: str = ""):
        super().__init__(message)
        self.glossary_id = glossary_id


class UnusableGlossaryId(UnknownGlossary):
    """A translation's ``glossary_id`` names no glossary the caller may use: a field of the request
    that is wrong, where UnknownGlossary is a resource that is not there."""


class GlossaryMismatch(GlossaryError):
    """A stored glossary that does not fit the request's language pair (a 400 over HTTP)."""


class GlossaryForbidden(GlossaryError):
    """The caller may not do that to glossaries: create one without a key, delete the operator's (403)."""


class GlossaryQuota(GlossaryForbidden):
    """The caller already owns as many glossaries as it may (403)."""


class GlossaryTooLarge(GlossaryError):
    """More entries than a glossary may have (413)."""


@dataclass(frozen=True)
class GlossaryScope:
    """Which glossaries a caller may see, use and delete, and who owns the ones it makes.

    ``everything``: the operator (the CLI; any caller while API keys are off). Otherwise a
    caller with ``key_id`` sees its own and the operator's and deletes its own; one without
    (``key_id`` None) sees the operator's and changes nothing.
    """

    key_id: str | None = None
    everything: bool = False

    def sees(self, owner: str | None) -> bool:
        return self.everything or owner is None or owner == self.key_id

    def may_delete(self, owner: str | None) -> bool:
        return self.everything or (self.key_id is not None and owner == self.key_id)

    def owner_of_new(self) -> str | None:
        """The owner a glossary this caller creates gets; GlossaryForbidden for a caller without a key."""
        if self.everything:
            return None
        if self.key_id is None:
            raise GlossaryForbidden("creating a glossary needs an API key: send it as "
                                    "Authorization: DeepL-Auth-Key <key> (keys: `mtserve keys add`)")
        return self.key_id

    def where(self) -> tuple[str, tuple[str, ...]]:
        """The SQL condition on ``glossaries.owner`` for what this scope sees."""
        if self.everything:
            return "1 = 1", ()
        if self.key_id is None:
            return "owner IS NULL", ()
        return "(owner IS NULL OR owner = ?)", (self.key_id,)


OPERATOR = GlossaryScope(everything=True)


def scope_for(key_id: str | None, keys_on: bool) -> GlossaryScope:
    """The scope of an API caller: with keys off everyone is the operator, with keys on its key decides."""
    return GlossaryScope(key_id=key_id) if keys_on else OPERATOR


def check_request_entries(entries: Mapping[str, str] | None, limit: int,
                          setting: str = "MTSERVE_GLOSSARY_REQUEST_ENTRIES") -> None:
    """A request's own glossary object within its cap, or GlossaryTooLarge saying what to do instead."""
    if entries and limit > 0 and len(entries) > limit:
        raise GlossaryTooLarge(f"the request's glossary has {len(entries):,} entries; the limit is {limit:,} "
                               f"({setting}); store a larger one with POST /v2/glossaries and send its "
                               "glossary_id instead")


# --- entries: validation and parsing ------------------------------------------------------
# What DeepL refuses in a term (its clients' validate_glossary_term): C0 and C1 control characters,
# the tab and line breaks among them, and Unicode's line and paragraph separators. Without them an
# entry is one line of TSV with one tab, which is all DeepL's TSV can hold: it has no quoting.
_CONTROL = re.compile(r"[\x00-\x1f\x80-\x9f\u2028\u2029]")


def validate_entries(entries: object, where: str = "glossary") -> dict[str, str]:
    """A clean {term: translation} dict, or a GlossaryError saying what is wrong."""
    if not isinstance(entries, Mapping):
        raise GlossaryError(f"{where} must be an object of term -> translation, "
                            'e.g. {"国际商业机器公司": "IBM"}')
    clean: dict[str, str] = {}
    for term, translation in entries.items():
        if not isinstance(term, str) or not isinstance(translation, str):
            raise GlossaryError(f"{where}: every term and translation must be a string; got "
                                f"{shown_value(term)}: {shown_value(translation)}")
        term, translation = term.strip(), translation.strip()
        if not term or not translation:
            raise GlossaryError(f"{where}: empty term or translation in {term!r}: {translation!r}")
        if len(term) > MAX_TERM_CHARS or len(translation) > MAX_TERM_CHARS:
            raise GlossaryError(f"{where}: {term[:40]!r} is longer than {MAX_TERM_CHARS} characters")
        if _CONTROL.search(term) or _CONTROL.search(translation):
            raise GlossaryError(f"{where}: {term[:40]!r}: {translation[:40]!r} holds a tab, a line break or "
                                "another control character, which no term or translation may hold")
        clean[term] = translation
    return clean


def shown_value(value: object) -> str:
    """A value for an error message: a string's start, else only its type (a nested one has no safe repr)."""
    return repr(value[:40]) if isinstance(value, str) else f"a {type(value).__name__}"


def parse_entries(text: str, fmt: str = "tsv", max_entries: int = 0) -> dict[str, str]:
    """Entries from DeepL's formats: ``tsv`` (term<TAB>translation, nothing quoted), ``csv``
    (term,translation, quoted where needed; language columns after them are ignored), or a ``json``
    object. A line that starts with ``#`` is a comment.

    ``max_entries`` (0: no cap) stops a long text at the first entry over the cap (GlossaryTooLarge).
    """
    if fmt not in ENTRY_FORMATS:
        raise GlossaryError(f"unknown entries format {fmt!r}; use one of {', '.join(ENTRY_FORMATS)}")
    if fmt == "json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise GlossaryError(f"glossary entries are not valid JSON: {exc.msg} (line {exc.lineno})") from None
        except (RecursionError, ValueError):  # nested too deep; an integer of thousands of digits
            raise GlossaryError("glossary entries must be a flat JSON object of term -> translation") from None
        if isinstance(data, Mapping):
            check_entry_count(len(data), max_entries)
        return validate_entries(data, "glossary entries")
    rows = csv.reader(io.StringIO(text), delimiter="\t" if fmt == "tsv" else ",",
                      quoting=csv.QUOTE_NONE if fmt == "tsv" else csv.QUOTE_MINIMAL)
    pairs: dict[str, str] = {}
    number = 0
    try:
        for number, row in enumerate(rows, 1):
            if not row or not "".join(row).strip() or row[0].lstrip().startswith("#"):
                continue
            if len(row) < 2:
                raise GlossaryError(f"glossary entries, line {number}: expected "
                                    f"term{'<TAB>' if fmt == 'tsv' else ','}translation, got {row[0][:40]!r}")
            if fmt == "tsv" and any(column.strip() for column in row[2:]):  # no quoting: a tab in a term
                raise GlossaryError(f"glossary entries, line {number}: more than one tab in {row[0][:40]!r}; "
                                    "a term or translation cannot hold a tab")
            pairs[row[0]] = row[1]
            check_entry_count(len(pairs), max_entries)
    except csv.Error as exc:  # a field over csv's 131,072-character limit, a stray quote
        raise GlossaryError(f"glossary entries, line {number + 1}: {exc}; a term or translation has at most "
                            f"{MAX_TERM_CHARS} characters") from None
    return validate_entries(pairs, "glossary entries")


def check_entry_count(count: int, max_entries: int) -> None:
    if max_entries > 0 and count > max_entries:
        raise GlossaryTooLarge(f"the glossary has more than {max_entries:,} entries, the limit per glossary "
                               "(MTSERVE_GLOSSARY_MAX_ENTRIES); split it, or ask the operator to raise it")


def format_entries(entries: Mapping[str, str], fmt: str = "tsv") -> str:
    """Entries in one of DeepL's formats, as ``parse_entries`` reads them back.

    TSV as DeepL writes it: one ``term<TAB>translation`` line each, nothing quoted (a ``"`` is
    itself; an entry holds no tab or line break, ``validate_entries`` refuses them). CSV quoted
    where a field needs it, a ``"`` doubled.
    """
    if fmt == "json":
        return json.dumps(dict(entries), ensure_ascii=False)
    if fmt == "tsv":
        return "".join(f"{term}\t{translation}\n" for term, translation in entries.items())
    if fmt != "csv":
        raise GlossaryError(f"unknown entries format {fmt!r}; use one of {', '.join(ENTRY_FORMATS)}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n", quoting=csv.QUOTE_MINIMAL)
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


def term_in_output(translation: str, output: str, language: str | None = None) -> bool:
    """Whether the glossary's ``translation`` appears in ``output`` (case-insensitive for spaced scripts),
    in any inflected form where ``language`` has a Snowball stemmer: "permission" honours "Permissions" and
    "created" honours "Create", as DeepL flexes a glossary's entries for the sentence. Held to the exact form,
    the 1.5B's grammatical answers were retried, and the retries read worse (docs/decisions/019-glossary-terms.md)."""
    if _pattern(translation).search(output):
        return True
    if not _SPACED_SCRIPT.search(translation) or (stem := _stemmer(language)) is None:
        return False
    wanted = [stem(word) for word in _WORD.findall(translation.lower())]
    words = [stem(word) for word in _WORD.findall(output.lower())]
    return any(words[i:i + len(wanted)] == wanted for i in range(len(words) - len(wanted) + 1))


_WORD = re.compile(f"[{_ALNUM}]+")
# mtserve's language codes -> Snowball's algorithms (snowballstemmer.algorithms())
SNOWBALL = {"en": "english", "de": "german", "fr": "french", "es": "spanish", "it": "italian",
            "pt": "portuguese", "nl": "dutch", "sv": "swedish", "da": "danish", "nb": "norwegian",
            "no": "norwegian", "fi": "finnish", "ru": "russian", "ro": "romanian", "hu": "hungarian",
            "tr": "turkish", "ca": "catalan", "el": "greek", "cs": "czech", "pl": "polish",
            "id": "indonesian", "lt": "lithuanian", "et": "estonian", "ga": "irish", "eu": "basque",
            "sr": "serbian", "hy": "armenian"}


def _stemmer(language: str | None) -> Callable[[str], str] | None:
    """A stem function for ``language``; None where Snowball has none."""
    algorithm = SNOWBALL.get((language or "").split("-")[0].lower())
    return _snowball(algorithm) if algorithm else None


@lru_cache(maxsize=None)
def _snowball(algorithm: str) -> Callable[[str], str]:
    """One cached, thread-safe stem function per algorithm (a Snowball stemmer keeps its state on the object)."""
    import snowballstemmer

    stemmer = snowballstemmer.stemmer(algorithm)
    lock = threading.Lock()

    @lru_cache(maxsize=8192)
    def stem(word: str) -> str:
        with lock:
            return stemmer.stemWord(word)

    return stem


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


def merge(*layers: Mapping[str, str] | None) -> dict[str, str]:
    """Later layers win on the same term."""
    merged: dict[str, str] = {}
    for layer in layers:
        if layer:
            merged.update(layer)
    return merged
