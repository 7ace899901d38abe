"""Who is calling: a request's API key, from wherever its family's clients send it.

Keys (``admit``, ``authorize``) come from the body's ``api_key``, an ``Authorization`` header
(``Bearer``, or DeepL's ``DeepL-Auth-Key``), or an ``api_key`` query parameter (LibreTranslate reads
``request.values``, and an EventSource or a download link cannot send headers). The key's id is what
everything a caller stores belongs to (``key_id_of``, ``job_owner``).
"""

from __future__ import annotations

import logging
from typing import TypeVar

from fastapi import Request

from mtserve.documents.jobs.store import ALL_OWNERS
from mtserve.service.access import AccessDenied, client_network
from mtserve.service.runtime import Runtime

T = TypeVar("T")
log = logging.getLogger(__name__)

# --- keys ------------------------------------------------------------------------------------------
def runtime_of(request: Request) -> Runtime:
    return request.app.state.runtime


def bearer_token(request: Request) -> str | None:
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() not in ("bearer", "deepl-auth-key"):
        return None
    return token.strip() or None


def request_key(request: Request) -> str | None:
    """A key sent outside the body: an Authorization header, or ``?api_key=`` in the URL."""
    return bearer_token(request) or request.query_params.get("api_key") or None


def _ip(request: Request) -> str:
    return request.client.host if request.client else "-"


def admit(request: Request, body_key: str | None = None) -> None:
    """Check the API key and count the request against its rate limit (a no-op unless api_keys is on).

    The key comes from the body's ``api_key`` (LibreTranslate clients), an ``Authorization:
    Bearer`` (or DeepL's ``DeepL-Auth-Key``) header, or ``?api_key=``. Only the key's public id
    reaches the log.
    """
    caller = runtime_of(request).access.admit(body_key or request_key(request), _ip(request))
    request.state.caller = caller.label
    request.state.key_id = caller.key_id  # whose stored glossaries, memory and quota the request uses


def key_id_of(request: Request) -> str | None:
    """The id of the API key that admit() or authorize() accepted for this request; None without one."""
    return getattr(request.state, "key_id", None)


def caller_of(request: Request) -> str:
    """Whom a request counts against for its fair share of admission: its API key, or without one
    the client's network (an IPv4 address, an IPv6 /64), as the anonymous rate limit counts it."""
    key_id = key_id_of(request)
    return f"key:{key_id}" if key_id else f"net:{client_network(_ip(request))}"


def job_owner(request: Request) -> str | None:
    """Whose document jobs this caller reaches (after admit() or authorize()): its key's, or those of
    callers without a key; every job while API keys are off."""
    return key_id_of(request) if runtime_of(request).access.enabled else ALL_OWNERS


def authorize(request: Request, *, required: bool = False) -> None:
    """Check the key of a route that reads back work (a job, a download, the model list, metrics).

    Unlike ``admit``, it does not count against a rate limit: polling a job must not use up the
    requests its caller paid for. ``required`` asks for a key even where anonymous use is allowed.
    """
    access = runtime_of(request).access
    secret = request_key(request)
    if required and not access.enabled:
        raise AccessDenied("this route needs an API key, and API keys are off on this server "
                           "(MTSERVE_API_KEYS)")
    if required and not secret:
        raise AccessDenied("an API key is required: send it in an Authorization: Bearer header")
    caller = access.check(secret, _ip(request))
    request.state.caller = caller.label
    request.state.key_id = caller.key_id


