"""Document translation: files in, the same files out, translated.

``registry`` maps extensions to format modules (``plain``, ``markdown``,
``subtitles``, ``office``, ``epub``, ``pdf``, ``i18n``), each of which reads a
file into a ``Document`` (ordered segments plus a renderer); ``runner``
translates a Document through the shared TranslationService; ``jobs`` runs
documents in the background for the API, with progress, cancellation and expiry.
"""

from mtserve.documents.base import Document, DocumentError, LimitExceeded, Output, UnsupportedFormat
from mtserve.documents.registry import FORMATS, format_for, read_document

__all__ = ["Document", "DocumentError", "LimitExceeded", "Output", "UnsupportedFormat", "FORMATS",
           "format_for", "read_document"]
