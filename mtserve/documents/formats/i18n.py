"""Software localization files: gettext catalogs (.po, .pot) and JSON string tables.

Only the human text is translated. In a catalog, each entry's msgid (and
msgid_plural) is translated into its msgstr; msgids, contexts, comments,
references and flags are kept, and the header's Language is set to the
target. In JSON, every string value is translated, at any depth; keys,
numbers, booleans and the order of keys are kept.

Placeholders (``%s``, ``%(name)s``, ``%1$d``, ``{name}``, ``{0}``, ``{{count}}``,
``${x}``) must come back exactly; the service checks them, retries, and puts
back what a translation lost (``mtserve.text.markup``), and the runner checks
again. Inline tags (``<b>``, ``<a href>``, react-i18next's ``<0>``) travel as
numbered tags, so the string is translated whole and each tag stays on its
words. ICU MessageFormat (``{count, plural, one {# file} other {# files}}``)
keeps its skeleton; the text of each branch is translated. A menu accelerator
(``_File``, ``&Open``) is taken out before translation and put back after: on
the same letter where the translation has it, else its first letter, and as
``(_F)`` after a Chinese, Japanese or Korean translation. The rendered file is
parsed again before it is returned.
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import polib

from mtserve.documents.formats.base import Decoded, Document, DocumentError, LimitExceeded, Output, decode_text
from mtserve.documents.formats.limits import budget
from mtserve.text import markup

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
_PLACEHOLDER_NOTE = ("Placeholders (%s, %(name)s, {name}, {0}, {{count}}) are kept byte for byte, inline "
                     "tags (<b>, <a>, <0>) stay on their words, ICU plural/select messages keep their "
                     "skeleton with each branch translated, and menu accelerators (_File, &Open) are "
                     "put back on the translation.")
_INLINE_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>]*)?/?>|</?\d+/?>")
_ACCELERATOR = re.compile(r"(?<![\w&_])([_&])([A-Za-z0-9])")
_ENTITY = re.compile(r"&(?:[A-Za-z][A-Za-z0-9]{1,31}|#\d{1,7}|#[xX][0-9A-Fa-f]{1,6});")
_WIDE_TARGETS = ("zh", "zt", "ja", "ko")


def translatable(text: str) -> bool:
    return bool(text.strip())


class Strings:
    """The strings of a catalog as marked segments, and how to turn translations back into strings:
    inline tags as numbered tags, and a menu accelerator taken out and put back."""

    def __init__(self, texts: list[str]):
        self.texts = texts
        self.tags: list[dict[int, str]] = []
        self.accelerators: list[tuple[str, str] | None] = []  # (marker, letter)
        self.segments: list[str] = []
        for text in texts:
            view, tags = _inline_view(text)
            accelerator = None
            found = list(_ACCELERATOR.finditer(view))
            if len(found) == 1 and not tags and len(view.split()) <= 4 and not _ENTITY.search(view):
                marker = found[0]
                accelerator = (marker.group(1), marker.group(2))
                view = view[:marker.start()] + view[marker.start() + 1:]
            self.tags.append(tags)
            self.accelerators.append(accelerator)
            self.segments.append(view)

    def render(self, translations: list[str], target: str) -> list[str]:
        out = []
        for k, translation in enumerate(translations):
            tags, accelerator = self.tags[k], self.accelerators[k]
            if translation == self.segments[k]:
                out.append(self.texts[k])
                continue
            if tags:
                if markup.check(self.segments[k], translation) is not None:
                    translation = markup.project(self.segments[k], markup.strip_tags(translation), {}, target)
                translation = "".join(t.text if t.kind == "text" else tags.get(-t.id if t.kind == "close"
                                                                              else t.id, "")
                                      for t in markup.tokens(translation))
            if accelerator is not None:
                translation = _put_accelerator(translation, accelerator, target)
            out.append(translation)
        return out


def _inline_view(text: str) -> tuple[str, dict[int, str]]:
    """``text`` with its inline tags as numbered tags (paired by name, the rest void), and what
    each tag stands for; text that reads as a tag of ours is a void tag too."""
    found = list(_INLINE_TAG.finditer(text)) + list(markup.TAG.finditer(text))
    if not found:
        return text, {}
    found = sorted({m.start(): m for m in found}.values(), key=lambda m: m.start())
    names = [re.match(r"</?([A-Za-z][A-Za-z0-9-]*|\d+)", m.group()) for m in found]
    partner: dict[int, int] = {}
    stack: list[int] = []
    for k, (match, name) in enumerate(zip(found, names)):
        if name is None or match.group().endswith("/>") or markup.TAG.fullmatch(match.group()):
            continue
        if match.group().startswith("</"):
            if stack and names[stack[-1]].group(1) == name.group(1):
                opener = stack.pop()
                partner[opener], partner[k] = k, opener
        else:
            stack.append(k)
    view: list[str] = []
    tags: dict[int, str] = {}  # tag id -> its opening (or void) text; -id -> its closing text
    position, ids, last_id = 0, {}, 0
    for k, match in enumerate(found):
        if match.start() < position:
            continue
        view.append(text[position:match.start()])
        tag_name = names[k].group(1).lower() if names[k] else "x"
        tag_name = tag_name if re.fullmatch(r"[a-z]{1,5}", tag_name) else "g"
        if k in partner and partner[k] > k:
            last_id += 1
            ids[k] = id_ = last_id
            tags[id_] = match.group()
            view.append(markup.open_tag(tag_name, id_))
        elif k in partner:
            opener_id = ids[partner[k]]
            tags[-opener_id] = match.group()  # a closing tag's text, under the negative id
            # paired by the same name, so the closing tag's name is its opening tag's
            view.append(markup.close_tag(tag_name, opener_id))
        else:
            last_id += 1
            tags[last_id] = match.group()
            view.append(markup.void_tag("x", last_id))
        position = match.end()
    view.append(text[position:])
    joined = "".join(view)
    if not markup.balanced(joined):
        return text, {}
    return joined, tags


def _put_accelerator(translation: str, accelerator: tuple[str, str], target: str) -> str:
    marker, letter = accelerator
    if target in _WIDE_TARGETS:
        return f"{translation}({marker}{letter.upper()})"
    at = translation.lower().find(letter.lower())
    if at < 0:
        at = next((i for i, char in enumerate(translation) if char.isalnum()), 0)
    return translation[:at] + marker + translation[at:]


# --- gettext -----------------------------------------------------------------------
class PoDocument(Document):
    def __init__(self, decoded: Decoded, catalog: polib.POFile, entries: list[polib.POEntry]):
        self.decoded = decoded
        self.catalog = catalog
        self.entries = entries
        texts: list[str] = []
        for entry in entries:
            texts.append(entry.msgid)
            if entry.msgid_plural:
                texts.append(entry.msgid_plural)
        self.strings = Strings(texts)
        super().__init__("po", self.strings.segments, placeholders=PLACEHOLDER, markup=True, notes=[
            "msgids, contexts, comments, references and flags are kept; each msgstr is the "
            "translation of its msgid, and the header's Language is set to the target.",
            _PLACEHOLDER_NOTE,
            "Plural-Forms is kept as it was; check it fits the target language.",
        ])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        remaining = iter(self.strings.render(translations, target))
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
        if not self.catalog.header and text.startswith("#\n") and not self.decoded.text.startswith("#"):
            text = text[2:]  # polib writes an empty header comment as a lone "#" line the file never had
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
        self.strings = Strings([container[key] for container, key in where])
        super().__init__("json", self.strings.segments, placeholders=PLACEHOLDER, markup=True,
                         notes=["Keys, nesting, numbers and booleans are kept; every string value is "
                                "translated.",
                                _PLACEHOLDER_NOTE])

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        for (container, key), translation in zip(self.where, self.strings.render(translations, target)):
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
