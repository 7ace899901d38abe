"""Pick and build the engine named by the settings."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable

from mtserve.engines.base import Engine
from mtserve.extras import SEQ2SEQ_ENGINE_MODULES, missing_extra
from mtserve.models.store import ModelStore
from mtserve.settings import Settings
from mtserve.text.languages import language_set

ENGINES = ("llamacpp", "transformers", "onnx", "ctranslate2", "vllm")
# seq2seq engine -> the model directory format it loads (seq2seq.inspect_model_dir)
SEQ2SEQ_FORMATS = {"transformers": "huggingface", "onnx": "onnx", "ctranslate2": "ctranslate2"}
FORMAT_ENGINES = {"huggingface": "transformers", "onnx": "onnx", "ctranslate2": "ctranslate2",
                  "gguf": "llamacpp"}


class EngineConfigError(ValueError):
    """The engine and model do not fit together; the message says how to fix it."""


def create_engine(settings: Settings) -> Engine:
    if settings.engine not in ENGINES:
        raise EngineConfigError(
            f"unknown engine {settings.engine!r}; available: {', '.join(ENGINES)}"
        )
    if settings.engine in SEQ2SEQ_FORMATS:
        return create_seq2seq_engine(settings)
    if settings.engine == "vllm":
        return create_vllm_engine(settings)
    if Path(settings.model).expanduser().is_dir():
        raise EngineConfigError(_mismatch("llamacpp", Path(settings.model).expanduser()))
    resolved = ModelStore(settings.models_dir).resolve(settings.model)
    if settings.engine == "llamacpp":
        if resolved.path.suffix.lower() != ".gguf":
            raise EngineConfigError(
                f"engine 'llamacpp' needs a .gguf file, got {resolved.path}"
            )
        from mtserve.engines.llamacpp import LlamaCppEngine

        languages = llm_languages(resolved.entry, resolved.family)
        return LlamaCppEngine(
            resolved.path,
            model_name=resolved.name,
            family=resolved.family,
            languages=languages,
            threads=settings.threads,
            n_parallel=settings.n_parallel,
            ctx_per_slot=settings.ctx_per_slot,
            max_output_tokens=settings.max_output_tokens,
            prompt_cache_ram_mib=settings.prompt_cache_ram_mib,
            queue_ahead=settings.queue_ahead,
            gpu_layers=settings.gpu_layers,
            script_grammar=settings.script_grammar,
            markup_grammar=settings.markup_grammar,
            param_overrides=checked_param_overrides(settings.llama_params),
        )
    raise AssertionError("unreachable")


# llama.cpp params that mtserve's own settings set: the engine's slots and queue follow the settings,
# so they are not overridden behind its back.
SETTING_OF_PARAM = {"n_parallel": "n_parallel", "n_ctx": "ctx_per_slot", "cpuparams.n_threads": "threads",
                    "cpuparams_batch.n_threads": "threads", "n_gpu_layers": "gpu_layers",
                    "cache_ram_mib": "prompt_cache_ram_mib"}


def parse_param_overrides(text: str) -> dict[str, int | float]:
    """``"flash_attn_type=0, cache_type_k=8"`` (the ``llama_params`` setting) as {name: number}."""
    overrides: dict[str, int | float] = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        name, equals, value = (piece.strip() for piece in item.partition("="))
        if not equals or not re.fullmatch(r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*", name):
            raise EngineConfigError(f"llama_params: {item!r} is not NAME=NUMBER (for example flash_attn_type=0)")
        if name in SETTING_OF_PARAM:
            raise EngineConfigError(f"llama_params: {name} is mtserve's {SETTING_OF_PARAM[name]} setting; "
                                    f"set that instead (MTSERVE_{SETTING_OF_PARAM[name].upper()})")
        try:
            overrides[name] = float(value) if "." in value or "e" in value.lower() else int(value)
        except ValueError:
            raise EngineConfigError(f"llama_params: {name} wants a number, not {value!r}") from None
    return overrides


def checked_param_overrides(text: str) -> dict[str, int | float]:
    """The ``llama_params`` setting, tried on a fresh set of llama.cpp params: a name llama.cpp
    does not have is a configuration error before any model is loaded."""
    overrides = parse_param_overrides(text)
    if not overrides:  # the usual case: nothing to check, and no native import before the engine loads
        return overrides
    import xllamacpp

    from mtserve.engines.base import EngineError
    from mtserve.engines.llamacpp import apply_param_overrides

    try:
        apply_param_overrides(xllamacpp.CommonParams(), overrides)
    except EngineError as exc:
        raise EngineConfigError(str(exc)) from None
    return overrides


def create_vllm_engine(
    settings: Settings,
    *,
    cuda_probe: Callable[[], bool] | None = None,
    importer: Callable[[str], Any] | None = None,
) -> Engine:
    """The vllm engine over a Hugging Face directory (or model id) in ``settings.model``.

    The checks go from what the user can fix in the command to what the machine lacks: the
    model (a GGUF file is refused with the conversion command), then the GPU, then vLLM.
    ``cuda_probe`` and ``importer`` stand in for the GPU and for ``import vllm`` in tests.
    """
    from mtserve.engines import vllm
    from mtserve.models.registry import known_models, sampling_defaults

    try:
        model = vllm.resolve_model(settings.model, known_models())
        vllm.select_device(settings.device, cuda_probe or vllm.cuda_available)
        vllm.require_vllm(importer)
        entry = known_models().get(model.registry_name or "")
        return vllm.VllmEngine(
            model.source,
            model_name=model.name,
            family=model.family,
            languages=llm_languages(entry, model.family),
            max_num_seqs=settings.max_num_seqs,
            max_model_len=settings.max_model_len,
            gpu_memory_utilization=settings.gpu_memory_utilization,
            dtype=settings.dtype,
            quantization=settings.quantization,
            max_output_tokens=settings.max_output_tokens,
            sampling=settings.sampling,
            model_sampling=sampling_defaults(model.registry_name, model.family),
        )
    except ValueError as exc:  # VllmConfigError, and bad values of the vllm settings
        raise EngineConfigError(str(exc)) from None


def llm_languages(entry, family: str) -> tuple[str, ...]:
    """An LLM's languages: its registry entry's, else those of its prompt family."""
    if entry is not None:
        return entry.languages
    return tuple(language_set("hunyuan" if family != "qwen" else "qwen"))


def create_seq2seq_engine(settings: Settings) -> Engine:
    """A transformers, onnx or ctranslate2 engine over the model directory in ``settings.model``."""
    from mtserve.engines.seq2seq import DecodeOptions, ModelDirError, inspect_model_dir

    engine = settings.engine
    path = Path(settings.model).expanduser()
    if not path.exists():
        raise EngineConfigError(
            f"engine {engine!r} needs --model DIR, a model directory; {settings.model!r} is not one. "
            + _how_to_get(engine)
        )
    try:
        kind = inspect_model_dir(path)
    except ModelDirError as exc:
        raise EngineConfigError(str(exc)) from None
    if kind.format != SEQ2SEQ_FORMATS[engine]:
        raise EngineConfigError(_mismatch(engine, path, kind.format))
    if problem := missing_extra(f"engine {engine!r}", "seq2seq", SEQ2SEQ_ENGINE_MODULES[engine]):
        raise EngineConfigError(problem)
    common = dict(
        threads=settings.threads,
        inter_threads=settings.inter_threads,
        max_batch_size=settings.max_batch_size,
        batch_type=settings.batch_type,
        decode=DecodeOptions(num_beams=max(1, settings.num_beams),
                             max_output_tokens=settings.max_output_tokens),
    )
    try:
        if engine == "transformers":
            from mtserve.engines.transformers import TransformersEngine

            return TransformersEngine(path, **common)
        if engine == "onnx":
            from mtserve.engines.onnx import OnnxEngine

            return OnnxEngine(path, inter_op_threads=settings.onnx_inter_op_threads,
                              graph_optimization=settings.onnx_graph_optimization, **common)
        from mtserve.engines.ctranslate2 import CTranslate2Engine

        return CTranslate2Engine(path, compute_type=settings.compute_type, device=settings.device, **common)
    except (ModelDirError, ValueError) as exc:
        raise EngineConfigError(str(exc)) from None


def _how_to_get(engine: str) -> str:
    if engine == "transformers":
        return "Pass a Hugging Face seq2seq directory (Marian/opus-mt, NLLB, M2M100)."
    return f"Make one with `mtserve convert HF_MODEL_DIR --to {engine} --out DIR`."


def _mismatch(engine: str, path: Path, found: str | None = None) -> str:
    """Say what ``path`` is, and which engine (or conversion) would take it."""
    if found is None:
        from mtserve.engines.seq2seq import inspect_model_dir

        found = inspect_model_dir(path).format
    what = {
        "huggingface": "a Hugging Face model directory",
        "onnx": "an ONNX export",
        "ctranslate2": "a CTranslate2 model",
        "gguf": "a GGUF file",
    }.get(found, "not a model mtserve recognizes")
    message = f"engine {engine!r} cannot load {path}: it is {what}"
    if found == "huggingface" and not _is_encoder_decoder(path):
        return f"{message} of a decoder-only LLM; serve it with --engine vllm on a CUDA GPU"
    if found == "huggingface" and engine in ("onnx", "ctranslate2"):
        return (f"{message}. Convert it first: `mtserve convert {path} --to {engine} --out {path}-{engine}`, "
                "or serve it as it is with --engine transformers")
    if FORMAT_ENGINES.get(found) == engine:
        return f"{message} directory; pass the model file itself"
    if found in FORMAT_ENGINES:
        return f"{message}; use --engine {FORMAT_ENGINES[found]}"
    return f"{message}. {_how_to_get(engine)}"


def _is_encoder_decoder(path: Path) -> bool:
    import json

    try:
        return bool(json.loads((path / "config.json").read_text(encoding="utf-8")).get("is_encoder_decoder"))
    except (OSError, ValueError, AttributeError):
        return True  # unreadable: say nothing about vllm
