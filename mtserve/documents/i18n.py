"""Software localization files: gettext catalogs (.po, .pot) and JSON string tables.

Only the human text is translated. In a catalog, each entry's msgid (and
msgid_plural) is translated into its msgstr; msgids, contexts, comments,
references and flags are kept, and the header's Language is set to the
target. In JSON, every string value is translated, at any depth; keys,
numbers, booleans and the order of keys are kept.

Placeholders (``%s``, ``%(name)s``, ``%1$d``, ``{name}``, ``{0}``, ``{{count}}``,
``${x}``, inline tags like ``<b>`` or ``<0>``) must come back exactly. The
runner checks every translation; one that lost or changed a placeholder is
translated again in the pieces between its placeholders, which keeps them by
construction. The rendered file is parsed again before it is returned.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

import polib

from mtserve.documents.base import Decoded, Document, DocumentError, Output, decode_text

PLACEHOLDER = re.compile(
    r"%(?:\(\w+\)|\d+\$)?[-+0#]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGcrsaAp@%]"
    r"|\{\{[^{}]*\}\}"  # {{count}}: i18next, Handlebars, Angular
    r"|\$\{[^{}]*\}"  # ${name}: template literals
    r"|\{[\w.:\-\[\]!]*\}"  # {name}, {0}, {count:d}, {}
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"  # <b>, </a>, <br/>
    r"|</?\d+/?>"  # react-i18next <0>...</0>
    r"|\$t\([^)]*\)"  # i18next nesting
)
# ICU MessageFormat ("{count, plural, one {# file} other {# files}}") is code, not text.
_ICU = re.compile(r"\{\s*[\w.]+\s*,\s*(?:plural|select|selectordinal)\s*,")
_PLACEHOLDER_NOTE = ("Placeholders (%s, %(name)s, {name}, {0}, {{count}}, <b>) are kept; a string whose "
                     "translation lost one is translated again in the pieces between them.")


def translatable(text: str) -> bool:
    return bool(text.strip()) and not _ICU.search(text)


# --- gettext -----------------------------------------------------------------------
class PoDocument(Document):
    def __init__(self, decoded: Decoded, catalog: polib.POFile, entries: list[polib.POEntry]):
        self.decoded = decoded
        self.catalog = catalog
        self.entries = entries
        segments: list[str] = []
        for entry in entries:
            segments.append(entry.msgid)
            if entry.msgid_plural:
                segments.append(entry.msgid_plural)
        super().__init__("po", segments, placeholders=PLACEHOLDER, notes=[
            "msgids, contexts, comments, references and flags are kept; each msgstr is the "
            "translation of its msgid, and the header's Language is set to the target.",
            _PLACEHOLDER_NOTE,
            "Plural-Forms is kept as it was; check it fits the target language.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        remaining = iter(translations)
        plurals = _nplurals(self.catalog.metadata.get("Plural-Forms", ""))
        for entry in self.entries:
            singular = next(remaining)
            if entry.msgid_plural:
                plural = next(remaining)
                count = max(plurals, len(entry.msgstr_plural), 2)
                entry.msgstr_plural = {i: singular if i == 0 else plural for i in range(count)}
            else:
                entry.msgstr = singular
        self.catalog.metadata["Language"] = target
        self.catalog.metadata["Content-Type"] = "text/plain; charset=UTF-8"
        self.catalog.encoding = "utf-8"
        text = str(self.catalog)
        try:
            check = parse_po_text(text)
        except (OSError, ValueError) as exc:  # never expected: the catalog was written by polib
            raise RuntimeError(f"the translated catalog does not parse: {exc}") from exc
        if [e.msgid for e in check if not e.obsolete] != [e.msgid for e in self.catalog if not e.obsolete]:
            raise RuntimeError("the translated catalog lost entries")
        return Output(text.encode("utf-8"), "po", "text/x-gettext-translation; charset=utf-8")


def _nplurals(plural_forms: str) -> int:
    found = re.search(r"nplurals\s*=\s*(\d+)", plural_forms)
    return int(found.group(1)) if found else 2


def parse_po_text(text: str, **options: Any) -> polib.POFile:
    """A catalog parsed from its text, never from a path.

    ``polib.pofile`` (and its parser class) open their argument as a file when it names one that
    exists, so an upload whose content is ``/etc/passwd`` would be read from the server's disk. The
    text goes into a temporary file of our own, and polib is handed that path.
    """
    with tempfile.TemporaryDirectory(prefix="mtserve-po-") as folder:
        path = Path(folder) / "catalog.po"
        path.write_text(text, encoding="utf-8")
        try:
            catalog = polib.pofile(str(path), encoding="utf-8", **options)
        except (OSError, ValueError) as exc:  # its messages name the file: say it without our path
            raise ValueError(str(exc).replace(f" {path}", "").replace(str(path), "the file")) from None
    catalog.fpath = None
    return catalog


def read_po(data: bytes) -> PoDocument:
    decoded = decode_text(data, ".po")
    try:
        catalog = parse_po_text(decoded.text, wrapwidth=78)
    except (OSError, ValueError, UnicodeError) as exc:
        raise DocumentError(f"could not read the .po file: {exc}") from None
    entries = [e for e in catalog if not e.obsolete and translatable(e.msgid)]
    return PoDocument(decoded, catalog, entries)


# --- JSON --------------------------------------------------------------------------
class JsonDocument(Document):
    def __init__(self, decoded: Decoded, value: Any, where: list[tuple[Any, Any]], indent: str | None):
        self.decoded = decoded
        self.value = value
        self.where = where  # (container, key) of each translated string
        self.indent = indent
        super().__init__("json", [container[key] for container, key in where], placeholders=PLACEHOLDER,
                         notes=["Keys, nesting, numbers and booleans are kept; every string value is "
                                "translated (ICU plural/select messages are left as they are).",
                                _PLACEHOLDER_NOTE])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        for (container, key), translation in zip(self.where, translations):
            container[key] = translation
        text = json.dumps(self.value, ensure_ascii=False, indent=self.indent)
        if self.decoded.text.endswith("\n"):
            text += "\n"
        json.loads(text)  # it must parse; json.dumps of parsed JSON always does
        return Output(self.decoded.encode(text), "json", "application/json")


def read_json(data: bytes) -> JsonDocument:
    decoded = decode_text(data, ".json")
    try:
        value = json.loads(decoded.text)
    except json.JSONDecodeError as exc:
        raise DocumentError(f"could not read the .json file: {exc}") from None
    if not isinstance(value, (dict, list)):
        raise DocumentError("could not read the .json file: an i18n file is an object (or list) of strings")
    where: list[tuple[Any, Any]] = []

    def walk(node: Any) -> None:
        items = node.items() if isinstance(node, dict) else enumerate(node)
        for key, child in items:
            if isinstance(child, str):
                if translatable(child):
                    where.append((node, key))
            elif isinstance(child, (dict, list)):
                walk(child)

    walk(value)
    indent_match = re.search(r"\n([ \t]+)\S", decoded.text)
    indent = indent_match.group(1) if indent_match else ("  " if "\n" in decoded.text.strip() else None)
    return JsonDocument(decoded, value, where, indent)
