"""The running service: engine, scheduler, cache and detector, started and stopped together.

The engine loads in the background, so the HTTP server answers liveness
probes at once and reports ready only when the model is in memory.

A watchdog keeps it serving without a manual step: when the engine reports
itself dead (``EngineDead``), or a segment stays in the engine long after its
deadline (``engine_hang_s``: its cancellation did not take), the runtime
reports not-ready, fails what was in flight with 503, reloads the engine and
a fresh scheduler, and is ready again. A thread stuck inside native code
cannot be killed from Python; it is left behind, and the restart counter in
/metrics shows that it happened. A crash of the whole process is for the
process supervisor (systemd ``Restart=always``, a container restart policy).
"""

from __future__ import annotations

import asyncio
import logging
import time

from mtserve.engines.base import Engine, ModelInfo, StrictWarmingEngine
from mtserve.engines.factory import create_engine
from mtserve.service.access import AccessControl, KeyStore
from mtserve.service.batcher import batcher_for
from mtserve.service.cache import TranslationCache
from mtserve.service.glossary_store import GlossaryStore
from mtserve.service.metrics import Metrics
from mtserve.service.scheduler import Scheduler
from mtserve.service.style_rules import StyleRuleStore
from mtserve.service.tm import TranslationMemory
from mtserve.service.tm_access import MemoryAccess
from mtserve.service.translator import TranslationService
from mtserve.settings import Settings
from mtserve.text.detect import LanguageDetector, parse_prior

log = logging.getLogger(__name__)


class EngineNotReady(RuntimeError):
    """The engine failed to load, or the service to start: a CLI says why in one line and exits."""


class Runtime:
    def __init__(self, settings: Settings, engine: Engine | None = None, serving: bool = False):
        self.settings = settings
        self.serving = serving  # a long-lived server: worth warming the strict prompt (settings.warm_strict)
        self.metrics = Metrics()
        self.engine = engine if engine is not None else create_engine(settings)
        # What the API may know of the engine; valid while it loads or restarts.
        self.model = ModelInfo.of(self.engine)
        self.restarting = False
        self.restarts = 0
        self.usage_chars = 0  # characters translated through the DeepL API, for /v2/usage
        self._detector: LanguageDetector | None = None
        self._cache = TranslationCache(settings.cache_size)
        self._watchdog: asyncio.Task | None = None
        self.started_at = time.time()
        self.access = AccessControl(
            KeyStore(settings.keys_db) if settings.api_keys else None,
            require_key=settings.require_api_key,
            anonymous_rpm=settings.anonymous_rpm,
            max_callers=settings.rate_limit_callers,
        )
        # Named glossaries under $MTSERVE_HOME (the file is made on first use): DeepL's /v2/glossaries,
        # `mtserve glossary`, and every request's glossary_id share this one store.
        self.glossaries = GlossaryStore(settings.glossaries_db)
        self.style_rules = StyleRuleStore(settings.style_rules_db)  # DeepL's /v3/style_rules; a request's style_id
        # The translation memory under $MTSERVE_HOME (made on first use), shared with `mtserve tm`.
        self.memory = TranslationMemory(settings.tm_db)
        self.memory_access = MemoryAccess(self.memory, settings)  # the /tm API's scopes and caps over it
        self.service: TranslationService | None = None
        self.load_error: str | None = None
        self._scheduler: Scheduler | None = None
        self._loading: asyncio.Task | None = None

    @property
    def ready(self) -> bool:
        return self.service is not None

    async def start(self) -> None:
        self._loading = asyncio.create_task(self._load())
        self._watchdog = asyncio.create_task(self._watch())

    async def wait_ready(self) -> None:
        if self._loading is not None:
            await self._loading

    async def ready_service(self) -> TranslationService:
        """The service once loading is over, for a one-shot command; ``EngineNotReady`` with the
        reason (the one /health reports) when there is none."""
        await self.wait_ready()
        if self.service is None:
            raise EngineNotReady(f"the engine did not start: {self.load_error or 'loading was stopped'}")
        return self.service

    async def _load(self) -> None:
        if self._detector is None:
            self._detector = LanguageDetector(self.model.languages, parse_prior(self.settings.detect_prior))
        detector = self._detector
        try:
            await asyncio.gather(asyncio.to_thread(self.engine.load), asyncio.to_thread(detector.warm_up))
        except Exception as exc:  # reported on /health; the process stays up to say why
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.error("engine failed to load", extra={"event": "load_failed", "error": self.load_error})
            return
        await self._warm_strict()
        batcher = batcher_for(self.engine, self.settings.max_queue_delay_ms)  # None: one at a time
        scheduler = Scheduler(
            self.engine.translate,
            concurrency=self.engine.max_concurrency,
            max_queue=self.settings.max_queue,
            max_per_caller=self.settings.max_queue_per_caller,
            metrics=self.metrics,
            on_engine_dead=self._engine_dead,
            batcher=batcher,
            # a batch decodes its members together: a cap would only make a document's batches smaller
            long_jobs_per_ticket=self._paragraph_slots() if batcher is None else None,
        )
        await scheduler.start()
        self._scheduler = scheduler
        try:
            self.service = TranslationService(
                self.settings, self.engine, scheduler, self._cache, detector, self.metrics,
                glossaries=self.glossaries, memory=self.memory, style_rules=self.style_rules,
            )
        except ValueError as exc:  # a bad setting the service reads, e.g. an invalid glossary file
            self.load_error = f"{type(exc).__name__}: {exc}"
            log.error("service failed to start", extra={"event": "load_failed", "error": self.load_error})
            await scheduler.stop()
            return
        self.metrics.ready.set(1)
        log.info("service ready", extra={"event": "ready", "model": self.model.model})

    def _paragraph_slots(self) -> int:
        """The paragraphs one request may run at once: the setting; else one on a CPU, where two
        side by side cost nearly as much as each in turn and the second holds a slot that short
        requests wait for (docs/decisions/010-paragraph-slots.md); on a GPU, where they cost about one, half
        the slots, so that the other half turns over for whoever comes next."""
        if self.settings.paragraph_slots:
            return self.settings.paragraph_slots
        return max(1, self.engine.slots // 2) if self.engine.on_gpu else 1

    async def _warm_strict(self) -> None:
        """Compute the strict retry's prompt of each pair of ``settings.warm_strict`` once, before
        ready: it shares no prefix with the first attempt's, so a cold retry computes ~630 tokens in
        the batch every slot decodes in, and they all wait for it. Computed once, llama.cpp's prompt
        cache brings it back to whichever slot a later retry gets. A failure only costs that speed."""
        engine = self.engine
        if not (self.serving and self.settings.guardrails and isinstance(engine, StrictWarmingEngine)):
            return
        named = (part.split(":", 1) for part in self.settings.warm_strict.split(",") if ":" in part)
        pairs = [(source, target) for source, target in ((s.strip(), t.strip()) for s, t in named)
                 if engine.supports(source, target)]
        if not pairs:
            return
        started = time.perf_counter()
        try:
            await asyncio.to_thread(engine.warm_strict, pairs)
        except Exception as exc:
            log.warning("strict prompt not warmed", extra={"event": "warm_failed", "error": str(exc)})
            return
        log.info("strict prompt warmed", extra={"event": "warmed", "pairs": ",".join(f"{s}:{t}" for s, t in pairs),
                                                "seconds": round(time.perf_counter() - started, 1)})

    # --- recovery ---------------------------------------------------------------
    def _engine_dead(self, exc: Exception) -> None:
        asyncio.get_running_loop().create_task(self.restart(f"engine died: {exc}"))

    async def _watch(self) -> None:
        interval = max(0.1, min(5.0, self.settings.engine_hang_s / 4))
        while True:
            await asyncio.sleep(interval)
            scheduler = self._scheduler
            if scheduler is not None and not self.restarting:
                stuck_s = scheduler.longest_running_s()
                if stuck_s > self.settings.engine_hang_s:
                    await self.restart(f"engine hung: a segment has run for {stuck_s:.0f} s")

    async def restart(self, reason: str) -> None:
        """Swap in a freshly loaded engine and scheduler; in-flight work fails with 503."""
        if self.restarting:
            return
        self.restarting = True
        self.restarts += 1
        self.metrics.engine_restarts.inc()
        self.metrics.ready.set(0)
        log.error("restarting the engine", extra={"event": "engine_restart", "reason": reason})
        self.service = None
        old, self._scheduler = self._scheduler, None
        try:
            if old is not None:
                await old.stop(abandon=True)
            await asyncio.to_thread(self.engine.close)
            await self._load()
        finally:
            self.restarting = False

    async def stop(self) -> None:
        for task in (self._watchdog,):
            if task is not None:
                task.cancel()
        if self._loading is not None and not self._loading.done():
            self._loading.cancel()
        self.metrics.ready.set(0)
        self.service = None
        if self._scheduler is not None:
            await self._scheduler.stop()
        await asyncio.to_thread(self.engine.close)
