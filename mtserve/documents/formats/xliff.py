"""XLIFF 1.2 and 2.x (.xlf, .xliff): the exchange format of CAT tools, translated source into target.

Each translation unit's ``source`` (XLIFF 1.2 ``trans-unit``; 2.x ``segment``)
is one segment; its translation is written into the unit's ``target``, which
is created after the source when missing. Everything else is kept as parsed:
ids, notes, groups, alt-trans, attributes, other namespaces, whitespace.

Which units are translated: those with no target, or an empty one, or (1.2)
whose state says it still needs translating (1.2 ``new``, ``needs-translation``;
2.x an explicit ``initial``).
A unit with ``translate="no"`` (on itself or an enclosing group or file), a
1.2 unit that is ``approved="yes"`` or in state ``final``/``signed-off``, and
a 2.x segment in state ``final`` are left as they are, and so is any unit
that already holds a translation: a CAT tool's target is the translator's.

State, as the specifications define it: a machine translation is not yet
reviewed, so XLIFF 1.2 targets get ``state="needs-review-translation"`` with
``state-qualifier="mt-suggestion"``; a unit served whole from the translation
memory (an exact match, as stored) gets ``state="translated"`` with
``state-qualifier="exact-match"``. 2.x segments get ``state="translated"``
(2.x has no finer state for MT; ``reviewed`` and ``final`` are for people).
The target language is set (1.2: ``target-language`` on every ``file``; 2.x:
``trgLang`` on the root).

Inline codes (1.2: ``g``, ``x``, ``bx``, ``ex``, ``ph``, ``bpt``, ``ept``,
``it``, ``mrk``; 2.x: ``pc``, ``ph``, ``sc``, ``ec``, ``cp``, ``sm``, ``em``,
``mrk``) become numbered tokens in the segment text: a code that wraps text
(``g``, ``pc``, ``mrk``) is ``<1>...</1>`` around its translated content, any
other ``<2/>``. Tokens come back as the very elements they stood for, byte
for byte, and the runner re-translates (between the tokens) any segment whose
translation lost, added, unbalanced or moved one that must keep its place
(2.x ``canReorder="no"``; the starts and ends ``bpt``/``ept``, ``bx``/``ex``,
``sc``/``ec``, ``sm``/``em``, so that an end never comes before its start).

TODO: replace the tokens with the inline-markup model of
``mtserve.text.markup`` (numbered inline tags put back on the translation);
this module's ``_Codes`` is the only place that would change.
"""

from __future__ import annotations

import copy
import re
from collections import Counter
from dataclasses import dataclass, field

from lxml import etree

from mtserve.documents.formats.base import Document, DocumentError, Output, keep_edges

NS12 = "urn:oasis:names:tc:xliff:document:1.2"
NS2 = "urn:oasis:names:tc:xliff:document:2."  # 2.0, 2.1, 2.2
XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
# Tokens standing for inline codes: <1>, </1>, <1/>. Numbers used literally in the text are skipped.
TOKEN = re.compile(r"<(/?)(\d+)(/?)>")
MEDIA_TYPE = "application/xliff+xml"
MAX_DEPTH = 64  # nested inline codes deeper than this are not real XLIFF

# A hardened parser: no entities, no network, no huge trees (billion laughs and friends fail).
_PARSER = etree.XMLParser(resolve_entities=False, no_network=True, huge_tree=False, remove_blank_text=False,
                          load_dtd=False)

# Codes that open or close a span on their own (a start must stay before its end): they keep their order.
_SPAN_ENDS = {"bpt", "ept", "bx", "ex", "sc", "ec", "sm", "em"}
_PAIRED_12 = {"g", "mrk"}
_PAIRED_2 = {"pc", "mrk"}
_DONE_12 = {"final", "signed-off"}
_REDO_12 = {"new", "needs-translation"}  # a target in these states is a placeholder, not a translation


def _local(element: etree._Element) -> str:
    return etree.QName(element).localname if isinstance(element.tag, str) else ""


@dataclass
class _Code:
    """One inline code of a source: the element, and whether it wraps translatable text."""

    element: etree._Element | None  # None in the copy a check takes to another process
    paired: bool
    fixed: bool  # canReorder="no", or a span's start or end: stays in order relative to other fixed codes


@dataclass
class _Codes:
    """A source element as a token string, and the map back from tokens to its inline codes."""

    text: str
    codes: dict[int, _Code] = field(default_factory=dict)

    @property
    def fixed_order(self) -> list[int]:
        return [n for n in self.codes if self.codes[n].fixed]


def _literal_numbers(element: etree._Element) -> set[int]:
    found: set[int] = set()
    for piece in element.itertext():
        found.update(int(m.group(2)) for m in TOKEN.finditer(piece))
    return found


def encode(source: etree._Element, paired: set[str]) -> _Codes:
    """The source's text with every inline code replaced by a numbered token."""
    taken = _literal_numbers(source)
    result = _Codes("")
    parts: list[str] = []
    counter = 0

    def number() -> int:
        nonlocal counter
        counter += 1
        while counter in taken:
            counter += 1
        return counter

    def walk(element: etree._Element, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise DocumentError(f"could not read the XLIFF file: inline codes nest deeper than {MAX_DEPTH}")
        if element.text:
            parts.append(element.text)
        for child in element:
            name = _local(child)
            fixed = child.get("canReorder") == "no" or name in _SPAN_ENDS
            wraps = (name in paired and isinstance(child.tag, str)
                     and child.get("translate") != "no" and child.get("mtype") != "protected")
            n = number()
            result.codes[n] = _Code(child, wraps, fixed)
            if wraps:
                parts.append(f"<{n}>")
                walk(child, depth + 1)
                parts.append(f"</{n}>")
            else:  # a code, a comment, a processing instruction: kept whole
                parts.append(f"<{n}/>")
            if child.tail:
                parts.append(child.tail)

    walk(source, 0)
    result.text = "".join(parts)
    return result


@dataclass
class TokenCheck:
    """``placeholders_kept`` without the tree: what a sandboxed read sends back with the segments."""

    by_text: dict[str, _Codes]

    def __call__(self, source: str, translation: str) -> bool | None:
        codes = self.by_text.get(source)
        return None if codes is None else tokens_kept(codes, translation)


def tokens_kept(codes: _Codes, translation: str) -> bool:
    """Every code once, paired ones balanced and nested, fixed ones in their order; no token made up."""
    seen: list[int] = []
    stack: list[int] = []
    literal = Counter(m.group() for m in TOKEN.finditer(codes.text) if int(m.group(2)) not in codes.codes)
    for match in TOKEN.finditer(translation):
        closing, n, empty = match.group(1), int(match.group(2)), match.group(3)
        code = codes.codes.get(n)
        if code is None:  # text that looks like a token: only as often as the source has it
            literal[match.group()] -= 1
            if literal[match.group()] < 0:
                return False
            continue
        if closing:
            if not code.paired or not stack or stack[-1] != n:
                return False
            stack.pop()
            continue
        if code.paired == bool(empty) or n in seen:
            return False
        seen.append(n)
        if code.paired:
            stack.append(n)
    if stack or sorted(seen) != sorted(codes.codes) or any(literal.values()):
        return False
    return [n for n in seen if codes.codes[n].fixed] == codes.fixed_order


def decode(codes: _Codes, translation: str, target: etree._Element) -> None:
    """Fill ``target`` (emptied) with the translation, each token turned back into its code."""
    for child in list(target):
        target.remove(child)
    target.text = None
    stack = [target]
    last: etree._Element | None = None  # where the next text goes: its tail, or the open element's text

    def add_text(text: str) -> None:
        if not text:
            return
        if last is None:
            stack[-1].text = (stack[-1].text or "") + text
        else:
            last.tail = (last.tail or "") + text

    position = 0
    for match in TOKEN.finditer(translation):
        code = codes.codes.get(int(match.group(2)))
        if code is None:
            continue
        add_text(translation[position:match.start()])
        position = match.end()
        if match.group(1):  # closing: back to the enclosing element
            last = stack.pop()
            continue
        if code.paired:  # the same element, attributes and all, around the translated content
            element = etree.SubElement(stack[-1], code.element.tag, attrib=dict(code.element.attrib))
            stack.append(element)
            last = None
        else:
            element = copy.deepcopy(code.element)
            element.tail = None
            stack[-1].append(element)
            last = element
    add_text(translation[position:])


# --- the document ---------------------------------------------------------------------------
@dataclass
class _Unit:
    source: etree._Element  # the element whose content is translated (1.2: seg-source if present)
    anchor: etree._Element  # the target goes right after this one when it is new
    target: etree._Element | None
    state_holder: etree._Element | None  # 2.x: the segment
    codes: _Codes


class XliffDocument(Document):
    def __init__(self, tree: etree._ElementTree, version: int, units: list[_Unit], notes: list[str],
                 declaration: bytes | None = None):
        self.tree = tree
        self.declaration = declaration  # the file's own <?xml ...?> and what follows it, written back as is
        self.version = version
        self.units = units
        super().__init__("xliff", [u.codes.text.strip() for u in units], placeholders=TOKEN, notes=notes)
        self._by_text: dict[str, _Codes] = {}
        for unit, segment in zip(units, self.segments):
            self._by_text.setdefault(segment, unit.codes)

    def placeholders_kept(self, source: str, translation: str) -> bool:
        codes = self._by_text.get(source)
        return tokens_kept(codes, translation) if codes is not None else super().placeholders_kept(
            source, translation)

    def kept_check(self) -> "TokenCheck":
        return TokenCheck({text: _Codes(codes.text, {n: _Code(None, c.paired, c.fixed)
                                                     for n, c in codes.codes.items()})
                           for text, codes in self._by_text.items()})

    def check_target(self, target: str) -> None:
        """A file that holds translations into another language cannot take this one's beside them."""
        root = self.tree.getroot()
        if self.version == 1:
            declared = {f.get("target-language") for f in root.iter(f"{{{NS12}}}file")}
            unit_tag = f"{{{NS12}}}trans-unit"
        else:
            declared = {root.get("trgLang")}
            unit_tag = f"{{{etree.QName(root).namespace}}}segment"
        other = sorted(d for d in declared if d and _primary(d) != _primary(target))
        if not other:
            return
        filled = [t for t in root.iter(f"{{{etree.QName(root).namespace}}}target")
                  if t.getparent().tag == unit_tag and not _empty(t)
                  and not any(t is unit.target for unit in self.units)]
        if filled:
            raise DocumentError(
                f"the XLIFF file already holds {len(filled)} translation(s) into {', '.join(other)}; "
                f"translate it into {other[0]}, or export it again without those targets to use {target}")

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        root = self.tree.getroot()
        for index, (unit, translation) in enumerate(zip(self.units, translations)):
            text = keep_edges(unit.codes.text, translation)
            stored = index in self.from_memory
            if not tokens_kept(unit.codes, text):
                text, stored = unit.codes.text, False  # never a broken target: the source's content, codes intact
            element = unit.target
            if element is None:  # made inside the unit so it takes the file's namespace prefix, then moved
                tag = f"{{{etree.QName(unit.source).namespace}}}target"
                element = etree.SubElement(unit.anchor.getparent(), tag)
                element.tail = unit.anchor.tail
                before = unit.anchor.getprevious()
                indent = before.tail if before is not None else unit.anchor.getparent().text
                if indent is not None and not indent.strip():
                    unit.anchor.tail = indent  # the target on a line of its own, indented as the source
                unit.anchor.addnext(element)
                unit.target = element
            decode(unit.codes, text, element)
            if self.version == 1:
                # a translation from the TM, as stored, is a person's earlier translation of the same text
                element.set("state", "translated" if stored else "needs-review-translation")
                element.set("state-qualifier", "exact-match" if stored else "mt-suggestion")
                if element.get(XML_LANG) is not None:
                    element.set(XML_LANG, target)
            elif unit.state_holder is not None:
                unit.state_holder.set("state", "translated")
                unit.state_holder.attrib.pop("subState", None)  # a subState qualifies the old state
        if self.version == 1:
            for file in root.iter(f"{{{NS12}}}file"):
                file.set("target-language", target)
        else:
            root.set("trgLang", target)
        info = self.tree.docinfo
        encoding = info.encoding or "UTF-8"
        if self.declaration is not None and encoding.lower().replace("-", "") == "utf8":
            data = self.declaration + etree.tostring(self.tree, encoding="UTF-8", xml_declaration=False)
        else:
            data = etree.tostring(self.tree, xml_declaration=True, encoding=encoding)
        try:
            etree.fromstring(data, _PARSER)
        except etree.XMLSyntaxError as exc:  # never expected: lxml wrote it
            raise RuntimeError(f"the translated XLIFF does not parse: {exc}") from exc
        return Output(data, "xlf", MEDIA_TYPE)


def _primary(language: str) -> str:
    """The language without its region or script: zh-CN and zh are the same target."""
    return language.replace("_", "-").split("-")[0].casefold()


def _inherits_no(element: etree._Element) -> bool:
    """translate="no" on the element or on a group or file around it."""
    node: etree._Element | None = element
    while node is not None:
        value = node.get("translate")
        if value is not None:
            return value == "no"
        node = node.getparent()
    return False


def _empty(element: etree._Element | None) -> bool:
    return element is None or (not "".join(element.itertext()).strip() and len(element) == 0)


def _has_text(codes: _Codes) -> bool:
    return any(ch.isalpha() for ch in TOKEN.sub("", codes.text))


def _units_12(root: etree._Element) -> list[_Unit]:
    units: list[_Unit] = []
    for unit in root.iter(f"{{{NS12}}}trans-unit"):
        source = unit.find(f"{{{NS12}}}source")
        if source is None or _inherits_no(unit) or unit.get("approved") == "yes":
            continue
        target = unit.find(f"{{{NS12}}}target")
        state = target.get("state") if target is not None else None
        if state in _DONE_12 or not (_empty(target) or state in _REDO_12):
            continue
        seg_source = unit.find(f"{{{NS12}}}seg-source")
        # seg-source carries the segmentation (mrk mtype="seg"); translated through, the target keeps it
        content = seg_source if seg_source is not None else source
        codes = encode(content, _PAIRED_12)
        if _has_text(codes):
            units.append(_Unit(content, content if seg_source is not None else source, target, None, codes))
    return units


def _units_2(root: etree._Element, ns: str) -> list[_Unit]:
    units: list[_Unit] = []
    for segment in root.iter(f"{{{ns}}}segment"):
        source = segment.find(f"{{{ns}}}source")
        if source is None or _inherits_no(segment) or segment.get("state") == "final":
            continue
        target = segment.find(f"{{{ns}}}target")
        if not (_empty(target) or segment.get("state") == "initial"):  # initial: a copy, not a translation
            continue
        codes = encode(source, _PAIRED_2)
        if _has_text(codes):
            units.append(_Unit(source, source, target, segment, codes))
    return units


def _declaration(data: bytes) -> bytes | None:
    found = re.match(rb"<\?xml[^>]*\?>\s*", data)
    return found.group() if found else None


def read_xliff(data: bytes) -> XliffDocument:
    try:
        root = etree.fromstring(data, _PARSER)
    except etree.XMLSyntaxError as exc:
        raise DocumentError(f"could not read the XLIFF file: it is not well-formed XML ({exc})") from None
    dtd = root.getroottree().docinfo.internalDTD
    if dtd is not None and any(True for _ in dtd.iterentities()):  # XXE, billion laughs: XLIFF needs none
        raise DocumentError("could not read the XLIFF file: it declares XML entities in a DOCTYPE, which "
                            "mtserve does not expand; export it again without the DOCTYPE")
    namespace = etree.QName(root).namespace or ""
    if _local(root) != "xliff":
        raise DocumentError(
            f"could not read the XLIFF file: its root element is <{_local(root)}>, not <xliff>")
    tree = root.getroottree()
    kept = ("Ids, notes, groups, attributes and inline codes are kept; each inline code comes back exactly, "
            "and a translation that lost or moved one is translated again between the codes.")
    if namespace == NS12:
        units = _units_12(root)
        notes = [kept, ("Units with no target (or an empty one, or in state new/needs-translation) are "
                        "translated and get state needs-review-translation (state-qualifier mt-suggestion), or "
                        "translated (exact-match) where the translation memory holds the unit's text; "
                        "existing targets, approved, final, signed-off and translate=\"no\" units are kept."),
                 "target-language is set on every <file>."]
        return XliffDocument(tree, 1, units, notes, _declaration(data))
    if namespace.startswith(NS2):
        units = _units_2(root, namespace)
        notes = [kept, ("Segments with no target (or an empty one, or state initial) are translated and "
                        "get state translated; existing targets, final and translate=\"no\" segments "
                        "are kept."),
                 "trgLang is set on <xliff>."]
        return XliffDocument(tree, 2, units, notes, _declaration(data))
    version = root.get("version") or "unknown"
    raise DocumentError(f"could not read the XLIFF file: version {version} (namespace {namespace or 'none'}) "
                        "is not supported; mtserve reads XLIFF 1.2 and 2.x")
