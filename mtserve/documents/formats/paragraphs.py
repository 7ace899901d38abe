"""A paragraph of an Office document as one segment with inline tags, and back.

Word, PowerPoint and OpenDocument cut a paragraph's text into runs that carry its formatting. A
``Dialect`` says how one XML vocabulary spells paragraphs, runs and breaks; ``paragraph_units`` turns
a paragraph into units (its text between tabs and breaks), each a marked segment whose inline tags
stand for the stretches of runs formatted apart from the paragraph's main run (``mtserve.text.markup``);
``write_unit`` puts a translation back, rebuilding the runs from copies of the originals so each
format stays on the words it belongs to. ``office`` and ``xlsx`` (shared strings with rich text) use it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from lxml import etree

from mtserve.text import markup

XML_SPACE = "{http://www.w3.org/XML/1998/namespace}space"
# Word's and ODF's text vocabularies: their hyperlinks are tags of a sentence too
W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0"


def q(ns: str, *names: str) -> frozenset[str]:
    return frozenset(f"{{{ns}}}{name}" for name in names)


@dataclass(frozen=True)
class Dialect:
    """How one XML vocabulary spells paragraphs, runs of text and breaks."""

    paragraphs: frozenset[str]
    text: frozenset[str]  # elements whose .text is document text
    mixed: bool  # text also sits in .text/.tail of inline elements (ODF), not only in ``text``
    descend: frozenset[str]  # inline containers whose content belongs to the paragraph
    breaks: frozenset[str]  # tabs, line breaks: kept, and they cut the paragraph into segments
    isolate: frozenset[str] = frozenset()  # hyperlinks: their text is a segment of its own
    preserve_space: bool = False  # set xml:space="preserve" on text elements we write
    run: str = ""  # the run element (w:r, a:r): text with one formatting, rebuilt from copies
    run_properties: str = ""  # its formatting (w:rPr, a:rPr)
    # what a run may hold besides text and formatting and still be rebuilt
    run_extras: frozenset[str] = frozenset()
    # run content that sits in a sentence as a void tag: note and comment references, pictures
    inline_objects: frozenset[str] = frozenset()
    # paragraph children that are invisible markers: kept, ahead of the rebuilt runs
    markers: frozenset[str] = frozenset()


@dataclass
class _Slot:
    element: etree._Element
    attribute: str  # "text" or "tail"

    @property
    def value(self) -> str:
        return getattr(self.element, self.attribute) or ""


@dataclass
class _Unit:
    """A stretch of a paragraph between breaks: one segment, written back into one slot, or
    (``runs``) a marked segment whose runs are rebuilt."""

    slots: list[_Slot] = field(default_factory=list)
    runs: "_Runs | _Spans | None" = None

    @property
    def text(self) -> str:
        return "".join(slot.value for slot in self.slots)

    @property
    def segment(self) -> str:
        return self.runs.view if self.runs is not None else self.text


def paragraph_units(paragraph: etree._Element, dialect: Dialect) -> list[_Unit]:
    """The paragraph's segments: marked ones with rebuilt runs where the formats mix and the runs
    allow it (OOXML), else one slot per stretch, hyperlinks on their own."""
    if dialect.run:
        units = _units(paragraph, replace(dialect, isolate=frozenset()))
        marked = [_Runs.of(unit, paragraph, dialect) for unit in units]
        if all(runs is not False for runs in marked):
            for unit, runs in zip(units, marked):
                unit.runs = runs or None
            return units
    elif dialect.mixed:
        units = _units(paragraph, replace(dialect, isolate=frozenset()))
        if len(units) == 1:
            spans = _Spans.of(units[0], paragraph)
            if spans is not False:
                units[0].runs = spans or None
                return units
    return _units(paragraph, dialect)


def _units(paragraph: etree._Element, dialect: Dialect) -> list[_Unit]:
    """The paragraph's stretches between breaks, walked with a stack (no recursion, any depth)."""
    units: list[_Unit] = [_Unit()]

    def cut() -> None:
        if units[-1].slots:
            units.append(_Unit())

    def enter(element: etree._Element) -> None:
        if element.text and (dialect.mixed or element.tag in dialect.text):
            units[-1].slots.append(_Slot(element, "text"))

    def tail(element: etree._Element) -> None:
        if dialect.mixed and element.tail:
            units[-1].slots.append(_Slot(element, "tail"))

    enter(paragraph)
    # (children still to walk, the element they belong to, whether it is isolated); the paragraph's
    # own frame has no element: its tail is not part of it.
    stack: list[tuple[Iterator[etree._Element], etree._Element | None, bool]] = [
        (iter(paragraph), None, False)]
    while stack:
        children, owner, isolated = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            if owner is not None:
                if isolated:
                    cut()
                tail(owner)
            continue
        tag = child.tag
        if not isinstance(tag, str):  # comments, processing instructions
            tail(child)
        elif tag in dialect.breaks:
            cut()
            tail(child)
        elif tag in dialect.isolate:
            cut()
            enter(child)
            stack.append((iter(child), child, True))
        elif tag in dialect.text:
            if child.text:
                units[-1].slots.append(_Slot(child, "text"))
            tail(child)
        elif tag in dialect.descend and tag not in dialect.paragraphs:
            enter(child)
            stack.append((iter(child), child, False))
        else:  # anything else (properties, drawings, fields, notes, nested paragraphs) is opaque
            tail(child)
    return [unit for unit in units if unit.text.strip()]


def _canonical(properties: etree._Element | None) -> bytes:
    """A run's formatting, for comparison: its properties without revision ids and spelling marks."""
    if properties is None:
        return b""
    copy = etree.fromstring(etree.tostring(properties))
    for element in copy.iter():
        for name in list(element.attrib):
            if "rsid" in name:
                del element.attrib[name]
    for child in list(copy):
        if etree.QName(child).localname in ("lang", "noProof", "rtl"):
            copy.remove(child)
    return etree.tostring(copy, method="c14n")


def _tag_name(properties: etree._Element | None, link: bool) -> str:
    if link:
        return "a"
    names = {etree.QName(child).localname for child in properties} if properties is not None else set()
    if properties is not None:  # DrawingML spells bold and italic as attributes
        names |= {name for name in ("b", "i", "u") if properties.get(name) not in (None, "0", "none")}
    return next((name for name in ("b", "i", "u") if name in names), "g")


@dataclass
class _Group:
    """Adjacent text runs with one formatting, or one inline object: a tag of the marked segment."""

    runs: list[etree._Element]
    container: etree._Element | None  # the hyperlink around them, if any
    key: tuple
    void: bool = False


@dataclass
class _Runs:
    """A mixed-format stretch of a paragraph as a marked segment, and how to rebuild its runs."""

    view: str
    paragraph: etree._Element
    base: etree._Element  # the run whose format is the stretch's main one: its copies hold plain text
    tags: dict[int, _Group]
    items: list[etree._Element]  # the paragraph children the stretch replaces, in order
    dialect: Dialect

    @classmethod
    def of(cls, unit: _Unit, paragraph: etree._Element, dialect: Dialect) -> "_Runs | None | bool":
        """None: one format, the plain treatment; False: these runs cannot be rebuilt."""
        runs: list[etree._Element] = []
        for slot in unit.slots:
            run = slot.element.getparent()
            if run is None or run.tag != dialect.run:
                return False
            if not runs or runs[-1] is not run:
                runs.append(run)
        if not runs:
            return None
        children = list(paragraph)
        top = [run if run.getparent() is paragraph else run.getparent() for run in runs]
        if any(item.getparent() is not paragraph for item in top):
            return False  # inside a smart tag, a revision, a content control: keep it simple
        first, last = children.index(top[0]), children.index(top[-1])
        span = children[first:last + 1]
        text_runs = {id(run) for run in runs}
        groups: list[_Group] = []
        items: list[etree._Element] = []
        for child in span:
            if not isinstance(child.tag, str) or child.tag in dialect.markers:
                continue
            items.append(child)
            inner = list(child) if child.tag in dialect.isolate or child.tag in q(W, "hyperlink") else [child]
            container = child if inner != [child] else None
            for run in inner:
                if not isinstance(run.tag, str) or run.tag == dialect.run_properties:
                    continue
                if run.tag == dialect.run and id(run) in text_runs:
                    if any(isinstance(c.tag, str) and c.tag not in dialect.text and c.tag != dialect.run_properties
                           and c.tag not in dialect.run_extras for c in run):
                        return False  # a tab, a break or a field inside the run: shared with another stretch
                    properties = run.find(dialect.run_properties)
                    key = (id(container) if container is not None else None, _canonical(properties))
                    if groups and not groups[-1].void and groups[-1].key == key:
                        groups[-1].runs.append(run)
                    else:
                        groups.append(_Group([run], container, key))
                elif run.tag == dialect.run and all(
                        not isinstance(c.tag, str) or c.tag == dialect.run_properties
                        or c.tag in dialect.inline_objects for c in run):
                    groups.append(_Group([run], container, ("void", id(run)), void=True))
                elif run.tag in dialect.markers:
                    continue
                else:
                    groups.append(_Group([run], container, ("void", id(run)), void=True))
            if container is not None and any(g.container is container and g.void for g in groups):
                return False  # an object inside a hyperlink
        text_groups = [g for g in groups if not g.void]
        if not any(g.void for g in groups) and len({g.key for g in text_groups}) <= 1:
            return None
        weight: dict[tuple, int] = {}
        for group in text_groups:
            weight[group.key] = weight.get(group.key, 0) + sum(
                len("".join(t.text or "" for t in run.iter(*dialect.text))) for run in group.runs)
        base_key = max(weight, key=lambda key: (key[0] is None, weight[key]))
        base = next(g for g in text_groups if g.key == base_key).runs[0]
        view: list[str] = []
        tags: dict[int, _Group] = {}
        for group in groups:
            text = "".join(t.text or "" for run in group.runs for t in run.iter(*dialect.text))
            if group.void:
                tags[len(tags) + 1] = group
                view.append(markup.void_tag("x", len(tags)))
            elif group.key == base_key:
                view.append(text)
            else:
                id_ = len(tags) + 1
                tags[id_] = group
                name = _tag_name(group.runs[0].find(dialect.run_properties), group.container is not None)
                view.append(markup.open_tag(name, id_) + text + markup.close_tag(name, id_))
        joined = "".join(view)
        if not markup.balanced(joined) or markup.TAG.sub("", joined) != unit.text:
            return False  # text that reads as a tag of ours
        return cls(joined, paragraph, base, tags, items, dialect)

    def write(self, translation: str) -> None:
        """Replace the stretch's runs with copies that carry the translation, each piece in the
        format of its tag; inline objects move to where the translation put their tags."""
        if markup.check(self.view, translation) is not None:
            translation = markup.project(self.view, markup.strip_tags(translation), {}, "")
        new: list[etree._Element] = []
        open_link: tuple[etree._Element, etree._Element] | None = None  # (original, copy)
        stack: list[int] = []
        for token in markup.tokens(translation):
            if token.kind == "open":
                stack.append(token.id)
                continue
            if token.kind == "close":
                if stack and stack[-1] == token.id:
                    stack.pop()
                continue
            group = self.tags.get(token.id) if token.kind == "void" else (
                self.tags.get(stack[-1]) if stack else None)
            if token.kind == "void":
                element = group.runs[0] if group else None
                container = None
            else:
                if not token.text:
                    continue
                template = group.runs[0] if group else self.base
                element = copy_run(template, token.text, self.dialect)
                container = group.container if group else None
            if element is None:
                continue
            if container is None:
                open_link = None
                new.append(element)
            else:
                if open_link is None or open_link[0] is not container:
                    link = etree.Element(container.tag, dict(container.attrib), nsmap=container.nsmap)
                    open_link = (container, link)
                    new.append(link)
                open_link[1].append(element)
        at = self.paragraph.index(self.items[0])
        for item in self.items:
            if item.getparent() is self.paragraph:
                self.paragraph.remove(item)
        for offset, element in enumerate(new):
            self.paragraph.insert(at + offset, element)


_ODF_FORMATS = q(TEXT, "span", "a")


@dataclass
class _Spans:
    """An OpenDocument paragraph that mixes formats (``text:span``, ``text:a``) as a marked segment:
    each stretch of text with the same chain of spans is a tag unless it is the main one, and
    every other element in the sentence (a note, a bookmark, a frame) is a void tag."""

    view: str
    paragraph: etree._Element
    chains: dict[int, tuple[etree._Element, ...]]  # tag id -> the spans around its text, outermost first
    objects: dict[int, etree._Element]
    base: tuple[etree._Element, ...]

    @classmethod
    def of(cls, unit: _Unit, paragraph: etree._Element) -> "_Spans | None | bool":
        pieces: list[tuple[str, tuple[etree._Element, ...]] | etree._Element] = []

        def walk(element: etree._Element, chain: tuple[etree._Element, ...]) -> bool:
            if element.text:
                pieces.append((element.text, chain))
            for child in element:
                if not isinstance(child.tag, str):
                    pass
                elif child.tag in _ODF_FORMATS:
                    if not walk(child, chain + (child,)):
                        return False
                elif chain:
                    return False  # an object inside a span: leave the paragraph as it is
                else:
                    pieces.append(child)
                if child.tail:
                    pieces.append((child.tail, chain))
            return True

        if not walk(paragraph, ()):
            return False
        texts = [p for p in pieces if isinstance(p, tuple)]
        if "".join(text for text, _ in texts) != unit.text:
            return False
        keys = {tuple(id(e) for e in chain) for _, chain in texts}
        objects_inside = any(not isinstance(p, tuple) for p in pieces)
        if len(keys) <= 1 and not objects_inside:
            return None
        weight: dict[tuple, int] = {}
        for text, chain in texts:
            key = tuple(id(e) for e in chain)
            weight[key] = weight.get(key, 0) + len(text.strip())
        base_key = max(weight, key=lambda key: (weight[key], -len(key)))
        base = next(chain for _, chain in texts if tuple(id(e) for e in chain) == base_key)
        view: list[str] = []
        chains: dict[int, tuple[etree._Element, ...]] = {}
        objects: dict[int, etree._Element] = {}
        open_key: tuple | None = None
        for piece in pieces:
            if not isinstance(piece, tuple):
                if open_key is not None:
                    view.append(markup.close_tag(*open_key[1:]))
                    open_key = None
                id_ = len(chains) + len(objects) + 1
                objects[id_] = piece
                view.append(markup.void_tag("x", id_))
                continue
            text, chain = piece
            key = tuple(id(e) for e in chain)
            if open_key is not None and open_key[0] != key:
                view.append(markup.close_tag(*open_key[1:]))
                open_key = None
            if key != base_key and open_key is None:
                id_ = len(chains) + len(objects) + 1
                chains[id_] = chain
                name = "a" if any(e.tag == f"{{{TEXT}}}a" for e in chain) else "g"
                open_key = (key, name, id_)
                view.append(markup.open_tag(name, id_))
            view.append(text)
        if open_key is not None:
            view.append(markup.close_tag(*open_key[1:]))
        joined = "".join(view)
        if not markup.balanced(joined) or markup.TAG.sub("", joined) != unit.text:
            return False
        return cls(joined, paragraph, chains, objects, base)

    def write(self, translation: str) -> None:
        if markup.check(self.view, translation) is not None:
            translation = markup.project(self.view, markup.strip_tags(translation), {}, "")
        paragraph = self.paragraph
        for child in list(paragraph):
            paragraph.remove(child)
        paragraph.text = None
        last: etree._Element | None = None  # the last top-level element, whose tail takes base text
        stack: list[int] = []
        current: tuple[tuple[int, ...], etree._Element] | None = None  # (chain key, innermost copy)

        def add_text(text: str, chain: tuple[etree._Element, ...]) -> None:
            nonlocal last, current
            if not chain:
                current = None
                if last is None:
                    paragraph.text = (paragraph.text or "") + text
                else:
                    last.tail = (last.tail or "") + text
                return
            key = tuple(id(e) for e in chain)
            if current is None or current[0] != key:
                parent = paragraph
                outer = None
                for element in chain:
                    made = etree.SubElement(parent, element.tag, dict(element.attrib))
                    outer = outer if outer is not None else made
                    parent = made
                last = outer
                current = (key, parent)
            current[1].text = (current[1].text or "") + text

        for token in markup.tokens(translation):
            if token.kind == "open":
                stack.append(token.id)
            elif token.kind == "close":
                if stack and stack[-1] == token.id:
                    stack.pop()
            elif token.kind == "void":
                element = self.objects.get(token.id)
                if element is not None:
                    element.tail = None
                    paragraph.append(element)
                    last, current = element, None
            elif token.text:
                chain = self.chains.get(stack[-1], self.base) if stack else self.base
                add_text(token.text, chain)


def copy_run(template: etree._Element, text: str, dialect: Dialect) -> etree._Element:
    """A run with ``template``'s formatting and ``text``."""
    run = etree.Element(template.tag, dict(template.attrib), nsmap=template.nsmap)
    properties = template.find(dialect.run_properties)
    if properties is not None:
        run.append(etree.fromstring(etree.tostring(properties)))
    text_tag = next(iter(dialect.text))
    element = etree.SubElement(run, text_tag)
    element.text = text
    if dialect.preserve_space:
        element.set(XML_SPACE, "preserve")
    return run


def write_unit(unit: _Unit, translation: str, dialect: Dialect) -> None:
    """The translation into the slot that held most text; the other slots emptied."""
    if unit.runs is not None:
        source = unit.text
        lead = source[: len(source) - len(source.lstrip())]
        trail = source[len(source.rstrip()):]
        unit.runs.write(lead + translation.strip() + trail)
        return
    main = max(unit.slots, key=lambda slot: len(slot.value.strip()))
    source = unit.text
    lead = source[: len(source) - len(source.lstrip())]
    trail = source[len(source.rstrip()):]
    for slot in unit.slots:
        if slot.attribute == "text" and not dialect.mixed:
            slot.element.text = ""
        else:
            setattr(slot.element, slot.attribute, None)
    setattr(main.element, main.attribute, lead + translation.strip() + trail)
    if dialect.preserve_space and main.attribute == "text":
        main.element.set(XML_SPACE, "preserve")
