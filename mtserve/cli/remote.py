"""A running mtserve, as ``mtserve translate --url`` and ``mtserve translate-file --url`` use it.

Texts go to LibreTranslate's ``POST /translate``; a document goes to ``POST /jobs``, its progress is
followed on ``GET /jobs/{id}/events`` and its result fetched from the download URL. The key
(``--api-key``, MTSERVE_API_KEY) goes in an ``Authorization: Bearer`` header. Every failure is a
``ServerError`` whose message says what the server answered, or why it could not be reached, and what
to do about it.
"""

from __future__ import annotations

import contextlib
import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Iterator

import httpx

# Texts in flight at once: enough to keep a server's slots busy (4, and 2 queued in llama.cpp by
# default), well inside what one caller may have admitted (MTSERVE_MAX_QUEUE_PER_CALLER, 32).
IN_FLIGHT = 8
CONNECT_TIMEOUT_S = 10.0
# A text may wait in the server's queue; the server's own deadline (MTSERVE_REQUEST_TIMEOUT_S) ends it first.
READ_TIMEOUT_S = 600.0
POLL_S = 0.2  # how often a job is asked for when its events broke off


class ServerError(RuntimeError):
    """The server refused or failed the work, or could not be reached; the message says which."""


@dataclass
class RemoteDocument:
    """A translated document, as the job API reports it."""

    data: bytes
    extension: str
    notes: list[str] = field(default_factory=list)
    source: str = ""
    detected: dict[str, Any] | None = None  # {"language", "confidence"} when the source was detected


class RemoteServer:
    """A running mtserve at ``url`` (``http://HOST:PORT``)."""

    def __init__(self, url: str, api_key: str = "", *, transport: httpx.BaseTransport | None = None):
        """``transport``: httpx's, under the document calls (a test's stand-in for a server)."""
        self.url = url.rstrip("/")
        self.transport = transport
        if not self.url.startswith(("http://", "https://")):
            raise ServerError(f"--url {url!r} is not an http:// or https:// URL; e.g. --url http://127.0.0.1:8000")
        self.headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self.timeout = httpx.Timeout(READ_TIMEOUT_S, connect=CONNECT_TIMEOUT_S)

    # --- texts ---------------------------------------------------------------------------------------
    def async_client(self) -> httpx.AsyncClient:
        limits = httpx.Limits(max_connections=IN_FLIGHT)
        return httpx.AsyncClient(base_url=self.url, headers=self.headers, timeout=self.timeout, limits=limits)

    async def translate(self, client: httpx.AsyncClient, text: str, source: str, target: str, *,
                        fmt: str = "text", context: str = "", tm: bool = True) -> str:
        body: dict[str, Any] = {"q": text, "source": source, "target": target, "format": fmt}
        if context:
            body["context"] = context
        if not tm:
            body["tm"] = False
        try:
            response = await client.post("/translate", json=body)
        except httpx.TransportError as exc:
            raise self.unreachable(exc) from None
        return self.checked(response, "/translate")["translatedText"]

    # --- documents -----------------------------------------------------------------------------------
    def translate_file(self, path: Path, data: bytes, source: str, target: str, *, context: str = "",
                       on_progress: Callable[[dict[str, Any]], None] | None = None) -> RemoteDocument:
        """Upload ``data`` as a job, follow it to its end (``on_progress`` gets the job after each change),
        and download the result. An interrupted wait (Ctrl-C) cancels the job on the server."""
        fields = {"source": source, "target": target}
        if context:
            fields["context"] = context
        with httpx.Client(headers=self.headers, timeout=self.timeout, transport=self.transport) as client:
            try:
                response = client.post(f"{self.url}/jobs", data=fields, files={"file": (path.name, data)})
            except httpx.TransportError as exc:
                raise self.unreachable(exc) from None
            job = self.checked(response, "/jobs")
            try:
                job = self._follow(client, job, on_progress)
            except BaseException:  # Ctrl-C too: the server need not finish what nobody will fetch
                if job.get("status") not in ("done", "failed", "cancelled"):
                    with contextlib.suppress(Exception):
                        client.delete(f"{self.url}/jobs/{job['id']}", timeout=5)
                raise
            if job["status"] != "done":
                raise ServerError(f"the server's job for {path.name} {job['status']}: "
                                  f"{job.get('error') or 'no reason given'}")
            try:
                download = client.get(job["translatedFileUrl"])
            except httpx.TransportError as exc:
                raise self.unreachable(exc) from None
            if download.status_code != 200:
                self.checked(download, "the download")
        detected = job.get("detectedLanguage")
        return RemoteDocument(download.content, Path(job.get("resultFilename") or path.name).suffix.lstrip("."),
                              notes=list(job.get("notes") or []),
                              source=detected["language"] if detected else job.get("source", source),
                              detected=detected)

    def _follow(self, client: httpx.Client, job: dict[str, Any],
                on_progress: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
        """The job once it has ended, from its events; if they break off before the end, by asking
        for the job until it has."""
        if on_progress is not None:
            on_progress(job)
        url = job.get("events") or f"{self.url}/jobs/{job['id']}/events"
        try:
            with client.stream("GET", url, timeout=httpx.Timeout(None, connect=CONNECT_TIMEOUT_S)) as events:
                if events.status_code != 200:
                    events.read()
                    self.checked(events, "the job's events")
                for kind, data in sse_events(events.iter_lines()):
                    if kind == "error":  # the server is shutting down: the job resumes when it is back
                        break
                    job = json.loads(data)
                    if on_progress is not None:
                        on_progress(job)
                    if kind in ("done", "failed", "cancelled"):
                        return job
        except httpx.TransportError:
            pass
        return self._poll(client, job, on_progress)

    def _poll(self, client: httpx.Client, job: dict[str, Any],
              on_progress: Callable[[dict[str, Any]], None] | None) -> dict[str, Any]:
        failures = 0
        while job.get("status") not in ("done", "failed", "cancelled"):
            time.sleep(POLL_S)
            try:
                response = client.get(f"{self.url}/jobs/{job['id']}")
            except httpx.TransportError as exc:
                failures += 1
                if failures * POLL_S >= CONNECT_TIMEOUT_S:
                    raise self.unreachable(exc) from None
                continue
            failures = 0
            job = self.checked(response, "the job")
            if on_progress is not None:
                on_progress(job)
        return job

    # --- answers -------------------------------------------------------------------------------------
    def checked(self, response: httpx.Response, what: str) -> dict[str, Any]:
        """The JSON of a successful answer; a ServerError with the server's own words otherwise."""
        if response.status_code in (200, 202):
            try:
                return response.json()
            except ValueError:
                raise ServerError(f"{self.url} answered {what} with something that is not JSON; is it an "
                                  "mtserve (or LibreTranslate) server?") from None
        try:
            body = response.json()
        except ValueError:
            body = {}
        message = body.get("error") if isinstance(body, dict) else None
        hint = body.get("hint") if isinstance(body, dict) else None
        if not message:
            message = response.text.strip()[:200] or response.reason_phrase
        said = f"the server at {self.url} answered {what} with {response.status_code}: {message}"
        if hint:
            said += f" ({hint})"
        if response.status_code in (400, 401, 403) and not self.headers and "key" in said.lower():
            said += "; give the key with --api-key or MTSERVE_API_KEY"
        raise ServerError(said)

    def unreachable(self, exc: httpx.TransportError) -> ServerError:
        return ServerError(f"cannot reach the server at {self.url} ({type(exc).__name__}: {exc or 'no answer'}); "
                           "start it with `mtserve serve`, or leave out --url (and MTSERVE_URL) to translate "
                           "in this process")


def sse_events(lines: Iterator[str]) -> Iterator[tuple[str, str]]:
    """(event, data) of each server-sent event; comments (pings) are skipped."""
    kind, data = "message", []
    for line in lines:
        if not line:
            if data:
                yield kind, "\n".join(data)
            kind, data = "message", []
        elif line.startswith(":"):
            continue
        else:
            name, _, value = line.partition(":")
            value = value.removeprefix(" ")
            if name == "event":
                kind = value
            elif name == "data":
                data.append(value)
    if data:
        yield kind, "\n".join(data)
