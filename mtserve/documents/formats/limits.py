"""The bounds a document is read within, and the running count of what a parse has used.

Every byte of an upload is hostile until it is parsed within limits. Readers never allocate in
proportion to what a file *claims* (a zip entry's declared size, a PDF stream's filter chain)
without checking the claim against a bound first, and they count what they produce (segments,
expanded bytes) as they go, so a parse that would exceed a bound stops early with a
``LimitExceeded`` naming the setting. The parse sandbox (``mtserve.documents.jobs.sandbox``) adds
memory, CPU and time limits on top; these caps hold without it.

A reader finds the bounds of the parse it runs in with ``budget()``; ``read_document`` sets them.
"""

from __future__ import annotations

import contextlib
import contextvars
import re
from collections.abc import Iterator
from dataclasses import dataclass

from mtserve.documents.formats.base import LimitExceeded

MB = 1_000_000


@dataclass(frozen=True)
class Limits:
    """What one document may hold and expand to. Picklable: it travels to the parse worker."""

    max_segments: int | None  # None: no cap (the CLI translating a local file)
    max_expanded_bytes: int
    max_archive_entries: int
    max_xml_bytes: int
    max_xml_nodes: int
    max_depth: int
    max_pdf_pages: int
    max_pdf_page_chars: int
    max_pdf_stream_bytes: int

    @classmethod
    def from_settings(cls, settings, segments: bool = True) -> Limits:
        """The bounds the settings name; ``segments=False`` for local files (no segment cap)."""
        return cls(
            max_segments=settings.files_max_segments if segments else None,
            max_expanded_bytes=int(settings.files_max_expanded_mb * MB),
            max_archive_entries=settings.files_max_archive_entries,
            max_xml_bytes=int(settings.files_max_xml_mb * MB),
            max_xml_nodes=settings.files_max_xml_nodes,
            max_depth=settings.files_max_depth,
            max_pdf_pages=settings.files_max_pdf_pages,
            max_pdf_page_chars=settings.files_max_pdf_page_chars,
            max_pdf_stream_bytes=int(settings.files_max_pdf_stream_mb * MB),
        )

    @classmethod
    def defaults(cls) -> Limits:
        """The settings' defaults, without reading the environment."""
        from types import SimpleNamespace

        from mtserve.settings import Settings

        defaults = {name: field.default for name, field in Settings.model_fields.items()
                    if name.startswith("files_")}
        return cls.from_settings(SimpleNamespace(**defaults))


def megabytes(count: int) -> str:
    return f"{count / MB:,.1f} MB" if count % MB else f"{count // MB:,} MB"


class Budget:
    """The limits of one parse, and what it has used of them so far."""

    def __init__(self, limits: Limits) -> None:
        self.limits = limits
        self.expanded = 0  # bytes inflated or decoded so far (archive entries, PDF streams)

    def check_segments(self, count: int) -> None:
        """Stop the parse as soon as the document has more segments than allowed."""
        cap = self.limits.max_segments
        if cap is not None and count > cap:
            raise LimitExceeded(f"the document has at least {count:,} segments; the limit is {cap:,} "
                                "(MTSERVE_FILES_MAX_SEGMENTS)")

    def expand(self, size: int, what: str) -> None:
        """Count ``size`` more expanded bytes; over the total, stop."""
        self.expanded += size
        cap = self.limits.max_expanded_bytes
        if self.expanded > cap:
            raise LimitExceeded(f"the file expands to more than {megabytes(cap)} ({what}); the limit is "
                                f"{megabytes(cap)} (MTSERVE_FILES_MAX_EXPANDED_MB)")

    def check_depth(self, depth: int, what: str) -> None:
        cap = self.limits.max_depth
        if depth > cap:
            raise LimitExceeded(f"{what} is nested more than {cap:,} levels deep; the limit is {cap:,} "
                                "(MTSERVE_FILES_MAX_DEPTH)")


_CURRENT: contextvars.ContextVar[Budget | None] = contextvars.ContextVar("document_budget", default=None)


def budget() -> Budget:
    """The budget of the parse running now (the defaults when none was set, e.g. in a test)."""
    current = _CURRENT.get()
    return current if current is not None else Budget(Limits.defaults())


@contextlib.contextmanager
def within(limits: Limits) -> Iterator[Budget]:
    """Run a parse (or a render) under ``limits``, with a fresh count."""
    fresh = Budget(limits)
    token = _CURRENT.set(fresh)
    try:
        yield fresh
    finally:
        _CURRENT.reset(token)


_LONG_TAG = re.compile(r"<[A-Za-z][^<>]{1024,}")


def check_markup(text: str, what: str, equals: bool = True) -> None:
    """HTML or XML within the node limit, counted before it is parsed (tags, attributes, entities).

    An attribute needs no "=" in HTML (``<p a b c>``), so a long tag counts as one node per two
    characters: a 2 MB tag of single letters was a million attributes, and 500 MB in html.parser.
    ``equals=False`` for Markdown, where "=" is mostly prose and underlines, not attributes.
    """
    cap = budget().limits.max_xml_nodes
    nodes = text.count("<") + text.count("&") + (text.count("=") if equals else 0)
    nodes += sum(len(tag.group()) // 2 for tag in _LONG_TAG.finditer(text))
    if nodes > cap:
        raise LimitExceeded(f"{what} has about {nodes:,} markup nodes; the limit is {cap:,} "
                            "(MTSERVE_FILES_MAX_XML_NODES)")
