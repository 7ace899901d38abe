"""Documents are read and rendered in worker processes, under memory, CPU and wall-clock limits.

The readers' caps (``mtserve.documents.formats.limits``) bound what a file may expand to; this bounds
what reading it may cost, whatever a parser does with it: an RLIMIT_AS memory limit, an
RLIMIT_CPU time limit, and a wall-clock timeout after which the worker is killed. A parse that
runs out of any of them ends as a ``LimitExceeded`` (413) naming the setting, and the server's
own memory never holds a parse tree.

Workers are fresh interpreters (the server has llama.cpp threads; ``fork`` would copy a process
mid-flight), kept warm: start-up with the readers' libraries costs about a second.
One worker serves one request at a time; ``files_parse_workers`` of them run side by side, each
driven by a thread of its own, and the others wait in line without holding a thread. RLIMIT_CPU
counts a process's whole life, so each request gets the CPU it has used so far plus its budget;
a worker that hit a limit, or grew large, is replaced.

Translation-memory files (``/tm/import``) are read here too (``read_tm_file``): the worker streams
them with ``mtserve.service.tm_files``'s readers and sends back their pairs, so neither the parse
nor a file past the caller's caps costs the server's memory, and an import whose request ends
(the server's shutdown grace ran out) stops waiting and kills the worker.

Document objects hold lxml trees and cannot travel between processes, so the worker returns what
the runner needs (segments, notes, sections, the placeholder pattern), and rendering sends the
original bytes and the translations back to a worker, which parses again (parsing is
deterministic) and renders. ``SandboxedDocument`` keeps the ``Document`` interface.
"""

from __future__ import annotations

import asyncio
import atexit
import concurrent.futures
import dataclasses
import logging
import math
import os
import resource
import signal
import socket
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import field
from multiprocessing.connection import Connection
from pathlib import PurePath

from mtserve.documents.formats.base import Document, DocumentError, LimitExceeded, Output
from mtserve.documents.formats.limits import Limits
from mtserve.documents.formats.registry import FORMATS, Format, ReadOptions, format_for, read_document

log = logging.getLogger("mtserve.documents.sandbox")  # the name its log lines have always carried

MB = 1_000_000
CANCEL_POLL_S = 0.2  # how often a cancellable call looks at its cancel event while it waits
RENDER_FACTOR = 2  # a render's CPU and time budget, in parse budgets
RECYCLE_RSS_BYTES = 256 * 2**20  # a worker left this large after a request is replaced, not kept warm
# The memory limit (RLIMIT_AS) counts new mappings: what glibc kept mapped from an earlier parse is room
# the next parse could use past its limit. A worker whose address space stays this much above its fresh
# size after a request is replaced, and one holding more than a quarter of the next request's budget
# that way is replaced before it starts it.
RECYCLE_GROWTH_BYTES = 64 * 2**20
STALE_SHARE = 4


@dataclasses.dataclass(frozen=True)
class WorkerLimits:
    """What one parse or render may cost in its worker."""

    memory_bytes: int
    cpu_s: float
    timeout_s: float

    @classmethod
    def from_settings(cls, settings) -> WorkerLimits:
        return cls(memory_bytes=int(settings.files_parse_memory_mb * 2**20), cpu_s=settings.files_parse_cpu_s,
                   timeout_s=settings.files_parse_timeout_s)


class ParseCancelled(DocumentError):
    """A cancellable call's cancel event was set while it waited: its worker was stopped."""


@dataclasses.dataclass(frozen=True)
class _Request:
    kind: str  # "read", "render", "tm" (a translation-memory file) or "ping"
    filename: str
    data: bytes
    formats: tuple[str, ...]
    limits: Limits
    budget: WorkerLimits
    translations: tuple[str, ...] = ()
    target: str = ""  # for "read": the target it is for (a file may refuse one: check_target)
    options: ReadOptions = field(default_factory=ReadOptions)
    from_memory: frozenset[int] = frozenset()  # for "render": Document.from_memory
    tm: tuple = ()  # for "tm": (format, source, target, ReadCaps), as tm_files.read_tm takes them


# --- the worker process ------------------------------------------------------------------------------
class _CpuSpent(BaseException):
    """SIGXCPU: the request used its CPU seconds. A BaseException, so that no reader swallows it."""


def _on_cpu_limit(signum, frame) -> None:
    resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    raise _CpuSpent()


def _address_space() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")


def _resident() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _cpu_used() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def _main(fd: int) -> None:
    """The worker process's entry point (``python -c``), on its end of the socket pair."""
    _serve(Connection(fd))


def _serve(conn: Connection) -> None:
    """The worker's loop: one request at a time, each under its own limits, until the pipe closes."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the server's Ctrl-C is for the server
    for name in ("pdfminer", "pypdf", "fontTools"):  # they warn about every damaged file; the reply says it
        logging.getLogger(name).setLevel(logging.ERROR)
    signal.signal(signal.SIGXCPU, _on_cpu_limit)
    # Import every reader's libraries now, so that a request pays for none of it.
    for module in ("plain", "markdown", "subtitles", "office", "epub", "pdf", "i18n"):
        __import__(f"mtserve.documents.formats.{module}")
    import pdfminer.high_level  # noqa: F401
    import pypdf  # noqa: F401

    import mtserve.service.tm_files  # noqa: F401

    fresh = _address_space()
    conn.send(("ready", os.getpid()))
    while True:
        try:
            request: _Request = conn.recv()
        except (EOFError, OSError):
            return
        if (_address_space() - fresh) * STALE_SHARE > request.budget.memory_bytes:
            conn.send(("stale", None, True))  # the server asks a fresh worker instead
            return
        reply, recycle = _handle(request)
        # glibc keeps what a big parse took
        recycle = recycle or _resident() > RECYCLE_RSS_BYTES or _address_space() - fresh > RECYCLE_GROWTH_BYTES
        try:
            conn.send((*reply, recycle))
        except Exception as exc:  # a reply that does not pickle: say so rather than die silently
            conn.send(("crash", f"the worker could not send its answer: {exc!r}", True))
            recycle = True
        if recycle:
            return


def _handle(request: _Request) -> tuple[tuple, bool]:
    """(reply, whether the worker must be replaced after it)."""
    soft_as, hard_as = resource.getrlimit(resource.RLIMIT_AS)
    _, hard_cpu = resource.getrlimit(resource.RLIMIT_CPU)
    memory = f"{request.budget.memory_bytes / 2**20:,.0f} MiB"
    try:
        resource.setrlimit(resource.RLIMIT_CPU, (math.ceil(_cpu_used() + request.budget.cpu_s), hard_cpu))
        limit_as = _address_space() + request.budget.memory_bytes
        resource.setrlimit(resource.RLIMIT_AS, (limit_as if hard_as == resource.RLIM_INFINITY
                                                 else min(limit_as, hard_as), hard_as))
        return ("ok", _run(request)), False
    except _CpuSpent:
        return ("limit", f"{_what(request)} used more than {request.budget.cpu_s:g} s of CPU; the limit is "
                         f"{request.budget.cpu_s:g} s (MTSERVE_FILES_PARSE_CPU_S)"), True
    except MemoryError:
        return ("limit", f"{_what(request)} needed more than {memory} of memory; the limit is {memory} "
                         "(MTSERVE_FILES_PARSE_MEMORY_MB)"), True
    except LimitExceeded as exc:
        return ("limit", str(exc)), False
    except DocumentError as exc:
        if "memory allocation failed" in str(exc).lower():  # libxml2 under the address-space limit
            return ("limit", f"{_what(request)} needed more than {memory} of memory; the limit is {memory} "
                             "(MTSERVE_FILES_PARSE_MEMORY_MB)"), True
        return ("error", str(exc)), False
    except Exception:  # a reader's bug: the server logs it, the user gets a 400 that says what failed
        return ("crash", traceback.format_exc(limit=12)), True
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft_as, hard_as))
        resource.setrlimit(resource.RLIMIT_CPU, (resource.RLIM_INFINITY, hard_cpu))


def _what(request: _Request) -> str:
    action = "rendering" if request.kind == "render" else "reading"
    return f"{action} the {PurePath(request.filename).suffix or 'file'} file"


def _run(request: _Request):
    if request.kind == "ping":
        return os.getpid()
    if request.kind == "tm":
        from mtserve.service.tm import TMError
        from mtserve.service.tm_files import read_tm

        fmt, source, target, caps = request.tm
        try:
            return read_tm(request.data, fmt, source, target, caps)
        except TMError as exc:
            return exc  # the caller raises it again: its type says what the API answers (PastCap: 403)
    formats = tuple(f for f in FORMATS if f.name in request.formats)
    document = read_document(request.filename, request.data, formats, request.options, request.limits)
    if request.kind == "read":
        if request.target:
            document.check_target(request.target)
        return (document.format, document.segments, document.notes, document.placeholders, document.sections,
                document.markup, document.kept_check())
    from mtserve.documents.formats.limits import within

    document.from_memory = request.from_memory
    with within(request.limits):
        output = document.render(list(request.translations), request.target)
    return output, document.notes


# --- the server's side -----------------------------------------------------------------------------------
class _Worker:
    """One warm worker process, driven by one thread.

    A fresh interpreter (``python -c``), not multiprocessing: a fork would copy the server's
    llama.cpp threads mid-flight, and multiprocessing's spawn re-imports the server's main module.
    Requests and replies travel over a socket pair as multiprocessing's pickled frames.
    """

    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        path = os.pathsep.join(p for p in sys.path if p and os.path.isdir(p))
        env = {**os.environ, "PYTHONPATH": path}
        code = f"from mtserve.documents.jobs.sandbox import _main; _main({theirs.fileno()})"
        self.process = subprocess.Popen([sys.executable, "-c", code], pass_fds=(theirs.fileno(),), env=env,
                                        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
        theirs.close()
        self.conn = Connection(ours.detach())
        _LIVE.add(self)
        if not self.conn.poll(120):
            self.kill()
            raise RuntimeError("the document worker did not start within 120 s")
        try:
            self.conn.recv()
        except (EOFError, OSError):
            self.kill()
            code = self.process.poll()
            raise RuntimeError(f"the document worker failed to start (exit code {code})") from None

    def alive(self) -> bool:
        return self.process.poll() is None

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            pass
        self.conn.close()
        _LIVE.discard(self)

    def call(self, request: _Request, cancel: threading.Event | None = None) -> tuple:
        """The worker's reply; raises LimitExceeded or DocumentError for a worker that died or overran,
        ParseCancelled (the worker killed) once ``cancel`` is set."""
        started = time.monotonic()
        self.conn.send(request)
        if not self._answered(request, started, cancel):
            self.kill()
            limit = request.budget.timeout_s
            raise LimitExceeded(f"{_what(request)} took longer than {limit:g} s; the limit is {limit:g} s "
                                "(MTSERVE_FILES_PARSE_TIMEOUT_S)")
        try:
            return self.conn.recv()
        except (EOFError, OSError):
            try:
                code = self.process.wait(5)
            except subprocess.TimeoutExpired:
                code = None
            self.kill()
            log.warning("document worker died", extra={
                "event": "document_worker_died", "exit_code": code,
                "duration_ms": round((time.monotonic() - started) * 1000)})
            raise _death(request, code) from None

    def _answered(self, request: _Request, started: float, cancel: threading.Event | None) -> bool:
        """Whether the reply came within the request's time; ParseCancelled when ``cancel`` is set first."""
        if cancel is None:
            return self.conn.poll(request.budget.timeout_s)
        deadline = started + request.budget.timeout_s
        while not self.conn.poll(max(0.0, min(CANCEL_POLL_S, deadline - time.monotonic()))):
            if cancel.is_set():
                self.kill()
                raise ParseCancelled(f"{_what(request)} was stopped: its request ended")
            if time.monotonic() >= deadline:
                return False
        return True


def _death(request: _Request, code: int | None) -> LimitExceeded:
    if code == -signal.SIGXCPU:
        return LimitExceeded(f"{_what(request)} used more than {request.budget.cpu_s:g} s of CPU; the limit "
                             f"is {request.budget.cpu_s:g} s (MTSERVE_FILES_PARSE_CPU_S)")
    memory = f"{request.budget.memory_bytes / 2**20:,.0f} MiB"
    how = f"signal {signal.Signals(-code).name}" if code is not None and code < 0 else f"exit code {code}"
    return LimitExceeded(f"{_what(request)} stopped its worker ({how}): most likely it needed more than "
                         f"{memory} of memory, the limit (MTSERVE_FILES_PARSE_MEMORY_MB), or the file is "
                         "damaged")


_LIVE: set[_Worker] = set()


@atexit.register
def _kill_all() -> None:
    for worker in list(_LIVE):
        worker.kill()


class Sandbox:
    """``workers`` warm worker processes, each driven by one thread of a pool of its own."""

    def __init__(self, workers: int):
        self.workers = max(1, workers)
        self.executor = concurrent.futures.ThreadPoolExecutor(self.workers,
                                                              thread_name_prefix="mtserve-documents")
        self._local = threading.local()

    def _call(self, request: _Request, cancel: threading.Event | None = None) -> tuple:
        """Runs on one of the pool's threads, with that thread's worker."""
        if cancel is not None and cancel.is_set():
            raise ParseCancelled(f"{_what(request)} was stopped: its request ended")
        worker: _Worker | None = getattr(self._local, "worker", None)
        if worker is None or not worker.alive():
            worker = self._local.worker = _Worker()
        try:
            reply = worker.call(request, cancel)
        except (BrokenPipeError, ConnectionResetError):  # it died while idle: once more, on a new one
            worker.kill()
            worker = self._local.worker = _Worker()
            reply = worker.call(request, cancel)
        if reply[0] == "stale":  # it kept too much mapped from earlier parses for this request's budget
            worker.kill()
            worker = self._local.worker = _Worker()
            reply = worker.call(request, cancel)
        status, payload, recycle = reply
        if recycle:  # it exits after this reply (a limit was hit, or it grew large): wait for that
            worker.kill()
            self._local.worker = None
        return status, payload

    def call(self, request: _Request, cancel: threading.Event | None = None) -> tuple:
        """Blocking, from any thread; with ``cancel``, ParseCancelled soon after it is set, queued or running."""
        future = self.executor.submit(self._call, request, cancel)
        while cancel is not None:
            try:
                return future.result(timeout=CANCEL_POLL_S)
            except concurrent.futures.TimeoutError:
                if cancel.is_set() and future.cancel():  # still queued behind other parses
                    raise ParseCancelled(f"{_what(request)} was stopped: its request ended") from None
        return future.result()

    async def call_async(self, request: _Request) -> tuple:
        return await asyncio.get_running_loop().run_in_executor(self.executor, self._call, request)

    def warm(self) -> None:
        """Start the workers now rather than on the first upload."""
        limits = Limits.defaults()
        budget = WorkerLimits(memory_bytes=64 * 2**20, cpu_s=10, timeout_s=60)
        for _ in range(self.workers):
            self.executor.submit(self._call, _Request("ping", "", b"", (), limits, budget))


_SHARED: dict[int, Sandbox] = {}
_SHARED_LOCK = threading.Lock()


def shared(workers: int) -> Sandbox:
    """The process's sandbox of ``workers`` workers (servers in one process share it)."""
    with _SHARED_LOCK:
        if workers not in _SHARED:
            _SHARED[workers] = Sandbox(workers)
        return _SHARED[workers]


def _answer(reply: tuple, request: _Request):
    status = reply[0]
    if status == "ok":
        return reply[1]
    if status == "limit":
        raise LimitExceeded(reply[1])
    if status == "error":
        raise DocumentError(reply[1])
    log.error("document reader failed", extra={"event": "document_reader_error", "file": request.filename,
                                               "kind": request.kind, "traceback": reply[1]})
    last = reply[1].strip().splitlines()[-1] if reply[1].strip() else "unknown error"
    suffix = PurePath(request.filename).suffix or ""
    raise DocumentError(f"could not read the {suffix} file: the reader failed ({last}); the file may be "
                        "damaged")


class SandboxedDocument(Document):
    """A document read in a worker: its segments here, its tree there (rendering parses it again)."""

    def __init__(self, sandbox: Sandbox, request: _Request, parsed: tuple):
        fmt, segments, notes, placeholders, sections, markup, kept = parsed
        super().__init__(fmt, segments, notes=notes, placeholders=placeholders, sections=sections, markup=markup)
        self._kept = kept
        self._sandbox = sandbox
        self._request = request

    def placeholders_kept(self, source: str, translation: str) -> bool:
        verdict = self._kept(source, translation) if self._kept is not None else None
        return super().placeholders_kept(source, translation) if verdict is None else verdict

    def _render_request(self, translations: list[str], target: str) -> _Request:
        self.check(translations)
        request = self._request
        # A render parses again and then writes the file: it gets twice the CPU and time a parse does
        # (a 1,000-page PDF set back in place takes about 25 s here), and fails only after the
        # whole document was translated, so it should not be the one to hit the limit.
        budget = dataclasses.replace(request.budget, cpu_s=request.budget.cpu_s * RENDER_FACTOR,
                                     timeout_s=request.budget.timeout_s * RENDER_FACTOR)
        return _Request("render", request.filename, request.data, request.formats, request.limits,
                        budget, tuple(translations), target, request.options, self.from_memory)

    def _rendered(self, reply: tuple, request: _Request) -> Output:
        output, notes = _answer(reply, request)
        self.notes[:] = notes  # a render may add one (a PDF that came back as DOCX)
        return output

    def render(self, translations: list[str], target: str) -> Output:
        request = self._render_request(translations, target)
        return self._rendered(self._sandbox.call(request), request)

    async def render_async(self, translations: list[str], target: str) -> Output:
        request = self._render_request(translations, target)
        return self._rendered(await self._sandbox.call_async(request), request)


async def parse_document(settings, filename: str, data: bytes,
                         formats: tuple[Format, ...] = FORMATS, target: str = "") -> Document:
    """Read an upload within the settings' limits: in a worker process, or (files_parse_workers=0) here.

    Raises UnsupportedFormat, DocumentError or LimitExceeded; never anything else for a bad file.
    """
    limits = Limits.from_settings(settings)
    options = ReadOptions.from_settings(settings)
    format_for(filename, formats)  # an unknown extension needs no worker
    if not data:
        raise DocumentError(f"the file {PurePath(filename).name!r} is empty; there is nothing to translate")
    if settings.files_parse_workers <= 0:
        try:
            document = await asyncio.to_thread(read_document, filename, data, formats, options, limits)
            if target:
                document.check_target(target)
            return document
        except (DocumentError, MemoryError, RecursionError) as exc:
            if isinstance(exc, DocumentError):
                raise
            raise LimitExceeded(f"reading the file needed more than the server could give "
                                f"({type(exc).__name__}); parse documents in a worker "
                                "(MTSERVE_FILES_PARSE_WORKERS) to bound it") from None
    sandbox = shared(settings.files_parse_workers)
    request = _Request("read", filename, data, tuple(f.name for f in formats), limits,
                       WorkerLimits.from_settings(settings), target=target, options=options)
    parsed = _answer(await sandbox.call_async(request), request)
    return SandboxedDocument(sandbox, request, parsed)


def read_tm_file(settings, filename: str, data: bytes, fmt: str, source: str | None, target: str | None,
                 caps=None, cancel: threading.Event | None = None):
    """A translation-memory file's pairs (``tm_files.TMFile``), read in a worker within the parse limits
    (files_parse_workers=0: here, in this thread). Blocking: the API calls it in a worker thread.

    Raises TMError: PastCap past ``caps``, TMTooLarge past a worker limit (413), TMCancelled once
    ``cancel`` is set.
    """
    from mtserve.service.tm import TMCancelled, TMError, TMTooLarge
    from mtserve.service.tm_files import NO_CAPS, read_tm

    caps = caps or NO_CAPS
    if settings.files_parse_workers <= 0:
        try:
            return read_tm(data, fmt, source, target, caps)
        except (MemoryError, RecursionError) as exc:
            raise TMTooLarge(f"reading the file needed more than the server could give ({type(exc).__name__}); "
                             "parse files in a worker (MTSERVE_FILES_PARSE_WORKERS) to bound it") from None
    request = _Request("tm", filename, data, (), Limits.from_settings(settings), WorkerLimits.from_settings(settings),
                       tm=(fmt, source, target, caps))
    try:
        found = _answer(shared(settings.files_parse_workers).call(request, cancel), request)
    except ParseCancelled as exc:
        raise TMCancelled(str(exc)) from None
    except LimitExceeded as exc:
        raise TMTooLarge(str(exc)) from None
    except DocumentError as exc:
        raise TMError(str(exc)) from None
    if isinstance(found, TMError):
        raise found
    return found


def warm(settings) -> None:
    """Start the parse workers in the background (the server calls this when it starts)."""
    if settings.files_parse_workers > 0 and settings.files_formats.strip():
        shared(settings.files_parse_workers).warm()
