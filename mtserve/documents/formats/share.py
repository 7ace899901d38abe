"""Sharing a translation out among the lines its source came in.

A subtitle's cues and a plain text's wrapped lines cut sentences where the screen or the page
ran out, not where the sentence does. They are translated together, as one text, so that each
sentence is whole; ``share_out`` then cuts the translation into as many lines, in the proportion
of the source lines, where the translation pauses.
"""

from __future__ import annotations

from itertools import accumulate

from mtserve.text.segment import count_cjk, ends_with_abbreviation, is_cjk

_CLOSERS = "\"'”’)]）」』》"
_SENTENCE_ENDS = ".!?。！？"  # "…" and "..." go on: a subtitle's way to carry a sentence into the next cue
_CLAUSE_ENDS = ",;:，；：、—-"


def runs_on(text: str | None) -> bool:
    """Whether the sentence of a line (a cue) goes on in the next: it ends without a full stop, question
    or exclamation mark (a comma, an ellipsis, a word)."""
    if not text:
        return False
    end = text.rstrip().rstrip(_CLOSERS)
    if not end:
        return False
    if end[-1] == "." and (end.endswith("..") or ends_with_abbreviation(end)):
        return True
    return end[-1] not in _SENTENCE_ENDS


def join_lines(texts: list[str]) -> str:
    """Lines (cues) as one text: CJK text runs on without a space."""
    out = texts[0]
    for text in texts[1:]:
        out += ("" if is_cjk(out[-1]) and is_cjk(text[0]) else " ") + text
    return out


def columns(text: str) -> int:
    """The width of ``text`` in a monospaced display: a CJK character takes two columns."""
    return len(text) + count_cjk(text)


def share_out(translation: str, sources: list[str]) -> list[str]:
    """Cut ``translation`` into one piece per cue, in the proportion of the cues' ``sources``.

    Each cut is where the translation pauses near its share: after a sentence end, then a
    clause mark, then any word (any character in CJK text). A pause weighs more where the
    source cue ends with one of the same kind. Every piece gets a word while there are words
    enough; a cue left without one gets "…".
    """
    text = " ".join(translation.split())
    n = len(sources)
    if n == 1 or not text:
        return [text] * n  # no translation: each cue keeps its source
    cuts = _cuts(text)
    if len(cuts) < n - 1:
        pieces = _pieces(text, [at for at, _ in cuts])
        return pieces + ["…"] * (n - len(pieces))
    weights = [max(1, len(source.strip())) for source in sources]
    total = sum(weights)
    wanted = [running / total * len(text) for running in accumulate(weights[:-1])]
    kinds = [_pause(source.strip()) for source in sources[:-1]]

    def cost(k: int, cut: tuple[int, int]) -> float:
        return abs(cut[0] - wanted[k]) / len(text) - _PAUSE_BONUS[kinds[k]][cut[1]]

    # best[k][j]: the least cost of cuts 0..k with cut k at cuts[j] (cuts strictly increase)
    inf = float("inf")
    best = [[inf] * len(cuts) for _ in range(n - 1)]
    came = [[-1] * len(cuts) for _ in range(n - 1)]
    for j, cut in enumerate(cuts):
        best[0][j] = cost(0, cut)
    for k in range(1, n - 1):
        least, least_at = inf, -1
        for j, cut in enumerate(cuts):
            if j > 0 and best[k - 1][j - 1] < least:
                least, least_at = best[k - 1][j - 1], j - 1
            if least_at >= 0:
                best[k][j], came[k][j] = least + cost(k, cut), least_at
    j = min(range(len(cuts)), key=lambda j: best[n - 2][j])
    chosen = []
    for k in range(n - 2, -1, -1):
        chosen.append(cuts[j][0])
        j = came[k][j]
    return _pieces(text, chosen[::-1])


# How much a pause in the translation counts, as a share of the text, at a cut whose source cue ends with
# the pause of the row (``_pause``: 4 a sentence end, 3 a clause mark, 1 neither). A pause before a
# conjunction (2) is a clause's, weaker than its mark; a cut after an article or a preposition (0)
# costs a little: it parts words that read as one.
_PAUSE_BONUS = {
    1: {0: -0.05, 1: 0.0, 2: 0.05, 3: 0.05, 4: 0.05},
    3: {0: -0.05, 1: 0.0, 2: 0.1, 3: 0.2, 4: 0.2},
    4: {0: -0.05, 1: 0.0, 2: 0.05, 3: 0.05, 4: 0.3},
}
# English line-breaking as subtitle style guides put it: break before a conjunction or a relative
# word, never after an article or a preposition (Netflix's timed-text style guide, for one).
_BREAK_BEFORE = frozenset("and but or so because which who whom whose when while where if that though although "
                          "until unless since before after than".split())
_NO_BREAK_AFTER = frozenset("a an the to of in on at for with from by my your his her its our their this "
                            "these those".split())


def _pause(text: str) -> int:
    """What ``text`` (a word, or the characters before a cut) ends with: 4 a sentence end, 3 a clause
    mark, 1 neither."""
    end = text.rstrip(_CLOSERS)
    if end and end[-1] in _SENTENCE_ENDS + "…" and not ends_with_abbreviation(end):
        return 4
    if end and end[-1] in _CLAUSE_ENDS:
        return 3
    return 1


def _cuts(text: str) -> list[tuple[int, int]]:
    """(where a piece may start, the pause before it: 4 a sentence end, 3 a clause mark, 2 a conjunction
    after, 1 a word, 0 a word that leans on the next): after a space, or between CJK characters.

    ``text`` has single spaces. Linear in its length: each word is looked at once, and a pause only at
    the few characters before a cut."""
    cuts = []
    words = text.split(" ")
    at = 0
    for k, word in enumerate(words):
        if k > 0 and word:
            pause = _pause(words[k - 1])
            if pause == 1:
                after = word.lower().strip(_CLAUSE_ENDS + _SENTENCE_ENDS)
                pause = 2 if after in _BREAK_BEFORE else 0 if words[k - 1].lower() in _NO_BREAK_AFTER else 1
            cuts.append((at, pause))
        for i in range(1, len(word)):
            if is_cjk(word[i - 1]) and is_cjk(word[i]) and word[i] not in _NO_LINE_START:
                cuts.append((at + i, _pause(word[max(0, i - _PAUSE_LOOKBACK):i])))
        at += len(word) + 1
    return cuts


_PAUSE_LOOKBACK = 8  # characters enough to see a pause and its closing quotes or brackets


_NO_LINE_START = "，。、；：！？）」』》”’…"  # CJK punctuation a line does not start with


def _pieces(text: str, cuts: list[int]) -> list[str]:
    bounds = [0, *cuts, len(text)]
    return [text[a:b].strip() for a, b in zip(bounds, bounds[1:])]
