"""Writing systems: which script a character is in, and which scripts a language writes.

Detection and the guardrails both start here, because the script settles most
questions before any statistics: hangul is Korean, kana is Japanese, and an
English translation that still holds Han characters was not finished.
"""

from __future__ import annotations

import re
from collections import Counter

# (first, last, script), sorted; ranges not listed are "other" (digits, punctuation, symbols).
_RANGES: list[tuple[int, int, str]] = [
    (0x0041, 0x005A, "latin"), (0x0061, 0x007A, "latin"), (0x00C0, 0x024F, "latin"),
    (0x0370, 0x03FF, "greek"), (0x0400, 0x052F, "cyrillic"), (0x0590, 0x05FF, "hebrew"),
    (0x0600, 0x06FF, "arabic"), (0x0750, 0x077F, "arabic"), (0x0900, 0x097F, "devanagari"),
    (0x0980, 0x09FF, "bengali"), (0x0A80, 0x0AFF, "gujarati"), (0x0B80, 0x0BFF, "tamil"),
    (0x0C00, 0x0C7F, "telugu"), (0x0E00, 0x0E7F, "thai"), (0x1000, 0x109F, "myanmar"),
    (0x1100, 0x11FF, "hangul"), (0x1780, 0x17FF, "khmer"), (0x1800, 0x18AF, "mongolian"),
    (0x1E00, 0x1EFF, "latin"), (0x3040, 0x309F, "kana"), (0x30A0, 0x30FF, "kana"),
    (0x3130, 0x318F, "hangul"), (0x31F0, 0x31FF, "kana"), (0x3400, 0x4DBF, "han"),
    (0x4E00, 0x9FFF, "han"), (0xAC00, 0xD7AF, "hangul"), (0xF900, 0xFAFF, "han"),
    (0xFB50, 0xFDFF, "arabic"), (0xFE70, 0xFEFF, "arabic"), (0xFF21, 0xFF3A, "latin"),
    (0xFF41, 0xFF5A, "latin"), (0xFF66, 0xFF9F, "kana"), (0x20000, 0x3134F, "han"),
]
_CACHE: dict[str, str] = {}

LANGUAGE_SCRIPTS: dict[str, frozenset[str]] = {
    "zh": frozenset({"han"}), "zt": frozenset({"han"}), "ja": frozenset({"han", "kana"}),
    "ko": frozenset({"hangul"}), "ru": frozenset({"cyrillic"}), "uk": frozenset({"cyrillic"}),
    "kk": frozenset({"cyrillic"}), "mn": frozenset({"cyrillic", "mongolian"}),
    "ar": frozenset({"arabic"}), "fa": frozenset({"arabic"}), "ur": frozenset({"arabic"}),
    "he": frozenset({"hebrew"}), "hi": frozenset({"devanagari"}), "mr": frozenset({"devanagari"}),
    "bn": frozenset({"bengali"}), "gu": frozenset({"gujarati"}), "ta": frozenset({"tamil"}),
    "te": frozenset({"telugu"}), "th": frozenset({"thai"}), "my": frozenset({"myanmar"}),
    "km": frozenset({"khmer"}),
}
LATIN = frozenset({"latin"})


def script_of(ch: str) -> str:
    cached = _CACHE.get(ch)
    if cached is not None:
        return cached
    code = ord(ch)
    found = "other"
    for first, last, script in _RANGES:
        if code < first:
            break
        if code <= last:
            found = script
            break
    if len(_CACHE) < 65536:
        _CACHE[ch] = found
    return found


def script_counts(text: str) -> Counter[str]:
    """Letters per script; digits, spaces, punctuation and symbols are not counted."""
    return Counter(s for s in map(script_of, text) if s != "other")


def scripts_of(language: str) -> frozenset[str]:
    """The scripts a language is written in (Latin unless listed)."""
    return LANGUAGE_SCRIPTS.get(language, LATIN)


def languages_written_in(script: str, candidates: tuple[str, ...] | list[str]) -> list[str]:
    return [code for code in candidates if script in scripts_of(code)]

IDEOGRAPHIC_SCRIPTS = frozenset({"han", "kana", "hangul"})


# Lower-case Latin letters. In a translation out of a language written in them into one that is not,
# a word of them is a word left untranslated, unless the source keeps it as written.
LOWER_LATIN = "a-z\u00df-\u00f6\u00f8-\u00ff"
UPPER_LATIN = "A-Z\u00c0-\u00d6\u00d8-\u00de"  # a word with one of them is a name (iPhone, Python)
_LATIN_LETTER = LOWER_LATIN + UPPER_LATIN  # not × or ÷, which sit among them in Latin-1
LOWER_LATIN_WORD = re.compile(rf"(?<![{_LATIN_LETTER}'-])[{LOWER_LATIN}]{{3,}}(?![{_LATIN_LETTER}'-])")
