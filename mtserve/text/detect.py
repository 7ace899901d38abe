"""Language detection for ``source=auto``: the script first, then lingua within the script.

Short input is where detectors fail, and most of the failures are avoidable
because the script already says a great deal:

- hangul means Korean, and kana means Japanese;
- Han characters without kana mean Chinese, never Japanese: a kana-less
  Japanese sentence is rare, while a Chinese one read as Japanese is the
  commonest complaint against self-hosted translators (LibreTranslate issue
  676). OpenCC's character sets then tell Traditional (``zt``) from
  Simplified (``zh``);
- within one script (Latin, Cyrillic, Arabic) lingua decides, restricted to
  the model's languages in that script. A prior (a weight per language, a
  setting) encodes what the service mostly sees: without it lingua reads
  "Hello" as Italian; with English weighted 3x, it reads English, while
  "Bonjour" and "Danke" stay French and German.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from mtserve.text.lexicon import boosts
from mtserve.text.scripts import IDEOGRAPHIC_SCRIPTS, languages_written_in, script_counts

# A Han, kana or hangul character carries about as much as a short word does.
IDEOGRAPH_WEIGHT = 3.0


@dataclass(frozen=True)
class Detection:
    language: str  # LibreTranslate code
    confidence: float  # 0..100, as LibreTranslate reports it


def parse_prior(spec: str) -> dict[str, float]:
    """'en=3,zh=2' -> {'en': 3.0, 'zh': 2.0}."""
    prior: dict[str, float] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        code, _, weight = item.partition("=")
        prior[code.strip()] = float(weight or 1)
    return prior


class LanguageDetector:
    def __init__(self, languages: tuple[str, ...], prior: dict[str, float] | None = None):
        self.traditional = "zt" in languages  # lingua knows one Chinese; OpenCC splits it in two
        self.languages = tuple(code for code in languages if code != "zt")
        self.prior = prior or {}
        self._detectors: dict[str, object] = {}
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Build the Latin-script detector and load its models; slow (seconds), so done once at start."""
        detector = self._lingua("latin")
        if detector is not None:
            detector.compute_language_confidence_values("warm up")

    def _lingua(self, script: str):
        """A lingua detector for the model's languages written in ``script``; None if fewer than two."""
        with self._lock:
            if script not in self._detectors:
                from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

                langs = []
                for code in languages_written_in(script, self.languages):
                    iso = getattr(IsoCode639_1, code.upper(), None)
                    if iso is not None:
                        langs.append(Language.from_iso_code_639_1(iso))
                self._detectors[script] = LanguageDetectorBuilder.from_languages(*langs).build() \
                    if len(langs) >= 2 else None
            return self._detectors[script]

    def detect(self, text: str, limit: int = 3) -> list[Detection]:
        """Candidates, best first. An empty or symbol-only text yields []."""
        counts = script_counts(text)
        if not counts:
            return []
        ideographic = sum(counts[s] for s in IDEOGRAPHIC_SCRIPTS)
        other = sum(counts.values()) - ideographic
        if ideographic and ideographic * IDEOGRAPH_WEIGHT >= other:
            found = self._cjk(text, counts)
            if found:
                return found[:limit]
        script = max((s for s in counts if s not in IDEOGRAPHIC_SCRIPTS), key=counts.__getitem__, default=None)
        if script is None:
            return []
        return self._within_script(text, script)[:limit]

    def _cjk(self, text: str, counts) -> list[Detection]:
        candidates = []
        if counts["hangul"] and counts["hangul"] >= counts["kana"]:
            candidates = ["ko", "ja", "zh"]
        elif counts["kana"]:
            candidates = ["ja", "zh", "ko"]
        elif counts["han"]:
            from mtserve.text.chinese import has_japanese_kanji, variant

            if has_japanese_kanji(text):  # 図書館, 駅前: Japanese forms Chinese never writes
                candidates = ["ja", "zh", "ko"]
            else:
                chinese = "zt" if self.traditional and variant(text) == "zt" else "zh"
                candidates = [chinese, "ja", "ko"]
        available = set(self.languages) | ({"zt"} if self.traditional else set())
        ranked = [c for c in candidates if c in available]
        if not ranked:
            return []
        # the script decides; the runners-up are listed for clients that show alternatives
        confidences = [90.0, 7.0, 3.0][:len(ranked)]
        return [Detection(code, value) for code, value in zip(ranked, confidences)]

    def _within_script(self, text: str, script: str) -> list[Detection]:
        candidates = languages_written_in(script, self.languages)
        if not candidates:
            return []
        if len(candidates) == 1:
            return [Detection(candidates[0], 100.0)]
        detector = self._lingua(script)
        if detector is None:
            return [Detection(candidates[0], 100.0 / len(candidates))]
        values = detector.compute_language_confidence_values(text)
        codes = [v.language.iso_code_639_1.name.lower() for v in values]
        evidence = boosts(text, codes)
        weighted = [
            (code, v.value * self.prior.get(code, 1.0) * evidence[code]) for code, v in zip(codes, values)
        ]
        total = sum(w for _, w in weighted) or 1.0
        ranked = sorted(weighted, key=lambda item: item[1], reverse=True)
        return [Detection(code, round(100 * w / total, 1)) for code, w in ranked if w > 0]

    def best(self, text: str, fallback: str) -> Detection:
        found = self.detect(text, limit=1)
        return found[0] if found else Detection(fallback, 0.0)
