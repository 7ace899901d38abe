"""Inline markup inside a sentence: numbered tags and placeholders, translated in context.

Every format that has markup inside its sentences (HTML, DeepL XML, Office runs,
Markdown emphasis, i18n strings) hands the service the same thing: a *marked*
segment, the sentence with each piece of inline markup replaced by a numbered
tag, and the real markup kept aside by the format to be put back afterwards::

    我喜欢<b1>猫</b1>。          a bold word
    点击<a2>这里</a2>保存<x3/>   a link, and a void element (an image, an ignored tag)

Placeholders (``%s``, ``{name}``, ``{{ var }}``, URLs...) stay in the text as they
are: models know them, and they must come back byte for byte.

This package knows only that view, one module per subject; every name below is
importable from the package itself (``markup.check``, ``from mtserve.text.markup import TAG``):

- ``tags``: the tag model. The patterns (``TAG``, ``PLACEHOLDER``, ``AS_WRITTEN``,
  ``kept_as_written``), the view cut into ``tokens`` and read as a ``structure`` of
  ``Element``\\ s, tags built (``open_tag``, ``close_tag``, ``void_tag``), ``strip_tags``,
  ``placeholders``, ``balanced``, ``keep_tags_whole``, and ``check``: a translation has the same
  tags, each once, properly nested, and every placeholder byte-identical.
- ``edges``: spacing and case at tag edges for the target language (``fix_edges``,
  ``UNSPACED``).
- ``placement``: the fallback that never loses markup (``project``): given the tag-free
  translation of the sentence and the translation of each tag's content on its own, it puts
  every tag back on the translated words that match its content; ``anchors`` finds where those
  contents occur.
- ``icu``: ICU MessageFormat, a message's plural and select arguments taken apart so that each
  branch's text is translated, and put back (``icu_arguments``, ``simple_form``,
  ``branch_text``, ``branch_back``, ``rebuild_icu``).
"""

from mtserve.text.markup.edges import UNSPACED, fix_edges
from mtserve.text.markup.icu import (
    ICU_COUNT,
    IcuArgument,
    branch_back,
    branch_text,
    icu_arguments,
    rebuild_icu,
    simple_form,
)
from mtserve.text.markup.placement import anchors, consistent, locate, move_to_end, project
from mtserve.text.markup.tags import (
    AS_WRITTEN,
    PLACEHOLDER,
    TAG,
    Element,
    MarkupError,
    Token,
    balanced,
    check,
    close_tag,
    has_markup,
    keep_tags_whole,
    kept_as_written,
    open_tag,
    placeholders,
    strip_tags,
    structure,
    tokens,
    void_tag,
)

__all__ = [
    "TAG", "PLACEHOLDER", "AS_WRITTEN", "kept_as_written", "MarkupError", "Token", "tokens", "has_markup",
    "strip_tags", "placeholders", "open_tag", "close_tag", "void_tag", "Element", "structure",
    "keep_tags_whole", "balanced", "check",
    "UNSPACED", "fix_edges",
    "project", "anchors", "locate", "consistent", "move_to_end",
    "ICU_COUNT", "IcuArgument", "icu_arguments", "simple_form", "branch_text", "branch_back", "rebuild_icu",
]
