"""Sentence splitting that reassembles to the exact input.

Engines translate short sentences better and faster than whole documents, but
the caller must get back the document's layout untouched: every newline, blank
line and indent. So the text is cut into ``Piece``s whose concatenation is the
input, and only the trimmed sentences are sent to the engine.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from mtserve.text import abandon

# Han ideographs, kana, CJK punctuation and fullwidth forms (not U+3000, a space).
_CJK_CLASS = (
    "\u3001-\u303f\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
    "\uf900-\ufaff\uff00-\uffef\U00020000-\U0003134f"
)
_CJK_CHAR = re.compile(f"[{_CJK_CLASS}]")
_CJK_LETTER = re.compile("[\u3040-\u30ff\u31f0-\u31ff\u3400-\u4dbf\u4e00-\u9fff"
                         "\uf900-\ufaff\U00020000-\U0003134f]")
_CJK_LANGS = {"zh", "zt", "ja"}

_LINE_BREAK = re.compile("[\n\r\v\f\x1c-\x1e\x85\u2028\u2029]")

_TERMINATORS = ".!?;…。！？；｡"
_CJK_STRONG = set("。！？；｡")      # end a CJK sentence wherever they appear
_ASCII_WEAK = set("!?;")          # end a CJK sentence only when CJK follows
_LATIN_ENDS = set(".!?…")
_CLOSERS = "\"'”’)]}»›」』）】〉》］｝〕〗〙〛"
_OPENERS = "\"'“‘([{«‹¿¡「『（【〈《"
_FULL_STOPS = set(".。｡;；")
# Quote and bracket pairs, for the rule that a ? or ! inside them does not end the sentence.
_PAIRS = {"“": "”", "‘": "’", "「": "」", "『": "』", "（": "）", "(": ")", "[": "]", "【": "】",
          "《": "》", "〈": "〉", "［": "］", "｛": "｝", "〔": "〕", "«": "»", "{": "}"}
_PAIR_CLOSERS = set(_PAIRS.values())
_PAIR_LOOKBACK = 8  # unclosed openers a closer may skip to find its own
_TERMINATOR_RUN = re.compile(f"(?:[{re.escape(_TERMINATORS)}]+[{re.escape(_CLOSERS)}]*)+")
_NEXT_AFTER_SPACE = re.compile(r"\s+(\S)")

# Abbreviations after which a period does not end a sentence.
_ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "st", "etc", "vs", "inc", "ltd", "jr", "sr",
    "co", "corp", "mt", "ave", "rd", "gen", "gov", "sen", "rep", "rev", "hon",
    "capt", "lt", "col", "sgt", "messrs", "mme", "mlle", "approx", "dept", "est",
    "cf", "al", "ca", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep",
    "sept", "oct", "nov", "dec",
}
# These are abbreviations only before a number ("No. 5"), not in "I said no. Then".
_NUMBER_ABBREVIATIONS = {"no", "nos", "fig", "figs", "vol", "pp", "p", "nr", "art", "sec", "ch", "eq"}
_DOTTED_ABBREVIATION = re.compile(r"(?:[A-Za-z]{1,2}\.)+[A-Za-z]{1,2}")  # e.g, U.S, a.m, Ph.D

# Where an overlong sentence may be cut, best first: after a clause mark, then
# between words (or between CJK characters, which have no spaces).
# A run of marks is tried once, from its start (a run of 128,000 colons with no space after it took
# 14 s when it was tried again from each colon in it).
_CLAUSE = re.compile(rf"[，、；：]+\s*|(?<![,;:])[,;:]++(?:\s+|(?=[{_CJK_CLASS}]))")
_WORD = re.compile(rf"\s*[{_CJK_CLASS}]|\s*[^\s{_CJK_CLASS}]+|\s+")


@dataclass(frozen=True)
class Piece:
    text: str
    translate: bool  # True: a sentence to send to the engine. False: whitespace kept verbatim.


def split_text(text: str, lang: str, max_chars: int = 400, budget: int = 0,
               whole: Callable[[str], bool] | None = None) -> list[Piece]:
    """Cut ``text`` into segments and separators; ``"".join`` of the texts is ``text``.

    With ``budget`` 0 each segment is one sentence. Otherwise consecutive whole sentences of
    one line are grouped into one segment while it stays within ``budget`` (and ``max_chars``),
    both as ``segment_size`` counts: a UI string or a short paragraph goes to the engine whole,
    with its context. A group never crosses a line break; a sentence longer than the budget
    stays alone (and is cut at ``max_chars`` as before). ``whole(run)`` says where a group may
    end (markup: where no tag is open), so a tag that crosses a sentence end never crosses a
    group's; the run it spans counts as one sentence there.
    """
    cjk = _uses_cjk_rules(text, lang)
    limit = min(budget, max_chars)
    pieces: list[Piece] = []
    position = 0
    for start, end in _line_separators(text):
        _add_line(pieces, text[position:start], cjk, max_chars, limit, whole)
        _add(pieces, text[start:end], translate=False)
        position = end
    _add_line(pieces, text[position:], cjk, max_chars, limit, whole)
    return pieces


def count_sentences(text: str, lang: str) -> int:
    """How many sentences ``text`` holds, as ``split_text`` cuts them (one line break ends one too)."""
    return sum(piece.translate for piece in split_text(text, lang, max_chars=max(1, segment_size(text))))


def join_pieces(pieces: list[Piece], translations: list[str]) -> str:
    """Rebuild the document, one translation per translatable piece, in order.

    CJK sentences sit next to each other without spaces; when their
    translations are Latin text a space is put between them, but only where
    the translation created a word boundary the source did not already have,
    so joining the untranslated sentences gives back the input exactly.
    """
    if len(translations) != sum(piece.translate for piece in pieces):
        raise ValueError("need exactly one translation per translatable piece")
    parts: list[str] = []
    remaining = iter(translations)
    previous: tuple[str, str] | None = None  # (source, translation) of an adjacent sentence
    for piece in pieces:
        if not piece.translate:
            parts.append(piece.text)
            previous = None
            continue
        translation = next(remaining)
        if previous and glued(previous[1], translation) and not glued(previous[0], piece.text):
            parts.append(" ")
        parts.append(translation)
        previous = (piece.text, translation)
    return "".join(parts)


def is_cjk(char: str) -> bool:
    """True for Han, kana and CJK/fullwidth punctuation."""
    return bool(_CJK_CHAR.match(char))


def count_cjk(text: str) -> int:
    """How many characters of ``text`` are CJK (``is_cjk``), in one pass of the regex engine."""
    return len(_CJK_CHAR.findall(text))


def _uses_cjk_rules(text: str, lang: str) -> bool:
    if lang.lower().replace("_", "-").split("-")[0] in _CJK_LANGS:
        return True
    cjk_letters = len(_CJK_LETTER.findall(text))
    other_letters = sum(char.isalnum() for char in text) - cjk_letters
    return cjk_letters > other_letters


def _line_separators(text: str) -> Iterator[tuple[int, int]]:
    """Spans of the whitespace runs holding a line break: newlines always end a sentence.

    Scanned by hand: a regex like ``\\s*\\n\\s*`` is quadratic on long runs of spaces.
    """
    end = 0
    for line_break in _LINE_BREAK.finditer(text):
        if line_break.start() < end:
            continue  # already inside the previous run
        start = line_break.start()
        while start > end and text[start - 1].isspace():
            start -= 1
        end = line_break.end()
        while end < len(text) and text[end].isspace():
            end += 1
        yield start, end


def _add(pieces: list[Piece], text: str, translate: bool) -> None:
    """Append, merging neighbouring separators so the output stays canonical."""
    if not text:
        return
    if not translate and pieces and not pieces[-1].translate:
        pieces[-1] = Piece(pieces[-1].text + text, False)
    else:
        pieces.append(Piece(text, translate))


def _add_line(pieces: list[Piece], line: str, cjk: bool, max_chars: int, budget: int = 0,
              whole: Callable[[str], bool] | None = None) -> None:
    sentences = _sentences(line, cjk)
    if budget > 0:
        sentences = _grouped(_units(sentences, whole) if whole else sentences, budget)
    for sentence in sentences:
        abandon.check()
        for chunk in _fit(sentence, max_chars, 0):
            core = chunk.strip()
            if not core:
                _add(pieces, chunk, translate=False)
                continue
            start = chunk.index(core)
            _add(pieces, chunk[:start], translate=False)
            _add(pieces, core, translate=True)
            _add(pieces, chunk[start + len(core):], translate=False)


def _units(sentences: Iterable[str], whole: Callable[[str], bool]) -> Iterator[str]:
    """Runs of sentences that end where ``whole`` holds (what is left at the end, as it is)."""
    pending = ""
    for sentence in sentences:
        pending += sentence
        if whole(pending):
            yield pending
            pending = ""
    if pending:
        yield pending


def _grouped(sentences: Iterable[str], budget: int) -> Iterator[str]:
    """Runs of consecutive sentences joined while the run (trimmed) fits in ``budget``."""
    current, current_size = "", 0
    for sentence in sentences:
        size = segment_size(sentence)
        # the raw size bounds the trimmed one, so the strip (a copy) runs only near the budget
        if current and current_size + size > budget and segment_size((current + sentence).strip()) > budget:
            yield current
            current, current_size = "", 0
        current += sentence
        current_size += size
    if current:
        yield current


def _sentences(line: str, cjk: bool) -> Iterable[str]:
    start = 0
    quoted = _quoted_depth(line) if cjk else None
    for run in _TERMINATOR_RUN.finditer(line):
        if run.end() < len(line) and _ends_sentence(line, run, cjk, quoted):
            yield line[start:run.end()]
            start = run.end()
    yield line[start:]


def _quoted_depth(line: str) -> list[int]:
    """How many matched quote or bracket pairs enclose each position of ``line``.

    Only pairs that close count: a stray opening quote does not make the rest
    of the line "quoted". ASCII double quotes pair up in order. Linear time.
    """
    stack: list[tuple[str, int]] = []
    change = [0] * (len(line) + 1)
    for i, char in enumerate(line):
        if char == '"':
            if stack and stack[-1][0] == '"':
                change[stack.pop()[1] + 1] += 1
                change[i] -= 1
            else:
                stack.append((char, i))
        elif char in _PAIRS:
            stack.append((char, i))
        elif char in _PAIR_CLOSERS:
            # the nearest opener this closes, looked for among the last few (linear on hostile input)
            for depth in range(len(stack) - 1, max(-1, len(stack) - 1 - _PAIR_LOOKBACK), -1):
                if _PAIRS.get(stack[depth][0]) == char:
                    change[stack[depth][1] + 1] += 1
                    change[i] -= 1
                    del stack[depth:]
                    break
    depth, out = 0, []
    for delta in change[:-1]:
        depth += delta
        out.append(depth)
    return out


def _ends_sentence(line: str, run: re.Match[str], cjk: bool, quoted: list[int] | None = None) -> bool:
    terminators = set(run.group()) - set(_CLOSERS)
    following = line[run.end()]
    # A question or exclamation mark inside quotes or brackets asks or exclaims within the sentence
    # around it: 点击“确定？”按钮继续。 is one sentence. A full stop there still ends one.
    if quoted is not None and quoted[run.start()] > 0 and not terminators & _FULL_STOPS:
        return False
    if cjk and (terminators & _CJK_STRONG or (terminators & _ASCII_WEAK and is_cjk(following))):
        return True
    if not terminators & _LATIN_ENDS:
        return False
    after_space = _NEXT_AFTER_SPACE.match(line, run.end())
    if not after_space or not _starts_sentence(after_space.group(1)):
        return False
    if run.group().rstrip(_CLOSERS) != ".":
        return True
    word_start = run.start()
    while word_start > 0 and not line[word_start - 1].isspace():
        word_start -= 1
    word = line[word_start:run.start()].lstrip(_OPENERS)
    return not _is_abbreviation(word, after_space.group(1))


def _starts_sentence(char: str) -> bool:
    uncased_letter = char.isalpha() and char.lower() == char.upper()  # Hangul, Arabic, Thai...
    return char.isupper() or char.isdigit() or uncased_letter or char in _OPENERS or is_cjk(char)


def _is_abbreviation(word: str, next_char: str) -> bool:
    lowered = word.lower()
    if lowered in _ABBREVIATIONS or _DOTTED_ABBREVIATION.fullmatch(word):
        return True
    if lowered in _NUMBER_ABBREVIATIONS:
        return next_char.isdigit()
    return len(word) == 1 and word.isupper() and word != "I"  # an initial: "J. K. Rowling"


def ends_with_abbreviation(text: str) -> bool:
    """Whether the full stop that ends ``text`` belongs to an abbreviation ("etc.", "U.S.", "Dr."),
    by the rule the segmenter cuts sentences with."""
    if not text.endswith("."):
        return False
    word = text[:-1].rsplit(None, 1)[-1].lstrip(_OPENERS) if text[:-1].strip() else ""
    return bool(word) and _is_abbreviation(word, "")


def _clause_units(text: str) -> list[str]:
    """Substrings that each end after a clause mark (and its spaces), or at the end."""
    units, start = [], 0
    for match in _CLAUSE.finditer(text):
        units.append(text[start:match.end()])
        start = match.end()
    return units + [text[start:]] if start < len(text) else units


def _word_units(text: str) -> list[str]:
    """Words (or single CJK characters), each with the whitespace before it."""
    return _WORD.findall(text)


_SPLITTERS: list[Callable[[str], list[str]]] = [_clause_units, _word_units]
_CLUSTER_BACKOFF = 16  # how far a hard cut may move back to keep a character with its marks
_ASTRAL_WEIGHT = 3  # what a character beyond U+FFFF counts for in max_chars


def segment_size(text: str) -> int:
    """The length ``max_chars`` bounds: characters, with each one beyond U+FFFF counted as three.

    Emoji, CJK Extension B and other astral characters are four UTF-8 bytes and take two to four
    tokens each (400 of U+20000 are 1,235 tokens for Qwen: past a 1,024-token slot), where the
    common CJK characters take one; this keeps a segment of either inside the engine's context.
    """
    astral = len(text.encode("utf-16-le", "surrogatepass")) // 2 - len(text)
    return len(text) + (_ASTRAL_WEIGHT - 1) * astral


def _fit(text: str, max_chars: int, level: int) -> list[str]:
    """Cut an overlong sentence at the coarsest boundaries that make it fit.

    Clause marks first, then spaces (or between CJK characters); a "word" still too long (a
    base64 blob, a URL, a run of one letter) is cut where it must be (``_hard_cuts``), so no
    segment sent to the engine is ever longer than ``max_chars`` (as ``segment_size`` counts).
    """
    size = segment_size(text)
    if size <= max_chars or segment_size(text.strip()) <= max_chars:
        return [text]
    abandon.check()  # a megabyte with no sentence end is one "sentence": cut for tenths of a second
    if level == len(_SPLITTERS):
        return _hard_cuts(text, max_chars)
    measure = len if size == len(text) else segment_size  # no astral characters: sizes are lengths
    chunks: list[str] = []
    current, current_size = "", 0
    for unit in _SPLITTERS[level](text):
        unit_size = measure(unit)
        # the raw size bounds the stripped one, so the strip (a copy) runs only near the limit
        crosses = current_size + unit_size > max_chars
        if current and crosses and segment_size((current + unit).strip()) > max_chars:
            chunks.append(current)
            current, current_size = "", 0
        current += unit
        current_size += unit_size
    chunks.append(current)
    return [part for chunk in chunks for part in _fit(chunk, max_chars, level + 1)]


def _hard_cuts(text: str, max_chars: int) -> list[str]:
    """Cut a text with no boundary left into pieces of at most ``max_chars`` (``segment_size``).

    Leading and trailing whitespace stay on the first and last piece. A cut is moved back (at
    most ``_CLUSTER_BACKOFF`` characters) so that it does not part a letter from its combining
    marks, or split an emoji sequence; the pieces join back with nothing between them.
    """
    max_chars = max(1, max_chars)
    core_start = len(text) - len(text.lstrip())
    core_end = len(text.rstrip())
    pieces: list[str] = []
    start = core_start
    remaining = segment_size(text[start:core_end])
    while remaining > max_chars:
        longest = min(start + max_chars, core_end)
        while longest > start + 1 and (excess := segment_size(text[start:longest]) - max_chars) > 0:
            longest = max(start + 1, longest - max(1, excess // _ASTRAL_WEIGHT))  # astral ones in it
        if longest >= core_end:
            break  # one character counted over a tiny max_chars: it goes as it is
        cut = longest
        earliest = max(start + 1, cut - _CLUSTER_BACKOFF)
        while cut > earliest and not _can_cut(text, cut):
            cut -= 1
        if not _can_cut(text, cut):
            cut = longest  # one cluster longer than the window: cut it anyway
        pieces.append(text[start:cut])
        remaining -= segment_size(pieces[-1])
        start = cut
    pieces.append(text[start:core_end])
    pieces[0] = text[:core_start] + pieces[0]
    pieces[-1] += text[core_end:]
    return pieces


def _can_cut(text: str, at: int) -> bool:
    """Whether a cut between ``text[at - 1]`` and ``text[at]`` keeps every character with its marks."""
    before, after = text[at - 1], text[at]
    if before == "\u200d" or unicodedata.category(after) in ("Mn", "Mc", "Me"):
        return False  # after a zero-width joiner, or before a combining mark
    code = ord(after)
    return not (
        code == 0x200D  # zero-width joiner
        or 0xFE00 <= code <= 0xFE0F or 0xE0100 <= code <= 0xE01EF  # variation selectors
        or 0x1F3FB <= code <= 0x1F3FF  # skin-tone modifiers
        or 0xE0020 <= code <= 0xE007F  # tag characters (subdivision flags)
        or (0x1F1E6 <= code <= 0x1F1FF and 0x1F1E6 <= ord(before) <= 0x1F1FF)  # a flag's two halves
    )


def glued(left: str, right: str) -> bool:
    """Whether ``left + right`` would run two Latin-script words/sentences together."""
    if not left or not right:
        return False
    end, begin = left[-1], right[0]
    left_ok = not end.isspace() and not is_cjk(end) and end not in _OPENERS
    right_ok = (begin.isalnum() and not is_cjk(begin)) or begin in "\"'“‘(["
    return left_ok and right_ok

