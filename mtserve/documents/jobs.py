"""Document jobs: upload, translate in the background, report progress, keep the result a while.

Jobs live in memory; their files live under ``HOME/files`` (``uploads/`` while
a job is queued or running, ``results/`` once it is done). A result's name
starts with its job's random id, so its download URL is unguessable, as
LibreTranslate's is. A cleanup task deletes results, leftover uploads and
finished jobs ``files_ttl_s`` after they were written; results therefore
survive a restart until they expire, though the job records do not.

At most ``files_jobs`` documents are translated at once; the others wait in
line with status ``queued``. A job can be cancelled at any point: queued, it
never starts; running, its current chunk's engine work is stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import re
import secrets
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path, PurePath
from typing import AsyncIterator, Callable

from mtserve.documents.base import Document, DocumentError, LimitExceeded, TooManyDocuments
from mtserve.documents.registry import enabled_formats, extensions_of, format_for
from mtserve.documents.sandbox import parse_document, warm
from mtserve.documents.runner import translate_document
from mtserve.service.scheduler import DeadlineExceeded, SchedulerStopped
from mtserve.service.translator import TranslationService, UnsupportedLanguage
from mtserve.settings import Settings
from mtserve.text.detect import Detection

log = logging.getLogger(__name__)

RESULT_NAME = re.compile(r"[0-9a-f]{32}\.[A-Za-z0-9_-]{1,80}\.[A-Za-z0-9_-]{1,16}\.[a-z0-9]{1,8}")
JOB_ID = re.compile(r"[0-9a-f]{32}")


class JobStatus(str, enum.Enum):
    QUEUED = "queued"
    RUNNING = "running"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"

    @property
    def finished(self) -> bool:
        return self in (JobStatus.DONE, JobStatus.FAILED, JobStatus.CANCELLED)


@dataclass(eq=False)
class Job:
    id: str
    filename: str
    format: str
    source: str
    target: str
    total: int
    status: JobStatus = JobStatus.QUEUED
    done: int = 0
    section: str | None = None
    error: str | None = None
    error_status: int | None = None  # the HTTP status that fits the failure
    detected: Detection | None = None
    result_name: str | None = None  # under results/, also the download name
    result_filename: str | None = None  # what the user's browser saves it as
    notes: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    task: asyncio.Task | None = field(default=None, repr=False)
    version: int = 0
    _watchers: set[asyncio.Event] = field(default_factory=set, repr=False)

    def touch(self) -> None:
        self.version += 1
        for event in self._watchers:
            event.set()

    def snapshot(self, ttl_s: float) -> dict:
        """The job as the API shows it."""
        body: dict = {
            "id": self.id,
            "status": self.status.value,
            "filename": self.filename,
            "format": self.format,
            "source": self.source,
            "target": self.target,
            "done": self.done,
            "total": self.total,
            "progress": round(self.done / self.total, 4) if self.total else 1.0,
            "section": self.section,
            "notes": self.notes,
            "createdAt": _iso(self.created_at),
        }
        if self.detected is not None:
            body["detectedLanguage"] = {"language": self.detected.language,
                                        "confidence": self.detected.confidence}
        if self.error:
            body["error"] = self.error
        if self.result_filename:
            body["resultFilename"] = self.result_filename
        if self.finished_at is not None:
            body["finishedAt"] = _iso(self.finished_at)
            body["expiresAt"] = _iso(self.finished_at + ttl_s)
        return body


def _iso(timestamp: float) -> str:
    return datetime.fromtimestamp(timestamp, timezone.utc).isoformat(timespec="seconds")


def _slug(stem: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", stem).strip("-")[:80] or "document"


class JobStore:
    def __init__(self, settings: Settings, service: Callable[[], TranslationService | None]):
        self.settings = settings
        self._service = service
        self.root = settings.files_dir
        self.uploads = self.root / "uploads"
        self.results = self.root / "results"
        self.formats = enabled_formats(settings.files_formats)
        self.jobs: dict[str, Job] = {}
        self._slots: asyncio.Semaphore | None = None
        self._cleanup: asyncio.Task | None = None

    # --- lifecycle -----------------------------------------------------------------
    @property
    def ttl_s(self) -> float:
        return self.settings.files_ttl_s

    @property
    def extensions(self) -> list[str]:
        return extensions_of(self.formats)

    @property
    def max_bytes(self) -> int:
        return int(self.settings.files_max_mb * 1_000_000)

    async def start(self) -> None:
        self._slots = asyncio.Semaphore(max(1, self.settings.files_jobs))
        await asyncio.to_thread(self._make_dirs)
        await asyncio.to_thread(self.sweep)
        warm(self.settings)  # the document workers start now, not on the first upload
        self._cleanup = asyncio.create_task(self._cleanup_loop())

    async def stop(self) -> None:
        tasks = [t for t in (self._cleanup, *(j.task for j in self.jobs.values())) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _make_dirs(self) -> None:
        self.uploads.mkdir(parents=True, exist_ok=True)
        self.results.mkdir(parents=True, exist_ok=True)

    # --- submitting ------------------------------------------------------------------
    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise LimitExceeded(
                f"the file is {size / 1e6:,.1f} MB; the limit is {self.settings.files_max_mb:g} MB "
                "(MTSERVE_FILES_MAX_MB)")

    async def submit(self, service: TranslationService, filename: str, data: bytes, source: str,
                     target: str, glossary: dict[str, str] | None = None,
                     glossary_id: str | None = None) -> Job:
        """Check and parse the file, then queue its translation. Raises DocumentError (4xx) first.

        A ``glossary_id`` is resolved now (UnknownGlossary, GlossaryMismatch), so a bad one fails the upload.
        """
        self.check_size(len(data))
        active = sum(1 for job in self.jobs.values() if not job.status.finished)
        if active >= self.settings.files_queue:
            raise TooManyDocuments(f"{active} documents are already waiting or being translated; "
                                   "retry when one has finished (MTSERVE_FILES_QUEUE)")
        fmt = format_for(filename, self.formats)
        service.check_pair(source, target)  # "auto": only the target is checked now
        glossary = service.request_glossary(source, target, glossary, glossary_id)
        document = await parse_document(self.settings, filename, data, self.formats)  # in a worker process
        count = len(document.segments)
        if count > self.settings.files_max_segments:
            raise LimitExceeded(f"the document has {count:,} segments; the limit is "
                                f"{self.settings.files_max_segments:,} (MTSERVE_FILES_MAX_SEGMENTS)")
        if count == 0:
            raise DocumentError(f"the .{fmt.extensions[0]} file has no text to translate")
        job = Job(id=secrets.token_hex(16), filename=PurePath(filename).name, format=fmt.name,
                  source=source, target=target, total=count, notes=list(document.notes))
        upload = self.uploads / f"{job.id}.{fmt.extensions[0]}"
        await asyncio.to_thread(self._write, upload, data)
        self.jobs[job.id] = job
        job.task = asyncio.create_task(self._run(job, document, upload, glossary))
        log.info("document job queued", extra={"event": "job_queued", "job": job.id, "format": fmt.name,
                                               "bytes_in": len(data), "segments": count})
        return job

    def _write(self, path: Path, data: bytes) -> None:
        self._make_dirs()
        partial = path.with_name(path.name + ".part")
        partial.write_bytes(data)
        partial.replace(path)

    async def _run(self, job: Job, document: Document, upload: Path, glossary: dict[str, str] | None) -> None:
        started = time.monotonic()
        try:
            assert self._slots is not None, "JobStore.start() was not called"
            async with self._slots:
                service = self._service()
                if service is None:
                    raise SchedulerStopped("the translation service is not running")
                job.status = JobStatus.RUNNING
                job.touch()

                def progress(done: int, total: int) -> None:
                    job.done = done
                    job.section = document.section_at(min(done, total - 1)) if total else None
                    job.touch()

                result = await translate_document(service, document, job.source, job.target,
                                                  chunk_size=self.settings.files_chunk, glossary=glossary,
                                                  on_progress=progress)
                stem = PurePath(job.filename).stem
                extension = result.output.extension
                job.detected = result.detected
                job.notes = result.notes
                name = f"{job.id}.{_slug(stem)}.{_slug(job.target)}.{extension}"
                await asyncio.to_thread(self._write, self.results / name, result.output.data)
                job.result_name = name
                job.result_filename = f"{stem}.{job.target}.{extension}"
                job.status = JobStatus.DONE
        except asyncio.CancelledError:
            job.status = JobStatus.CANCELLED
        except (DocumentError, UnsupportedLanguage) as exc:
            self._fail(job, str(exc), 400)
        except DeadlineExceeded:
            self._fail(job, "the engine was too busy to translate the document in time; try again later", 504)
        except SchedulerStopped as exc:
            self._fail(job, f"{exc}; submit the document again", 503)
        except Exception as exc:  # a real fault: logged in full, reported with the job id
            log.error("document job failed", exc_info=exc, extra={"event": "job_error", "job": job.id})
            self._fail(job, f"internal error while translating the document (job {job.id})", 500)
        finally:
            job.finished_at = time.time()
            with contextlib.suppress(OSError):
                upload.unlink()
            log.info("document job finished", extra={
                "event": "job_finished", "job": job.id, "status": job.status.value, "segments": job.done,
                "duration_ms": round((time.monotonic() - started) * 1000, 1)})
            job.touch()

    @staticmethod
    def _fail(job: Job, message: str, status: int) -> None:
        job.status = JobStatus.FAILED
        job.error = message
        job.error_status = status

    # --- reading ----------------------------------------------------------------------
    def get(self, job_id: str) -> Job | None:
        return self.jobs.get(job_id) if JOB_ID.fullmatch(job_id or "") else None

    async def wait(self, job: Job) -> Job:
        """Until the job ends. Cancelling the waiter cancels the job (the client went away)."""
        assert job.task is not None
        try:
            await asyncio.shield(job.task)
        except asyncio.CancelledError:
            job.task.cancel()
            raise
        return job

    async def watch(self, job: Job, keepalive_s: float = 15.0) -> AsyncIterator[Job]:
        """The job after every change, until it has finished."""
        seen = -1
        while True:
            if job.version != seen:
                seen = job.version
                yield job
                if job.status.finished:
                    return
                continue
            event = asyncio.Event()
            job._watchers.add(event)
            try:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(event.wait(), keepalive_s)
            finally:
                job._watchers.discard(event)

    async def cancel(self, job: Job) -> bool:
        """Cancel a queued or running job (True), or delete a finished one and its result (False)."""
        if not job.status.finished and job.task is not None:
            job.task.cancel()
            await asyncio.gather(job.task, return_exceptions=True)
            return True
        self._forget(job)
        return False

    def result_path(self, name: str) -> Path | None:
        """The result file for a download name: safe names only, and only until it expires."""
        if not RESULT_NAME.fullmatch(name or ""):
            return None
        path = self.results / name
        try:
            if path.resolve().parent != self.results.resolve() or not path.is_file():
                return None
            if time.time() - path.stat().st_mtime > self.ttl_s:
                path.unlink()
                return None
        except OSError:
            return None
        return path

    def download_filename(self, name: str) -> str:
        job = self.jobs.get(name.split(".", 1)[0])
        if job is not None and job.result_filename:
            return job.result_filename
        return name.split(".", 1)[1]

    # --- expiry ------------------------------------------------------------------------
    def _forget(self, job: Job) -> None:
        self.jobs.pop(job.id, None)
        if job.result_name:
            with contextlib.suppress(OSError):
                (self.results / job.result_name).unlink()

    def sweep(self) -> None:
        """Delete finished jobs, results and leftover uploads older than the TTL."""
        now = time.time()
        for job in list(self.jobs.values()):
            if job.finished_at is not None and now - job.finished_at > self.ttl_s:
                self._forget(job)
        active = {j.id for j in self.jobs.values() if not j.status.finished}
        for folder in (self.uploads, self.results):
            if not folder.is_dir():
                continue
            for path in folder.iterdir():
                with contextlib.suppress(OSError):
                    if path.name.split(".", 1)[0] not in active and now - path.stat().st_mtime > self.ttl_s:
                        path.unlink()

    async def _cleanup_loop(self) -> None:
        interval = min(60.0, max(0.2, self.ttl_s / 4))
        while True:
            await asyncio.sleep(interval)
            try:
                await asyncio.to_thread(self.sweep)
            except Exception as exc:  # never let cleanup die; say why once per round
                log.warning("file cleanup failed", extra={"event": "files_cleanup_error", "error": repr(exc)})
