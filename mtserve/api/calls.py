"""Running a translation for any API family: the service's request handed down with the caller's
key, usage and quota accounted, the work cancelled when the client goes away, and streams relayed as
server-sent events that end with an event that says why when the server shuts down."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from dataclasses import dataclass, replace
from typing import Any, AsyncIterator, Awaitable, Callable, Iterable, TypeVar

from fastapi import Request
from sse_starlette.sse import EventSourceResponse

from mtserve.api.errors import ApiError, ClientGone, NotReady
from mtserve.api.keys import caller_of, key_id_of, runtime_of
from mtserve.api.protocol import ServerClosing
from mtserve.service.request import Done, StreamEvent, Translation, TranslationRequest, Usage
from mtserve.service.translator import TranslationService
from mtserve.settings import Settings

T = TypeVar("T")
log = logging.getLogger(__name__)

# --- running a call --------------------------------------------------------------------------------
def service_of(request: Request) -> TranslationService:
    """The running translation service, or a 503 that says why there is none yet."""
    runtime = runtime_of(request)
    if runtime.service is None:
        if runtime.restarting:
            raise NotReady("the engine is restarting after a fault; retry shortly")
        if runtime.load_error:
            raise ApiError(503, f"the model failed to load: {runtime.load_error}")
        raise NotReady()
    return runtime.service


def charge(request: Request, chars: int) -> None:
    """Count ``chars`` against the caller's character quota (QuotaExceeded when it is spent)."""
    runtime_of(request).access.charge(key_id_of(request), chars)


def refund(request: Request, chars: int) -> None:
    runtime_of(request).access.refund(key_id_of(request), chars)


async def listen_for_disconnect(request: Request) -> None:
    """Return when the client closes the connection. Call it only once the body has been read:
    after that, the next ASGI message is the disconnect (as vLLM's ``with_cancellation`` waits)."""
    while True:
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return


async def until_disconnect(request: Request, work: Awaitable[T]) -> T:
    """``work``'s result; if the client goes away first, ``work`` is cancelled (its engine work
    stops) and ClientGone is raised, which the API answers with a bare 499."""
    task = asyncio.ensure_future(work)
    listener = asyncio.ensure_future(listen_for_disconnect(request))
    try:
        await asyncio.wait({task, listener}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        listener.cancel()
        if not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task
    if task.cancelled():
        raise ClientGone()
    return task.result()


async def run_call(request: Request, translation: TranslationRequest) -> tuple[list[Translation], Usage]:
    """One translation call of any API family: the caller's key put on the request (whose glossaries
    and translation-memory entries it may use), the usage and the characters in and out recorded
    for the request's log line and metrics, the caller's quota charged (and given back if the call
    fails), and the work cancelled if the client goes away (ClientGone); the deadline is the
    service's, or the request's own."""
    service = service_of(request)
    translation = replace(translation, key_id=key_id_of(request), caller=caller_of(request))
    usage = Usage()
    request.state.usage = usage
    request.state.chars_in = translation.chars  # billed: the texts; a context is not
    charge(request, translation.chars)
    try:
        results = await until_disconnect(request, service.translate(translation, usage))
    except BaseException:
        refund(request, translation.chars)
        raise
    request.state.chars_out = sum(len(result.text) for result in results)
    return results, usage


# --- streaming -------------------------------------------------------------------------------------
STREAM_CUT = ("the server is shutting down and this stream ended before its translation was done; send the "
              "request again (to another instance, or once the server is back)")
SSE_PING_S = 15  # a comment line this often keeps proxies from closing a quiet stream


class ShuttingDown(Exception):
    """The server began to shut down before the stream's next event."""


def closing_of(request: Request) -> ServerClosing:
    return request.app.state.closing


def event_stream(request: Request, content: AsyncIterator[Any]) -> EventSourceResponse:
    """An SSE response that ends as mtserve decides when the server shuts down.

    sse-starlette ends its streams the moment it sees the exit signal, with a clean end and no
    event, so a client cannot tell a cut stream from a finished one. Here its own cut waits the
    whole grace period, after the stream has ended itself with an event that says why.
    """
    settings: Settings = request.app.state.settings
    return EventSourceResponse(content, ping=SSE_PING_S, shutdown_grace_period=settings.shutdown_grace_s)


_END = object()


async def next_before(items: AsyncIterator[T], moment: asyncio.Future[None]) -> T | None:
    """The next of ``items`` (None at their end), or ShuttingDown if ``moment`` comes first; then the
    step under way is cancelled (a translation stream's engine work with it) and waited for."""
    if moment.done():
        raise ShuttingDown()
    step: asyncio.Future[Any] = asyncio.ensure_future(anext(items, _END))
    try:
        await asyncio.wait({step, moment}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        if not step.done():
            step.cancel()
            await asyncio.wait({step})
    if step.cancelled():
        raise ShuttingDown()
    item = step.result()
    return None if item is _END else item


@dataclass
class OpenStream:
    """A service stream whose first event is in: what a family's stream body relays."""

    events: AsyncIterator[StreamEvent]
    first: StreamEvent | None
    usage: Usage


async def open_stream(request: Request, translation: TranslationRequest) -> OpenStream:
    """Start a service stream for the request: the caller's key put on it, usage recorded, quota
    charged, and its first event pulled now, so an unsupported language, a glossary that does not
    fit or a full queue is a status before the 200 goes out (``first`` None: the stream is empty).
    A client that hangs up while the first event waits (behind other work) cancels the stream then,
    as it would later."""
    service = service_of(request)
    translation = replace(translation, key_id=key_id_of(request), caller=caller_of(request))
    usage = Usage()
    request.state.usage = usage
    request.state.chars_in = translation.chars
    charge(request, translation.chars)
    events = service.stream(translation, usage)
    try:
        return OpenStream(events, await until_disconnect(request, anext(events, None)), usage)
    except BaseException:
        refund(request, translation.chars)
        await events.aclose()
        raise


async def relay(request: Request, stream: OpenStream, render: Callable[[StreamEvent], Iterable[T]],
                failed: Callable[[str], T]) -> AsyncIterator[T]:
    """A family's stream body: each service event rendered in the family's shape, the final text's
    length recorded, and a mid-stream failure reported in-band (the status has been sent). A stream
    the shutdown grace period is about to cut ends with ``failed(STREAM_CUT)``."""
    events = stream.events
    try:
        event = stream.first
        while event is not None:
            if isinstance(event, Done):
                request.state.chars_out = len(event.translation.text)
            for item in render(event):
                yield item
            event = await next_before(events, closing_of(request).cut())
    except ShuttingDown:
        log.info("stream ended by the shutdown", extra={"event": "stream_cut"})
        yield failed(STREAM_CUT)
    except Exception as exc:
        message = str(exc) or type(exc).__name__
        log.warning("stream failed", extra={"event": "stream_error", "error": message})
        yield failed(message)
    finally:
        await events.aclose()
