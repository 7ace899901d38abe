"""What every document format implements: segments out, translations in, a file back.

A format module reads a file into a ``Document``: the text to translate as an
ordered list of segments (paragraphs, cues, table cells, strings), and a way
to render the same file with each segment replaced by its translation. The
format knows its structure and nothing of engines; the runner
(``mtserve.documents.jobs.runner``) knows the service and nothing of formats.
"""

from __future__ import annotations

import codecs
import errno
import re
import sqlite3
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field


class DocumentError(ValueError):
    """The file cannot be translated as given; the message says why and what to do (a 4xx)."""


class UnsupportedFormat(DocumentError):
    """A file whose extension names no format the server takes. ``extension`` (without its dot; ""
    for a file without one) and ``allowed`` (".txt, .docx") let an API family word it its own way."""

    def __init__(self, message: str, extension: str = "", allowed: str = ""):
        super().__init__(message)
        self.extension = extension
        self.allowed = allowed


class LimitExceeded(DocumentError):
    """Over a configured limit (size, segments): the API answers 413."""


class TooManyDocuments(RuntimeError):
    """Every place in the document queue is taken: the API answers 503 with Retry-After."""


class StorageUnavailable(RuntimeError):
    """The server's disk is full, or its storage cannot be written: an upload or a result could not be
    stored (the API answers 507). The message names no path."""


_FULL = {errno.ENOSPC, errno.EDQUOT}
_NOT_WRITABLE = {errno.EROFS, errno.EACCES, errno.EPERM}
_SQLITE_FULL = {sqlite3.SQLITE_FULL}
_SQLITE_NOT_WRITABLE = {sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN}
OUT_OF_DISK = ("the server is out of disk space and could not store the document; try again later, or ask the "
               "server's operator to free space under MTSERVE_HOME")
NOT_WRITABLE = ("the server could not store the document: its storage (MTSERVE_HOME) is read-only or not "
                "writable; ask the server's operator to fix it")


def storage_problem(exc: BaseException) -> StorageUnavailable | None:
    """A StorageUnavailable for a write that failed for lack of disk or of permission; None for any
    other failure, which stays the fault it is."""
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", -1) & 0xFF  # the primary code of an extended one
        if code in _SQLITE_FULL:
            return StorageUnavailable(OUT_OF_DISK)
        return StorageUnavailable(NOT_WRITABLE) if code in _SQLITE_NOT_WRITABLE else None
    if isinstance(exc, OSError):
        if exc.errno in _FULL:
            return StorageUnavailable(OUT_OF_DISK)
        return StorageUnavailable(NOT_WRITABLE) if exc.errno in _NOT_WRITABLE else None
    return None


@dataclass
class Output:
    """A rendered, translated file."""

    data: bytes
    extension: str  # without the dot; a PDF may come back as "docx"
    media_type: str


@dataclass
class Document:
    """A parsed file: its segments in reading order, and how to put translations back."""

    format: str  # the family, e.g. "docx", "markdown"
    segments: list[str]
    # What this format keeps and what it loses, for the job status and the CLI.
    notes: list[str] = field(default_factory=list)
    # Spans that must come back unchanged in every segment (placeholders in i18n files).
    placeholders: re.Pattern[str] | None = None
    # (label, index of the first segment after it): chapters, slides, pages.
    sections: list[tuple[str, int]] = field(default_factory=list)
    # The segments are marked (mtserve.text.markup): numbered inline tags such as <b1>..</b1>
    # stand for formatting, links or code, and the translation must keep them.
    markup: bool = False
    # Indexes of the segments whose translation is a stored translation-memory entry, served as stored
    # (the runner sets it before rendering): a CAT-tool format says so in the target's state.
    from_memory: frozenset[int] = frozenset()

    def render(self, translations: list[str], target: str) -> Output:  # pragma: no cover - abstract
        raise NotImplementedError

    def placeholders_kept(self, source: str, translation: str) -> bool:
        """Whether a translation kept the source's placeholders: by default the same ones, as often.

        A format whose placeholders nest or must keep their order (XLIFF's inline codes) says more.
        """
        if self.placeholders is None:
            return True
        found = self.placeholders.finditer
        return Counter(m.group() for m in found(source)) == Counter(m.group() for m in found(translation))

    def kept_check(self) -> Callable[[str, str], bool | None] | None:
        """``placeholders_kept``'s own rule as a picklable callable (None: the default count), so a
        document read in a worker process keeps it; the callable answers None where it has no rule."""
        return None

    def check_target(self, target: str) -> None:
        """Refuse (DocumentError) a target language this file cannot take, before any work is done."""

    async def render_async(self, translations: list[str], target: str) -> Output:
        """``render`` off the event loop (a sandboxed document renders in its worker process)."""
        import asyncio

        return await asyncio.to_thread(self.render, translations, target)

    def check(self, translations: list[str]) -> None:
        if len(translations) != len(self.segments):
            raise ValueError(f"expected {len(self.segments)} translations, got {len(translations)}")

    def section_at(self, index: int) -> str | None:
        """The label of the section that holds segment ``index``."""
        label = None
        for name, end in self.sections:
            label = name
            if index < end:
                break
        return label

    def sample(self, limit: int = 2000) -> str:
        """Text from the start of the document, for language detection."""
        from mtserve.text.markup import strip_tags

        picked: list[str] = []
        size = 0
        for segment in self.segments:
            if size >= limit:
                break
            segment = strip_tags(segment) if self.markup else segment
            picked.append(segment)
            size += len(segment)
        return "\n".join(picked)[:limit]


# --- text files ------------------------------------------------------------------
_BOMS = ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"))


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str  # what to encode the output with: the input's own encoding, BOM included
    newline: str  # "\r\n" or "\r" if the file used it, else "\n"; text always holds "\n"

    def encode(self, text: str) -> bytes:
        if self.newline != "\n":
            text = text.replace("\n", self.newline)
        return text.encode(self.encoding)


def decode_text(data: bytes, kind: str, fallbacks: tuple[str, ...] = ()) -> Decoded:
    """Decode a text file: a BOM decides, else UTF-8, else the given fallbacks."""
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            try:
                text = data.decode(encoding)
            except (UnicodeError, LookupError) as exc:
                raise DocumentError(f"could not read the {kind} file: {exc}") from None
            return _normalise(text, encoding)  # both encodings write their BOM again
    for encoding in ("utf-8", *fallbacks):
        try:
            return _normalise(data.decode(encoding), encoding)
        except (UnicodeError, LookupError):  # LookupError: a codec that is not a text encoding
            continue
    raise DocumentError(
        f"could not read the {kind} file: it is not UTF-8 text; save it as UTF-8 and upload it again"
    )


def _normalise(text: str, encoding: str) -> Decoded:
    """One line ending inside ("\n"), and the file's own written back: CR LF, else a lone CR, else LF.

    A lone CR is a line ending too (old Mac files, and mixed ones): parsers such as markdown-it
    count it as one, so the text must split into the same lines they see.
    """
    if "\x00" in text:
        raise DocumentError("the file holds binary data, not text; check its format")
    newline = "\r\n" if "\r\n" in text else "\r" if "\r" in text else "\n"
    return Decoded(text.replace("\r\n", "\n").replace("\r", "\n"), encoding, newline)


# --- text with spans the engine must not see -----------------------------------------
@dataclass
class Piece:
    text: str
    translate: bool


def protected_split(text: str, pattern: re.Pattern[str]) -> list[Piece]:
    """Cut ``text`` into translatable stretches and the spans ``pattern`` protects."""
    pieces: list[Piece] = []
    position = 0
    for match in pattern.finditer(text):
        if match.start() > position:
            pieces.append(Piece(text[position:match.start()], True))
        if match.end() > match.start():
            pieces.append(Piece(match.group(), False))
        position = match.end()
    if position < len(text):
        pieces.append(Piece(text[position:], True))
    return pieces


class PieceText:
    """A text made of pieces, some translated: the translatable ones with words are segments."""

    def __init__(self, pieces: list[Piece]):
        self.pieces = pieces
        self.indexes = [i for i, p in enumerate(pieces) if p.translate and p.text.strip()]

    @property
    def segments(self) -> list[str]:
        return [self.pieces[i].text.strip() for i in self.indexes]

    def render(self, translations: list[str], escape=None) -> str:
        out = [p.text for p in self.pieces]
        for i, translation in zip(self.indexes, translations):
            out[i] = keep_edges(self.pieces[i].text, escape(translation) if escape else translation)
        return "".join(out)


def keep_edges(source: str, translation: str) -> str:
    """The source's leading and trailing whitespace around the translation."""
    core = translation.strip()
    if not core:
        return source
    lead = source[: len(source) - len(source.lstrip())]
    trail = source[len(source.rstrip()):]
    return lead + core + trail


class Segments:
    """Collects segments while a format walks its file, handing out their indexes."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self.sections: list[tuple[str, int]] = []

    def add(self, text: str) -> int:
        self.items.append(text)
        return len(self.items) - 1

    def extend(self, texts: list[str]) -> range:
        start = len(self.items)
        self.items.extend(texts)
        return range(start, len(self.items))

