"""sacrebleu BLEU and chrF, with the signature that makes a score reproducible.

BLEU's tokenizer follows the target: ``13a`` (sacrebleu's default, WMT's
standard) for languages written with spaces, ``zh`` for Chinese, and ``char``
for Japanese and Korean (sacrebleu's ``ja-mecab``/``ko-mecab`` need MeCab,
which is not installed). chrF works on characters and needs no tokenizer.
"""

from __future__ import annotations

from dataclasses import dataclass

CHINESE = ("zh", "zt")
CHARACTER_TOKENIZED = ("ja", "ko")


def bleu_tokenizer(target: str) -> str:
    if target in CHINESE:
        return "zh"
    if target in CHARACTER_TOKENIZED:
        return "char"
    return "13a"


@dataclass(frozen=True)
class Scores:
    bleu: float
    chrf: float
    n: int


@dataclass(frozen=True)
class Signatures:
    bleu: str
    chrf: str


class Scorer:
    def __init__(self, target: str):
        from sacrebleu.metrics import BLEU, CHRF

        self.tokenizer = bleu_tokenizer(target)
        self._bleu = BLEU(tokenize=self.tokenizer)
        # effective_order makes sentence-level BLEU meaningful; corpus scores use a separate object
        self._sentence_bleu = BLEU(tokenize=self.tokenizer, effective_order=True)
        self._chrf = CHRF()

    def corpus(self, hypotheses: list[str], references: list[str]) -> Scores:
        if not hypotheses:
            return Scores(0.0, 0.0, 0)
        bleu = self._bleu.corpus_score(hypotheses, [references]).score
        chrf = self._chrf.corpus_score(hypotheses, [references]).score
        return Scores(round(bleu, 2), round(chrf, 2), len(hypotheses))

    def sentence_chrf(self, hypothesis: str, reference: str) -> float:
        return round(self._chrf.sentence_score(hypothesis, [reference]).score, 2)

    def sentence_bleu(self, hypothesis: str, reference: str) -> float:
        return round(self._sentence_bleu.sentence_score(hypothesis, [reference]).score, 2)

    def signatures(self) -> Signatures:
        """sacrebleu's signatures; they know the reference count only once something was scored."""
        try:
            self._bleu.get_signature(), self._chrf.get_signature()
        except ValueError:
            self._bleu.corpus_score(["-"], [["-"]])
            self._chrf.corpus_score(["-"], [["-"]])
        return Signatures(bleu=str(self._bleu.get_signature()), chrf=str(self._chrf.get_signature()))
