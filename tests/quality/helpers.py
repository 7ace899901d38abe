"""A scripted, prompt-driven test double and a service built around it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, AsyncIterator, Callable

from mtserve.engines.base import EngineRequest
from mtserve.service.request import TranslationRequest
from mtserve.service.runtime import Runtime
from mtserve.service.translator import TranslationService
from mtserve.settings import Settings
from tests.fakes import FakeEngine


class ScriptedEngine(FakeEngine):
    """An LLM-like engine (``prompted``, so the guardrails apply) whose outputs a test writes.

    ``script(request)`` returns the raw output, or None for the default: the
    text tagged with the target, like FakeEngine.
    """

    prompted = True

    def __init__(self, script: Callable[[EngineRequest], str | None] | None = None, **kwargs):
        kwargs.setdefault("languages", ("en", "zh", "zt", "ja", "de", "fr", "ko"))
        super().__init__(**kwargs)
        self.script = script or (lambda request: None)

    def render(self, request: EngineRequest) -> str:  # type: ignore[override]
        scripted = self.script(request)
        return scripted if scripted is not None else f"[{request.target}] {request.text}"


@contextlib.asynccontextmanager
async def service_for(engine, tmp_path, **settings) -> AsyncIterator[TranslationService]:
    runtime = Runtime(Settings(home=tmp_path, **settings), engine)
    await runtime.start()
    await runtime.wait_ready()
    assert runtime.service is not None, runtime.load_error
    try:
        yield runtime.service
    finally:
        await runtime.stop()


def translate_once(engine, tmp_path, text: str, source: str, target: str,
                   **options: Any) -> tuple[TranslationService, Any]:
    """``text`` through a service around ``engine``: the service (its counters outlive it) and the result."""

    async def main():
        async with service_for(engine, tmp_path) as service:
            [result] = await service.translate(TranslationRequest([text], target, source=source, **options))
            return service, result

    return asyncio.run(main())


def counter(service: TranslationService, name: str, **labels) -> float:
    value = service.metrics.registry.get_sample_value(name, labels or None)
    return value or 0.0
