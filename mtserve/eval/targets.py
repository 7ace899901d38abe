"""What an evaluation translates with: the engine in this process, or a running server.

Both take one sentence at a time, so the service's segmentation, cache,
cleanup and guardrails are part of what is measured, exactly as a user gets
them; the runner keeps ``concurrency`` sentences in flight.
"""

from __future__ import annotations

import asyncio
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mtserve.settings import Settings


class TargetError(RuntimeError):
    """The system under evaluation failed; the message says how to fix it."""


class EvalTarget(Protocol):
    concurrency: int

    async def start(self) -> None: ...

    async def warm(self, source: str, target: str, context: str = "") -> None:
        """Untimed, before the first sentence: what a long-running server computes once (an engine's
        fixed prompt in each slot), so that a score's time is the steady state's; a no-op where the
        target cannot do it."""

    async def translate(self, text: str, source: str, target: str, context: str = "") -> str:
        """The translation of ``text``; ``context`` informs it (DeepL's field) and is not translated."""

    def describe(self) -> dict: ...

    def counters(self) -> dict[str, float]:
        """Service counters worth reporting (guardrail retries), where the target can tell."""

    def variants(self, text: str, source: str, target: str, context: str = "") -> dict[str, str]:
        """Other outputs for ``text`` worth scoring (the raw model output, the output before
        the guardrails' retry), where the target can tell; {} otherwise."""

    def memory_use(self, text: str) -> MemoryUse | None:
        """How the translation memory served ``text``, where the target can tell; None otherwise."""

    async def stop(self) -> None: ...


@dataclass(frozen=True)
class MemoryUse:
    """How the translation memory served one sentence."""

    segments: int  # the sentence's segments
    exact: int  # served as stored (an exact TM match, no engine call)
    examples: int  # sent to the engine with similar TM entries as examples


class InProcessTarget:
    """A Runtime (engine, scheduler, service) built from settings, as ``mtserve serve`` builds it.

    Its translation memory is its own, in a temporary folder: empty, or what
    ``use_memory`` imports from a file; never the TM under ``$MTSERVE_HOME``,
    so a score does not depend on what the machine's TM happens to hold.
    """

    def __init__(self, settings: Settings, engine=None, prompt: str = "default"):
        from mtserve.engines.prompts import plain
        from mtserve.service.runtime import Runtime
        from mtserve.service.tm import TranslationMemory

        self.settings = settings
        self.runtime = Runtime(settings, engine)
        self._tm_dir = tempfile.TemporaryDirectory(prefix="mtserve-eval-tm-")
        self.runtime.memory = TranslationMemory(Path(self._tm_dir.name) / "tm.sqlite3")
        self.memory: dict = {}  # the imported file: name, entries, skipped
        self._memory_use: dict[str, MemoryUse] = {}
        self.prompt = prompt
        if prompt == "plain" and hasattr(self.runtime.engine, "template"):
            self.runtime.engine.template = plain(self.runtime.engine.template)
        # one more than the slots, so a slot never waits for the next sentence to arrive
        self.concurrency = self.runtime.engine.max_concurrency + 1
        # What the engine returned per (engine text, strict, context): lets the report score each
        # sentence as it was before cleanup and before the guardrails' retry.
        self._raw: dict[tuple[str, bool, str], str] = {}
        self._wrap_engine()

    def _wrap_engine(self) -> None:
        engine = self.runtime.engine
        translate = engine.translate

        def recording(request, cancel=None, on_delta=None):
            result = translate(request, cancel, on_delta)
            if request.temperature == 0:
                self._raw.setdefault((request.text, request.strict, request.guidance.context), result.text)
            return result

        engine.translate = recording  # the scheduler takes engine.translate when the runtime loads

    async def start(self) -> None:
        from mtserve.service.runtime import EngineNotReady

        await self.runtime.start()
        try:
            await self.runtime.ready_service()
        except EngineNotReady as exc:
            raise TargetError(str(exc)) from None

    async def warm(self, source: str, target: str, context: str = "") -> None:
        """Compute the engine's fixed prompt (system prompt and examples, ~250 tokens) in every llama.cpp
        slot: a fresh engine computes it in the first requests of each slot, about 8 s of a 200-sentence
        run on 2 cores that a running server does not pay."""
        from mtserve.engines.base import NO_GUIDANCE, EngineError, Guidance

        engine = self.runtime.engine
        source, target = ("zh" if source == "zt" else source), ("zh" if target == "zt" else target)
        if not hasattr(engine, "warm_slots") or source == "auto" or not engine.supports(source, target):
            return
        guidance = Guidance(context=context) if context else NO_GUIDANCE
        try:
            await asyncio.to_thread(engine.warm_slots, source, target, guidance)
        except (EngineError, ValueError):  # only the first requests' speed is at stake; the run says the rest
            return

    def use_memory(self, path: str | Path, source: str, target: str) -> dict:
        """Import a .tsv, .tmx or .po file into this run's translation memory, as ``mtserve tm import``
        does; its most similar entries become each segment's examples, an exact match is served as stored."""
        from mtserve.service.tm import AddReport, TMError
        from mtserve.service.tm_files import format_of, read_tm

        path = Path(path).expanduser()
        try:
            fmt = format_of(path.name)
            if not path.is_file():
                raise TMError(f"no translation-memory file {path}; give a .tsv, .tmx or .po file")
            found = read_tm(path.read_bytes(), fmt, source, target)
            report = AddReport(skipped=dict(found.skipped))
            self.runtime.memory.add(found.pairs, found.source_lang, found.target_lang, origin=path.name,
                                    report=report)
        except (TMError, OSError) as exc:
            raise TargetError(f"--tm {path}: {exc}") from None
        if not report.added:
            raise TargetError(f"--tm {path}: no {source}->{target} pairs in it ({report.describe()})")
        self.memory = {"file": path.name, "pair": f"{found.source_lang}->{found.target_lang}",
                       "entries": report.added, "duplicates": report.duplicates, "skipped": report.skipped}
        return self.memory

    async def translate(self, text: str, source: str, target: str, context: str = "") -> str:
        from mtserve.service.request import Guidance, TranslationRequest, Usage

        assert self.runtime.service is not None
        usage = Usage()
        [result] = await self.runtime.service.translate(
            TranslationRequest([text], target, source=source, guidance=Guidance(context=context)), usage)
        self._memory_use[text] = MemoryUse(usage.segments, usage.tm_segments, usage.tm_examples)
        return result.text

    def memory_use(self, text: str) -> MemoryUse | None:
        return self._memory_use.get(text)

    async def translate_document(self, data: bytes, filename: str, source: str, target: str,
                                 context: str = "") -> bytes:
        """The file translated as ``mtserve translate FILE`` translates it, with this process's service."""
        from mtserve.documents.formats.registry import FORMATS, ReadOptions, read_document
        from mtserve.documents.jobs.runner import translate_document
        from mtserve.service.request import Guidance

        assert self.runtime.service is not None
        document = read_document(filename, data, FORMATS, ReadOptions.from_settings(self.settings))
        result = await translate_document(self.runtime.service, document, source, target,
                                          chunk_size=self.settings.files_chunk,
                                          guidance=Guidance(context=context) if context else None)
        return result.output.data

    async def translate_markup(self, text: str, source: str, target: str, fmt: str):
        """(the output, the request's Usage) for the markup eval: html, xml (DeepL's
        ``ignore_tags=x``) or text."""
        from mtserve.service.request import TranslationRequest, Usage
        from mtserve.text.html import TagHandling

        assert self.runtime.service is not None
        usage = Usage()
        tags = TagHandling("xml", ignore_tags=frozenset({"x"})) if fmt == "xml" else None
        [result] = await self.runtime.service.translate(
            TranslationRequest([text], target, source=source, format=fmt, tags=tags), usage)
        return result.text, usage

    def variants(self, text: str, source: str, target: str, context: str = "") -> dict[str, str]:
        from mtserve.service.planning import engine_request, to_target_script
        from mtserve.text.cleanup import clean_translation, strip_special_tokens

        service = self.runtime.service
        if service is None:
            return {}
        request = engine_request(text.strip(), source, target, {})
        raw = self._raw.get((request.text, False, context))
        if raw is None:  # cut into several segments, or served from the cache
            return {}
        unguarded = to_target_script(clean_translation(raw, request.text), target, {})
        return {"raw": to_target_script(strip_special_tokens(raw).strip(), target, {}),
                "unguarded": unguarded, "retried": str((request.text, True, context) in self._raw)}

    def describe(self) -> dict:
        engine = self.runtime.engine
        described = {"kind": "in-process", "model": engine.model_name, "engine": engine.name,
                     "prompt": self.prompt, "guardrails": self.settings.guardrails,
                     "n_parallel": self.settings.n_parallel, "threads": self.settings.threads}
        if self.memory:
            described["tm"] = (f"{self.memory['file']} ({self.memory['entries']} entries, k={self.settings.tm_k}, "
                               f"min similarity {self.settings.tm_min_similarity:g})")
        return described

    def counters(self) -> dict[str, float]:
        return metric_totals(self.runtime.metrics.registry)

    async def stop(self) -> None:
        await self.runtime.stop()
        self.runtime.memory.close()
        self._tm_dir.cleanup()


class HttpTarget:
    """A running mtserve (or any LibreTranslate-compatible server) at ``url``."""

    def __init__(self, url: str, api_key: str | None = None, concurrency: int = 4, timeout_s: float = 300.0):
        self.url = url.rstrip("/")
        self.api_key = api_key
        self.concurrency = max(1, concurrency)
        self.timeout_s = timeout_s
        self._client = None
        self._server: dict = {}

    async def start(self) -> None:
        import httpx

        self._client = httpx.AsyncClient(base_url=self.url, timeout=self.timeout_s)
        try:
            health = await self._client.get("/health")
        except httpx.TransportError as exc:
            raise TargetError(f"cannot reach {self.url}: {exc}; is `mtserve serve` running there?") from None
        if health.status_code != 200:
            raise TargetError(f"{self.url}/health answered {health.status_code}: {health.text[:200]}")
        details = await self._client.get("/health/details")  # mtserve's; another LibreTranslate has none
        self._server = details.json() if details.status_code == 200 and "json" in details.headers.get(
            "content-type", "") else {}

    async def warm(self, source: str, target: str, context: str = "") -> None:
        """Nothing: a server's warm state is its own (a request here would also enter its cache)."""

    async def translate(self, text: str, source: str, target: str, context: str = "") -> str:
        assert self._client is not None
        body: dict = {"q": text, "source": source, "target": target, "format": "text"}
        if context:
            body["context"] = context  # mtserve's extension; another LibreTranslate server ignores it
        if self.api_key:
            body["api_key"] = self.api_key
        response = await self._client.post("/translate", json=body)
        if response.status_code != 200:
            raise TargetError(f"{self.url}/translate answered {response.status_code}: {response.text[:300]}")
        return response.json()["translatedText"]

    async def translate_markup(self, text: str, source: str, target: str, fmt: str):
        """(the output, None): a server does not say which outputs took the fallback."""
        assert self._client is not None
        if fmt == "xml":
            body = {"text": [text], "source_lang": source.upper(), "target_lang": target.upper(),
                    "tag_handling": "xml", "ignore_tags": "x"}
            headers = {"Authorization": f"DeepL-Auth-Key {self.api_key}"} if self.api_key else {}
            response = await self._client.post("/v2/translate", json=body, headers=headers)
            if response.status_code != 200:
                raise TargetError(f"{self.url}/v2/translate answered {response.status_code}: {response.text[:300]}")
            return response.json()["translations"][0]["text"], None
        body: dict = {"q": text, "source": source, "target": target, "format": fmt}
        if self.api_key:
            body["api_key"] = self.api_key
        response = await self._client.post("/translate", json=body)
        if response.status_code != 200:
            raise TargetError(f"{self.url}/translate answered {response.status_code}: {response.text[:300]}")
        return response.json()["translatedText"], None

    async def translate_file(self, data: bytes, filename: str, source: str, target: str) -> bytes:
        """The file translated by the server: ``POST /translate_file``, then its download URL."""
        assert self._client is not None
        fields = {"source": source, "target": target, **({"api_key": self.api_key} if self.api_key else {})}
        response = await self._client.post("/translate_file", data=fields, files={"file": (filename, data)})
        if response.status_code != 200:
            raise TargetError(f"{self.url}/translate_file answered {response.status_code}: {response.text[:300]}")
        download = await self._client.get(response.json()["translatedFileUrl"])
        if download.status_code != 200:
            raise TargetError(f"{self.url}'s translated file answered {download.status_code}: {download.text[:300]}")
        return download.content

    def describe(self) -> dict:
        return {"kind": "http", "url": self.url, "model": self._server.get("model"),
                "engine": self._server.get("engine")}

    def counters(self) -> dict[str, float]:
        return {}

    def variants(self, text: str, source: str, target: str, context: str = "") -> dict[str, str]:
        return {}

    def memory_use(self, text: str) -> MemoryUse | None:
        return None  # a server does not say which segments its translation memory served

    async def stop(self) -> None:
        if self._client is not None:
            await self._client.aclose()


def metric_totals(registry) -> dict[str, float]:
    """Guardrail counters that counted, from a Prometheus registry, as {"name{label=value}": total}."""
    totals: dict[str, float] = {}
    for family in registry.collect():
        if not family.name.startswith("mtserve_guardrail"):
            continue
        for sample in family.samples:
            if not sample.name.endswith("_total") or not sample.value:
                continue  # (an unlabelled counter has a sample before it first counts)
            labels = ",".join(f"{k}={v}" for k, v in sorted(sample.labels.items()))
            totals[f"{sample.name}{{{labels}}}" if labels else sample.name] = sample.value
    return totals
