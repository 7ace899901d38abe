"""The interface every engine implements, and the types at its boundary.

An engine translates one segment (a sentence or a short paragraph) at a time
and knows nothing of HTTP, queues or caches. Calls are blocking and made from
worker threads; an engine that decodes several sequences at once (llama.cpp's
slots, vLLM) says how many through ``max_concurrency`` and the scheduler keeps
that many calls in flight.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field, replace
from typing import Callable, Protocol, runtime_checkable

FORMALITIES = ("default", "more", "less")
CONTEXT_KEPT_AT_LEAST = 40  # a context is halved down to about this many characters, then dropped


@dataclass(frozen=True)
class Guidance:
    """What a request says about the translation besides its text, as DeepL's fields do: ``context``
    (text that informs the translation and is neither translated nor billed), ``instructions``
    (DeepL's ``custom_instructions``) and ``formality``. A prompted engine puts them in the prompt
    after its fixed, cached prefix; the other engines translate without them."""

    context: str = ""
    instructions: tuple[str, ...] = ()
    # one of FORMALITIES; a request may also say prefer_more or prefer_less ("where the target marks
    # it"), which the service settles before an engine sees it
    formality: str = "default"

    def __bool__(self) -> bool:
        return bool(self.context.strip() or self.instructions or self.formality != "default")

    def shorter(self) -> "Guidance":
        """Less of it, for a prompt that does not fit the model's context: the context's second half
        (the part nearest the text, when it is the text that came before), then no context, then no
        instructions, then no formality."""
        if len(self.context) > CONTEXT_KEPT_AT_LEAST:
            return replace(self, context=self.context[len(self.context) // 2:].lstrip())
        if self.context:
            return replace(self, context="")
        if self.instructions:
            return replace(self, instructions=())
        return replace(self, formality="default")

    def key(self) -> str:
        """What the cache keys a translation made with this guidance on ("" for none)."""
        if not self:
            return ""
        return json.dumps([self.context, list(self.instructions), self.formality], ensure_ascii=False)


NO_GUIDANCE = Guidance()


@dataclass(frozen=True)
class EngineRequest:
    """One segment as an engine sees it: already planned, looked up and prompted-for by the service."""

    text: str
    source: str  # a language code; never "auto" at this layer
    target: str
    max_tokens: int | None = None  # None: the engine bounds it by the input length
    temperature: float = 0.0  # 0 = greedy, deterministic
    seed: int | None = None
    # (term, translation) pairs that occur in ``text`` and must be honoured; the
    # prompt template injects them in the family's own terminology format
    glossary: tuple[tuple[str, str], ...] = ()
    strict: bool = False  # the guardrails' retry: a stricter prompt (and decoding constraints)
    # ``text`` holds numbered inline tags or placeholders (mtserve.text.markup) that must come
    # back: the prompt teaches the convention, and a strict retry may require them by grammar
    markup: bool = False
    # (source, translation) pairs from the translation memory most like ``text``: shown to an LLM as
    # examples after the fixed prefix (system prompt, fixed examples), which stays cached
    examples: tuple[tuple[str, str], ...] = ()
    # The tag-free translation of ``text``, to put ``text``'s tags into (markup_mode "transfer"):
    # the engine then returns this translation with the tags inserted, nothing else changed.
    transfer: str | None = None
    # (tag id, start, end) in ``transfer``: where a tag's content was found by translating it on its
    # own; such a tag must go exactly there
    anchors: tuple[tuple[int, int, int], ...] = ()
    # An alignment question instead of a translation: ``text`` is the sentence with the words asked
    # about marked [[like this]], ``transfer`` its translation, and the answer is the words of
    # ``transfer`` that translate the marked ones (or NO_COUNTERPART), where a tag goes
    align: bool = False
    # the request's context, instructions and formality (prompted engines only): after the fixed
    # prefix, in the last user turn, fenced as data
    guidance: Guidance = NO_GUIDANCE


@dataclass(frozen=True)
class TranslationResult:
    text: str  # raw engine output; the service cleans it
    prompt_tokens: int = 0
    generated_tokens: int = 0
    finish_reason: str = "stop"  # "stop" | "length"
    engine_ms: float = 0.0


class EngineError(RuntimeError):
    """The engine failed on one request; others are unaffected."""


class PromptTooLong(EngineError):
    """The prompt does not fit the model's context window; a shorter segment (or context) would."""


class EngineDead(EngineError):
    """The engine cannot serve anything any more; the runtime restarts it."""


class EngineCancelled(RuntimeError):
    """The request was cancelled (deadline or client gone) while decoding."""


@dataclass
class CancelToken:
    """Set by the service when the caller no longer wants the result.

    Engines check it between tokens and stop decoding, so abandoned work frees
    its slot instead of running to the end.
    """

    _event: threading.Event = field(default_factory=threading.Event)

    def cancel(self) -> None:
        self._event.set()

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()


DeltaCallback = Callable[[str], None]


@runtime_checkable
class Engine(Protocol):
    """What every engine declares and does. Capabilities are declared, never probed."""

    name: str  # "llamacpp", "onnx", ...
    model_name: str
    languages: tuple[str, ...]
    max_concurrency: int
    # Sequences it decodes side by side (llama.cpp's slots): max_concurrency may add calls that
    # wait in its own queue, which a paragraph does not hold
    slots: int
    # Decodes on a GPU, where sequences side by side cost about one decode step; on a CPU each
    # costs nearly its own, so running more at once buys a request no speed
    on_gpu: bool
    # Translates by prompting an LLM: a stricter prompt can be retried (the guardrails), and
    # prompts can carry glossary terms and examples.
    prompted: bool

    def supports(self, source: str, target: str) -> bool:
        """Whether the model translates ``source`` -> ``target`` (a Marian model has one direction)."""

    def load(self) -> None:
        """Load weights; slow, called once before the service reports ready."""

    def translate(
        self,
        request: EngineRequest,
        cancel: CancelToken | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> TranslationResult:
        """Translate one segment, calling ``on_delta`` with text as it is generated."""

    def close(self) -> None:
        """Free the model."""


@runtime_checkable
class BatchingEngine(Engine, Protocol):
    """An engine that decodes many segments in one call (the seq2seq engines).

    The scheduler sees this and hands it batches formed by the dynamic
    batcher instead of single segments; ``max_concurrency`` then counts
    batches in flight. Results come back in request order; a cancelled
    request comes back with ``finish_reason="cancelled"``.
    """

    max_batch_size: int  # examples, or source tokens when batch_type == "tokens"
    batch_type: str  # "examples" | "tokens"

    def batch_cost(self, request: EngineRequest) -> int:
        """What one request counts against ``max_batch_size`` (its source tokens in tokens mode)."""

    def translate_batch(
        self,
        requests: list[EngineRequest],
        cancels: list[CancelToken | None] | None = None,
    ) -> list[TranslationResult]:
        """Translate the requests together; one result per request, in order."""


@runtime_checkable
class StrictWarmingEngine(Engine, Protocol):
    """An engine whose strict retry has a prompt of its own, worth computing before ready (llama.cpp:
    its prompt cache then brings it back for every later retry)."""

    def warm_strict(self, pairs: list[tuple[str, str]]) -> None:
        """Compute the strict retry's prompt of each (source, target) pair once."""


@dataclass(frozen=True)
class ModelInfo:
    """What the loaded model serves, fixed when the engine is built.

    It stays valid while the engine loads or restarts, so the API answers
    /languages, /health and the like from it without touching the engine.
    """

    engine: str
    model: str
    languages: tuple[str, ...]
    pairs: frozenset[tuple[str, str]]  # the directions it translates
    prompted: bool

    @classmethod
    def of(cls, engine: Engine) -> "ModelInfo":
        codes = tuple(engine.languages)
        pairs = frozenset((s, t) for s in codes for t in codes if s != t and engine.supports(s, t))
        return cls(engine.name, engine.model_name, codes, pairs, bool(engine.prompted))

    def supports(self, source: str, target: str) -> bool:
        return (source, target) in self.pairs

    def targets(self, source: str) -> list[str]:
        return [t for t in self.languages if (source, t) in self.pairs]


def every_pair(languages: tuple[str, ...], source: str, target: str) -> bool:
    """``supports`` for a model that translates between any two of its languages (the LLMs)."""
    return source != target and source in languages and target in languages


def log_loaded(engine: Engine, started: float, **details: object) -> None:
    """The one ``engine_loaded`` log line, with how long ``load`` took since ``started``."""
    logging.getLogger(type(engine).__module__).info("engine loaded", extra={
        "event": "engine_loaded", "engine": engine.name, "model": engine.model_name, **details,
        "load_s": round(time.perf_counter() - started, 2),
    })


def in_flight_capacity(engine: Engine) -> int:
    """How many segments the engine can take at once: slots, or slots times batch size."""
    slots = max(1, engine.max_concurrency)
    if isinstance(engine, BatchingEngine) and engine.batch_type == "examples":
        return slots * max(1, engine.max_batch_size)
    return slots


def default_max_tokens(text: str, cap: int) -> int:
    """Bound generation by input length so a runaway decode stops.

    CJK text is about one token per character and other scripts about one per
    three or four characters; a translation rarely needs more than twice the
    source's tokens, so three times plus a small floor is generous but finite.
    """
    cjk = sum(1 for ch in text if _is_wide(ch))
    approx_tokens = cjk + (len(text) - cjk) / 3
    return max(16, min(cap, int(24 + 3 * approx_tokens)))


def _is_wide(ch: str) -> bool:
    code = ord(ch)
    return (
        0x3040 <= code <= 0x30FF  # kana
        or 0x3400 <= code <= 0x9FFF  # CJK ideographs
        or 0xAC00 <= code <= 0xD7AF  # hangul
        or 0xF900 <= code <= 0xFAFF
        or 0x20000 <= code <= 0x2FA1F
    )
