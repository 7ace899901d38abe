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

import logging
import threading
import time
from pathlib import Path
from typing import Any

from mtserve.engines.base import (
    CancelToken,
    DeltaCallback,
    EngineCancelled,
    EngineError,
    TranslationRequest,
    TranslationResult,
    default_max_tokens,
)
from mtserve.engines.prompts import PromptTemplate, template_for

log = logging.getLogger(__name__)


class LlamaCppEngine:
    name = "llamacpp"

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
    ):
        self.model_path = Path(model_path)
        self.model_name = model_name
        self.languages = languages
        self.max_concurrency = max(1, n_parallel)
        self.template: PromptTemplate = template_for(family)
        self._threads = threads
        self._ctx_per_slot = ctx_per_slot
        self._max_output_tokens = max_output_tokens
        self._server: Any = None
        self._lock = threading.Lock()

    # --- lifecycle ------------------------------------------------------------
    def load(self) -> None:
        import xllamacpp  # heavy native import; only when an engine is really used

        if not self.model_path.is_file():
            raise EngineError(f"model file {self.model_path} does not exist")
        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.n_parallel = self.max_concurrency
        params.n_ctx = self._ctx_per_slot * self.max_concurrency
        params.cpuparams.n_threads = self._threads
        params.cpuparams_batch.n_threads = self._threads
        params.cache_prompt = True
        params.warmup = True
        if not log.isEnabledFor(logging.DEBUG):
            params.verbosity = -1  # llama.cpp logs every slot's timings otherwise
        started = time.perf_counter()
        with self._lock:
            self._server = xllamacpp.Server(params)
        log.info(
            "engine loaded",
            extra={
                "event": "engine_loaded",
                "model": self.model_name,
                "slots": self.max_concurrency,
                "load_s": round(time.perf_counter() - started, 2),
            },
        )

    def close(self) -> None:
        with self._lock:
            self._server = None  # the C++ server shuts down when its last reference goes

    # --- work -------------------------------------------------------------------
    def build_request(self, request: TranslationRequest) -> dict[str, Any]:
        max_tokens = request.max_tokens or default_max_tokens(request.text, self._max_output_tokens)
        body: dict[str, Any] = {
            "messages": self.template.messages(request.text, request.source, request.target),
            "temperature": request.temperature,
            "max_tokens": min(max_tokens, self._max_output_tokens),
            "cache_prompt": True,
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.temperature <= 0:
            body["top_k"] = 1
        if request.seed is not None:
            body["seed"] = request.seed
        return body

    def translate(
        self,
        request: TranslationRequest,
        cancel: CancelToken | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> TranslationResult:
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
            return bool(cancel and cancel.cancelled)

        started = time.perf_counter()
        try:
            server.handle_chat_completions(self.build_request(request), on_chunk)
        except ValueError as exc:
            raise EngineError(f"llama.cpp rejected the request: {exc}") from exc
        engine_ms = (time.perf_counter() - started) * 1000
        if cancel and cancel.cancelled:
            raise EngineCancelled("cancelled while decoding")
        if state["error"]:
            raise EngineError(f"llama.cpp error: {state['error']}")
        usage = state["usage"]
        return TranslationResult(
            text="".join(parts),
            prompt_tokens=int(usage.get("prompt_tokens", 0)),
            generated_tokens=int(usage.get("completion_tokens", len(parts))),
            finish_reason=state["finish"],
            engine_ms=engine_ms,
        )
