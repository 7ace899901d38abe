"""The running service: engine, scheduler, cache and detector, started and stopped together.

The engine loads in the background, so the HTTP server answers liveness
probes at once and reports ready only when the model is in memory.
"""

from __future__ import annotations

import asyncio
import logging
import time

from mtserve.engines.base import Engine
from mtserve.engines.factory import create_engine
from mtserve.service.access import AccessControl, KeyStore
from mtserve.service.cache import TranslationCache
from mtserve.service.metrics import Metrics
from mtserve.service.scheduler import Scheduler
from mtserve.service.translator import TranslationService
from mtserve.settings import Settings
from mtserve.text.detect import LanguageDetector, parse_prior

log = logging.getLogger(__name__)


class Runtime:
    def __init__(self, settings: Settings, engine: Engine | None = None):
        self.settings = settings
        self.metrics = Metrics()
        self.engine = engine if engine is not None else create_engine(settings)
        self.started_at = time.time()
        self.access = AccessControl(
            KeyStore(settings.keys_db) if settings.api_keys else None,
            require_key=settings.require_api_key,
            anonymous_rpm=settings.anonymous_rpm,
        )
        self.service: TranslationService | None = None
        self.load_error: str | None = None
        self._scheduler: Scheduler | None = None
        self._loading: asyncio.Task | None = None

    @property
    def ready(self) -> bool:
        return self.service is not None

    async def start(self) -> None:
        self._loading = asyncio.create_task(self._load())

    async def wait_ready(self) -> None:
        if self._loading is not None:
            await self._loading

    async def _load(self) -> None:
        detector = LanguageDetector(self.engine.languages, parse_prior(self.settings.detect_prior))
        try:
            await asyncio.gather(asyncio.to_thread(self.engine.load), asyncio.to_thread(detector.warm_up))
        except Exception as exc:  # reported on /health; the process stays up to say why
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.error("engine failed to load", extra={"event": "load_failed", "error": self.load_error})
            return
        scheduler = Scheduler(
            self.engine.translate,
            concurrency=self.engine.max_concurrency,
            max_queue=self.settings.max_queue,
            metrics=self.metrics,
        )
        await scheduler.start()
        self._scheduler = scheduler
        self.service = TranslationService(
            self.settings, self.engine, scheduler, TranslationCache(self.settings.cache_size),
            detector, self.metrics,
        )
        self.metrics.ready.set(1)
        log.info("service ready", extra={"event": "ready", "model": self.engine.model_name})

    async def stop(self) -> None:
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        self.metrics.ready.set(0)
        self.service = None
        if self._scheduler is not None:
            await self._scheduler.stop()
        await asyncio.to_thread(self.engine.close)
