"""Language detection for ``source=auto``, with lingua restricted to what the model translates.

Restricting the candidates is what makes short text work: with every language
of the world in play, "Hello" or "你好" are ambiguous; with the twenty a model
knows, they rarely are. On top of that a prior (a weight per language, a
setting) encodes what the service mostly sees. Without it lingua reads "Hello"
as Italian; with English weighted 3x, it reads English, while "Bonjour" and
"Danke" stay French and German.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


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
        # zt (Traditional Chinese) is not a separate language to lingua; it reports zh.
        self.languages = tuple(code for code in languages if code != "zt")
        self.prior = prior or {}
        self._detector = None
        self._lock = threading.Lock()

    def warm_up(self) -> None:
        """Build the detector and load its models; slow (seconds), so done once at start."""
        self._get().compute_language_confidence_values("warm up")

    def _get(self):
        with self._lock:
            if self._detector is None:
                from lingua import IsoCode639_1, Language, LanguageDetectorBuilder

                langs = []
                for code in self.languages:
                    iso = getattr(IsoCode639_1, code.upper(), None)
                    if iso is not None:
                        langs.append(Language.from_iso_code_639_1(iso))
                self._detector = LanguageDetectorBuilder.from_languages(*langs).build()
            return self._detector

    def detect(self, text: str, limit: int = 3) -> list[Detection]:
        """Candidates, best first. An empty or symbol-only text yields []."""
        if not any(ch.isalpha() for ch in text):
            return []
        values = self._get().compute_language_confidence_values(text)
        weighted = [
            (v.language.iso_code_639_1.name.lower(), v.value * self.prior.get(v.language.iso_code_639_1.name.lower(), 1.0))
            for v in values
        ]
        total = sum(w for _, w in weighted) or 1.0
        ranked = sorted(weighted, key=lambda item: item[1], reverse=True)[:limit]
        return [Detection(code, round(100 * w / total, 1)) for code, w in ranked if w > 0]

    def best(self, text: str, fallback: str) -> Detection:
        found = self.detect(text, limit=1)
        return found[0] if found else Detection(fallback, 0.0)
