"""File formats by extension: which reader parses a file, and what each format keeps."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import PurePath
from typing import Callable

from mtserve.documents.formats.base import Document, DocumentError, UnsupportedFormat
from mtserve.documents.formats.limits import Limits, within


@dataclass(frozen=True)
class ReadOptions:
    """Settings that change how a format reads a file (the rest of Settings is no concern of readers)."""

    xlsx_sheet_names: bool = False  # MTSERVE_FILES_XLSX_SHEET_NAMES

    @classmethod
    def from_settings(cls, settings) -> ReadOptions:
        return cls(**{f.name: getattr(settings, f"files_{f.name}") for f in fields(cls)})


Reader = Callable[[bytes, ReadOptions], Document]


@dataclass(frozen=True)
class Format:
    name: str  # the setting's spelling: MTSERVE_FILES_FORMATS lists these
    extensions: tuple[str, ...]  # the first is the canonical one
    read: Reader
    keeps: str  # one line for the docs and the API
    # what its text is, for the prompt (a request's own ``context`` replaces it): a catalog's strings are
    # terse UI labels and messages, a subtitle's lines are speech
    context: str = ""


def _lazy(module: str, function: str, **options: str) -> Reader:
    """Import a format's libraries only when a file of that format arrives.

    ``options`` maps the reader's keyword arguments to the ReadOptions fields that fill them.
    """

    def read(data: bytes, read_options: ReadOptions = ReadOptions()) -> Document:
        import importlib

        reader = getattr(importlib.import_module(f"mtserve.documents.formats.{module}"), function)
        return reader(data, **{keyword: getattr(read_options, field) for keyword, field in options.items()})

    return read


UI_STRINGS = "These are user-interface strings of a software application."
SUBTITLES = "These are the subtitles of a video."

FORMATS: tuple[Format, ...] = (
    Format("txt", ("txt",), _lazy("plain", "read_text"), "every line and blank line"),
    Format("md", ("md", "markdown"), _lazy("markdown", "read_markdown"),
           "Markdown syntax; code, link targets and HTML untouched"),
    Format("html", ("html", "htm", "xhtml"), _lazy("plain", "read_html"),
           "all markup; text nodes translated"),
    Format("srt", ("srt",), _lazy("subtitles", "read_srt"), "numbering and timings exactly",
           context=SUBTITLES),
    Format("vtt", ("vtt",), _lazy("subtitles", "read_vtt"), "timings, cue settings and notes exactly",
           context=SUBTITLES),
    Format("docx", ("docx",), _lazy("office", "read_docx"), "styles, tables, images, headers and footers"),
    Format("pptx", ("pptx",), _lazy("office", "read_pptx"), "slides, shapes, layouts and notes"),
    Format("odt", ("odt",), _lazy("office", "read_odt"), "styles, tables, images, headers and footers"),
    Format("epub", ("epub",), _lazy("epub", "read_epub"),
           "chapters, markup, styles and the table of contents"),
    Format("pdf", ("pdf",), _lazy("pdf", "read_pdf"),
           "page size, images and drawings; text set back in place in a new font"),
    Format("po", ("po", "pot"), _lazy("i18n", "read_po"), "msgids, contexts, comments and placeholders",
           context=UI_STRINGS),
    Format("json", ("json",), _lazy("i18n", "read_json"), "keys, nesting and placeholders",
           context=UI_STRINGS),
    Format("xliff", ("xlf", "xliff"), _lazy("xliff", "read_xliff"),
           "ids, notes, states, attributes and inline codes; source into target"),
    Format("xlsx", ("xlsx",), _lazy("xlsx", "read_xlsx", sheet_names="xlsx_sheet_names"),
           "formulas, numbers, dates, styles, merged cells; sheet names unless set to translate"),
)
BY_EXTENSION = {ext: f for f in FORMATS for ext in f.extensions}
BY_NAME = {f.name: f for f in FORMATS}


def default_context(document_format: str) -> str:
    """The context a format gives its text when the request sends none ("" for most formats);
    ``document_format`` is ``Document.format`` (po, json, srt, vtt, docx...)."""
    found = BY_NAME.get(document_format)
    return found.context if found else ""
ALL_NAMES = tuple(f.name for f in FORMATS)


def enabled_formats(setting: str) -> tuple[Format, ...]:
    """The formats a comma-separated setting allows ("*" or "all": every one)."""
    wanted = {part.strip().lower().lstrip(".") for part in setting.split(",") if part.strip()}
    if wanted & {"*", "all"}:
        return FORMATS
    return tuple(f for f in FORMATS if wanted & set(f.extensions))


def extensions_of(formats: tuple[Format, ...]) -> list[str]:
    return [f".{ext}" for f in formats for ext in f.extensions]


def format_for(filename: str, formats: tuple[Format, ...] = FORMATS) -> Format:
    """The format of ``filename`` by its extension, or UnsupportedFormat naming the allowed ones."""
    suffix = PurePath(filename or "").suffix.lower().lstrip(".")
    found = BY_EXTENSION.get(suffix)
    allowed = ", ".join(extensions_of(formats)) or "none (file translation is turned off)"
    if found is None or found not in formats:
        what = f"'.{suffix}'" if suffix else "a file without an extension"
        raise UnsupportedFormat(f"unsupported file format {what}; allowed formats: {allowed}", suffix, allowed)
    return found


def read_document(filename: str, data: bytes, formats: tuple[Format, ...] = FORMATS,
                  options: ReadOptions | None = None, limits: Limits | None = None) -> Document:
    """Parse a file by its extension, within ``limits`` (the settings' defaults if None), in this process.

    Raises DocumentError (unknown format, broken file) or LimitExceeded with the reason. The server
    parses in a worker process instead: ``mtserve.documents.jobs.sandbox``.
    """
    fmt = format_for(filename, formats)
    if not data:
        raise DocumentError(f"the file {PurePath(filename).name!r} is empty; there is nothing to translate")
    with within(limits or Limits.defaults()) as budget:
        document = fmt.read(data, options or ReadOptions())
        budget.check_segments(len(document.segments))
    return document
