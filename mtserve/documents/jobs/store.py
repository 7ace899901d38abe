"""Document jobs: upload, translate in the background, report progress, keep the result a while.

A job's files live under ``HOME/files`` (``uploads/`` while it is queued or
running, ``results/`` once it is done); its record lives in SQLite
(``HOME/jobs.sqlite3``, ``mtserve.documents.jobs.records``), written before the
upload is answered and after every change, from a worker thread. A cleanup task
deletes the records, results and leftover uploads of jobs ``files_ttl_s`` after
they finished: records and files go together.

A job belongs to the API key that uploaded it (``owner``, the key's public id;
None for a caller without a key, or any caller while keys are off), and only
that owner finds it by id (``get``). Its result is downloaded by a name that
starts with a token of 256 bits that is not the job id (an HMAC of the id under
a secret kept under HOME, as DeepL's document keys are, so it survives a
restart): the download URL is a capability, handed only to the owner, which
works without a key (LibreTranslate's clients fetch it bare) and which the logs
never print whole (``redacted_download``).

A restart loses nothing a client was promised. On start every record is read
back; a job that was queued or running when the server stopped (cleanly or
not) is queued again from its upload, parsed again and translated from the
start, or, if it cannot be (its upload is gone, its format is no longer
enabled, the file no longer parses within the limits), it ends as failed with
the reason. Finished jobs answer ``/jobs/{id}`` as before. Processes sharing
one ``$MTSERVE_HOME`` each keep their own unfinished jobs; a starting one takes
over only those of processes that are gone (``records.InstanceLocks``).

At most ``files_jobs`` documents are translated at once; the others wait in
line with status ``queued``. A job can be cancelled at any point: queued, it
never starts; running, its current chunk's engine work is stopped.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import enum
import hashlib
import hmac
import logging
import os
import re
import secrets
import time
from dataclasses import dataclass, field
from pathlib import Path, PurePath
from typing import AsyncIterator, Callable

from mtserve.documents.formats.base import (
    Document,
    DocumentError,
    LimitExceeded,
    StorageUnavailable,
    TooManyDocuments,
    storage_problem,
)
from mtserve.documents.formats.registry import enabled_formats, extensions_of, format_for
from mtserve.documents.jobs.records import InstanceLocks, JobRecords
from mtserve.documents.jobs.runner import translate_document
from mtserve.documents.jobs.sandbox import parse_document, warm
from mtserve.service.request import NO_GUIDANCE, Guidance, TranslationRequest, UnsupportedLanguage
from mtserve.service.scheduler import DeadlineExceeded, SchedulerStopped
from mtserve.service.translator import PromptTooLong, TranslationService
from mtserve.settings import Settings
from mtserve.text.detect import Detection

log = logging.getLogger("mtserve.documents.jobs")  # the name its log lines have always carried

RESULT_NAME = re.compile(r"[0-9a-f]{32}\.[A-Za-z0-9_-]{1,80}\.[A-Za-z0-9_-]{1,16}\.[a-z0-9]{1,8}")
DOWNLOAD_TOKEN_CHARS = 43  # 32 bytes of HMAC, URL-safe base64 without padding
DOWNLOAD_NAME = re.compile(r"[A-Za-z0-9_-]{43}\.[A-Za-z0-9_-]{1,80}\.[A-Za-z0-9_-]{1,16}\.[a-z0-9]{1,8}")
DOWNLOAD_SHOWN_CHARS = 4  # of a download token, in a log line: enough to tell two apart, far from enough to use
JOB_ID = re.compile(r"[0-9a-f]{32}")
ALL_OWNERS = "*"  # get()'s owner while API keys are off: every job is every caller's (key ids are hex)
SERVICE_WAIT_S = 600.0  # how long a job waits for the engine to (re)start before it fails
RESUMED_NOTE = "the server restarted before this document was finished; it was translated again from the start"


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
    chars: int = 0  # characters of text to translate (what DeepL's document API bills)
    detected: Detection | None = None
    result_name: str | None = None  # under results/, also the download name
    result_filename: str | None = None  # what the user's browser saves it as
    notes: list[str] = field(default_factory=list)
    created_at: float = field(default_factory=time.time)
    started_at: float | None = None  # when this process began translating it (not kept in its record)
    finished_at: float | None = None
    upload: str | None = None  # the file under uploads/ while the job is queued or running
    owner: str | None = None  # the id of the API key that uploaded it; None: a caller without a key
    # the request's context, instructions and formality (None: none; the format's default context applies)
    guidance: Guidance | None = None
    task: asyncio.Task | None = field(default=None, repr=False)
    version: int = 0
    _watchers: set[asyncio.Event] = field(default_factory=set, repr=False)

    def seconds_remaining(self, now: float | None = None) -> int | None:
        """An estimate while it runs: its time per segment so far, times the segments left (at least 1,
        since the result is still to be written). None while nothing tells: not running, or no
        segment done yet."""
        if self.status is not JobStatus.RUNNING or self.started_at is None or self.done <= 0:
            return None
        per_segment = ((time.time() if now is None else now) - self.started_at) / self.done
        return max(1, round(per_segment * max(0, self.total - self.done)))

    def touch(self) -> None:
        self.version += 1
        for event in self._watchers:
            event.set()

    def record(self) -> dict:
        """The job as its SQLite record holds it (the glossary is added once, on insert)."""
        detected = None if self.detected is None else {"language": self.detected.language,
                                                        "confidence": self.detected.confidence}
        return {"id": self.id, "version": self.version, "status": self.status.value, "filename": self.filename,
                "format": self.format, "source": self.source, "target": self.target, "total": self.total,
                "done": self.done, "section": self.section, "error": self.error,
                "error_status": self.error_status, "detected": detected, "result_name": self.result_name,
                "result_filename": self.result_filename, "notes": list(self.notes), "upload": self.upload,
                "created_at": self.created_at, "finished_at": self.finished_at, "chars": self.chars,
                "owner": self.owner, "guidance": None if self.guidance is None else {
                    "context": self.guidance.context, "instructions": list(self.guidance.instructions),
                    "formality": self.guidance.formality}}

    @classmethod
    def from_record(cls, row: dict) -> Job:
        detected = row.get("detected")
        guidance = row.get("guidance")
        return cls(id=row["id"], filename=row["filename"], format=row["format"], source=row["source"],
                   target=row["target"], total=row["total"], status=JobStatus(row["status"]), done=row["done"],
                   section=row["section"], error=row["error"], error_status=row["error_status"],
                   detected=Detection(detected["language"], detected["confidence"]) if detected else None,
                   result_name=row["result_name"], result_filename=row["result_filename"],
                   notes=list(row["notes"] or []), created_at=row["created_at"],
                   finished_at=row["finished_at"], upload=row["upload"], version=row["version"],
                   chars=row.get("chars") or 0, owner=row.get("owner"),
                   guidance=Guidance(guidance.get("context", ""), tuple(guidance.get("instructions", ())),
                                     guidance.get("formality", "default")) if guidance else None)


def _owner_label(job: Job) -> str:
    """Whose job it is, for a log line: the key's public id, as the request log names callers."""
    return f"key:{job.owner}" if job.owner else "anonymous"


def redacted_download(name: str) -> str:
    """A download name fit for a log: its token cut to its first few characters."""
    token, dot, rest = name.partition(".")
    if len(token) <= DOWNLOAD_SHOWN_CHARS:
        return name
    return f"{token[:DOWNLOAD_SHOWN_CHARS]}...{dot}{rest}"


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
        self.records = JobRecords(settings.jobs_db)
        self.instance = secrets.token_hex(8)  # this process, in the records of the jobs it runs
        self._locks = InstanceLocks(settings.home / "jobs.instances", self.instance)
        self.jobs: dict[str, Job] = {}
        self._downloads: dict[str, str] = {}  # download token -> job id
        self._reserved = 0  # places taken by uploads still being checked and parsed
        self._slots: asyncio.Semaphore | None = None
        self._cleanup: asyncio.Task | None = None
        self._writer: asyncio.Task | None = None
        self._dirty: set[str] = set()  # jobs changed since their record was last written
        self._wake_writer = asyncio.Event()
        self._stopping = False
        self._key: bytes | None = None  # see document_key

    # --- document keys ----------------------------------------------------------------
    def document_key(self, job: Job) -> str:
        """The secret that goes with a job id (DeepL's document_key): an HMAC of the id under a key
        kept under HOME, so it needs no column and survives a restart."""
        return hmac.new(self._secret(), job.id.encode(), hashlib.sha256).hexdigest()

    def key_matches(self, job: Job, key: str) -> bool:
        """Whether ``key`` is the job's document key, in either case (DeepL's clients hold it uppercase);
        compared as bytes, since compare_digest refuses a str that is not ASCII."""
        return hmac.compare_digest(self.document_key(job).encode(), (key or "").lower().encode())

    def _download_token(self, job_id: str) -> str:
        """The capability that downloads a job's result: an HMAC of its id, under the same secret as
        the document keys but apart from them, so neither the id nor the document key gives it."""
        digest = hmac.new(self._secret(), b"download:" + job_id.encode(), hashlib.sha256).digest()
        return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()

    def _secret(self) -> bytes:
        if self._key is None:
            path = self.settings.home / "document-keys.secret"
            try:
                self._key = path.read_bytes()
            except FileNotFoundError:
                path.parent.mkdir(parents=True, exist_ok=True)
                partial = path.with_name(path.name + f".{os.getpid()}.part")
                partial.write_bytes(secrets.token_bytes(32))
                partial.chmod(0o600)
                os.replace(partial, path)  # a concurrent first start keeps one of the two, and reads it
                self._key = path.read_bytes()
        return self._key

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
        """Read every job back from disk, queue again the ones a stop interrupted, then clean up."""
        self._stopping = False
        self._slots = asyncio.Semaphore(max(1, self.settings.files_jobs))
        self._wake_writer = asyncio.Event()
        await asyncio.to_thread(self._make_dirs)
        await asyncio.to_thread(self._secret)  # written now, not by the first upload (the disk may be full then)
        for row in await asyncio.to_thread(self._take_over):
            job = Job.from_record(row)
            self._track(job)
            if not job.status.finished:
                self._resume(job)
        self._writer = asyncio.create_task(self._write_loop())
        await self._sweep()
        warm(self.settings)  # the document workers start now, not on the first upload
        self._cleanup = asyncio.create_task(self._cleanup_loop())

    async def stop(self) -> None:
        """Stop every job where it is: its record stays queued or running, so the next start resumes it."""
        self._stopping = True
        tasks = [t for t in (self._cleanup, *(j.task for j in self.jobs.values())) if t is not None]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
        await self._flush()
        await asyncio.to_thread(self._locks.release)

    def _take_over(self) -> list[dict]:
        """The records this process serves: every finished job, and the unfinished ones no live process runs.

        Another process that shares this home (a Ray replica) keeps its own unfinished jobs; those of
        a process that died or stopped are claimed here, one starting process at a time.
        """
        self._locks.hold()
        with self._locks.taking_over():
            rows = self.records.load()
            mine = [r for r in rows if JobStatus(r["status"]).finished or not self._locks.alive(r["instance"])]
            self.records.claim([r["id"] for r in mine if not JobStatus(r["status"]).finished], self.instance)
        return mine

    def _make_dirs(self) -> None:
        self.uploads.mkdir(parents=True, exist_ok=True)
        self.results.mkdir(parents=True, exist_ok=True)

    def _resume(self, job: Job) -> None:
        """Queue a job that a stop interrupted; its upload is read and parsed again when its turn comes."""
        log.info("document job resumed after a restart", extra={"event": "job_resumed", "job": job.id,
                                                                 "status": job.status.value})
        job.status, job.done, job.section = JobStatus.QUEUED, 0, None
        if RESUMED_NOTE not in job.notes:
            job.notes.append(RESUMED_NOTE)
        self._changed(job)
        upload = self.uploads / (job.upload or f"{job.id}.missing")
        job.task = asyncio.create_task(self._run(job, None, upload, None))

    # --- the records ------------------------------------------------------------------
    def _changed(self, job: Job) -> None:
        """Tell watchers, and have the record written soon (changes in between are written once)."""
        job.touch()
        self._dirty.add(job.id)
        self._wake_writer.set()

    async def _write_loop(self) -> None:
        while True:
            await self._wake_writer.wait()
            self._wake_writer.clear()
            await self._flush()

    async def _flush(self) -> None:
        if not self._dirty:
            return
        ids, self._dirty = self._dirty, set()
        rows = [self.jobs[i].record() for i in ids if i in self.jobs]
        try:
            await asyncio.to_thread(self.records.update, rows)
        except Exception as exc:  # the disk: keep the changes, and try again at the next one
            self._dirty |= ids
            log.warning("could not write document job records", extra={"event": "jobs_write_error",
                                                                       "error": repr(exc)})

    # --- submitting ------------------------------------------------------------------
    def check_size(self, size: int) -> None:
        if size > self.max_bytes:
            raise LimitExceeded(
                f"the file is {size / 1e6:,.1f} MB; the limit is {self.settings.files_max_mb:g} MB "
                "(MTSERVE_FILES_MAX_MB)")

    async def submit(self, service: TranslationService, filename: str, data: bytes, source: str,
                     target: str, glossary: dict[str, str] | None = None,
                     glossary_id: str | None = None, key_id: str | None = None,
                     guidance: Guidance | None = None) -> Job:
        """Check and parse the file, then queue its translation. Raises DocumentError (4xx) first.

        A ``glossary_id`` and the formality are settled now (UnknownGlossary, GlossaryMismatch,
        FormalityUnsupported), so a bad one fails the upload;
        ``key_id`` is the caller's API key id: the job's owner, whose glossaries (and the operator's) it
        may name.
        ``guidance`` is the request's context (which replaces the format's default), instructions and
        formality. The job's record is on disk before this returns.
        """
        self.check_size(len(data))
        self._reserve_place()
        try:
            return await self._submit(service, filename, data, source, target, glossary, glossary_id, key_id,
                                      guidance)
        finally:
            self._reserved -= 1  # the job, if there is one, now holds its place itself

    def _reserve_place(self) -> None:
        """Take a place in the queue before anything awaits, so concurrent uploads cannot all pass."""
        active = sum(1 for job in self.jobs.values() if not job.status.finished) + self._reserved
        if active >= self.settings.files_queue:
            raise TooManyDocuments(f"{active} documents are already waiting or being translated; "
                                   "retry when one has finished (MTSERVE_FILES_QUEUE)")
        self._reserved += 1

    async def _submit(self, service: TranslationService, filename: str, data: bytes, source: str,
                      target: str, glossary: dict[str, str] | None, glossary_id: str | None,
                      key_id: str | None, guidance: Guidance | None = None) -> Job:
        fmt = format_for(filename, self.formats)
        service.check_pair(source, target)  # "auto": only the target is checked now
        settled = service.settle(TranslationRequest((), target, source=source, glossary=glossary,
                                                    glossary_id=glossary_id, guidance=guidance or NO_GUIDANCE,
                                                    key_id=key_id))
        glossary, guidance = settled.glossary, settled.guidance
        document = await parse_document(self.settings, filename, data, self.formats, target=target)  # a worker
        count = self._check_segments(document, fmt.extensions[0])
        job = Job(id=secrets.token_hex(16), filename=PurePath(filename).name, format=fmt.name,
                  source=source, target=target, total=count, notes=list(document.notes),
                  chars=sum(len(segment) for segment in document.segments), guidance=guidance or None,
                  owner=key_id)
        job.upload = f"{job.id}.{fmt.extensions[0]}"
        upload = self.uploads / job.upload
        await asyncio.to_thread(self._write, upload, data)
        try:
            await asyncio.to_thread(self.records.insert,
                                    {**job.record(), "glossary": glossary, "instance": self.instance})
        except BaseException as exc:
            with contextlib.suppress(OSError):
                upload.unlink()
            if (problem := storage_problem(exc)) is not None:
                raise problem from None
            raise
        self._track(job)
        job.task = asyncio.create_task(self._run(job, document, upload, glossary))
        log.info("document job queued", extra={"event": "job_queued", "job": job.id, "owner": _owner_label(job),
                                               "format": fmt.name, "bytes_in": len(data), "segments": count})
        return job

    def _check_segments(self, document: Document, extension: str) -> int:
        count = len(document.segments)
        if count > self.settings.files_max_segments:
            raise LimitExceeded(f"the document has {count:,} segments; the limit is "
                                f"{self.settings.files_max_segments:,} (MTSERVE_FILES_MAX_SEGMENTS)")
        if count == 0:
            raise DocumentError(f"the .{extension} file has no text to translate")
        return count

    def _write(self, path: Path, data: bytes) -> None:
        """Write ``data`` whole or not at all; a full or unwritable disk is a StorageUnavailable, and
        leaves no partial file behind."""
        partial = path.with_name(path.name + ".part")
        try:
            self._make_dirs()
            partial.write_bytes(data)
            partial.replace(path)
        except OSError as exc:
            with contextlib.suppress(OSError):
                partial.unlink()
            if (problem := storage_problem(exc)) is not None:
                log.warning("could not store a document file", extra={"event": "files_write_error",
                                                                      "error": exc.strerror or repr(exc)})
                raise problem from None
            raise

    async def _reload(self, job: Job, upload: Path) -> tuple[Document, dict[str, str] | None]:
        """A resumed job's document and glossary, from its upload and its record; DocumentError if gone."""
        try:
            fmt = format_for(job.filename, self.formats)
        except DocumentError as exc:
            raise DocumentError(f"the server restarted before this document was translated, and no longer "
                                f"takes its format: {exc}") from None
        try:
            data = await asyncio.to_thread(upload.read_bytes)
        except OSError:
            raise DocumentError("the server restarted before this document was translated, and its upload "
                                "is gone; upload the document again") from None
        document = await parse_document(self.settings, job.filename, data, self.formats, target=job.target)
        job.total = self._check_segments(document, fmt.extensions[0])
        return document, await asyncio.to_thread(self.records.glossary, job.id)

    async def _ready_service(self) -> TranslationService:
        """The translation service, waiting for it while the engine loads or restarts."""
        deadline = time.monotonic() + SERVICE_WAIT_S
        while (service := self._service()) is None:
            if time.monotonic() > deadline:
                raise SchedulerStopped(f"the translation service did not start within {SERVICE_WAIT_S:g} s")
            await asyncio.sleep(0.25)
        return service

    async def _run(self, job: Job, document: Document | None, upload: Path,
                   glossary: dict[str, str] | None) -> None:
        """Translate the job's document; ``document`` None: a resumed job, read again from its upload."""
        started = time.monotonic()
        interrupted = False  # by a stop: the record keeps its status, so the next start resumes it
        try:
            assert self._slots is not None, "JobStore.start() was not called"
            async with self._slots:
                service = await self._ready_service()
                if document is None:
                    document, glossary = await self._reload(job, upload)
                job.status = JobStatus.RUNNING
                job.started_at = time.time()
                self._changed(job)
                parsed = document

                def progress(done: int, total: int) -> None:
                    job.done = done
                    job.section = parsed.section_at(min(done, total - 1)) if total else None
                    self._changed(job)

                result = await translate_document(service, document, job.source, job.target,
                                                  chunk_size=self.settings.files_chunk, glossary=glossary,
                                                  guidance=job.guidance, key_id=job.owner,
                                                  on_progress=progress)
                stem = PurePath(job.filename).stem
                extension = result.output.extension
                job.detected = result.detected
                job.notes = result.notes + [n for n in job.notes if n == RESUMED_NOTE]
                name = f"{job.id}.{_slug(stem)}.{_slug(job.target)}.{extension}"
                await asyncio.to_thread(self._write, self.results / name, result.output.data)
                job.result_name = name
                job.result_filename = f"{stem}.{job.target}.{extension}"
                job.status = JobStatus.DONE
        except asyncio.CancelledError:
            if self._stopping:
                interrupted = True
            else:
                job.status = JobStatus.CANCELLED
        except (DocumentError, UnsupportedLanguage) as exc:
            self._fail(job, str(exc), 400)
        except PromptTooLong as exc:
            self._fail(job, str(exc), 413)
        except StorageUnavailable as exc:
            self._fail(job, str(exc), 507)
        except DeadlineExceeded:
            self._fail(job, "the engine was too busy to translate the document in time; try again later", 504)
        except SchedulerStopped as exc:
            self._fail(job, f"{exc}; submit the document again", 503)
        except Exception as exc:  # a real fault: logged in full, reported with the job id
            log.error("document job failed", exc_info=exc, extra={"event": "job_error", "job": job.id})
            self._fail(job, f"internal error while translating the document (job {job.id})", 500)
        finally:
            if not interrupted:
                job.finished_at = time.time()
                job.upload = None
                with contextlib.suppress(OSError):
                    upload.unlink()
                log.info("document job finished", extra={
                    "event": "job_finished", "job": job.id, "owner": _owner_label(job), "status": job.status.value,
                    "segments": job.done,
                    "duration_ms": round((time.monotonic() - started) * 1000, 1)})
                self._changed(job)

    @staticmethod
    def _fail(job: Job, message: str, status: int) -> None:
        job.status = JobStatus.FAILED
        job.error = message
        job.error_status = status

    # --- reading ----------------------------------------------------------------------
    def _track(self, job: Job) -> None:
        self.jobs[job.id] = job
        self._downloads[self._download_token(job.id)] = job.id

    def _forget(self, job: Job) -> None:
        self.jobs.pop(job.id, None)
        self._downloads.pop(self._download_token(job.id), None)

    def get(self, job_id: str, owner: str | None) -> Job | None:
        """The job with this id if ``owner`` (an API key id, None for a caller without one, or
        ``ALL_OWNERS``) owns it; None otherwise, so another's job and no job look the same. The id's
        hex is read in either case (DeepL's document API shows it uppercase)."""
        job_id = (job_id or "").lower()
        job = self.jobs.get(job_id) if JOB_ID.fullmatch(job_id) else None
        if job is None or (owner != ALL_OWNERS and job.owner != owner):
            return None
        return job

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
        await asyncio.to_thread(self._delete_files_and_records, [job])
        return False

    def download_name(self, job: Job) -> str | None:
        """The name its result is downloaded by (``/download_file/{name}``): the token, then the file's."""
        if job.result_name is None:
            return None
        return f"{self._download_token(job.id)}.{job.result_name.split('.', 1)[1]}"

    def download(self, name: str) -> tuple[Path, str] | None:
        """(the result file, the name to save it as) for a download name, while it lasts; None for a
        name no job's result has. The name alone is the permission: no key is asked for."""
        if not DOWNLOAD_NAME.fullmatch(name or ""):
            return None
        job = self.jobs.get(self._downloads.get(name[:DOWNLOAD_TOKEN_CHARS], ""))
        wanted = None if job is None else self.download_name(job)
        if job is None or wanted is None or not hmac.compare_digest(wanted, name):
            return None
        path = self.result_path(job.result_name or "")
        if path is None:
            return None
        return path, job.result_filename or name.split(".", 1)[1]

    def result_path(self, name: str) -> Path | None:
        """A result file by its name under results/: safe names only, and only until it expires."""
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

    # --- expiry ------------------------------------------------------------------------
    def _delete_files_and_records(self, jobs: list[Job]) -> None:
        """The records of ``jobs`` and their results (in a worker thread)."""
        for job in jobs:
            if job.result_name:
                with contextlib.suppress(OSError):
                    (self.results / job.result_name).unlink()
        self.records.delete(j.id for j in jobs)

    async def _sweep(self) -> None:
        """Forget finished jobs older than the TTL, with their records and results; delete leftover files."""
        now = time.time()
        expired = [j for j in self.jobs.values() if j.finished_at is not None and now - j.finished_at > self.ttl_s]
        for job in expired:
            self._forget(job)
        active = {j.id for j in self.jobs.values() if not j.status.finished}
        await asyncio.to_thread(self._sweep_disk, expired, active, now)

    def _sweep_disk(self, expired: list[Job], active: set[str], now: float) -> None:
        self._delete_files_and_records(expired)
        self.records.delete_finished_before(now - self.ttl_s)
        active = active | self.records.unfinished_ids()  # another process's too: their uploads stay
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
                await self._sweep()
            except Exception as exc:  # never let cleanup die; say why once per round
                log.warning("file cleanup failed", extra={"event": "files_cleanup_error", "error": repr(exc)})
