"""Decoder-only MT LLMs on a CUDA GPU with vLLM, in process.

For Hunyuan-MT-7B, Hunyuan-MT-Chimera-7B, HY-MT1.5-1.8B/7B and Qwen, as Hugging Face
format directories (``mtserve convert MODEL.gguf --to hf --out DIR`` makes one from a
GGUF file).

**Batching.** vLLM's async engine (``AsyncLLM``, built with ``from_engine_args``)
batches continuously: every segment in flight is one sequence of its running batch, up
to ``max_num_seqs``. ``max_concurrency`` is ``max_num_seqs``, so mtserve's scheduler keeps
that many segments in the engine, and vLLM's own scheduler decides what runs each step.
Automatic prefix caching reuses the KV blocks of the prompt prefix every request of a
language pair shares (system prompt, few-shot turns), as ``cache_prompt`` does for
llama.cpp.

**Threads.** The Engine interface is blocking and called from the scheduler's worker
threads; vLLM's engine is asyncio. The engine owns one event loop in one background
thread: vLLM's engine is created on it and every call into vLLM runs there.
``translate()`` submits the ``generate`` coroutine with ``run_coroutine_threadsafe`` and
reads its outputs (``RequestOutputKind.DELTA``: only the new text of each step) back
through a queue, so ``on_delta`` runs on the caller's thread, as with llama.cpp, and a
slow callback never holds up vLLM's loop. Between outputs it looks at the cancel token
every ``POLL_S``: a cancelled segment is aborted in vLLM (``abort(request_id)``) even
while it still waits for a place in the batch, and its KV blocks are freed.

**Prompts.** The same templates as llama.cpp (``template_for(family)`` in
``prompts.py``: few-shot turns, glossary terms in the family's own form, the strict
retry). The chat messages are rendered here with the model's own chat template
(``tokenizer.apply_chat_template``) and sent to vLLM as token ids, rather than passed as
messages to vLLM's chat API, because: ``AsyncLLM.generate`` takes prompts, not messages
(chat rendering lives in vLLM's ``LLM.chat`` and OpenAI-server layers, whose interfaces
have changed from release to release); ``apply_chat_template`` is the very Jinja
template vLLM would apply, and it can be tested without vLLM or a GPU; and with the
tokens in hand the prompt's length is known before submitting, so a segment too long for
``max_model_len`` is a clear error and ``max_tokens`` always fits. A directory converted
from a GGUF file keeps the GGUF's chat template, so both engines see the same markup.

**Sampling** is ``sampling_params_for``: a pure function returning a plain dict (kept
testable without vLLM), from which ``vllm.SamplingParams`` is built. Greedy is the
default; ``sampling="model"`` applies the registry's recommended sampling for the model
(Hunyuan-MT: top_k 20, top_p 0.6, repetition_penalty 1.05, temperature 0.7). Greedy
decoding is deterministic for a given batch, but vLLM does not promise bitwise equal
results across batch compositions.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import itertools
import json
import logging
import queue
import re
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mtserve.engines.base import (
    CancelToken,
    DeltaCallback,
    EngineCancelled,
    EngineDead,
    EngineError,
    EngineRequest,
    TranslationResult,
    default_max_tokens,
    every_pair,
    log_loaded,
)
from mtserve.engines.prompts import (
    Messages,
    PromptTemplate,
    kept_letters,
    script_grammar,
    template_for,
)
from mtserve.models.registry import (
    SAMPLING_KEYS,  # what a [model.sampling] table may set
)

log = logging.getLogger(__name__)

DEVICES = ("auto", "cpu", "cuda")
QUANTIZATIONS = ("", "fp8", "awq", "gptq")
SAMPLING_MODES = ("greedy", "model")
CPU_ENGINES = ("llamacpp", "transformers", "onnx", "ctranslate2")
GPU_INSTALL = "pip install 'mtserve[gpu]'"
MANIFEST = "mtserve.json"  # written by `mtserve convert --to hf`: family and registry name

# Greedy, with every other knob set to neutral explicitly, so that nothing falls back to
# vLLM's defaults or to a generation_config.json in the model directory.
GREEDY: dict[str, Any] = {"temperature": 0.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0,
                          "repetition_penalty": 1.0}
# A sampled request (alternatives) in greedy mode: llama.cpp's own defaults, so the
# alternatives of both LLM engines come from the same truncated distribution.
ALTERNATIVE_SAMPLING: dict[str, Any] = {"top_k": 40, "top_p": 0.95, "min_p": 0.05, "repetition_penalty": 1.0}

POLL_S = 0.05  # how often a waiting translate() looks at its cancel token
ABORT_WAIT_S = 5.0  # how long a cancelled translate() waits for vLLM to take the abort
CLOSE_WAIT_S = 60.0  # how long close() waits for vLLM to shut its engine process down


class VllmConfigError(ValueError):
    """The vllm engine cannot run with these settings here; the message says what to do.

    The factory re-raises it as ``EngineConfigError``, so ``mtserve serve`` prints it and exits 2.
    """


# --- sampling ------------------------------------------------------------------------------
def sampling_params_for(
    request: EngineRequest,
    *,
    max_tokens: int,
    mode: str = "greedy",
    model_sampling: Mapping[str, float] | None = None,
) -> dict[str, Any]:
    """The ``vllm.SamplingParams`` keyword arguments for one request, as a plain dict.

    - ``mode="greedy"`` (the default): temperature 0, every other knob neutral.
    - ``mode="model"``: the model's recommended sampling from the registry
      (``model_sampling``), greedy when the model has none.
    - A request that samples itself (``temperature > 0``: the alternatives) keeps its
      temperature and seed in either mode; in greedy mode it gets llama.cpp's default
      truncation (``ALTERNATIVE_SAMPLING``).
    - The guardrails' strict retry is always greedy, and into a language not written in
      CJK from one that is, it is constrained by a regex that keeps CJK characters out
      (``structured_outputs``), as the GBNF grammar does for llama.cpp.
    """
    if mode not in SAMPLING_MODES:
        raise ValueError(f"sampling must be one of {', '.join(SAMPLING_MODES)}, got {mode!r}")
    params: dict[str, Any] = dict(GREEDY)
    if request.strict:
        pass  # the retry is greedy: a stricter prompt, not another draw
    elif mode == "model" and model_sampling:
        params.update({k: v for k, v in model_sampling.items() if k in SAMPLING_KEYS})
        if request.temperature > 0:
            params["temperature"] = float(request.temperature)
    elif request.temperature > 0:
        params.update(ALTERNATIVE_SAMPLING)
        params["temperature"] = float(request.temperature)
    params["max_tokens"] = max(1, int(max_tokens))
    params["seed"] = request.seed if params["temperature"] > 0 else None
    if request.strict and (regex := strict_regex(request.source, request.target, request.glossary, request.text)):
        params["structured_outputs"] = {"regex": regex}
    return params


def strict_regex(source: str, target: str, glossary: tuple[tuple[str, str], ...] = (), text: str = "") -> str | None:
    """The strict retry's constraint as a regex, or None where it does not apply.

    The same character class as llama.cpp's GBNF grammar (``prompts.script_grammar``),
    with its ``\\uXXXX`` escapes turned into the characters themselves, which every
    structured-output backend's regex dialect reads the same way.
    """
    grammar = script_grammar(source, target, glossary)
    if grammar is None:
        return kept_letters_regex(source, target, text, glossary)
    char_class = grammar.split("::=", 1)[1].strip()  # [^\u3040-...]*
    return char_class.encode("ascii").decode("unicode_escape")


def kept_letters_regex(source: str, target: str, text: str, glossary: tuple[tuple[str, str], ...] = ()) -> str | None:
    """``prompts.kept_letters_grammar`` as a regex."""
    from mtserve.text.scripts import LOWER_LATIN

    kept = kept_letters(source, target, text, glossary)
    if kept is None:
        return None
    return "(?:" + "|".join([f"[^{LOWER_LATIN}]"] + [re.escape(piece) for piece in kept]) + ")*"


def to_vllm_sampling_params(params: Mapping[str, Any]) -> Any:
    """``vllm.SamplingParams`` from ``sampling_params_for``'s dict, streaming deltas."""
    from vllm import SamplingParams
    from vllm.sampling_params import RequestOutputKind

    kwargs = dict(params)
    structured = kwargs.pop("structured_outputs", None)
    if structured:
        try:  # vLLM >= 0.10.2
            from vllm.sampling_params import StructuredOutputsParams

            kwargs["structured_outputs"] = StructuredOutputsParams(**structured)
        except ImportError:  # older releases: guided decoding
            from vllm.sampling_params import GuidedDecodingParams

            kwargs["guided_decoding"] = GuidedDecodingParams(**structured)
    return SamplingParams(output_kind=RequestOutputKind.DELTA, skip_special_tokens=True, **kwargs)


# --- where it can run ----------------------------------------------------------------------
def cuda_available() -> bool:
    """A CUDA GPU is present: torch says so, or, where torch is missing or a CPU build,
    ``nvidia-smi -L`` lists one.

    ``torch.cuda.device_count()`` rather than ``is_available()``: it asks NVML and leaves
    CUDA uninitialized in this process, whereas ``is_available()`` calls ``cuInit``, after
    which vLLM's engine-core process, forked from this one, could not use the GPU.
    """
    try:
        import torch
    except Exception:  # noqa: BLE001 - no torch, or a broken one: ask the driver
        torch = None
    if torch is not None:
        if torch.cuda.device_count() > 0:
            return True
        if getattr(torch.version, "cuda", None):
            return False  # a CUDA build of torch that sees no GPU: believe it
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return listed.returncode == 0 and "GPU" in listed.stdout


def select_device(requested: str, probe: Callable[[], bool] = cuda_available) -> str:
    """The device the vllm engine runs on: always ``cuda``; anything else is an error
    that names the engines that run on a CPU."""
    cpu_hint = (
        "On a CPU use --engine llamacpp (GGUF LLMs, e.g. the Qwen and Hunyuan models of "
        "`mtserve models list`), or for seq2seq NMT directories --engine transformers, onnx or "
        f"ctranslate2 (CPU engines: {', '.join(CPU_ENGINES)})."
    )
    if requested not in DEVICES:
        raise VllmConfigError(f"device must be one of {', '.join(DEVICES)}, got {requested!r}")
    if requested == "cpu":
        raise VllmConfigError(f"the vllm engine runs on CUDA GPUs, not with --device cpu. {cpu_hint}")
    if not probe():
        raise VllmConfigError(
            f"the vllm engine needs a CUDA GPU, and this machine has none (device={requested!r}: "
            f"torch sees no CUDA device and nvidia-smi lists no GPU). {cpu_hint}"
        )
    return "cuda"


def require_vllm(importer: Callable[[str], Any] | None = None) -> Any:
    """Import vLLM, or say how to install it."""
    import importlib

    try:
        return (importer or importlib.import_module)("vllm")
    except Exception as exc:  # noqa: BLE001 - ImportError, or a CUDA library that fails to load
        raise VllmConfigError(
            f"the vllm engine needs vLLM, which cannot be imported here ({type(exc).__name__}: {exc}). "
            f"On a machine with a CUDA GPU run `{GPU_INSTALL}`, best in an environment of its "
            "own: vLLM brings its own CUDA build of torch."
        ) from None


# --- which model -------------------------------------------------------------------------------
@dataclass(frozen=True)
class VllmModel:
    """What ``--model`` names for vLLM: a Hugging Face directory or a model id."""

    source: str  # the directory (absolute) or the Hugging Face id vLLM loads
    name: str
    family: str  # a prompts.TEMPLATES key
    registry_name: str | None = None  # the registry model it was converted from, if known


_HF_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")


def gguf_message(spec: str, path: Path | None = None) -> str:
    where = f" ({path})" if path is not None and str(path) != spec else ""
    return (
        f"engine 'vllm' needs a Hugging Face format model directory (config.json, *.safetensors, "
        f"tokenizer), and {spec!r}{where} is a GGUF file. Convert it once: "
        f"`mtserve convert {spec} --to hf --out DIR` (dequantizes; needs the `gguf` package of "
        "mtserve[baseline]), then serve `--engine vllm --model DIR`; or download the model's "
        "original Hugging Face checkpoint. To serve the GGUF file as it is, use --engine llamacpp."
    )


def resolve_model(spec: str, registry: Mapping[str, Any] | None = None) -> VllmModel:
    """Turn a ``--model`` value into what vLLM loads, or say why it cannot."""
    from mtserve.models.store import guess_family

    if registry is None:
        from mtserve.models.registry import known_models

        registry = known_models()
    path = Path(spec).expanduser()
    if spec in registry or path.suffix.lower() == ".gguf":
        raise VllmConfigError(gguf_message(spec, path if path.exists() else None))
    if path.is_dir():
        config = _read_json(path / "config.json")
        if not config:
            if any(path.glob("*.gguf")):
                raise VllmConfigError(gguf_message(spec, next(path.glob("*.gguf"))))
            raise VllmConfigError(
                f"engine 'vllm' needs a Hugging Face model directory with config.json; {path} has none"
            )
        if config.get("is_encoder_decoder"):
            raise VllmConfigError(
                f"{path} holds a seq2seq ({config.get('model_type')}) model; the vllm engine serves "
                "decoder-only LLMs. Use --engine transformers, onnx or ctranslate2 for it."
            )
        manifest = _read_json(path / MANIFEST)
        registry_name = manifest.get("registry_name") if manifest.get("registry_name") in registry else None
        family = str(manifest.get("family") or "")
        if not family:
            family = guess_family(path.resolve().name)
            if family == "qwen" and str(config.get("model_type", "")).startswith("hunyuan"):
                family = "hunyuan-mt"
        return VllmModel(str(path.resolve()), str(manifest.get("model_name") or path.resolve().name),
                         family, registry_name)
    if path.exists():
        raise VllmConfigError(f"engine 'vllm' needs a model directory; {path} is a file")
    if _HF_ID.match(spec) and not spec.startswith((".", "/", "~")):
        # vLLM fetches it from Hugging Face (needs internet, or the model in the HF cache)
        return VllmModel(spec, spec.split("/")[-1], guess_family(spec.split("/")[-1]))
    raise VllmConfigError(
        f"engine 'vllm' needs --model DIR (a Hugging Face model directory) or a Hugging Face model "
        f"id (owner/name); {spec!r} is neither"
    )


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


# --- the event loop thread ------------------------------------------------------------------------
class _LoopThread:
    """One asyncio loop running in one daemon thread; coroutines are submitted to it."""

    def __init__(self, name: str):
        self.loop = asyncio.new_event_loop()
        self._closed = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        try:
            self.loop.run_forever()
        finally:
            self._closed.set()
            pending = asyncio.all_tasks(self.loop)
            for task in pending:
                task.cancel()
            if pending:
                self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self.loop.close()

    @property
    def closed(self) -> bool:
        return self._closed.is_set() or not self.thread.is_alive()

    def submit(self, coro: Any) -> concurrent.futures.Future:
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self, timeout: float = 10.0) -> None:
        if not self.closed:
            self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


# --- the engine ------------------------------------------------------------------------------
class VllmEngine:
    name = "vllm"
    prompted = True  # translates through a prompt template: the guardrails' strict retry applies

    def __init__(
        self,
        model: str,
        *,
        model_name: str,
        family: str,
        languages: tuple[str, ...],
        max_num_seqs: int = 64,
        max_model_len: int = 4096,
        gpu_memory_utilization: float = 0.9,
        dtype: str = "auto",
        quantization: str = "",
        max_output_tokens: int = 512,
        sampling: str = "greedy",
        model_sampling: Mapping[str, float] | None = None,
        seed: int = 0,
        engine_factory: Callable[[], Any] | None = None,
        tokenizer: Any = None,
        sampling_factory: Callable[[Mapping[str, Any]], Any] = to_vllm_sampling_params,
    ):
        """``engine_factory``, ``tokenizer`` and ``sampling_factory`` default to vLLM's
        AsyncLLM, the model's Hugging Face tokenizer and ``vllm.SamplingParams``; tests
        hand in doubles to run the threading and streaming without a GPU."""
        if quantization not in QUANTIZATIONS:
            raise ValueError(
                f"quantization must be one of {', '.join(map(repr, QUANTIZATIONS))}, got {quantization!r}"
            )
        if sampling not in SAMPLING_MODES:
            raise ValueError(f"sampling must be one of {', '.join(SAMPLING_MODES)}, got {sampling!r}")
        if not 0 < gpu_memory_utilization <= 1:
            raise ValueError(f"gpu_memory_utilization must be in (0, 1], got {gpu_memory_utilization}")
        self.model = model
        self.model_name = model_name
        self.family = family
        self.languages = languages
        self.max_num_seqs = max(1, max_num_seqs)
        self.max_concurrency = self.max_num_seqs
        self.slots = self.max_num_seqs
        self.on_gpu = True  # vLLM here needs CUDA
        self.max_model_len = max_model_len
        self.gpu_memory_utilization = gpu_memory_utilization
        self.dtype = dtype
        self.quantization = quantization
        self.max_output_tokens = max_output_tokens
        self.sampling = sampling
        self.model_sampling = dict(model_sampling or {})
        if sampling == "model" and not self.model_sampling:
            log.warning(
                "sampling=model, but the registry recommends no sampling for this model; decoding greedily",
                extra={"event": "no_model_sampling", "model": model_name},
            )
        self.seed = seed
        self.template: PromptTemplate = template_for(family)
        self._engine_factory = engine_factory
        self._tokenizer = tokenizer
        self._sampling_factory = sampling_factory
        self._engine: Any = None
        self._loop: _LoopThread | None = None
        self._lock = threading.Lock()
        self._tokenizer_lock = threading.Lock()  # HF fast tokenizers may not be entered twice at once
        self._ids = itertools.count(1)

    # --- lifecycle ------------------------------------------------------------
    def engine_args(self) -> dict[str, Any]:
        """The ``AsyncEngineArgs`` this engine builds vLLM's engine with, as a plain dict."""
        return dict(
            model=self.model,
            tokenizer=self.model,
            dtype=self.dtype,
            quantization=self.quantization or None,
            gpu_memory_utilization=self.gpu_memory_utilization,
            max_num_seqs=self.max_num_seqs,
            max_model_len=self.max_model_len,
            enable_prefix_caching=True,  # the shared system prompt and few-shot turns, once per pair
            seed=self.seed,
            disable_log_stats=True,
        )

    def _create_vllm_engine(self) -> Any:
        from vllm.engine.arg_utils import AsyncEngineArgs

        try:
            from vllm.v1.engine.async_llm import AsyncLLM
        except ImportError:  # releases before the V1 engine
            from vllm import AsyncLLMEngine as AsyncLLM
        return AsyncLLM.from_engine_args(AsyncEngineArgs(**self.engine_args()))

    def supports(self, source: str, target: str) -> bool:
        return every_pair(self.languages, source, target)

    def load(self) -> None:
        started = time.perf_counter()
        with self._lock:
            if self._tokenizer is None:
                from transformers import AutoTokenizer

                self._tokenizer = AutoTokenizer.from_pretrained(self.model)
            loop = _LoopThread(f"vllm-{self.model_name}")
            factory = self._engine_factory or self._create_vllm_engine

            async def create() -> Any:  # on the loop: vLLM starts its output handler there
                return factory()

            try:
                self._engine = loop.submit(create()).result()
            except BaseException:
                loop.stop()
                raise
            self._loop = loop
        log_loaded(self, started, max_num_seqs=self.max_num_seqs)

    def close(self) -> None:
        with self._lock:
            engine, loop = self._engine, self._loop
            self._engine, self._loop = None, None
        if loop is None:
            return
        shutdown = getattr(engine, "shutdown", None)
        if callable(shutdown):  # stops vLLM's engine-core process and frees the GPU memory

            async def stop() -> None:
                await _maybe_await(shutdown())

            try:
                loop.submit(stop()).result(CLOSE_WAIT_S)
            except Exception as exc:  # noqa: BLE001 - closing goes ahead regardless
                log.warning("vLLM shutdown failed",
                            extra={"event": "vllm_shutdown_failed", "error": repr(exc)})
        loop.stop()

    # --- prompts ----------------------------------------------------------------
    def messages(self, request: EngineRequest) -> Messages:
        if request.transfer is not None and request.align:  # which words of the translation are the marked ones
            return self.template.align_messages(request.text, request.transfer, request.source, request.target)
        if request.transfer is not None:  # the tags of text put into its translation
            return self.template.transfer_messages(request.text, request.transfer, request.source,
                                                   request.target)
        return self.template.messages(request.text, request.source, request.target,
                                      glossary=request.glossary, strict=request.strict,
                                      markup=request.markup, retrieved=request.examples,
                                      guidance=request.guidance)

    def render(self, request: EngineRequest) -> str:
        """The prompt text: the template's messages through the model's chat template."""
        tokenizer = self._tokenizer
        if tokenizer is None:
            raise EngineError("engine is not loaded")
        with self._tokenizer_lock:
            return tokenizer.apply_chat_template(self.messages(request), tokenize=False,
                                                 add_generation_prompt=True)

    def encode(self, request: EngineRequest) -> list[int]:
        text = self.render(request)
        with self._tokenizer_lock:
            # the chat template already wrote any BOS and turn tokens
            return list(self._tokenizer.encode(text, add_special_tokens=False))

    def sampling_for(self, request: EngineRequest, prompt_tokens: int) -> dict[str, Any]:
        room = self.max_model_len - prompt_tokens
        if room < 1:
            raise EngineError(
                f"the segment's prompt is {prompt_tokens} tokens, more than max_model_len "
                f"({self.max_model_len}) allows; raise MTSERVE_MAX_MODEL_LEN or lower "
                "MTSERVE_SEGMENT_MAX_CHARS"
            )
        max_tokens = request.max_tokens or default_max_tokens(request.text, self.max_output_tokens)
        return sampling_params_for(request, max_tokens=min(max_tokens, self.max_output_tokens, room),
                                   mode=self.sampling, model_sampling=self.model_sampling)

    # --- work -------------------------------------------------------------------
    def translate(
        self,
        request: EngineRequest,
        cancel: CancelToken | None = None,
        on_delta: DeltaCallback | None = None,
    ) -> TranslationResult:
        engine, loop = self._engine, self._loop
        if engine is None or loop is None:
            raise EngineError("engine is not loaded")
        started = time.perf_counter()
        prompt_ids = self.encode(request)
        params = self._sampling_factory(self.sampling_for(request, len(prompt_ids)))
        request_id = f"mtserve-{next(self._ids)}-{uuid.uuid4().hex[:8]}"
        outputs: queue.Queue = queue.Queue()
        coro = self._generate(engine, {"prompt_token_ids": prompt_ids}, params, request_id, outputs)
        try:
            future = loop.submit(coro)
        except RuntimeError:  # the loop closed between the check above and now
            coro.close()
            raise EngineError("engine is not loaded") from None

        parts: list[str] = []
        generated = 0
        prompt_tokens = len(prompt_ids)
        finish = "stop"
        while True:
            if cancel is not None and cancel.cancelled:
                self._abort(engine, loop, request_id, future)
                raise EngineCancelled("cancelled while decoding")
            try:
                kind, item = outputs.get(timeout=POLL_S)
            except queue.Empty:
                if loop.closed:  # close() while this segment was in flight
                    raise EngineError("the vLLM engine was closed while decoding") from None
                continue
            if kind == "end":
                break
            if kind == "error":
                if type(item).__name__ in ("EngineDeadError", "AsyncEngineDeadError"):
                    raise EngineDead(f"vLLM engine died: {item}") from item
                raise EngineError(f"vLLM error: {type(item).__name__}: {item}") from item
            if getattr(item, "prompt_token_ids", None):
                prompt_tokens = len(item.prompt_token_ids)
            for completion in item.outputs[:1]:  # n == 1
                if completion.text:
                    parts.append(completion.text)
                    if on_delta is not None:
                        on_delta(completion.text)
                generated += len(completion.token_ids or ())
                if completion.finish_reason:
                    finish = str(completion.finish_reason)
        if cancel is not None and cancel.cancelled:
            raise EngineCancelled("cancelled while decoding")
        if finish == "abort":
            raise EngineError("vLLM aborted the request (the engine is shutting down or preempted it)")
        return TranslationResult(
            text="".join(parts),
            prompt_tokens=prompt_tokens,
            generated_tokens=generated,
            finish_reason="length" if finish == "length" else "stop",
            engine_ms=(time.perf_counter() - started) * 1000,
        )

    @staticmethod
    async def _generate(engine: Any, prompt: Any, params: Any, request_id: str, outputs: queue.Queue) -> None:
        """On the loop: stream vLLM's outputs for one request into ``outputs``."""
        try:
            async for output in engine.generate(prompt, params, request_id):
                outputs.put(("output", output))
        except asyncio.CancelledError:
            pass  # the caller stopped reading (cancelled); vLLM aborts a cancelled generate itself
        except Exception as exc:  # noqa: BLE001 - handed to the calling thread
            outputs.put(("error", exc))
        finally:
            outputs.put(("end", None))

    def _abort(self, engine: Any, loop: _LoopThread, request_id: str,
               future: concurrent.futures.Future) -> None:
        async def abort() -> None:
            await _maybe_await(engine.abort(request_id))

        try:
            loop.submit(abort()).result(ABORT_WAIT_S)
        except Exception as exc:  # noqa: BLE001 - the segment is cancelled either way
            log.warning("vLLM abort failed", extra={"event": "vllm_abort_failed", "request_id": request_id,
                                                    "error": repr(exc)})
        future.cancel()  # stops the generate coroutine, if abort did not end it already
