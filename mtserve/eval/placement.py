"""Where the tags land: the placement sets and their scoring (``mtserve eval --markup --dataset
placement`` and ``--dataset placement-catalog``).

Two zh->en sets of HTML sentences whose reference says which English words each tag belongs on:

- ``placement``: the hand-checked set (``data/markup-placement.tsv``), written for mtserve: hard
  cases (negation, numbers, two tags, nested tags, a tag on a word with no English word of its
  own, links, inline code, a verb or its object, adjectives, names, dates), each tag with the
  English renderings that count as right. Its dev/test split is written in the file.
- ``placement-catalog``: the software-strings catalogs (``software.tsv``, ``software-tm.tsv``),
  the pairs whose Chinese msgstr and English msgid carry the same paired tags (by name and
  attributes) and at least one of them around words; the msgid's content of each tag is what
  counts as right. ``software.tsv`` keeps its split; ``software-tm.tsv`` gets one by a hash of
  the source.

A tag is **right** when the output has it (the same name and attributes; tags of the same name and
attributes are paired in the way that gets most right, in order of appearance otherwise) and its
content, inner tags stripped, normalises (``normalise``) to one of the renderings; a rendering
``∅`` is an empty tag beside the words of the others. It **overlaps** when the content shares a
content word with a rendering: a near miss. A tag missing from the output is wrong.
"""

from __future__ import annotations

import hashlib
import html as html_lib
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from mtserve.eval.datasets import DATA_DIR, DatasetError, _builtin_rows, _read_tsv_rows

HAND_FILE = DATA_DIR / "markup-placement.tsv"
CATALOG_FILES = (DATA_DIR / "software.tsv", DATA_DIR / "software-tm.tsv")
EMPTY = "∅"  # a rendering: the tag comes back with nothing in it
# Tags that hold a block, not words inside a sentence: kept, never scored.
BLOCK_TAGS = {"p", "div", "h1", "h2", "h3", "h4", "h5", "h6", "li", "ul", "ol", "table", "tr", "td", "th",
              "blockquote", "pre", "section", "article", "header", "footer", "body", "html", "dl", "dt", "dd"}
VOID_TAGS = {"br", "img", "wbr", "input", "hr"}
# Kept whole by the HTML path: their content cannot move, only where they sit.
VERBATIM_TAGS = {"code", "kbd", "samp", "var"}
CATALOG_MAX_WORDS = 6  # a catalog tag around more words than this measures translation, not placement


@dataclass(frozen=True)
class TagExpectation:
    tag: str  # the opening tag as the reference writes it
    renderings: tuple[str, ...]  # the contents that count as right; EMPTY for an empty tag
    categories: tuple[str, ...] = ()
    beside: tuple[str, ...] = ()  # if given, a word right before or after the tag must be one of these


@dataclass(frozen=True)
class TagResult:
    tag: str
    expected: tuple[str, ...]
    got: str | None  # the tag's content in the output, inner tags stripped; None: not in the output
    right: bool
    overlap: bool
    categories: tuple[str, ...] = ()


# --- tags ---------------------------------------------------------------------------------------
_TAG = re.compile(r"<(/?)([A-Za-z][\w:-]*)((?:[^<>\"']|\"[^\"]*\"|'[^']*')*?)(/?)>")
_ATTRIBUTE = re.compile(r"([^\s=/]+)(?:\s*=\s*(\"[^\"]*\"|'[^']*'|[^\s\"'=<>`]+))?")


def tag_key(opening: str) -> tuple:
    """A tag by its name and attributes, in any order and quoting."""
    match = _TAG.fullmatch(opening.strip())
    if match is None:
        return (opening,)
    attributes = sorted((name.lower(), html_lib.unescape((value or "").strip("\"'")))
                        for name, value in _ATTRIBUTE.findall(match.group(3)))
    return (match.group(2).lower(), tuple(attributes))


@dataclass(frozen=True)
class Element:
    opening: str
    key: tuple
    content: str  # between the tags, inner tags stripped and entities read
    before: str  # the text before the opening tag, tags stripped
    after: str  # the text after the closing tag, tags stripped


def elements(text: str) -> list[Element]:
    """The paired elements of ``text``, in the order they open; one never closed, or closed only after
    the element around it (crossed), is left out: it is not around any words."""
    open_stack: list[re.Match[str]] = []
    spans: list[tuple[re.Match[str], re.Match[str]]] = []
    for match in _TAG.finditer(text):
        closing, name, self_closing = match.group(1), match.group(2).lower(), match.group(4)
        if self_closing or name in VOID_TAGS:
            continue
        if not closing:
            open_stack.append(match)
            continue
        for depth in range(len(open_stack) - 1, -1, -1):
            if open_stack[depth].group(2).lower() == name:
                spans.append((open_stack[depth], match))
                del open_stack[depth:]
                break
    spans.sort(key=lambda pair: pair[0].start())
    return [Element(start.group(), tag_key(start.group()), strip_tags(text[start.end():end.start()]),
                    strip_tags(text[:start.start()]), strip_tags(text[end.end():])) for start, end in spans]


def strip_tags(text: str) -> str:
    return html_lib.unescape(_TAG.sub("", text))


def well_formed(text: str) -> bool:
    """Every non-void tag closed, in order."""
    stack: list[str] = []
    for match in _TAG.finditer(text):
        name = match.group(2).lower()
        if match.group(4) or name in VOID_TAGS:
            continue
        if not match.group(1):
            stack.append(name)
        elif not stack or stack.pop() != name:
            return False
    return not stack


# --- normalising --------------------------------------------------------------------------------
_CONTRACTIONS = [(re.compile(pattern), replacement) for pattern, replacement in (
    (r"\bcan't\b", "can not"), (r"\bcannot\b", "can not"), (r"\bwon't\b", "will not"),
    (r"\bshan't\b", "shall not"), (r"\bain't\b", "is not"), (r"n't\b", " not"), (r"'re\b", " are"),
    (r"'m\b", " am"), (r"'ll\b", " will"), (r"'ve\b", " have"), (r"'d\b", " would"),
    (r"\b(it|that|there|here|what|he|she|who|where)'s\b", r"\1 is"), (r"\blet's\b", "let us"))]
_EDGE = "\"'“”‘’«»‹›「」『』《》【】()[]{}.,;:!?…。，；：！？、（）—–-·*_`"
ARTICLES = {"a", "an", "the"}
STOPWORDS = ARTICLES | {
    "of", "to", "in", "on", "at", "for", "by", "with", "from", "and", "or", "is", "are", "was", "were",
    "be", "been", "do", "does", "did", "will", "would", "can", "could", "shall", "should", "may", "might",
    "must", "have", "has", "had", "it", "its", "this", "that", "your", "our", "my", "his", "her", "their",
    "you", "we", "i", "he", "she", "they", "me", "us", "him", "them", "as", "into", "onto", "about"}


@lru_cache(maxsize=1)
def _stemmer():
    import snowballstemmer

    return snowballstemmer.stemmer("english")


def words(text: str) -> list[str]:
    """``text`` as lower-case words: compatibility forms folded (full-width, accents), contractions
    expanded (don't -> do not), punctuation and quotes at each word's edges dropped, "3,999" ->
    "3999", "15 %" -> "15%", "a.m." -> "am", "10am" -> "10 am"; not stemmed."""
    text = unicodedata.normalize("NFKD", unicodedata.normalize("NFKC", text))
    text = "".join(c for c in text if not unicodedata.combining(c)).casefold()
    text = text.replace("’", "'").replace("‘", "'")
    for pattern, replacement in _CONTRACTIONS:
        text = pattern.sub(replacement, text)
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<=\d)\s+%", "%", text)
    text = re.sub(r"\b([ap])\.m\.?(?!\w)", r"\1m", text)
    text = re.sub(r"(?<=\d)([ap]m)\b", r" \1", text)
    return [w for w in (token.strip(_EDGE) for token in text.split()) if w]


def normalise(text: str) -> tuple[str, ...]:
    """What a tag's content is compared by: ``words``, leading articles dropped, each word stemmed
    (Snowball English). An empty tuple is an empty tag (or one around punctuation or an article)."""
    found = words(text)
    while found and found[0] in ARTICLES:
        found = found[1:]
    return tuple(_stemmer().stemWords(found))


def _content_words(stems: tuple[str, ...]) -> set[str]:
    kept = {w for w in stems if w not in STOPWORDS}
    return kept or set(stems)  # "not", "do not": its function words are its content


def _same_words(got: tuple[str, ...], rendering: tuple[str, ...]) -> bool:
    """The same words, or the same content words in any order where both have some: "the list of
    the pages" is "list of pages", "by 15%" is "15%", but "do not" is not "not"."""
    if got == rendering:
        return True
    mine = sorted(w for w in got if w not in STOPWORDS)
    theirs = sorted(w for w in rendering if w not in STOPWORDS)
    return bool(mine) and mine == theirs


def _neighbours(element: Element) -> set[str]:
    """The stems of the word right before the element and the word right after it, articles skipped."""
    before = [w for w in words(element.before) if w not in ARTICLES]
    after = [w for w in words(element.after) if w not in ARTICLES]
    return set(_stemmer().stemWords(before[-1:] + after[:1]))


def judge(expected: TagExpectation, element: Element | None) -> tuple[bool, bool]:
    """(right, overlap) for one tag of the output (None: the output lost it)."""
    if element is None:
        return False, False
    got = normalise(element.content)
    renderings = [() if r == EMPTY else normalise(r) for r in expected.renderings]
    right = any(_same_words(got, r) for r in renderings)
    if right and expected.beside:
        right = bool(_neighbours(element) & {s for b in expected.beside for s in normalise(b)})
    elif right and not got:  # an empty tag: beside the words the others name, if they name any
        named = {w for r in renderings for w in r}
        right = not named or bool(_neighbours(element) & named)
    if right:
        return True, True
    mine = _content_words(got) if got else set()
    return False, any(mine & _content_words(r) for r in renderings if r)


def score_tags(expectations: tuple[TagExpectation, ...], output: str) -> list[TagResult]:
    """Each expected tag judged on the output: tags of the same name and attributes are paired in
    the way that gets most of them right, else in order of appearance."""
    found = elements(output)
    by_key: dict[tuple, list[int]] = {}
    for index, expected in enumerate(expectations):
        by_key.setdefault(tag_key(expected.tag), []).append(index)
    paired: dict[int, Element | None] = {}
    for key, indices in by_key.items():
        candidates = [e for e in found if e.key == key]
        paired.update(_pair([expectations[i] for i in indices], candidates, indices))
    results = []
    for index, expected in enumerate(expectations):
        element = paired.get(index)
        right, overlap = judge(expected, element)
        results.append(TagResult(expected.tag, expected.renderings, None if element is None else element.content,
                                 right, overlap, expected.categories))
    return results


def _pair(expected: list[TagExpectation], candidates: list[Element], indices: list[int]) -> dict[int, Element | None]:
    """Most right pairs (augmenting paths), then the rest in order of appearance."""
    fits = [[k for k, element in enumerate(candidates) if judge(e, element)[0]] for e in expected]
    owner: dict[int, int] = {}  # candidate -> expected

    def augment(i: int, seen: set[int]) -> bool:
        for k in fits[i]:
            if k not in seen:
                seen.add(k)
                if k not in owner or augment(owner[k], seen):
                    owner[k] = i
                    return True
        return False

    for i in range(len(expected)):
        augment(i, set())
    chosen = {i: k for k, i in owner.items()}
    free = [k for k in range(len(candidates)) if k not in owner]
    pairs: dict[int, Element | None] = {}
    for i, index in enumerate(indices):
        if i in chosen:
            pairs[index] = candidates[chosen[i]]
        else:
            pairs[index] = candidates[free.pop(0)] if free else None
    return pairs


# --- the hand-checked set -----------------------------------------------------------------------
@dataclass(frozen=True)
class PlacementItem:
    id: str
    split: str
    source: str
    reference: str
    expected: tuple[TagExpectation, ...]
    categories: tuple[str, ...]


def parse_expect(cell: str, reference: str, categories: tuple[str, ...], where: str) -> tuple[TagExpectation, ...]:
    """``alt | alt ~ beside | beside ; next tag...``, one part per tag of the reference in the
    order the tags open."""
    openings = [e.opening for e in elements(reference) if e.key[0] not in BLOCK_TAGS]
    parts = [p.strip() for p in cell.split(" ; ")]
    if len(parts) != len(openings):
        raise DatasetError(f"{where}: {len(openings)} tags in the reference, {len(parts)} in expect")
    found = []
    for opening, part in zip(openings, parts):
        renderings, _, beside = part.partition("~")
        alternatives = tuple(a.strip() for a in renderings.split("|") if a.strip())
        if not alternatives:
            raise DatasetError(f"{where}: no rendering for {opening}")
        found.append(TagExpectation(opening, alternatives, categories,
                                    tuple(b.strip() for b in beside.split("|") if b.strip())))
    return tuple(found)


def load_hand(split: str) -> list[PlacementItem]:
    items = []
    for number, row in enumerate(_builtin_rows(HAND_FILE.name), 1):
        where = f"{HAND_FILE.name}: {row.get('id') or number}"
        categories = tuple(c.strip() for c in row["category"].split(",") if c.strip())
        item = PlacementItem(row["id"], row["split"], row["zh"], row["en"],
                             parse_expect(row["expect"], row["en"], categories, where), categories)
        if item.split not in ("dev", "test"):
            raise DatasetError(f"{where}: split {item.split!r}")
        if split in ("all", item.split):
            items.append(item)
    return items


# --- the catalog-derived set --------------------------------------------------------------------
def catalog_split(source: str) -> str:
    """A translation-memory pair's placement split, fixed by its source."""
    digest = hashlib.sha256(f"mtserve-placement-catalog:{source}".encode()).hexdigest()
    return "dev" if int(digest[:8], 16) % 2 == 0 else "test"


def _catalog_rows() -> list[tuple[str, str, str, str]]:
    """(id, split, zh, en) of every catalog pair, software.tsv's with their own split."""
    rows = [(row["id"], row["split"], row["zh"], row["en"]) for row in _builtin_rows(CATALOG_FILES[0].name)]
    for fields in _read_tsv_rows(CATALOG_FILES[1], comments=True):
        if len(fields) >= 2:
            zh, en = fields[0], fields[1]
            rows.append((f"tm-{hashlib.sha256(zh.encode()).hexdigest()[:8]}", catalog_split(zh), zh, en))
    return rows


def _has_words(text: str) -> bool:
    from mtserve.text.markup import PLACEHOLDER

    return bool(re.search(r"[^\W\d_]", PLACEHOLDER.sub("", text)))


def catalog_item(pair_id: str, split: str, zh: str, en: str) -> PlacementItem | None:
    """The pair as a placement item, or None: different or broken tags, or no tag around words."""
    tags_zh = sorted(tag_key(m.group()) for m in _TAG.finditer(zh) if not m.group(1))
    tags_en = sorted(tag_key(m.group()) for m in _TAG.finditer(en) if not m.group(1))
    if not tags_en or tags_zh != tags_en or not well_formed(zh) or not well_formed(en):
        return None
    if len(list(_TAG.finditer(zh))) != len(list(_TAG.finditer(en))):
        return None
    visible = strip_tags(en).strip()
    source_contents: dict[tuple, list[str]] = {}
    for element in elements(zh):
        source_contents.setdefault(element.key, []).append(element.content.strip())
    expected = []
    for element in elements(en):
        content = element.content.strip()
        if element.key[0] in BLOCK_TAGS or content == visible or len(content.split()) > CATALOG_MAX_WORDS:
            continue
        if not _has_words(content):
            kind = "placeholder"
        elif content in source_contents.get(element.key, ()):
            kind = "verbatim"  # the same in both: a name, a command, a placeholder's neighbour
        else:
            kind = "words"
        expected.append(TagExpectation(element.opening, (content or EMPTY,), (kind,)))
    if not any("placeholder" not in e.categories for e in expected):
        return None
    return PlacementItem(pair_id, split, zh, en, tuple(expected), ())


def load_catalog(split: str) -> list[PlacementItem]:
    items, seen = [], set()
    for pair_id, pair_split, zh, en in _catalog_rows():
        if "<" not in zh or zh in seen or split not in ("all", pair_split):
            continue
        item = catalog_item(pair_id, pair_split, zh, en)
        if item is not None:
            seen.add(zh)
            items.append(item)
    return items
