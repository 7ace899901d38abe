"""Guardrails: catch a translation that is not one, and retry once, more strictly.

Small chat models fail in a few recognisable ways. They leave text in the
source script ("The团长 led the team"), hand the input back unchanged, loop
("the the the ..."), or explain instead of translating ("This sentence
means ..."). And they can ignore a glossary term. ``check`` names the first
such problem in a cleaned output; ``retry_request`` builds the one retry: a
stricter prompt, and for a missed term, the term already replaced in the
source. ``choose`` keeps whichever answer is better. The service counts both
events in ``mtserve_guardrail_retries`` and ``mtserve_guardrail_unresolved``.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace
from typing import Mapping

from mtserve.engines.base import EngineRequest, _is_wide
from mtserve.service.glossary import term_in_output
from mtserve.text import dictionary
from mtserve.text.languages import language_name
from mtserve.text.markup import AS_WRITTEN
from mtserve.text.scripts import IDEOGRAPHIC_SCRIPTS, LOWER_LATIN_WORD, script_counts, scripts_of
from mtserve.text.segment import count_sentences

# Worst first: a loop wastes the most and is the least usable.
KINDS = ("runaway", "repetition", "refusal", "context", "untranslated", "identical", "explanation", "answer",
         "glossary", "dropped", "content")

# Kinds that mean part of the source has no counterpart in the output: still there after the retry,
# they are counted in the request's usage (content_dropped), so a caller knows what to check.
LOST_CONTENT = frozenset({"dropped", "content"})
IDEOGRAPHIC = IDEOGRAPHIC_SCRIPTS  # one character is about one word
SAME_LANGUAGE_PAIRS = ({"zh", "zt"},)


@dataclass(frozen=True)
class Problem:
    kind: str  # one of KINDS
    detail: str


def approx_tokens(text: str) -> float:
    wide = sum(1 for ch in text if _is_wide(ch))
    return wide + (len(text) - wide) / 3.5


def _words(text: str) -> float:
    """Words, counting an ideograph as half a word."""
    counts = script_counts(text)
    ideographs = sum(counts[s] for s in IDEOGRAPHIC)
    spaced = len(re.findall(r"[^\W\d_]+", re.sub(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]", " ", text)))
    return spaced + ideographs / 2


def _normal(text: str) -> str:
    return re.sub(r"[\W_]+", "", text.casefold())


def _without(text: str, terms: Mapping[str, str] | None) -> str:
    """The output less the glossary's required translations, which may rightly be in any script."""
    for translation in (terms or {}).values():
        text = re.sub(re.escape(translation), " ", text, flags=re.IGNORECASE)
    return text


# --- the checks --------------------------------------------------------------------------
def _identical(source: str, output: str, source_lang: str, target_lang: str,
               glossary: Mapping[str, str] | None) -> Problem | None:
    if _normal(source) != _normal(output) or not _normal(source):
        return None
    if glossary and _normal(source) in {_normal(t) for t in glossary.values()}:
        return None
    foreign = script_counts(source).keys() - scripts_of(target_lang)
    src_scripts = scripts_of(source_lang)
    if any(s in src_scripts for s in foreign) or _words(source) >= 3:
        return Problem("identical", "the output is the input, unchanged")
    return None  # a name, a brand or a one-word loan: the same in both languages


def _leftover_words(source: str, prose: str) -> list[str]:
    """Source words left, in lower case, in a translation into a language not written in Latin
    letters ("他 impatient地等待。" for "He waited impatiently."). Written in lower case they are no
    name, acronym or brand. A word counts when it begins a word of the source, or shares with one
    its first four letters and most of its own, so another form of it counts too ("knitting" for
    "knitted")."""
    source_words = {w.casefold() for w in re.findall(r"[^\W\d_]+", AS_WRITTEN.sub(" ", source))}
    return [word for word in dict.fromkeys(LOWER_LATIN_WORD.findall(prose))
            if any(_same_word(word, w) for w in source_words)]


def _same_word(left: str, source_word: str) -> bool:
    if source_word.startswith(left):
        return True
    shared = len(os.path.commonprefix([left, source_word]))
    return shared >= max(4, 0.6 * len(left))


def _untranslated(source: str, output: str, source_lang: str, target_lang: str,
                  glossary: Mapping[str, str] | None) -> Problem | None:
    leftover_scripts = scripts_of(source_lang) - scripts_of(target_lang)
    if not leftover_scripts:
        return None
    text = _without(output, glossary)
    in_output = script_counts(text)
    if not any(in_output[s] for s in leftover_scripts):
        return None  # most outputs: one count, nothing more
    if leftover_scripts & IDEOGRAPHIC:
        # Any ideograph left in, say, English output is an untranslated word.
        runs = re.findall(r"[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]+", text)
        return Problem("untranslated", f"it still contains {language_name(source_lang)}: " + ", ".join(runs[:5]))
    prose = AS_WRITTEN.sub(" ", text)  # code, links and placeholders stay as written
    counts = script_counts(prose)
    leftover = sum(counts[s] for s in leftover_scripts)
    if not leftover:
        return None
    # An ideograph carries about what three letters do: "他用 iPhone。" is mostly Chinese.
    weighed = {s: n * (3 if s in IDEOGRAPHIC else 1) for s, n in counts.items()}
    total = sum(weighed.values())
    target_letters = sum(weighed.get(s, 0) for s in scripts_of(target_lang))
    if leftover >= 4 and leftover > 0.5 * total and target_letters * 2 < leftover:
        return Problem("untranslated", "most of the output is still in the source script")
    if "latin" in leftover_scripts and (words := _leftover_words(source, prose)):
        return Problem("untranslated", f"it still contains {language_name(source_lang)}: " + ", ".join(words[:5]))
    return None


_SENTENCE = re.compile(r"[^.!?。！？\n]+[.!?。！？]*")
_LOOP = re.compile(r"(.{2,40}?)(?:[\s,，、;；]*\1){3,}", re.DOTALL | re.IGNORECASE)
_SOURCE_REPEATS = re.compile(r"(.{1,40}?)(?:[\s,，、;；]*\1){2,}", re.DOTALL)


def _repetition(source: str, output: str) -> Problem | None:
    if _LOOP.search(output) and not _SOURCE_REPEATS.search(source):
        return Problem("repetition", "a phrase repeats four or more times")
    sentences = [s.strip().casefold() for s in _SENTENCE.findall(output) if len(s.strip()) >= 12]
    src_sentences = [s.strip().casefold() for s in _SENTENCE.findall(source) if s.strip()]
    if len(sentences) != len(set(sentences)) and len(src_sentences) == len(set(src_sentences)):
        return Problem("repetition", "a sentence appears twice")
    return None


def _runaway(source: str, output: str, finish_reason: str) -> Problem | None:
    if finish_reason == "length":
        return Problem("runaway", "generation hit the token limit")
    if approx_tokens(output) > 2.5 * approx_tokens(source) + 24:
        return Problem("runaway", "the output is far longer than a translation of the input can be")
    return None


_EXPLAINING = re.compile(
    r"\b(?:this|the)\s+(?:sentence|phrase|text|translation|word)\s+(?:means|translates|refers)\b"
    r"|\b(?:literally|translates?\s+(?:to|as)|translated\s+as|which\s+means|in\s+(?:english|chinese|japanese)\s*[:,]"
    r"|pinyin|translation\s*[:：]|note\s*[:：])"
    r"|(?:这句话|这个句子|意思是|直译|翻译为|译为|注[:：]|解释[:：]|拼音)",
    re.IGNORECASE,
)
_SOURCE_TALKS_ABOUT_LANGUAGE = re.compile(
    r"翻译|翻譯|译|譯|意思|含义|解释|拼音|英语|英文|中文|汉语|句子|注意|注|词|詞|字|语|語|句"
    r"|translat|mean|literal|pinyin|english|chinese|japanese|sentence|phrase|note",
    re.IGNORECASE,
)


# An engine that only translates never refuses, apologises or talks about itself or the text.
_REFUSING = re.compile(
    r"\b(?:I'?m sorry|I am sorry|I apologi[sz]e|I can(?:no|')t (?:assist|help|provide|comply|fulfil)"
    r"|I am unable to|I'?m unable to|as an AI|as a language model|I'?m an AI)\b"
    r"|(?:抱歉|对不起)[，,]?(?:我|但)|我无法(?:协助|帮助|提供|回答)|作为(?:一个)?(?:AI|人工智能|语言模型)",
    re.IGNORECASE,
)
_SOURCE_APOLOGISES = re.compile(r"抱歉|对不起|无法|不能|AI|人工智能|模型|sorry|apolog|unable|cannot|can't"
                                r"|artificial intelligence|language model", re.IGNORECASE)
# "The German text ... translates to ...", "Here is the translation": comments on the text.
_COMMENTING = re.compile(
    r"\b(?:the\s+\w+\s+(?:text|sentence|phrase)\b[^.]{0,80}?\btranslat\w*|here(?:'s| is) the translation"
    r"|sure[,!]\s+here)",
    re.IGNORECASE,
)
_QUESTION_MARK = re.compile(r"[?？¿؟]")
# An assistant taking on a task ("Sure, I can help you ...", "Certainly! Let me ...", "Okay, I'll ..."):
# the text was obeyed, not translated, unless the source itself opens with such an assent.
_ASSENTING = re.compile(
    r"^\W*(?:sure|certainly|of course|absolutely|okay|ok|alright|no problem|happy to help)\b[\s,!.:]*"
    r"(?:I\s+(?:can|could|will|would)|I'?ll|I'?d|I'?m happy|I am happy|let me|here)\b",
    re.IGNORECASE,
)
_SOURCE_ASSENTS = re.compile(r"^\W*(?:当然|好|行|可以|没问题|没有问题|乐意|OK|okay|sure|certainly|of course)",
                             re.IGNORECASE)


def _refusal(source: str, output: str) -> Problem | None:
    if _REFUSING.search(output) and not _SOURCE_APOLOGISES.search(source):
        return Problem("refusal", "the output refuses or apologises instead of translating")
    if _COMMENTING.search(output) and not _SOURCE_TALKS_ABOUT_LANGUAGE.search(source):
        return Problem("explanation", "the output comments on the text instead of translating it")
    return None


def _answer(source: str, output: str) -> Problem | None:
    """A question that came back as a statement was answered, not translated; a request that came
    back as an assistant's "Sure, I can help you ..." was obeyed."""
    if _QUESTION_MARK.search(source) and not _QUESTION_MARK.search(output):
        return Problem("answer", "the source asks a question; the output answers instead of asking it")
    if _ASSENTING.search(output) and not _SOURCE_ASSENTS.search(source):
        return Problem("answer", "the output takes the text as a request to the assistant instead of translating it")
    return None


CONTEXT_ECHO_WORDS = 4  # an output this long that is part of the request's context restates it
CONTEXT_ECHO_SIMILARITY = 90  # rapidfuzz partial_ratio of the output within the context


def _restated_context(output: str, context: str) -> Problem | None:
    """The output is (nearly) a piece of the request's context: the model took the context for the text.

    Seen with the 1.5B on the software set: 已翻译 ("Translated"), sent with the catalog's context
    line, came back as "These are user-interface strings of a software application".
    """
    if not context.strip():
        return None
    spoken = " ".join(re.findall(r"\w+", output.casefold()))
    if len(spoken.split()) < CONTEXT_ECHO_WORDS:
        return None
    from rapidfuzz import fuzz

    if fuzz.partial_ratio(spoken, " ".join(re.findall(r"\w+", context.casefold()))) >= CONTEXT_ECHO_SIMILARITY:
        return Problem("context", "the output restates the request's context instead of translating the text")
    return None


def _lines(text: str) -> int:
    return sum(1 for line in text.splitlines() if line.strip())


def _explanation(source: str, output: str) -> Problem | None:
    if _lines(output) > _lines(source):
        return Problem("explanation", f"{_lines(output)} lines for a {_lines(source)}-line input")
    if _EXPLAINING.search(output) and not _SOURCE_TALKS_ABOUT_LANGUAGE.search(source):
        return Problem("explanation", "the output talks about the translation")
    return None


def _missing_terms(output: str, glossary: Mapping[str, str] | None, target_lang: str) -> Problem | None:
    missing = [term for term, translation in (glossary or {}).items()
               if not term_in_output(translation, output, target_lang)]
    if missing:
        return Problem("glossary", "glossary term(s) not honoured: " + ", ".join(missing[:5]))
    return None


_DIGITS = re.compile(r"\d+(?:[.,]\d+)*")
_LATIN = re.compile(r"[A-Za-z][A-Za-z0-9_.:/@#&=?+~-]*[A-Za-z0-9]|[A-Za-z]{2,}")

def _dropped_content(source: str, output: str, source_lang: str) -> Problem | None:
    """Content of the source that a translation keeps as written, missing from the output: a number
    in digits, or in a text written in Chinese, Japanese or Korean, a word in Latin letters (a name,
    a command, a URL). (A dictionary check of Chinese
    content words was measured too: it flagged 4% of HSK test sentences, nearly all of them good
    paraphrases, so it runs only on the words inside a tag, where a miss also misplaces the tag.)"""
    from mtserve.text import markup  # tags and placeholders have checks of their own

    source = markup.PLACEHOLDER.sub(" ", markup.strip_tags(source))
    missing = []
    spelled = output.casefold()
    for number in _DIGITS.findall(source):
        plain = number.replace(",", "")
        if plain not in output.replace(",", "") and dictionary.SPELLED_NUMBERS.get(plain, "\0") not in spelled:
            missing.append(number)
    for word in _LATIN.findall(source) if source_lang in ("zh", "zt", "ja", "ko") else ():
        if word.casefold() not in spelled:
            missing.append(word)
    if missing:
        return Problem("content", "no counterpart in the translation for: " + ", ".join(dict.fromkeys(missing)))
    return None


def check(source: str, output: str, source_lang: str, target_lang: str, *,
          glossary: Mapping[str, str] | None = None, finish_reason: str = "stop",
          context: str = "") -> Problem | None:
    """The worst problem of a cleaned ``output`` for ``source``, or None if it looks like a translation.

    ``glossary`` holds only the entries whose term occurs in ``source``; ``context`` is the
    request's context (informs the translation, is not translated).
    """
    if not output.strip():
        return Problem("untranslated", "the output is empty") if source.strip() else None
    if source_lang == target_lang or {source_lang, target_lang} in SAME_LANGUAGE_PAIRS:
        return _runaway(source, output, finish_reason) or _repetition(source, output)
    return (
        _runaway(source, output, finish_reason)
        or _repetition(source, output)
        or _refusal(source, output)
        or _restated_context(output, context)
        or _identical(source, output, source_lang, target_lang, glossary)
        or _untranslated(source, output, source_lang, target_lang, glossary)
        or _explanation(source, output)
        or _answer(source, output)
        or _missing_terms(output, glossary, target_lang)
        or _dropped_content(_without(source, glossary), output, source_lang)
    )


def dropped_sentence(sentences: int, output: str, target_lang: str) -> Problem | None:
    """A segment of ``sentences`` whole sentences whose output holds fewer: one was left out.

    This is the classic failure of sending a small model several sentences at once (it
    translates the first and stops, or skips one in the middle); the other checks cannot see it,
    since what is there is a good translation. A translation that joins two short sentences into
    one is flagged too: the service then translates the segment sentence by sentence, which
    costs engine calls but is never worse than sending single sentences in the first place.
    """
    if sentences < 2:
        return None
    found = count_sentences(output, target_lang)
    if found < sentences:
        return Problem("dropped", f"{found} sentence(s) in the output for {sentences} in the source")
    return None


# --- the retry ---------------------------------------------------------------------------------
def substitute_terms(text: str, glossary: Mapping[str, str]) -> str:
    """The source with each glossary term replaced by its required translation, longest first."""
    from mtserve.service.glossary import _pattern

    for term in sorted(glossary, key=len, reverse=True):
        text = _pattern(term).sub(lambda _m, t=glossary[term]: t, text)
    return text


def retry_request(request: EngineRequest, problem: Problem) -> EngineRequest:
    """The one retry: the stricter prompt, greedy; a missed term is put into the source itself, and
    a context the model restated is left out.

    (Showing the model its rejected answer and asking for a repair was tried on the HSK dev
    set: it fixed none of the leftover words the fresh strict prompt fixes.)
    """
    text = request.text
    if problem.kind == "glossary" and request.glossary:
        text = substitute_terms(text, dict(request.glossary))
    guidance = request.guidance
    if problem.kind == "context":
        guidance = replace(guidance, context="")
    return replace(request, text=text, strict=True, temperature=0.0, seed=None, guidance=guidance)


# Outputs that are no translation at all; any other answer beats them.
UNUSABLE = frozenset({"runaway", "repetition", "identical", "refusal"})


def choose(first: str, first_problem: Problem, retry: str, retry_problem: Problem | None) -> tuple[str, bool]:
    """(the output to keep, whether a problem remains).

    A retry that still has a problem replaces the first answer only if the first was
    unusable and the retry is not: measured on HSK, a retry that "fixes" one leftover
    word by explaining it scores worse than the word left in.
    """
    if retry_problem is None:
        return retry, False
    if first_problem.kind in UNUSABLE and retry_problem.kind not in UNUSABLE:
        return retry, True
    return first, True
