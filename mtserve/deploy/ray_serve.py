"""mtserve as a Ray Serve application: the same service, in replicas across a cluster.

Each replica is the whole service of one ``mtserve serve`` process: engine,
scheduler, cache, text pipeline and the FastAPI app, built inside the replica
so that the model loads once per replica and never travels over the wire.
Ray Serve's HTTP proxy routes each request to a replica, so clients see the
same API on the same port.

Batching stays inside the replica, in mtserve's scheduler, rather than in
``@serve.batch``: the scheduler splits requests into sentences, interleaves
them round-robin and keeps every llama.cpp slot (or the seq2seq dynamic
batcher) full, which gives continuous batching, sentence-level fairness and
token streaming. ``@serve.batch`` groups whole HTTP requests into a list and
answers them together, which would make a short request wait for a long
document and would not stream.

Ray Serve scales on ongoing requests per replica (``target_ongoing_requests``)
between ``min_replicas`` and ``max_replicas``. A replica reports healthy only
once its model is loaded, so the proxy never sends work to a replica that
would answer 503; a replica whose engine cannot load fails its health check
and Ray replaces it. The replica's own watchdog still restarts a hung engine
in place, which is faster than replacing the process.

Entry points: ``mtserve serve --ray`` (``run``), and ``app_builder`` for
``serve run`` and Ray Serve config files (KubeRay's RayService):
``import_path: mtserve.deploy.ray_serve:app_builder``.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import threading
from typing import Any

from mtserve.settings import Settings

log = logging.getLogger(__name__)

APP_NAME = "mtserve"
DEPLOYMENT_NAME = "mtserve"
REPLICA_HEADER = "x-mtserve-replica"  # which replica answered: shows the spread, helps debugging
LOAD_TIMEOUT_S = 600.0  # a replica that has not loaded its model by then is replaced

# Ray Serve kills its HTTP proxy when the proxy is not ready within 5 s of starting, or misses three
# 10 s health checks in a row. On a small machine busy loading models, the only proxy of a local
# cluster misses those: `serve.start` then fails with ActorDiedError, or clients meet a closed port
# while a new proxy starts. A cluster mtserve starts itself gets patient checks; a variable already
# set wins, and a cluster that `ray start` started keeps its own.
LOCAL_CLUSTER_ENV = {
    "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S": "60",
    "RAY_SERVE_PROXY_HEALTH_CHECK_TIMEOUT_S": "30",
}


# Ray's HTTP proxy is uvicorn, built without forwarded_allow_ips, so it reads FORWARDED_ALLOW_IPS and
# otherwise believes X-Forwarded-For from 127.0.0.1: a client on the proxy's host (or through `kubectl
# port-forward`, which arrives from the pod's loopback) could choose the address its anonymous rate
# limit counts. A replica sees only the address the proxy passes on.
PROXY_TRUST_ENV = "FORWARDED_ALLOW_IPS"


def local_cluster_env(settings: Settings) -> dict[str, str]:
    """The environment a local cluster's processes (the controller, Ray's HTTP proxy) inherit."""
    env = {name: os.environ.get(name, value) for name, value in LOCAL_CLUSTER_ENV.items()}
    env[PROXY_TRUST_ENV] = settings.forwarded_allow_ips.strip()  # the proxies mtserve serve trusts
    return env


class RayUnavailable(RuntimeError):
    """Ray Serve is not installed, or the cluster cannot be reached; the message says what to do."""


def _import_serve():
    try:
        from ray import serve
    except ImportError:
        raise RayUnavailable(
            "Ray Serve is not installed: pip install 'mtserve[ray]' (on every node of the cluster)"
        ) from None
    return serve


def autoscaling_config(settings: Settings) -> dict[str, Any]:
    """Ray Serve's autoscaling options from mtserve's settings (a fixed count when min == max)."""
    if settings.ray_min_replicas < 1:
        raise ValueError(f"ray_min_replicas must be at least 1, got {settings.ray_min_replicas}")
    if settings.ray_max_replicas < settings.ray_min_replicas:
        raise ValueError(
            f"ray_max_replicas ({settings.ray_max_replicas}) is below ray_min_replicas "
            f"({settings.ray_min_replicas}); raise MTSERVE_RAY_MAX_REPLICAS"
        )
    if settings.ray_target_ongoing_requests <= 0:
        raise ValueError("ray_target_ongoing_requests must be above 0")
    return {
        "min_replicas": settings.ray_min_replicas,
        "max_replicas": settings.ray_max_replicas,
        "initial_replicas": settings.ray_min_replicas,
        "target_ongoing_requests": settings.ray_target_ongoing_requests,
    }


def deployment_options(settings: Settings) -> dict[str, Any]:
    """Everything ``serve.deployment`` is given, as plain data (tested without Ray)."""
    return {
        "name": DEPLOYMENT_NAME,
        "autoscaling_config": autoscaling_config(settings),
        "ray_actor_options": {"num_cpus": settings.ray_replica_cpus},
        # admission is mtserve's scheduler's job (503 past max_queue); Ray only needs room above it
        "max_ongoing_requests": settings.max_queue + 8,
        "graceful_shutdown_timeout_s": settings.shutdown_grace_s,
        # the first health check waits for the model to load (see MtserveReplica.check_health)
        "health_check_timeout_s": LOAD_TIMEOUT_S,
        "health_check_period_s": 10.0,
    }


def replica_settings(settings: Settings) -> dict[str, Any]:
    """The settings a replica is built from, as plain JSON that crosses nodes.

    Only what was set (flags, ``MTSERVE_*``) travels; defaults such as ``home``
    are the replica's own node's. A replica's engine threads default to the CPUs
    Ray reserved for it, not to every core of a node it shares with others.
    """
    # url and api_key are the CLI's, as a client of a server: nothing a replica uses (a key would be masked)
    chosen = settings.model_dump(mode="json", exclude_unset=True, exclude={"ray", "ray_address", "url", "api_key"})
    chosen.setdefault("threads", max(1, int(settings.ray_replica_cpus)))
    return chosen


class MtserveReplica:
    """One replica: the mtserve FastAPI app with its own runtime, built where it runs."""

    def __init__(self, settings: dict[str, Any]):
        from mtserve.api.app import create_app
        from mtserve.logs import configure_logging

        self.settings = Settings(**settings)
        configure_logging(self.settings.log_level, self.settings.log_format)
        _pull_if_missing(self.settings)
        self.mtserve_app = create_app(self.settings)  # not `app`: Serve's wrapper owns that name
        self.replica_id = _replica_id()
        self.mtserve_app.add_middleware(ReplicaHeaderMiddleware, replica_id=self.replica_id)

    def __serve_build_asgi_app__(self):
        return self.mtserve_app

    async def check_health(self) -> None:
        runtime = self.mtserve_app.state.runtime
        if runtime.service is None and runtime.load_error is None and not runtime.restarting:
            # Ray's first health check gates traffic: wait here until the model is in memory.
            await asyncio.wait_for(runtime.wait_ready(), LOAD_TIMEOUT_S)
        if runtime.load_error is not None:
            raise RuntimeError(f"the engine failed to load: {runtime.load_error}")


class ReplicaHeaderMiddleware:
    """Names the replica that answered in ``X-Mtserve-Replica``."""

    def __init__(self, app, replica_id: str):
        self.app = app
        self.header = (REPLICA_HEADER.encode(), replica_id.encode())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)

        async def send_with_replica(message):
            if message["type"] == "http.response.start":
                message["headers"] = list(message.get("headers", [])) + [self.header]
            await send(message)

        await self.app(scope, receive, send_with_replica)


def _replica_id() -> str:
    try:
        from ray import serve

        return serve.get_replica_context().replica_id.unique_id
    except Exception:  # outside a replica (unit tests): the process is the replica
        return f"pid-{os.getpid()}"


def _pull_if_missing(settings: Settings) -> None:
    """On a fresh worker node, fetch a registry model into that node's store first."""
    from mtserve.models.store import ModelStore

    store = ModelStore(settings.models_dir)
    if settings.engine == "llamacpp" and settings.model in store.registry and not store.is_present(settings.model):
        log.info("pulling the model on this node", extra={"event": "model_pull", "model": settings.model})
        store.pull(settings.model)


def build_application(settings: Settings):
    """The Ray Serve application: one ingress deployment of ``MtserveReplica``."""
    serve = _import_serve()
    replica = serve.ingress()(MtserveReplica)
    return serve.deployment(**deployment_options(settings))(replica).bind(replica_settings(settings))


def app_builder(args: dict[str, Any]):
    """For ``serve run mtserve.deploy.ray_serve:app_builder model=...`` and RayService YAML.

    ``args`` are setting names and values (``model``, ``threads``, ``ray_max_replicas``...);
    ``MTSERVE_*`` variables in the replica's environment fill the rest.
    """
    return build_application(Settings(**(args or {})))


def _proxy_failure(exc: Exception, settings: Settings) -> str:
    """What to do when Ray's HTTP proxy did not start: its error's last line is the reason
    ("Failed to bind to address ...", or "The actor died ..."), not the actor's traceback."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    reason = lines[-1] if lines else type(exc).__name__
    where = f"{settings.host}:{settings.port}"
    if "bind" in reason.lower():
        return (f"Ray Serve's HTTP proxy cannot listen on {where} ({reason}); stop the server that "
                f"holds the port, or serve on another port with --port {settings.port + 1}")
    return (f"Ray Serve's HTTP proxy did not start on {where} ({reason}). On a busy machine, give it "
            "longer: RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S=120")


def run(settings: Settings) -> int:
    """``mtserve serve --ray``: start or join a cluster, deploy, serve until SIGTERM or Ctrl-C."""
    serve = _import_serve()
    import ray
    from ray.exceptions import RayError

    application = build_application(settings)  # bad replica counts fail here, before Ray starts
    started_cluster = not settings.ray_address
    if started_cluster:
        os.environ.update(local_cluster_env(settings))  # the cluster, started below, inherits them
    try:
        ray.init(
            address=settings.ray_address or "local",  # "local": a new cluster, never someone else's
            include_dashboard=False,
            log_to_driver=False,
        )
    except (ConnectionError, RuntimeError, ValueError) as exc:
        raise RayUnavailable(
            f"cannot reach the Ray cluster at {settings.ray_address!r}: {exc}. A cluster started with "
            "`ray start` uses token authentication (Ray 2.59+): set RAY_AUTH_MODE=token here, with the "
            "cluster's token in RAY_AUTH_TOKEN or ~/.ray/auth_token"
        ) from None
    try:
        serve.start(http_options={"host": settings.host, "port": settings.port})
    except RayError as exc:
        if started_cluster:
            ray.shutdown()
        raise RayUnavailable(_proxy_failure(exc, settings)) from None
    stop = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: stop.set())
    try:
        serve.run(application, name=APP_NAME, route_prefix="/", blocking=False)
        replicas = settings.ray_min_replicas
        log.info("ray serve ready", extra={"event": "ray_ready", "replicas": replicas,
                                            "url": f"http://{settings.host}:{settings.port}"})
        print(f"mtserve on Ray Serve: {replicas} replica(s) of {settings.model} on "
              f"http://{settings.host}:{settings.port}", flush=True)
        stop.wait()
    finally:
        # drains in-flight requests (graceful_shutdown_timeout_s) before replicas exit
        serve.delete(APP_NAME)
        if started_cluster:
            serve.shutdown()
            ray.shutdown()
    return 0
