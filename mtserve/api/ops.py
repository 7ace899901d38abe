"""Operations: health (liveness and readiness) and Prometheus metrics, for every API family.

``GET /health`` is LibreTranslate's: exactly ``{"status": "ok"}`` once the model is loaded (its
clients compare the body), a 503 with the state in ``status`` before. What mtserve knows beyond
that (model, engine, restarts, the queue, why loading failed) is at ``/health/details``.
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from mtserve.api.keys import authorize, runtime_of
from mtserve.settings import Settings

router = APIRouter(tags=["operations"])


def _status(runtime) -> str:
    if runtime.ready:
        return "ok"
    return "restarting" if runtime.restarting else "error" if runtime.load_error else "loading"


@router.get("/health")
async def health(request: Request):
    """LibreTranslate's readiness: 200 and exactly ``{"status": "ok"}`` once the model is loaded; 503
    and ``{"status": "loading"}`` (``restarting``, ``error``) before. Details: /health/details."""
    runtime = runtime_of(request)
    return JSONResponse({"status": _status(runtime)}, status_code=200 if runtime.ready else 503)


@router.get("/health/details")
async def health_details(request: Request):
    """Readiness with mtserve's details: the status, model and engine, restarts, the queue, and why
    loading failed; 200 once the model is loaded, 503 before (or if loading failed)."""
    runtime = runtime_of(request)
    body = {
        "status": _status(runtime),
        "restarts": runtime.restarts,
        "live": True,
        "ready": runtime.ready,
        "model": runtime.model.model,
        "engine": runtime.model.engine,
    }
    if runtime.load_error:
        body["error"] = runtime.load_error
    if runtime.service is not None:
        body["queue"] = {
            "admitted": runtime.service.scheduler.admitted,
            "segments_waiting": runtime.service.scheduler.segments_waiting,
            "max_queue": runtime.service.scheduler.max_queue,
        }
    return JSONResponse(body, status_code=200 if runtime.ready else 503)


@router.get("/health/live")
async def health_live():
    """Liveness: the process answers. Never depends on the model."""
    return {"live": True}


@router.get("/health/ready")
async def health_ready(request: Request):
    """Readiness alone, for load balancers."""
    runtime = runtime_of(request)
    return JSONResponse({"ready": runtime.ready}, status_code=200 if runtime.ready else 503)


@router.get("/metrics", include_in_schema=False)
async def metrics(request: Request):
    """Prometheus metrics; with metrics_require_key on, only for a valid key (Authorization: Bearer)."""
    settings: Settings = request.app.state.settings
    if settings.metrics_require_key:
        authorize(request, required=True)
    return Response(generate_latest(runtime_of(request).metrics.registry), media_type=CONTENT_TYPE_LATEST)
