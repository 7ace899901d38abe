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
from collections.abc import Iterator
from typing import Any

import polib

from mtserve.documents.base import Decoded, Document, DocumentError, LimitExceeded, Output, decode_text
from mtserve.documents.limits import budget

PLACEHOLDER = re.compile(
    r"%(?:\(\w+\)|\d+\$)?[-+0#]*(?:\d+|\*)?(?:\.(?:\d+|\*))?(?:hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGcrsaAp@%]"
    r"|\{\{[^{}]*\}\}"  # {{count}}: i18next, Handlebars, Angular
    r"|\$\{[^{}]*\}"  # ${name}: template literals
    r"|\{[\w.:\-\[\]!]*\}"  # {name}, {0}, {count:d}, {}
    r"|</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>"  # <b>, </a>, <br/>
    r"|</?\d+/?>"  # react-i18next <0>...</0>
    r"|\$t\([^()]*\)"  # i18next nesting ([^()]: "$t(" repeated must not rescan to the end each time)
)
_LONE_SURROGATE = re.compile(r"[\ud800-\udfff]")  # JSON can escape one ("\ud800"); no engine reads it
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
        for entry in self.entries:
            if len(entry.msgid) + len(entry.msgid_plural or "") > _WRAP_AT_MOST:
                _unwrapped(entry)
        text = str(self.catalog)
        try:
            check = parse_po_text(text)
        except (OSError, ValueError) as exc:  # never expected: the catalog was written by polib
            raise RuntimeError(f"the translated catalog does not parse: {exc}") from exc
        if [e.msgid for e in check if not e.obsolete] != [e.msgid for e in self.catalog if not e.obsolete]:
            raise RuntimeError("the translated catalog lost entries")
        return Output(text.encode("utf-8"), "po", "text/x-gettext-translation; charset=utf-8")


_WRAP_AT_MOST = 4000  # characters of a string that polib wraps at 78 columns


def _unwrapped(entry: polib.POEntry) -> None:
    """Write this entry's strings on one line each: polib wraps with textwrap, about 10 µs a word,
    and a single string of a few MB took most of a minute. gettext reads lines of any length."""
    entry.__unicode__ = lambda wrapwidth=0, _entry=entry: polib.POEntry.__unicode__(_entry, 0)


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
    # polib builds an object of about a kilobyte for every entry before we see one: count them first.
    entries = decoded.text.count("\nmsgid ") + decoded.text.startswith("msgid ")
    budget().check_segments(entries - 1)  # the header is an entry with no text
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
        try:
            data = self.decoded.encode(text)
        except UnicodeEncodeError:  # a lone surrogate ("\ud800") kept from the source: keep it escaped
            data = self.decoded.encode(json.dumps(self.value, ensure_ascii=True, indent=self.indent)
                                       + ("\n" if self.decoded.text.endswith("\n") else ""))
        return Output(data, "json", "application/json")


def _no_constant(name: str) -> Any:
    raise DocumentError(f"could not read the .json file: {name} is not a JSON value; write it as a string")


def _finite(text: str) -> float:
    number = float(text)
    if number in (float("inf"), float("-inf")):
        raise DocumentError(f"could not read the .json file: the number {text[:40]} is too large for a "
                            "JSON document to keep; write it as a string")
    return number


def read_json(data: bytes) -> JsonDocument:
    decoded = decode_text(data, ".json")
    depth_cap = budget().limits.max_depth
    try:
        value = json.loads(decoded.text, parse_constant=_no_constant, parse_float=_finite)
    except DocumentError:
        raise
    except json.JSONDecodeError as exc:
        raise DocumentError(f"could not read the .json file: {exc}") from None
    except RecursionError:  # the C parser's own guard, near a thousand levels
        raise LimitExceeded(f"the .json file is nested more than {depth_cap:,} levels deep; the limit is "
                            f"{depth_cap:,} (MTSERVE_FILES_MAX_DEPTH)") from None
    except ValueError as exc:  # an integer of more than 4,300 digits (sys.get_int_max_str_digits())
        raise DocumentError(f"could not read the .json file: {exc}") from None
    if not isinstance(value, (dict, list)):
        raise DocumentError("could not read the .json file: an i18n file is an object (or list) of strings")
    where: list[tuple[Any, Any]] = []

    def entries(node: Any) -> Iterator[tuple[Any, Any, Any]]:
        pairs = node.items() if isinstance(node, dict) else enumerate(node)
        return ((node, key, child) for key, child in pairs)

    stack = [entries(value)]  # depth first in document order, without recursion
    while stack:
        entry = next(stack[-1], None)
        if entry is None:
            stack.pop()
            continue
        node, key, child = entry
        if isinstance(child, str):
            if translatable(child) and not _LONE_SURROGATE.search(child):
                where.append((node, key))
                budget().check_segments(len(where))
        elif isinstance(child, (dict, list)):
            budget().check_depth(len(stack) + 1, "the .json file")
            stack.append(entries(child))
    indent_match = re.search(r"\n([ \t]+)\S", decoded.text)
    indent = indent_match.group(1) if indent_match else ("  " if "\n" in decoded.text.strip() else None)
    return JsonDocument(decoded, value, where, indent)
