"""File formats: each module reads one kind of file into a ``Document`` and writes it back translated.

- ``base``: the ``Document`` every format returns (segments out, translations in, a file back),
  the errors a file can earn (``DocumentError``, ``LimitExceeded``, ``UnsupportedFormat``) and
  the text helpers the formats share (decoding, protected pieces, edge whitespace).
- ``registry``: which reader parses a file, by extension, and what each format keeps;
  ``read_document`` parses in this process.
- ``limits``: the bounds a file is read within, and the running count of what a parse has used.
- ``safe_zip_xml``: zip archives of XML parts read within those bounds (no entity expanded) and
  written back; ``office``, ``xlsx`` and ``epub`` share it.
- ``share``: a translation shared out among the lines its source came in (subtitles, wrapped text).
- one module per format: ``plain`` (text and HTML), ``markdown``, ``subtitles`` (SRT, WebVTT),
  ``office`` (DOCX, PPTX, ODT), ``xlsx``, ``epub``, ``pdf``, ``i18n`` (gettext, JSON string
  tables), ``xliff``.
"""
