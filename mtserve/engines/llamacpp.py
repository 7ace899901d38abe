"""GGUF LLM translators on llama.cpp, in process, through xllamacpp.

xllamacpp's ``Server`` runs llama.cpp's server loop inside this process:
``n_parallel`` slots decode concurrently (continuous batching), and calls to
``handle_chat_completions`` from several threads run at once. Every call here
streams, even when the caller wants only the final text, because the stream
callback is where decoding can be stopped: returning True from it cancels the
request in llama.cpp and frees its slot.

The system prompt is the same for every request of a language pair, so
``cache_prompt`` lets each slot reuse its KV cache for that prefix instead of
recomputing it.
"""

from __future__ import annotations

import enum
import logging
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from mtserve.engines.base import (
    NO_GUIDANCE,
    CancelToken,
    DeltaCallback,
    EngineCancelled,
    EngineError,
    EngineRequest,
    Guidance,
    PromptTooLong,
    TranslationResult,
    default_max_tokens,
    every_pair,
    log_loaded,
)
from mtserve.engines.prompts import (
    IDEOGRAPHIC_RANGES,
    PromptTemplate,
    align_grammar,
    kept_letters,
    kept_letters_grammar,
    markup_grammar,
    script_grammar,
    template_for,
    transfer_grammar,
)
from mtserve.text.scripts import LOWER_LATIN

log = logging.getLogger(__name__)

# Draft-free speculative decoding llama.cpp offers: drafts looked up in the
# tokens already seen (the prompt and the output so far), verified in one batch.
SPECULATIVE_TYPES = {
    "none": "COMMON_SPECULATIVE_TYPE_NONE",
    "ngram-simple": "COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE",
    "ngram-map-k": "COMMON_SPECULATIVE_TYPE_NGRAM_MAP_K",
    "ngram-mod": "COMMON_SPECULATIVE_TYPE_NGRAM_MOD",
}


# When a translation from a CJK language into one written without CJK characters decodes
# under the grammar that excludes them: every request ("always"), or only the guardrails'
# strict retry ("retry"). Measured in docs/decisions/002-script-grammar-on-every-request.md.
SCRIPT_GRAMMAR_MODES = ("always", "retry")
# When a segment with inline tags or placeholders decodes under the grammar that requires them.
MARKUP_GRAMMAR_MODES = ("always", "retry", "off")


def apply_param_overrides(params: Any, overrides: dict[str, Any]) -> None:
    """Set llama.cpp params by dotted path (``speculative.draft.n_min=1``, ``flash_attn_type=0``);
    an int given for an enum field becomes that enum's member. An unknown name or a value the
    param cannot take is an EngineError that names it."""
    for dotted, value in overrides.items():
        *path, attr = dotted.split(".")
        try:
            target = params
            for part in path:
                target = getattr(target, part)
            current = getattr(target, attr)
        except AttributeError:
            raise EngineError(f"llama_params: llama.cpp has no param {dotted!r}") from None
        if callable(current) or not isinstance(current, (int, float, enum.Enum)):
            raise EngineError(f"llama_params: {dotted} is not a number or an enum, so it cannot be set here")
        try:
            if isinstance(current, enum.Enum) and not isinstance(value, enum.Enum):
                value = type(current)(value)
            elif isinstance(current, bool):
                value = bool(value)
            setattr(target, attr, value)
        except (TypeError, ValueError, OverflowError) as exc:
            raise EngineError(f"llama_params: {dotted}={value} is refused by llama.cpp ({exc})") from None


def gpu_present() -> bool:
    """Whether this build of llama.cpp sees a GPU to offload to (the PyPI wheel is CPU-only)."""
    import xllamacpp  # heavy native import; only asked when layers are to be offloaded

    return any("GPU" in device["type"].name for device in xllamacpp.get_device_info())


def _warm_up_request(source: str, target: str, strict: bool = False,
                     guidance: Guidance = NO_GUIDANCE) -> EngineRequest:
    """A one-token request whose prompt is the pair's fixed one: the text is a greeting."""
    return EngineRequest("你好。" if source in ("zh", "zt") else "Hello.", source, target, strict=strict,
                              max_tokens=1, guidance=guidance)


class LlamaCppEngine:
    name = "llamacpp"
    prompted = True  # translates through a prompt template: the guardrails' strict retry applies

    def __init__(
        self,
        model_path: Path,
        *,
        model_name: str,
        family: str,
        languages: tuple[str, ...],
        threads: int,
        n_parallel: int,
        ctx_per_slot: int,
        max_output_tokens: int,
        batch_threads: int | None = None,
        speculative: str = "none",
        draft_max: int = 8,
        ngram_size: int = 3,
        param_overrides: dict[str, Any] | None = None,
        cache_prompt: bool = True,
        prompt_cache_ram_mib: int = 128,
        queue_ahead: int = 2,
        gpu_layers: int = 0,  # layers offloaded to the GPU; needs a CUDA build of xllamacpp
        script_grammar: str = "always",
        markup_grammar: str = "retry",
    ):
        self.model_path = Path(model_path)
        self.model_name = model_name
        self.languages = languages
        self.slots = max(1, n_parallel)
        self.on_gpu = gpu_layers != 0 and gpu_present()
        # Calls the scheduler may keep in flight: the slots, plus ``queue_ahead`` more that wait
        # inside llama.cpp. A slot freed at the end of a decode step then takes a waiting
        # segment into the very next step; handed over from Python, the segment arrives a few
        # milliseconds late and waits a whole step (~160 ms with 4 busy slots on 2 cores).
        # Measured: +5.5 % req/s at 8 clients (docs/decisions/011-queue-ahead.md).
        self.max_concurrency = self.slots + max(0, queue_ahead)
        self.template: PromptTemplate = template_for(family)
        self._threads = threads
        self._ctx_per_slot = ctx_per_slot
        self._max_output_tokens = max_output_tokens
        self._batch_threads = batch_threads or threads
        if speculative not in SPECULATIVE_TYPES:
            raise EngineError(f"unknown speculative mode {speculative!r}; use one of {', '.join(SPECULATIVE_TYPES)}")
        self._speculative = speculative
        self._draft_max = draft_max
        self._ngram_size = ngram_size
        self._overrides = dict(param_overrides or {})
        self._cache_prompt = cache_prompt  # off only to measure what the shared-prefix cache saves
        self._prompt_cache_ram_mib = prompt_cache_ram_mib
        self._gpu_layers = gpu_layers
        if script_grammar not in SCRIPT_GRAMMAR_MODES:
            raise EngineError(f"unknown script_grammar {script_grammar!r}; "
                              f"use one of {', '.join(SCRIPT_GRAMMAR_MODES)}")
        self._script_grammar = script_grammar
        if markup_grammar not in MARKUP_GRAMMAR_MODES:
            raise EngineError(f"unknown markup_grammar {markup_grammar!r}; "
                              f"use one of {', '.join(MARKUP_GRAMMAR_MODES)}")
        self._markup_grammar = markup_grammar
        self._server: Any = None
        self._lock = threading.Lock()
        self._local = threading.local()  # per calling thread: llama.cpp's timings of its last request
        self._strict_turn = threading.Lock()  # one strict retry in llama.cpp at a time (_one_strict_at_a_time)

    # --- lifecycle ------------------------------------------------------------
    def supports(self, source: str, target: str) -> bool:
        return every_pair(self.languages, source, target)

    def load(self) -> None:
        import xllamacpp  # heavy native import; only when an engine is really used

        if not self.model_path.is_file():
            raise EngineError(f"model file {self.model_path} does not exist")
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_parallel = self.slots
        params.n_ctx = self._ctx_per_slot * self.slots
        # 0: CPU only; 999: every layer; -1: llama.cpp's own default. A CPU-only build of
        # xllamacpp (the PyPI wheel) ignores it.
        params.n_gpu_layers = self._gpu_layers
        params.cpuparams.n_threads = self._threads
        params.cpuparams_batch.n_threads = self._batch_threads
        params.cache_prompt = self._cache_prompt
        # llama.cpp also keeps evicted slot states in host RAM, up to 8 GiB by default: the
        # soak saw RSS climb in 30-50 MB steps. Short sentences need little of it (each slot
        # keeps the shared prefix in its own KV cache); what it must hold is a prompt no slot
        # keeps: the warmed strict retry's, and a segment with placeholders or tags, whose
        # prompt differs from the plain one after the system prompt. A slot that switches kind
        # restores the other kind's state from here instead of computing ~450 tokens (or
        # ~200 back), so it is kept small, but not so small that those states are evicted:
        # 64 MiB held too few of the 1.5B's (~7-14 MiB each) for a catalog's strings
        # (docs/decisions/014-prompt-cache-ram.md).
        params.cache_ram_mib = self._prompt_cache_ram_mib
        # By default llama.cpp also copies every idle slot into that cache whenever a task starts.
        # Without a unified KV cache the slot keeps its state anyway, so the copies only push the
        # entries that matter out of the cache, first in first out: under steady traffic the warmed
        # strict prompt was evicted within a minute, and each later retry recomputed its ~630
        # tokens in the batch every slot decodes in, stopping them all for ~5 s
        # (docs/decisions/004-strict-retry-warm-and-cached.md). Off, a state enters the cache only when
        # its slot is taken for another prompt.
        params.cache_idle_slots = False
        params.warmup = True
        if self._speculative != "none":
            spec = params.speculative
            spec.types = [getattr(xllamacpp.common_speculative_type, SPECULATIVE_TYPES[self._speculative])]
            spec.draft.n_max = self._draft_max
            for table in (spec.ngram_simple, spec.ngram_map_k, spec.ngram_map_k4v):
                table.size_n = self._ngram_size
                table.size_m = self._draft_max
        apply_param_overrides(params, self._overrides)
        if not log.isEnabledFor(logging.DEBUG):
            params.verbosity = -1  # llama.cpp logs every slot's timings otherwise
        started = time.perf_counter()
        with self._lock:
            self._server = xllamacpp.Server(params)
        log_loaded(self, started, slots=self.slots)

    def close(self) -> None:
        with self._lock:
            self._server = None  # the C++ server shuts down when its last reference goes

    # --- work -------------------------------------------------------------------
    def last_timings(self) -> dict[str, Any] | None:
        """llama.cpp's timings of the last request this thread made: prefill (``prompt_n``,
        ``prompt_ms``, ``cache_n``) against decode (``predicted_n``, ``predicted_ms``)."""
        return getattr(self._local, "timings", None)

    def warm_strict(self, pairs: list[tuple[str, str]]) -> None:
        """Compute the strict retry's prompt of each pair in one slot (one token generated), so
        llama.cpp's prompt cache keeps it for later retries (Runtime._warm_strict)."""
        for source, target in pairs:
            self._generate(_warm_up_request(source, target, strict=True), None, None)

    def warm_slots(self, source: str, target: str, guidance: Guidance = NO_GUIDANCE) -> None:
        """Compute the pair's fixed prompt, with ``guidance``, in every slot at once, each request pinned
        to its slot (llama.cpp's ``id_slot``). Sent unpinned, llama.cpp gave some of them to a slot that
        had just computed the prompt, and a slot of four stayed empty for its first real request."""
        server = self._server
        if server is None:
            raise EngineError("engine is not loaded")
        body = self.build_request(_warm_up_request(source, target, guidance=guidance))
        with ThreadPoolExecutor(self.slots) as pool:
            list(pool.map(lambda slot: server.handle_chat_completions({**body, "id_slot": slot}, lambda _: False),
                          range(self.slots)))

    def build_request(self, request: EngineRequest) -> dict[str, Any]:
        if request.transfer is not None and request.align:
            return self._align_request(request)
        if request.transfer is not None:
            return self._transfer_request(request)
        max_tokens = request.max_tokens or default_max_tokens(request.text, self._max_output_tokens)
        body: dict[str, Any] = {
            "messages": self.template.messages(request.text, request.source, request.target,
                                               glossary=request.glossary, strict=request.strict,
                                               markup=request.markup, retrieved=request.examples,
                                               guidance=request.guidance),
            "temperature": request.temperature,
            "max_tokens": min(max_tokens, self._max_output_tokens),
            "cache_prompt": self._cache_prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.temperature <= 0:
            body["top_k"] = 1
        if request.seed is not None:
            body["seed"] = request.seed
        constrained = request.strict or self._script_grammar == "always"
        script = script_grammar(request.source, request.target, request.glossary) if constrained else None
        kept = None if script or not request.strict else kept_letters(request.source, request.target,
                                                                      request.text, request.glossary)
        if script:
            body["grammar"] = script  # no source-script words can be left in
        elif kept is not None:
            body["grammar"] = kept_letters_grammar(kept)
        tags_required = request.markup and (
            self._markup_grammar == "always" or (self._markup_grammar == "retry" and request.strict))
        excluded = IDEOGRAPHIC_RANGES if script else LOWER_LATIN if kept is not None else ""
        if tags_required and (grammar := markup_grammar(request.text, excluded, kept or ())):
            body["grammar"] = grammar  # every tag and placeholder, once, nested (and the script rules)
        return body

    def _transfer_request(self, request: EngineRequest) -> dict[str, Any]:
        """The tags of ``request.text`` put into its translation ``request.transfer``, under a grammar
        that allows nothing but that translation and the tags."""
        assert request.transfer is not None
        body: dict[str, Any] = {
            "messages": self.template.transfer_messages(request.text, request.transfer, request.source,
                                                        request.target),
            "temperature": 0.0,
            "top_k": 1,
            "max_tokens": min(self._max_output_tokens,
                              default_max_tokens(request.transfer + request.text, self._max_output_tokens)),
            "cache_prompt": self._cache_prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        grammar = transfer_grammar(request.text, request.transfer, request.anchors)
        if grammar:
            body["grammar"] = grammar
        return body

    def _align_request(self, request: EngineRequest) -> dict[str, Any]:
        """Which words of the translation ``request.transfer`` translate the words marked in
        ``request.text``: under a grammar that allows only runs of its words, or NO_COUNTERPART."""
        assert request.transfer is not None
        body: dict[str, Any] = {
            "messages": self.template.align_messages(request.text, request.transfer, request.source,
                                                     request.target),
            "temperature": 0.0,
            "top_k": 1,
            "max_tokens": min(self._max_output_tokens, default_max_tokens(request.transfer, self._max_output_tokens)),
            "cache_prompt": self._cache_prompt,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        grammar = align_grammar(request.transfer)
        if grammar:
            body["grammar"] = grammar
        return body

    def translate(
        self,
        request: EngineRequest,
        cancel: CancelToken | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> TranslationResult:
        """Translate one segment. A prompt over the slot's context is refused by llama.cpp before any
        decoding (so a refusal costs only its tokenisation): the request's guidance is then cut
        (``Guidance.shorter``) until it fits, and PromptTooLong is raised when even none does not."""
        attempt = request
        while True:
            try:
                if attempt.strict:
                    with self._one_strict_at_a_time(cancel):
                        return self._generate(attempt, cancel, on_delta)
                return self._generate(attempt, cancel, on_delta)
            except PromptTooLong:
                if not attempt.guidance:
                    raise
                attempt = replace(attempt, guidance=attempt.guidance.shorter())
                log.info("guidance cut to fit the context", extra={
                    "event": "guidance_trimmed", "context_chars": len(attempt.guidance.context),
                    "instructions": len(attempt.guidance.instructions)})

    @contextmanager
    def _one_strict_at_a_time(self, cancel: CancelToken | None) -> Iterator[None]:
        """llama.cpp's prompt cache hands a stored state to the one slot that loads it, so while one
        strict retry runs, a second finds no strict prompt to load and computes all ~630 tokens in
        the batch every slot decodes in: ~5 s in which no slot writes a token (0.5B, 2 cores).
        Waiting for the first, a second retry costs only itself about a second."""
        while not self._strict_turn.acquire(timeout=0.05):
            if cancel and cancel.cancelled:
                raise EngineCancelled("cancelled while waiting for the strict retry before it")
        try:
            yield
        finally:
            self._strict_turn.release()

    def _generate(self, request: EngineRequest, cancel: CancelToken | None,
                  on_delta: DeltaCallback | None) -> TranslationResult:
        server = self._server
        if server is None:
            raise EngineError("engine is not loaded")
        parts: list[str] = []
        state: dict[str, Any] = {"finish": "stop", "usage": {}, "error": None}

        def on_chunk(chunk: dict[str, Any]) -> bool:
            if "choices" not in chunk:  # llama.cpp reports errors as a bare object
                state["error"] = chunk.get("message") or chunk.get("error") or str(chunk)
                return True
            for choice in chunk["choices"]:
                delta = (choice.get("delta") or {}).get("content")
                if delta:
                    parts.append(delta)
                    if on_delta is not None:
                        on_delta(delta)
                if choice.get("finish_reason"):
                    state["finish"] = choice["finish_reason"]
            if chunk.get("usage"):
                state["usage"] = chunk["usage"]
            if chunk.get("timings"):
                state["timings"] = chunk["timings"]
            return bool(cancel and cancel.cancelled)

        started = time.perf_counter()
        try:
            server.handle_chat_completions(self.build_request(request), on_chunk)
        except ValueError as exc:
            raise EngineError(f"llama.cpp rejected the request: {exc}") from exc
        engine_ms = (time.perf_counter() - started) * 1000
        self._local.timings = state.get("timings")
        if cancel and cancel.cancelled:
            raise EngineCancelled("cancelled while decoding")
        if state["error"]:
            error = state["error"]
            if isinstance(error, dict) and error.get("type") == "exceed_context_size_error":
                raise PromptTooLong(
                    f"the segment's prompt is {error.get('n_prompt_tokens')} tokens, over the "
                    f"{error.get('n_ctx')} tokens of a slot's context (MTSERVE_CTX_PER_SLOT): send shorter text")
            raise EngineError(f"llama.cpp error: {error}")
        usage = state["usage"]
        return TranslationResult(
            text="".join(parts),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            generated_tokens=int(usage.get("completion_tokens", len(parts))),
            finish_reason=state["finish"],
            engine_ms=engine_ms,
        )
