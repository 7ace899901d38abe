"""Excel workbooks (.xlsx): cell text translated in place, everything else kept byte for byte.

An .xlsx is a zip of XML parts (SpreadsheetML). Cell text lives in the shared
string table (``xl/sharedStrings.xml``, each ``si`` a string, plain or rich
text made of runs) and in inline strings (``<c t="inlineStr"><is>``) of the
worksheets; comments and the text boxes of drawings hold text too. Those are
translated, each string as a whole (a rich-text string takes the format of
the run that held most of its text, as in Word; phonetic runs are kept).
Every other part is copied byte for byte, so formulas, numbers, dates,
styles, merged cells, charts, tables and the cached results of formulas are
untouched. The paragraph model is office.py's, and the zip and XML hardening
safe_zip_xml.py's.

Sheet names are kept unless ``files_xlsx_sheet_names`` is on. Formulas name
sheets (``'Sales 2024'!B2``), so a renamed sheet has every reference to it
rewritten: in cell formulas, conditional formatting and data validation,
defined names, hyperlinks, charts and pivot caches. Where a reference cannot
be rewritten safely (the name inside a string, as INDIRECT("Sales!A1") uses
it; a 3-D reference ``Jan:Dec!A1``; any other part that names the sheet), the
sheet keeps its name, and the job's notes say which sheets and why.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from lxml import etree

from mtserve.documents.formats.base import Document, Output
from mtserve.documents.formats.office import DRAWING
from mtserve.documents.formats.paragraphs import Dialect, _Unit, paragraph_units, q, write_unit
from mtserve.documents.formats.safe_zip_xml import Archive, open_zip, parse_part, rewrite_zip, serialize

S = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
CHART = "http://schemas.openxmlformats.org/drawingml/2006/chart"
VT = "http://schemas.openxmlformats.org/officeDocument/2006/docPropsVTypes"
STRICT = "http://purl.oclc.org/ooxml/spreadsheetml/main"  # ISO 29500 Strict: the same, renamed
MEDIA_TYPE = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"

SHEET_TEXT = Dialect(  # shared strings, inline strings and comments
    paragraphs=q(S, "si", "is", "text") | q(STRICT, "si", "is", "text"),
    text=q(S, "t") | q(STRICT, "t"),
    mixed=False,
    descend=q(S, "r") | q(STRICT, "r"),
    breaks=frozenset(),
    preserve_space=True,
)
_WORKSHEET = re.compile(r"xl/worksheets/sheet\d+\.xml")
_COMMENTS = re.compile(r"xl/comments\d*\.xml|xl/comments/comment\d+\.xml")
_DRAWING = re.compile(r"xl/drawings/drawing\d+\.xml")
_CHART = re.compile(r"xl/charts/chart\d+\.xml")
_PIVOT_CACHE = re.compile(r"xl/pivotCache/pivotCacheDefinition\d+\.xml")
# Parts that hold text only, never a formula: a sheet name in them is just a word.
_TEXT_ONLY = re.compile(r"xl/sharedStrings\.xml|xl/styles\.xml|xl/theme/.*|docProps/core\.xml|"
                        r"xl/printerSettings/.*|xl/media/.*|.*\.rels|\[Content_Types\]\.xml|xl/calcChain\.xml")
# Sheet names in Excel: at most 31 characters, none of these, not blank, unique ignoring case.
_SHEET_NAME_FORBIDDEN = re.compile(r"[\[\]:*?/\\]")
SHEET_NAME_MAX = 31


def _number(name: str) -> int:
    found = re.search(r"(\d+)\.xml$", name)
    return int(found.group(1)) if found else 0


# --- sheet references in formulas ----------------------------------------------------------
# A formula's string literals, and sheet prefixes (optionally [1] before, another workbook's).
_SHEET = r"'(?:[^']|'')+'|[^\s!\"'(),;=+\-*/^&<>%{}\[\]:]+"  # a quoted name (' doubled) or a bare one
_REFERENCE = re.compile(rf"\"(?:[^\"]|\"\")*\"|(\[[^\]]*\])?({_SHEET})!")


def _unquote(token: str) -> str:
    return token[1:-1].replace("''", "'") if token.startswith("'") else token


def quote_sheet(name: str) -> str:
    """A sheet name as a formula writes it: bare when it is a plain word, else in single quotes."""
    if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", name) and not re.fullmatch(r"[A-Za-z]{1,3}\d+", name):
        return name
    return "'" + name.replace("'", "''") + "'"


def blocked_names(formula: str, names: set[str]) -> set[str]:
    """Names (casefolded) this formula uses in a way a rename cannot follow: in a string, or 3-D."""
    blocked: set[str] = set()
    for match in _REFERENCE.finditer(formula):
        if match.group(2) is None:  # a string literal: INDIRECT("Sheet!A1") and the like
            literal = match.group().casefold()
            blocked |= {n for n in names if n in literal}
            continue
        sheet = _unquote(match.group(2)).casefold()
        three_d = ":" in sheet or formula[:match.start()].endswith(":")
        if three_d:
            before = re.search(rf"({_SHEET}):$", formula[:match.start()])
            parts = set(sheet.split(":")) | ({_unquote(before.group(1)).casefold()} if before else set())
            blocked |= parts & names
    return blocked


def rename_in_formula(formula: str, renames: dict[str, str]) -> str:
    """The formula with each local reference to a renamed sheet (casefolded key) pointing to its new name."""

    def replace(match: re.Match[str]) -> str:
        if match.group(2) is None or match.group(1):  # a string, or another workbook's sheet
            return match.group()
        new = renames.get(_unquote(match.group(2)).casefold())
        return match.group() if new is None else quote_sheet(new) + "!"

    return _REFERENCE.sub(replace, formula)


@dataclass
class _FormulaSite:
    """Where a formula sits: an element's text, or one of its attributes."""

    element: etree._Element
    attribute: str | None  # None: the element's text

    def get(self) -> str:
        return (self.element.text if self.attribute is None else self.element.get(self.attribute)) or ""

    def set(self, value: str) -> None:
        if self.attribute is None:
            self.element.text = value
        else:
            self.element.set(self.attribute, value)


_FORMULA_TAGS = {f"{{{S}}}f", f"{{{S}}}formula", f"{{{S}}}formula1", f"{{{S}}}formula2",
                 f"{{{S}}}definedName", f"{{{CHART}}}f", "{http://schemas.microsoft.com/office/excel/2006/main}f"}


def formula_sites(tree: etree._ElementTree) -> list[_FormulaSite]:
    sites: list[_FormulaSite] = []
    for element in tree.iter():
        if not isinstance(element.tag, str):
            continue
        if element.tag in _FORMULA_TAGS and element.text:
            sites.append(_FormulaSite(element, None))
        elif element.tag == f"{{{S}}}hyperlink" and element.get("location"):
            sites.append(_FormulaSite(element, "location"))
    return sites


# --- the document ---------------------------------------------------------------------------
@dataclass
class _Part:
    name: str
    tree: etree._ElementTree
    units: list[_Unit]
    dialect: Dialect


@dataclass
class _SheetNames:
    """The sheets whose names are translated, and the parts where references to them are rewritten."""

    workbook: etree._ElementTree
    sheets: list[etree._Element]  # <sheet> elements, in order, whose name is a segment
    all_names: list[str]  # every sheet's name, for uniqueness
    references: dict[str, etree._ElementTree] = field(default_factory=dict)  # part name -> parsed part


class XlsxDocument(Document):
    def __init__(self, archive: Archive, parts: list[_Part], sheet_names: _SheetNames | None, notes: list[str]):
        self.archive = archive
        self.parts = parts
        self.sheet_names = sheet_names
        segments = [unit.text for part in parts for unit in part.units]
        if sheet_names is not None:
            segments += [sheet.get("name") for sheet in sheet_names.sheets]
        super().__init__("xlsx", segments, notes=notes)

    def render(self, translations: list[str], target: str) -> Output:
        self.check(translations)
        remaining = iter(translations)
        replaced: dict[str, bytes] = {}
        for part in self.parts:
            for unit in part.units:
                write_unit(unit, next(remaining), part.dialect)
        if self.sheet_names is not None:
            self._rename_sheets(list(remaining), replaced)
        for part in self.parts:
            if part.units:
                replaced[part.name] = serialize(part.tree)
        return Output(rewrite_zip(self.archive, replaced), "xlsx", MEDIA_TYPE)

    def _rename_sheets(self, translations: list[str], replaced: dict[str, bytes]) -> None:
        names = self.sheet_names
        assert names is not None
        taken = {n.casefold() for n in names.all_names}
        renames: dict[str, str] = {}
        titles: dict[str, str] = {}
        for sheet, translation in zip(names.sheets, translations):
            old = sheet.get("name")
            taken.discard(old.casefold())
            new = clean_sheet_name(translation, old, taken)
            taken.add(new.casefold())
            if new != old:
                sheet.set("name", new)
                renames[old.casefold()] = new
                titles[old] = new
        if not renames:
            return
        for part_name, tree in names.references.items():
            changed = False
            for site in formula_sites(tree):
                before = site.get()
                after = rename_in_formula(before, renames)
                if after != before:
                    site.set(after)
                    changed = True
            if _PIVOT_CACHE.fullmatch(part_name):
                for source in tree.iter(f"{{{S}}}worksheetSource"):
                    new = renames.get((source.get("sheet") or "").casefold())
                    if new is not None:
                        source.set("sheet", new)
                        changed = True
            if part_name == "docProps/app.xml":  # TitlesOfParts lists the sheet names
                for title in tree.iter(f"{{{VT}}}lpstr"):
                    if title.text in titles:
                        title.text = titles[title.text]
                        changed = True
            if changed:
                replaced[part_name] = serialize(tree)
        replaced["xl/workbook.xml"] = serialize(names.workbook)


def clean_sheet_name(translation: str, old: str, taken: set[str]) -> str:
    """A name Excel accepts: no []:*?/\\, at most 31 characters, not 'History', unique; else the old one."""
    name = _SHEET_NAME_FORBIDDEN.sub(" ", translation).strip().strip("'")
    name = re.sub(r"\s+", " ", name)[:SHEET_NAME_MAX].strip()
    if not name or name.casefold() == "history":
        return old
    if name.casefold() in taken:
        for k in range(2, 100):
            candidate = f"{name[:SHEET_NAME_MAX - len(str(k)) - 1]} {k}"
            if candidate.casefold() not in taken:
                return candidate
        return old
    return name


def _has_words(text: str) -> bool:
    return any(ch.isalpha() for ch in text)


def _text_parts(archive: Archive) -> list[_Part]:
    names = archive.names()
    parts: list[_Part] = []
    ordered = ([n for n in names if n == "xl/sharedStrings.xml"]
               + sorted((n for n in names if _WORKSHEET.fullmatch(n)), key=_number)
               + sorted((n for n in names if _COMMENTS.fullmatch(n)), key=_number)
               + sorted((n for n in names if _DRAWING.fullmatch(n)), key=_number))
    for name in ordered:
        dialect = DRAWING if _DRAWING.fullmatch(name) else SHEET_TEXT
        if _WORKSHEET.fullmatch(name) and b"inlineStr" not in archive.read(name):
            continue  # no text of its own: the part stays byte for byte
        tree = parse_part(archive, name, "xlsx")
        if _WORKSHEET.fullmatch(name):
            paragraphs = [child for c in tree.iter(f"{{{S}}}c", f"{{{STRICT}}}c") if c.get("t") == "inlineStr"
                          for child in c if child.tag in SHEET_TEXT.paragraphs]
        else:
            paragraphs = list(tree.iter(*dialect.paragraphs))
        units = [u for p in paragraphs for u in paragraph_units(p, dialect) if _has_words(u.text)]
        if units:
            parts.append(_Part(name, tree, units, dialect))
    return parts


def _all_text(tree: etree._ElementTree) -> str:
    """Every text and attribute value of a part, casefolded: where a sheet's name could appear."""
    pieces: list[str] = []
    for element in tree.iter():
        if element.text:
            pieces.append(element.text)
        if isinstance(element.tag, str):
            pieces.extend(element.attrib.values())
    return "\n".join(pieces).casefold()


def _sheet_names(archive: Archive, parts: list[_Part]) -> tuple[_SheetNames, list[str]]:
    """The sheets that can be renamed safely, with every part that refers to them; and why others cannot."""
    workbook = parse_part(archive, "xl/workbook.xml", "xlsx")
    sheets = list(workbook.iter(f"{{{S}}}sheet"))
    all_names = [s.get("name") or "" for s in sheets]
    folded = {n.casefold() for n in all_names}
    blocked: dict[str, str] = {}
    parsed = {part.name: part.tree for part in parts}
    references: dict[str, etree._ElementTree] = {"xl/workbook.xml": workbook}
    for name in archive.names():
        if name == "xl/workbook.xml" or not name.endswith(".xml") or _TEXT_ONLY.fullmatch(name):
            continue
        if _COMMENTS.fullmatch(name):
            continue
        tree = parsed.get(name) or parse_part(archive, name, "xlsx")
        content = _all_text(tree)  # parsed, so that &#38144; reads as the character it stands for
        mentioned = {n for n in folded if n and n in content}
        if not mentioned:
            continue
        handled = (_WORKSHEET.fullmatch(name) or _CHART.fullmatch(name) or _PIVOT_CACHE.fullmatch(name)
                   or name == "docProps/app.xml")
        if handled:
            references[name] = tree
        elif not _DRAWING.fullmatch(name):  # a part we do not rewrite: a reference in it would break
            for n in mentioned:
                if f"{n}!" in content or f"{quote_sheet(n)}!".casefold() in content:
                    blocked.setdefault(n, f"{name} refers to it")
    for tree in references.values():
        for site in formula_sites(tree):
            for n in blocked_names(site.get(), folded):
                blocked.setdefault(n, "a formula names it inside a string or in a 3-D reference")
    renamable = [s for s in sheets if (s.get("name") or "").casefold() not in blocked and _has_words(
        s.get("name") or "")]
    why = [f"Sheet '{s.get('name')}' keeps its name: {blocked[(s.get('name') or '').casefold()]}."
           for s in sheets if (s.get("name") or "").casefold() in blocked]
    return _SheetNames(workbook, renamable, all_names, references), why


def read_xlsx(data: bytes, *, sheet_names: bool = False) -> XlsxDocument:
    archive = open_zip(data, "xlsx", "xl/workbook.xml")
    parts = _text_parts(archive)
    notes = [("Formulas, numbers, dates, styles, merged cells, charts and tables are kept byte for byte; "
              "shared and inline strings, comments and text boxes are translated."),
             "A rich-text cell is translated as a whole and takes the format of its main run."]
    names = None
    if sheet_names:
        names, why = _sheet_names(archive, parts)
        notes += [("Sheet names are translated, and formulas, defined names, hyperlinks, charts and pivot "
                   "caches that name a renamed sheet are updated."), *why]
    else:
        notes.append("Sheet names are kept (translate them with MTSERVE_FILES_XLSX_SHEET_NAMES=true).")
    notes.append("Text inside charts, headers and footers, and cached formula results is not translated.")
    return XlsxDocument(archive, parts, names, notes)
