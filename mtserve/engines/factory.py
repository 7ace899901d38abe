"""Pick and build the engine named by the settings."""

from __future__ import annotations

from mtserve.engines.base import Engine
from mtserve.models.store import ModelStore
from mtserve.settings import Settings
from mtserve.text.languages import language_set

ENGINES = ("llamacpp",)


class EngineConfigError(ValueError):
    """The engine and model do not fit together; the message says how to fix it."""


def create_engine(settings: Settings) -> Engine:
    if settings.engine not in ENGINES:
        raise EngineConfigError(
            f"unknown engine {settings.engine!r}; available: {', '.join(ENGINES)}"
        )
    resolved = ModelStore(settings.models_dir).resolve(settings.model)
    if settings.engine == "llamacpp":
        if resolved.path.suffix.lower() != ".gguf":
            raise EngineConfigError(
                f"engine 'llamacpp' needs a .gguf file, got {resolved.path}"
            )
        from mtserve.engines.llamacpp import LlamaCppEngine

        languages = resolved.entry.languages if resolved.entry else tuple(
            language_set("hunyuan" if resolved.family != "qwen" else "qwen")
        )
        return LlamaCppEngine(
            resolved.path,
            model_name=resolved.name,
            family=resolved.family,
            languages=languages,
            threads=settings.threads,
            n_parallel=settings.n_parallel,
            ctx_per_slot=settings.ctx_per_slot,
            max_output_tokens=settings.max_output_tokens,
        )
    raise AssertionError("unreachable")
