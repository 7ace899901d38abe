"""Spacing and case at the tags of a checked translation, as the target language writes them."""

from __future__ import annotations

import re

from mtserve.text.lexicon import WORDS
from mtserve.text.markup.tags import Token, strip_tags, tokens
from mtserve.text.segment import is_cjk

UNSPACED = ("zh", "zt", "ja")
_SENTENCE_END = set(".!?。！？…:;")
_OPENERS = set("\"'“‘([{«¿¡「『（【")


def _word_char(char: str) -> bool:
    return char.isalnum() and not is_cjk(char)


def _cjk_side(char: str) -> bool:
    return is_cjk(char)


def _edges(view: str) -> dict[frozenset[int], tuple[str, str, str, str]]:
    """For each run of adjacent tags (by their ids): (text before, the run, text after, the run's
    kinds), where "before"/"after" are the neighbouring text tokens ('' at the ends)."""
    items = tokens(view)
    runs: dict[frozenset[int], tuple[str, str, str, str]] = {}
    i = 0
    while i < len(items):
        if items[i].kind == "text":
            i += 1
            continue
        j = i
        while j < len(items) and items[j].kind != "text":
            j += 1
        before = items[i - 1].text if i > 0 else ""
        after = items[j].text if j < len(items) else ""
        run = items[i:j]
        runs[frozenset(t.id for t in run)] = (before, "".join(t.text for t in run), after,
                                              "".join(t.kind[0] for t in run))
        i = j
    return runs


def _glued_in(source: str, ids: set[int]) -> bool:
    """Whether the source had these tags inside a word (``un<b1>believ</b1>able``)."""
    for run_ids, (before, _, after, _) in _edges(source).items():
        if run_ids & ids and before[-1:] and after[:1] and _word_char(before[-1]) and _word_char(after[0]):
            return True
    return False


def fix_edges(source: str, output: str, target: str) -> str:
    """Spacing and case at the tags of a checked translation, as ``target`` writes them.

    Between words of a spaced language a tag never glues two words together; in
    Chinese and Japanese no space sits at a tag between two characters; and a
    tag's content keeps the edge whitespace the source gave it (a space the model
    put inside a tag goes outside). A common word capitalised right after an
    opening tag in mid-sentence is put in lower case.
    """
    source_tokens = tokens(source)
    source_open: dict[int, str] = {}  # id -> the source content's first text
    source_close: dict[int, str] = {}
    for k, token in enumerate(source_tokens):
        if token.kind == "open":
            source_open[token.id] = source_tokens[k + 1].text if k + 1 < len(source_tokens) else ""
        elif token.kind == "close":
            source_close[token.id] = source_tokens[k - 1].text if k > 0 else ""
    items = [[t.kind, t.text, t.id] for t in tokens(output)]
    # 1. whitespace just inside a tag that the source did not have there goes outside it
    for k, (kind, text, id_) in enumerate(items):
        if kind == "open" and k + 1 < len(items) and items[k + 1][0] == "text":
            inner = items[k + 1][1]
            lead = inner[:len(inner) - len(inner.lstrip())]
            if lead and not source_open.get(id_, "")[:1].isspace():
                items[k + 1][1] = inner[len(lead):]
                _append_before(items, k, lead)
        elif kind == "close" and k > 0 and items[k - 1][0] == "text":
            inner = items[k - 1][1]
            trail = inner[len(inner.rstrip()):]
            if trail and not source_close.get(id_, "")[-1:].isspace():
                items[k - 1][1] = inner[:len(inner) - len(trail)]
                _prepend_after(items, k, trail)
    view = "".join(text for _, text, _ in items)
    unspaced = target in UNSPACED
    # 2. the space at each run of tags
    out: list[str] = []
    parts = tokens(view)
    k = 0
    while k < len(parts):
        if parts[k].kind == "text":
            out.append(parts[k].text)
            k += 1
            continue
        j = k
        while j < len(parts) and parts[j].kind != "text":
            j += 1
        run = parts[k:j]
        before = "".join(out)
        after = parts[j].text if j < len(parts) else ""
        if unspaced:
            left, right = before.rstrip(), after.lstrip()
            if left and right and _cjk_side(left[-1]) and _cjk_side(right[0]):
                out = [left]
                if j < len(parts):
                    parts[j] = Token("text", right)
            out.append("".join(t.text for t in run))
        else:
            ids = {t.id for t in run}
            left, right = before[-1:], after[:1]
            glued = bool(left) and bool(right) and _word_char(left) and _word_char(right)
            if all(t.kind == "void" for t in run) and left and right and not glued \
                    and ((left.isspace() and _word_char(right)) or (_word_char(left) and right.isspace())):
                # a void tag (an image, a placeholder) touching a word on one side only: a space there
                spaced = "".join(t.text for t in run)
                out.append(spaced + " " if left.isspace() else " " + spaced)
            elif glued and not _glued_in(source, ids):
                out.append(_spaced_run(run))
            else:
                out.append("".join(t.text for t in run))
        k = j
    view = "".join(out)
    return view if unspaced else _fix_case(source, view, target)


def _append_before(items: list[list], k: int, text: str) -> None:
    if k > 0 and items[k - 1][0] == "text":
        previous = items[k - 1][1]
        if previous and not previous[-1].isspace() and previous[-1] not in _OPENERS:
            items[k - 1][1] += text
    elif k > 0:
        items.insert(k, ["text", text, 0])
    # at the very start, leading whitespace is dropped: the segment's own edges are kept elsewhere


def _prepend_after(items: list[list], k: int, text: str) -> None:
    if k + 1 < len(items) and items[k + 1][0] == "text":
        following = items[k + 1][1]
        if following and (following[0].isalnum() or following[0] in _OPENERS):
            items[k + 1][1] = text + items[k + 1][1]
    elif k + 1 < len(items):
        items.insert(k + 1, ["text", text, 0])


def _spaced_run(run: list[Token]) -> str:
    """A run of tags between two words, with the space where it belongs: before opening tags,
    after closing ones, and on both sides of a void one."""
    kinds = [t.kind for t in run]
    text = [t.text for t in run]
    if all(kind == "open" for kind in kinds):
        return " " + "".join(text)
    if all(kind == "close" for kind in kinds):
        return "".join(text) + " "
    if "void" in kinds and "open" not in kinds and "close" not in kinds:
        return " " + "".join(text) + " "
    # closing tags, then opening ones: the space goes between them
    split = next((i for i, kind in enumerate(kinds) if kind == "open"), len(kinds))
    return "".join(text[:split]) + " " + "".join(text[split:])


_FIRST_WORD = re.compile(r"[^\W\d_]+")


def _fix_case(source: str, view: str, target: str) -> str:
    common = WORDS.get(target, frozenset())
    source_cased = any(char.isalpha() and char.lower() != char.upper() for char in strip_tags(source))
    source_first: dict[int, str] = {}
    if source_cased:
        parts = tokens(source)
        for k, token in enumerate(parts):
            if token.kind == "open":
                following = "".join(t.text for t in parts[k + 1:] if t.kind == "text")
                source_first[token.id] = following.lstrip()[:1]
    parts = tokens(view)
    out: list[str] = []
    for k, token in enumerate(parts):
        text = token.text
        if token.kind == "text" and k > 0 and parts[k - 1].kind == "open":
            before = strip_tags("".join(out)).rstrip()
            mid_sentence = bool(before) and before[-1] not in _SENTENCE_END and before[-1] not in _OPENERS
            word = _FIRST_WORD.match(text)
            if mid_sentence and word and len(word.group()) > 1 and word.group()[0].isupper() \
                    and word.group()[1:].islower():
                opener = parts[k - 1].id
                if source_cased:
                    lower = source_first.get(opener, "").islower()
                else:
                    lower = word.group().lower() in common
                if lower:
                    text = text[0].lower() + text[1:]
        out.append(text)
    return "".join(out)
