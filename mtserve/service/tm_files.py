"""Translation-memory files: read .tmx, .po, .xliff and .tsv into segment pairs; write .tmx.

Readers stream where the format lets them (TMX and XLIFF through lxml's iterparse, a unit at a
time, each freed once read; TSV a line at a time; .po entry by entry once polib has parsed it),
and stop at the first pair past their ``ReadCaps`` (``PastCap``), so a file too large for the
caller's allowance is refused without being read to its end. The server runs them in the
document sandbox's worker (``mtserve.documents.jobs.sandbox.read_tm_file``), under its memory and CPU
limits.

- **TMX 1.4b**: every ``<tu>`` with a ``<tuv>`` in the source and one in the
  target language (``xml:lang``, or TMX 1.1's ``lang``; ``zh-CN`` is zh,
  ``zh-TW`` and ``zh-Hant`` are zt). The source defaults to the header's
  ``srclang``, the target to the file's only other language. A ``<seg>``
  holding inline codes (``ph``, ``bpt``, ``ept``, ``it``, ``ut``) is skipped,
  since its text without the codes is not what was translated; ``<hi>`` keeps
  its text. Parsed with lxml, entities unresolved and no network.
- **gettext .po**: msgid/msgstr pairs; fuzzy, obsolete and untranslated
  entries are skipped, and a plural entry gives its singular form, or its plural form where the
  catalog's language has one form for every count (Chinese, Japanese, Korean). msgids are
  taken as English, and the header's ``Language`` names the msgstr language;
  so a zh_CN catalog imported as zh->en stores msgstr -> msgid. The text goes
  to polib only as a temporary file this module writes, never as a string,
  which polib would open as a path if it named a file.
- **TSV**: ``source<TAB>target`` lines (``#`` starts a comment); the language
  pair comes from the caller.
- **XLIFF 1.2 and 2.x** (.xliff, .xlf): each 1.2 ``trans-unit`` and each 2.x
  ``segment`` with a source and a non-empty target, in the languages its
  ``file`` (1.2 ``source-language``/``target-language``) or root (2.x
  ``srcLang``/``trgLang``) declares; a file of the reverse pair gives its
  pairs reversed, one of another pair is skipped. A target that is only a
  placeholder (1.2 state ``new`` or ``needs-translation``, 2.x ``initial``)
  is skipped, and so is a segment with inline codes other than the ones
  that wrap text (``g``, ``pc``, ``mrk``, whose text is kept), as for TMX.
"""

from __future__ import annotations

import functools
import gc
import io
import os
import shutil
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from mtserve.service.tm import TMEntry, TMError, language_code, pair_bytes

XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
INLINE_CODES = {"ph", "bpt", "ept", "it", "ut"}
FORMAT_BY_SUFFIX = {".tmx": "tmx", ".po": "po", ".tsv": "tsv", ".txt": "tsv", ".xliff": "xliff", ".xlf": "xliff"}
TMX_LANGUAGE = {"zt": "zh-TW"}  # mtserve's zt is no BCP 47 tag


@dataclass(frozen=True)
class ReadCaps:
    """How much a reader may return: it stops at the first pair past either (None: no cap)."""

    pairs: int | None = None
    bytes: int | None = None  # of the pairs' text, UTF-8 (tm.pair_bytes)


NO_CAPS = ReadCaps()


class PastCap(TMError):
    """A file holds more pairs (or bytes of them) than its ReadCaps: the reader stopped there."""

    def __init__(self, pairs: bool, limit: int):
        super().__init__(pairs, limit)  # as the arguments, so that it pickles (it comes back from a worker)
        self.pairs, self.limit = pairs, limit

    def __str__(self) -> str:
        return f"the file holds more than {self.limit:,} {'pairs' if self.pairs else 'bytes of text'}"


@dataclass
class TMFile:
    """Pairs read from a file, their language pair, what was skipped (reason -> count), their bytes."""

    source_lang: str
    target_lang: str
    pairs: list[tuple[str, str]] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    caps: ReadCaps = NO_CAPS
    bytes: int = 0

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def add(self, source: str, target: str) -> None:
        """One more pair; PastCap if it takes the file past its caps."""
        self.pairs.append((source, target))
        self.bytes += pair_bytes(source, target)
        if self.caps.pairs is not None and len(self.pairs) > self.caps.pairs:
            raise PastCap(True, self.caps.pairs)
        if self.caps.bytes is not None and self.bytes > self.caps.bytes:
            raise PastCap(False, self.caps.bytes)


def format_of(name: str, fmt: str | None = None) -> str:
    """The format of a file called ``name`` (or ``fmt`` if given); a TMError for one that is not known."""
    if fmt and fmt.lower() not in READERS:
        raise TMError(f"format {fmt!r} is not one the translation memory reads: use one of {', '.join(READERS)}")
    fmt = fmt.lower() if fmt else FORMAT_BY_SUFFIX.get(Path(name).suffix.lower())
    if fmt not in READERS:
        raise TMError(f"cannot tell the format of {name!r}; translation memories are read from "
                      f"{', '.join(sorted(FORMAT_BY_SUFFIX))} files")
    return fmt


# how to name a pair, for a file that does not: the CLI and the HTTP API read the same files
PAIR_HINT = "--source zh --target en on the command line, the source and target fields of POST /tm/import"


def read_tm(data: bytes, fmt: str, source_lang: str | None = None, target_lang: str | None = None,
            caps: ReadCaps = NO_CAPS) -> TMFile:
    """Pairs from the bytes of a .tmx, .po, .xliff or .tsv file; the languages given override the file's own.

    PastCap at the first pair past ``caps``.
    """
    reader = READERS.get(fmt)
    if reader is None:
        raise TMError(f"{fmt} files cannot be imported into the translation memory yet; "
                      "convert the file to .tmx or .po first")
    source = language_code(source_lang, "source language") if source_lang else None
    target = language_code(target_lang, "target language") if target_lang else None
    if source and source == target:
        raise TMError(f"the source and target languages are both {source!r}; give two different languages")
    found = reader(data, source, target, caps)
    if found.source_lang == found.target_lang:  # a .po whose Language is its msgids' own (English)
        raise TMError(f"the file pairs {found.source_lang!r} with itself; give the source and target languages "
                      f"({PAIR_HINT})")
    return found


def _not_utf8(what: str) -> TMError:
    return TMError(f"the {what} file is not UTF-8 text; save it as UTF-8")


def _text(data: bytes, what: str) -> str:
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise _not_utf8(what) from None


def _lines(data: bytes, what: str) -> Iterator[str]:
    """The lines of UTF-8 ``data``, as str.splitlines() cuts them, decoded one at a time."""
    for number, raw in enumerate(io.BytesIO(data)):
        try:
            text = raw.decode("utf-8-sig" if number == 0 else "utf-8")
        except UnicodeDecodeError:
            raise _not_utf8(what) from None
        yield from text.splitlines()


# --- TSV -------------------------------------------------------------------------------------
def read_tsv(data: bytes, source: str | None, target: str | None, caps: ReadCaps = NO_CAPS) -> TMFile:
    if not source or not target:
        raise TMError("a .tsv file does not say its languages: give the source and target languages "
                      f"({PAIR_HINT})")
    found = TMFile(source, target, caps=caps)
    for line in _lines(data, ".tsv"):
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        columns = line.split("\t")
        if len(columns) != 2:
            found.skip("not a source<TAB>target line")
            continue
        found.add(columns[0], columns[1])
    return found


# --- gettext .po -----------------------------------------------------------------------------
def _parse_po(text: str):
    """polib's catalog of ``text``, through a temporary file of ours: polib.pofile(text) would read the file
    ``text`` names, if it names one."""
    import polib

    folder = tempfile.mkdtemp(prefix="mtserve-tm-")
    path = os.path.join(folder, "upload.po")
    out_of_memory = False
    try:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
        try:
            return polib.pofile(path, encoding="utf-8")
        except (OSError, ValueError) as exc:
            # polib words any failure inside a line as a syntax error, running out of memory too
            if not isinstance(exc.__context__, MemoryError):
                detail = str(exc).replace(f" {path}", "").replace(path, "the file")  # polib names our file
                raise TMError(f"the .po file cannot be parsed: {detail}") from None
            out_of_memory = True
        except MemoryError:  # raised again once the half-built catalog is freed, so that the folder can go
            out_of_memory = True
    finally:
        if out_of_memory:
            gc.collect()
        shutil.rmtree(folder, ignore_errors=True)
    raise MemoryError("parsing the .po file")


def read_po(data: bytes, source: str | None, target: str | None, caps: ReadCaps = NO_CAPS) -> TMFile:
    catalog = _parse_po(_text(data, ".po"))
    declared = catalog.metadata.get("Language", "").strip()
    msgstr_lang = language_code(declared, "the catalog's Language") if declared else None
    msgid_lang = "en"
    if source and target and msgstr_lang and msgstr_lang not in (source, target):
        raise TMError(f"the catalog's Language is {declared!r}, neither {source!r} nor {target!r}; "
                      f"import it as {msgid_lang}->{msgstr_lang} or {msgstr_lang}->{msgid_lang}")
    if source and target:
        reverse = msgstr_lang == source or (msgstr_lang is None and target == msgid_lang != source)
    elif msgstr_lang and not source and not target:
        source, target, reverse = msgid_lang, msgstr_lang, False
    else:
        raise TMError(f"give both the source and target languages ({PAIR_HINT}) for this .po file"
                      + ("" if msgstr_lang else "; its header has no Language"))
    found = TMFile(source, target, caps=caps)
    for entry in catalog:
        if entry.obsolete:
            found.skip("obsolete")
        elif "fuzzy" in entry.flags:
            found.skip("fuzzy")
        elif not entry.msgid:
            continue  # the header
        else:
            msgid, msgstr = entry.msgid, entry.msgstr
            if entry.msgid_plural:
                msgstr = entry.msgstr_plural.get(0, "")
                if len(entry.msgstr_plural) == 1:
                    # a language of one form (Chinese, Japanese, Korean): it serves every count, and
                    # its placeholder is the plural's ("%d 个文件" is "%d files", not "One file")
                    msgid = entry.msgid_plural
            if not msgstr.strip():
                found.skip("untranslated")
                continue
            found.add(*((msgstr, msgid) if reverse else (msgid, msgstr)))
    return found


# --- TMX -------------------------------------------------------------------------------------
def _local(tag: object) -> str:
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


@functools.lru_cache(maxsize=256)  # a file names its few languages once per unit
def _declared(tag: str | None) -> str | None:
    """A language a file declares, as mtserve's code; None when absent or unknown."""
    try:
        return language_code(tag) if tag else None
    except TMError:
        return None


def _tuv_language(tuv) -> str | None:
    return _declared(tuv.get(XML_LANG) or tuv.get("lang"))


def _xml_events(data: bytes, what: str, kind: str, root_name: str) -> Iterator[tuple[str, object]]:
    """("start" or "end", element) as an XML translation-memory file is read: no entities, DTDs or
    network, the root checked first. The caller frees each unit it has read (``_free``), so a file
    of any length holds about one unit in memory."""
    from lxml import etree

    events = etree.iterparse(io.BytesIO(data), events=("start", "end"), resolve_entities=False,
                             no_network=True, load_dtd=False, huge_tree=False)
    first = True
    try:
        for event, element in events:
            if first:
                first = False
                if _local(element.tag) != root_name:
                    raise TMError(f"not {kind} file: its root element is <{_local(element.tag)}>, not <{root_name}>")
            yield event, element
    except etree.XMLSyntaxError as exc:
        if "memory allocation failed" in str(exc).lower():  # libxml2 under the worker's memory limit
            raise MemoryError(str(exc)) from None
        raise TMError(f"the {what} file is not well-formed XML: {exc}") from None


def _free(element) -> None:
    """Drop a unit that has been read, and the siblings before it, from the tree being built."""
    element.clear(keep_tail=True)
    parent = element.getparent()
    while parent is not None and element.getprevious() is not None:
        del parent[0]


def _tmx_pair(data: bytes, source: str | None, target: str | None) -> tuple[str, str]:
    """The pair to import from a TMX file that does not get both from the caller: its header's srclang (or
    the units' one srclang) and the only other language its units hold. Reads the file once, streamed."""
    languages: dict[str, None] = {}
    declared = ""
    unit_sources: set[str | None] = set()  # up to two: only "exactly one" matters
    for event, element in _xml_events(data, ".tmx", "a TMX", "tmx"):
        name = _local(element.tag)
        if event == "start" and name == "header" and (parent := element.getparent()) is not None \
                and parent.getparent() is None:
            declared = element.get("srclang", "")
        elif event == "end" and name == "tu":
            if len(unit_sources) < 2:
                unit_sources.add(element.get("srclang"))
            for tuv in element:
                if _local(tuv.tag) == "tuv" and (code := _tuv_language(tuv)):
                    languages.setdefault(code)
            _free(element)
    if not source and declared and declared.lower() != "*all*":
        source = language_code(declared, "the header's srclang")
    if not source:  # a header of "*all*" (mtserve's own export): the srclang every unit gives, if one
        if len(unit_sources) == 1 and (only := unit_sources.pop()) and only.lower() != "*all*":
            source = language_code(only, "the units' srclang")
    others = [code for code in languages if code != source]
    if not target and len(others) == 1:
        target = others[0]
    if not source or not target:
        raise TMError(f"the .tmx file holds {', '.join(languages) or 'no languages'}: say which pair to import "
                      f"({PAIR_HINT})")
    return source, target


def _tmx_unit(unit, found: TMFile) -> None:
    source, target = found.source_lang, found.target_lang
    segs: dict[str, str | None] = {}
    for tuv in unit:
        code = _tuv_language(tuv) if _local(tuv.tag) == "tuv" else None
        if code not in (source, target) or code in segs:
            continue
        seg = next((el for el in tuv if _local(el.tag) == "seg"), None)
        if seg is None:
            continue
        if any(_local(el.tag) in INLINE_CODES for el in seg.iter()):
            segs[code] = None
        else:
            segs[code] = "".join(seg.itertext())
    if source not in segs or target not in segs:
        found.skip(f"not in both {source} and {target}")
    elif segs[source] is None or segs[target] is None:
        found.skip("inline codes (ph, bpt, ept, it, ut)")
    else:
        found.add(segs[source], segs[target])


def read_tmx(data: bytes, source: str | None, target: str | None, caps: ReadCaps = NO_CAPS) -> TMFile:
    if not source or not target:
        source, target = _tmx_pair(data, source, target)
    found = TMFile(source, target, caps=caps)
    for event, element in _xml_events(data, ".tmx", "a TMX", "tmx"):
        if event == "end" and _local(element.tag) == "tu":
            _tmx_unit(element, found)
            _free(element)
    return found


def _xml_safe(text: str) -> str:
    """``text`` without the control characters XML 1.0 cannot hold."""
    return "".join(ch for ch in text if ch in "\t\n\r" or ord(ch) >= 0x20)


def write_tmx(entries: Iterable[TMEntry], source_lang: str | None = None) -> tuple[bytes, int]:
    """A TMX 1.4b document of ``entries`` and how many it holds; ``source_lang`` for the header's srclang."""
    from lxml import etree

    from mtserve import __version__

    root = etree.Element("tmx", version="1.4")
    etree.SubElement(root, "header", {
        "creationtool": "mtserve", "creationtoolversion": __version__, "segtype": "sentence",
        "o-tmf": "mtserve", "adminlang": "en", "datatype": "plaintext",
        "srclang": TMX_LANGUAGE.get(source_lang, source_lang) if source_lang else "*all*"})
    body = etree.SubElement(root, "body")
    count = 0
    for entry in entries:
        created = datetime.fromisoformat(entry.created).strftime("%Y%m%dT%H%M%SZ")
        unit = etree.SubElement(body, "tu", tuid=str(entry.id), creationdate=created,
                                srclang=TMX_LANGUAGE.get(entry.source_lang, entry.source_lang))
        if entry.origin:
            etree.SubElement(unit, "prop", type="x-origin").text = _xml_safe(entry.origin)
        for code, text in ((entry.source_lang, entry.source), (entry.target_lang, entry.target)):
            tuv = etree.SubElement(unit, "tuv", {XML_LANG: TMX_LANGUAGE.get(code, code)})
            etree.SubElement(tuv, "seg").text = _xml_safe(text)
        count += 1
    return etree.tostring(root, xml_declaration=True, encoding="UTF-8", pretty_print=True), count


# --- XLIFF ---------------------------------------------------------------------------------------
XLIFF12 = "urn:oasis:names:tc:xliff:document:1.2"
XLIFF2 = "urn:oasis:names:tc:xliff:document:2."  # 2.0, 2.1, 2.2
XLIFF_TEXT_CODES = {"g", "pc", "mrk"}  # inline elements that wrap translatable text; any other is a code
XLIFF_PLACEHOLDER_STATES = {"new", "needs-translation", "initial"}  # a target that is not yet a translation


def _xliff_text(element) -> str | None:
    """The text of a source or target, or None if it holds an inline code whose text is not what was
    translated (1.2 ``x``, ``ph``, ``bpt``...; 2.x ``ph``, ``sc``, ``ec``...)."""
    if any(_local(el.tag) not in XLIFF_TEXT_CODES for el in element.iterdescendants()):
        return None
    return "".join(element.itertext())


def _xliff_namespace(root) -> str:
    from lxml import etree

    namespace = etree.QName(root).namespace or ""
    if namespace != XLIFF12 and not namespace.startswith(XLIFF2):
        raise TMError(f"XLIFF version {root.get('version') or 'unknown'} (namespace {namespace or 'none'}) "
                      "is not read; export XLIFF 1.2 or 2.x")
    return namespace


def _xliff_files(data: bytes) -> Iterator[tuple[str, object]]:
    """The XLIFF file's events, with its version checked, and with each 1.2 ``file`` (whose attributes say its
    languages) and the 2.x root (which says them for the whole file) reported as ("file", element) on
    its start. Units are freed after their end has been handled."""
    namespace = None
    for event, element in _xml_events(data, "XLIFF", "an XLIFF", "xliff"):
        if namespace is None:
            namespace = _xliff_namespace(element)
            if namespace != XLIFF12:
                yield "file", element
            continue
        if event == "start" and element.tag == f"{{{XLIFF12}}}file":
            yield "file", element
        elif event == "end" and element.tag in (f"{{{XLIFF12}}}trans-unit", f"{{{namespace}}}segment"):
            yield "unit", element
            if element.tag == f"{{{XLIFF12}}}trans-unit":
                _free(element)
        elif event == "end" and element.tag == f"{{{namespace}}}unit":
            _free(element)


def _xliff_pair(data: bytes, source: str | None, target: str | None) -> tuple[str, str]:
    """The pair to import from an XLIFF file that does not get both from the caller: the first source
    language a file declares, and the other language of the first file in it. Reads the file once."""
    declared = [(_declared(file.get("source-language") or file.get("srcLang")),
                 _declared(file.get("target-language") or file.get("trgLang")))
                for kind, file in _xliff_files(data) if kind == "file"]
    source = source or next((s for s, _ in declared if s), None)
    for file_source, file_target in declared:
        if target:
            break
        target = file_target if file_source == source else file_source if file_target == source else None
    if not source or not target:
        raise TMError("the XLIFF file does not say its languages: give the source and target languages "
                      f"({PAIR_HINT})")
    return source, target


def _xliff_unit(unit, found: TMFile, reverse: bool) -> None:
    """One 1.2 trans-unit (the state on its target) or 2.x segment (the state on itself)."""
    namespace = unit.tag.partition("}")[0][1:]
    src, tgt = unit.find(f"{{{namespace}}}source"), unit.find(f"{{{namespace}}}target")
    if src is None or tgt is None:
        found.skip("no target")
        return
    state = tgt.get("state") if namespace == XLIFF12 else unit.get("state")
    if state in XLIFF_PLACEHOLDER_STATES:
        found.skip(f"state {state}: not yet translated")
        return
    texts = (_xliff_text(src), _xliff_text(tgt))
    if texts[0] is None or texts[1] is None:
        found.skip("inline codes")
    elif reverse:
        found.add(texts[1], texts[0])
    else:
        found.add(*texts)  # empty ones are counted by TranslationMemory.add


def read_xliff(data: bytes, source: str | None, target: str | None, caps: ReadCaps = NO_CAPS) -> TMFile:
    if not source or not target:
        source, target = _xliff_pair(data, source, target)
    found = TMFile(source, target, caps=caps)
    wanted: bool | None = None  # the current file's pair: ours (False), reversed (True), or another (None)
    for kind, element in _xliff_files(data):
        if kind == "file":
            pair = (_declared(element.get("source-language") or element.get("srcLang")) or source,
                    _declared(element.get("target-language") or element.get("trgLang")) or target)
            wanted = {(source, target): False, (target, source): True}.get(pair)
            if wanted is None:
                found.skip(f"in {pair[0]}->{pair[1]}, not {source}->{target}")
        elif wanted is not None:
            _xliff_unit(element, found, reverse=wanted)
    return found


Reader = Callable[[bytes, "str | None", "str | None", ReadCaps], TMFile]
READERS: dict[str, Reader | None] = {"tmx": read_tmx, "po": read_po, "tsv": read_tsv, "xliff": read_xliff}
