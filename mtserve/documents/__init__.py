"""Document translation: files in, the same files out, translated.

Two subpackages:

- ``formats``: reading and writing files. ``formats.registry`` maps extensions to format
  modules (``plain``, ``markdown``, ``subtitles``, ``office``, ``xlsx``, ``epub``, ``pdf``,
  ``i18n``, ``xliff``), each of which reads a file into a ``Document`` (``formats.base``:
  ordered segments plus a renderer) within the bounds of ``formats.limits``.
- ``jobs``: translating them. ``jobs.runner`` translates a Document through the shared
  TranslationService; ``jobs.store`` runs documents in the background for the API, with
  progress, cancellation and expiry, its records kept by ``jobs.records``; ``jobs.sandbox``
  reads and renders files in worker processes under memory, CPU and time limits.

The names below are the entry points most callers need.
"""

from mtserve.documents.formats.base import Document, DocumentError, LimitExceeded, Output, UnsupportedFormat
from mtserve.documents.formats.registry import FORMATS, format_for, read_document

__all__ = ["Document", "DocumentError", "LimitExceeded", "Output", "UnsupportedFormat", "FORMATS",
           "format_for", "read_document"]
