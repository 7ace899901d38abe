"""Ray Serve: the deployment's options, and a local cluster with two replicas of the small model.

The cluster test runs when Ray is installed (`make test` installs it with the
test extras); it is marked ``ray`` so `pytest -m "not ray"` leaves it out.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import importlib.util
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import psutil
import pytest

from mtserve.deploy.ray_serve import (
    LOCAL_CLUSTER_ENV,
    REPLICA_HEADER,
    ReplicaHeaderMiddleware,
    _proxy_failure,
    autoscaling_config,
    deployment_options,
    local_cluster_env,
    replica_settings,
)
from mtserve.settings import Settings
from tests.servers import free_port, server_log, start_server, stop_server, wait_ready

CLUSTER_TIME_BOX_S = 300  # the whole cluster test, start to stop


# --- options, without Ray ---------------------------------------------------------------------
def test_autoscaling_follows_the_settings():
    settings = Settings(ray_min_replicas=2, ray_max_replicas=5, ray_target_ongoing_requests=3)
    assert autoscaling_config(settings) == {
        "min_replicas": 2, "max_replicas": 5, "initial_replicas": 2, "target_ongoing_requests": 3.0,
    }


@pytest.mark.parametrize("kwargs, message", [
    ({"ray_min_replicas": 3, "ray_max_replicas": 2}, "MTSERVE_RAY_MAX_REPLICAS"),
    ({"ray_min_replicas": 0}, "at least 1"),
    ({"ray_target_ongoing_requests": 0}, "above 0"),
])
def test_replica_counts_that_cannot_work_are_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        autoscaling_config(Settings(**kwargs))


def test_deployment_leaves_admission_to_the_scheduler():
    options = deployment_options(Settings(max_queue=10, ray_replica_cpus=2, shutdown_grace_s=7))
    assert options["ray_actor_options"] == {"num_cpus": 2}
    assert options["max_ongoing_requests"] > 10  # mtserve answers 503 past max_queue, not Ray
    assert options["graceful_shutdown_timeout_s"] == 7


def test_replicas_get_what_was_chosen_and_their_own_node_defaults(monkeypatch):
    monkeypatch.setenv("MTSERVE_N_PARALLEL", "3")
    chosen = replica_settings(Settings(model="m", ray=True, ray_address="auto", ray_replica_cpus=2))
    assert chosen == {"model": "m", "n_parallel": 3, "ray_replica_cpus": 2.0, "threads": 2}
    # the replica rebuilds its settings from that; home stays the replica's node's own default
    assert Settings(**chosen).home == Settings().home
    assert replica_settings(Settings(threads=5))["threads"] == 5


def test_a_local_clusters_proxy_believes_forwarded_for_only_from_the_named_proxies(monkeypatch):
    """Ray's proxy builds its uvicorn.Config without forwarded_allow_ips, so it reads the variable."""
    import uvicorn
    from uvicorn.middleware.proxy_headers import ProxyHeadersMiddleware

    def believes_loopback(env: dict[str, str]) -> bool:
        monkeypatch.setenv("FORWARDED_ALLOW_IPS", env["FORWARDED_ALLOW_IPS"])
        config = uvicorn.Config(lambda scope, receive, send: None)
        return "127.0.0.1" in ProxyHeadersMiddleware(config.app, config.forwarded_allow_ips).trusted_hosts

    monkeypatch.delenv("FORWARDED_ALLOW_IPS", raising=False)
    assert believes_loopback({"FORWARDED_ALLOW_IPS": "127.0.0.1,::1"})  # uvicorn's own default
    assert not believes_loopback(local_cluster_env(Settings()))
    named = local_cluster_env(Settings(forwarded_allow_ips="10.0.0.0/8"))
    assert named["FORWARDED_ALLOW_IPS"] == "10.0.0.0/8" and not believes_loopback(named)
    assert believes_loopback(local_cluster_env(Settings(forwarded_allow_ips="127.0.0.1")))


def test_the_replica_header_names_the_replica():
    sent = []

    async def app(scope, receive, send):
        await send({"type": "http.response.start", "status": 200, "headers": [(b"a", b"1")]})
        await send({"type": "http.response.body", "body": b"ok"})

    async def send(message):
        sent.append(message)

    asyncio.run(ReplicaHeaderMiddleware(app, "r1")({"type": "http"}, None, send))
    assert sent[0]["headers"] == [(b"a", b"1"), (REPLICA_HEADER.encode(), b"r1")]
    assert sent[1]["body"] == b"ok"


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray Serve is not installed")
def test_the_application_is_one_ingress_deployment_built_from_the_settings():
    from mtserve.deploy.ray_serve import app_builder

    application = app_builder({"model": "m", "ray_min_replicas": 2, "ray_max_replicas": 3})
    deployment = application._bound_deployment
    assert deployment.name == "mtserve"
    assert deployment._deployment_config.autoscaling_config.max_replicas == 3
    assert application._bound_deployment.init_args[0]["model"] == "m"


def test_bad_replica_counts_are_a_usage_error_before_ray_starts():
    result = subprocess.run(
        [sys.executable, "-m", "mtserve.cli", "serve", "--ray",
         "--ray-min-replicas", "3", "--ray-max-replicas", "1"],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert result.returncode == 2
    assert "MTSERVE_RAY_MAX_REPLICAS" in result.stderr and "Traceback" not in result.stderr


def test_a_proxy_that_did_not_start_is_one_line_that_says_what_to_do():
    settings = Settings(port=8000)
    bind = RuntimeError("ray::ProxyActor.ready() (pid=1)\n  File \"proxy.py\", line 1\n"
                        "RuntimeError: Failed to bind to address '127.0.0.1:8000'.")
    assert _proxy_failure(bind, settings) == (
        "Ray Serve's HTTP proxy cannot listen on 127.0.0.1:8000 (RuntimeError: Failed to bind to address "
        "'127.0.0.1:8000'.); stop the server that holds the port, or serve on another port with --port 8001")
    died = RuntimeError("The actor died unexpectedly before finishing this task.\n\tclass_name: ProxyActor\n"
                        "The actor never ran - it was cancelled before it started running.")
    message = _proxy_failure(died, settings)
    assert "cancelled before it started running" in message and "RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S" in message
    assert "class_name" not in message


# --- a local cluster ---------------------------------------------------------------------------
RAY_INSTALLED = importlib.util.find_spec("ray") is not None


@pytest.mark.ray
@pytest.mark.skipif(not RAY_INSTALLED, reason="Ray Serve is not installed (pip install 'mtserve[ray]')")
def test_a_port_in_use_is_a_usage_error_and_the_cluster_goes_away(tmp_path):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = subprocess.run(
            [sys.executable, "-m", "mtserve.cli", "serve", "--ray", "--port", str(port)],
            capture_output=True, text=True, timeout=CLUSTER_TIME_BOX_S, check=False,
            env={**os.environ, "MTSERVE_HOME": str(tmp_path)},
        )
    assert result.returncode == 2, result.stderr[-2000:]
    assert f"cannot listen on 127.0.0.1:{port}" in result.stderr and f"--port {port + 1}" in result.stderr
    assert "Traceback" not in result.stderr
    deadline = time.monotonic() + 30  # the cluster's processes end a moment after the driver
    while controller_environ() is not None and time.monotonic() < deadline:
        time.sleep(0.5)
    assert controller_environ() is None, "the local cluster mtserve started was shut down"


def replica_processes() -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        cmdline = " ".join(proc.info["cmdline"] or [])
        if "ServeReplica:mtserve:mtserve" in cmdline:
            found.append(proc)
    return found


def ray_serve_log(lines: int = 30) -> str:
    """The warnings and errors of the local cluster's Serve controller (proxy restarts, replica
    crashes): what a failure of the cluster test needs to be read."""
    found = []
    for path in sorted(Path("/tmp/ray/session_latest/logs/serve").glob("controller_*.log")):
        found += [line[:300] for line in path.read_text(errors="replace").splitlines()
                  if line.startswith(("WARNING", "ERROR"))]
    return "\n".join(found[-lines:]) or "(no warnings in the Serve controller's log)"


def controller_environ() -> dict[str, str] | None:
    """The environment of Ray Serve's controller on this machine; None when there is none."""
    for proc in psutil.process_iter(["cmdline"]):
        if "ServeController" in " ".join(proc.info["cmdline"] or []):
            try:
                return proc.environ()
            except psutil.Error:  # it ended while we looked
                continue
    return None


def translate_with_retries(url: str, n: int, errors: collections.Counter, attempts: int = 4) -> str:
    """A client with an ordinary retry policy: 5xx or a broken connection are retried, with back-off."""
    text = f"我喜欢猫。第{n}号。"  # distinct texts: the replicas' caches cannot answer
    for attempt in range(attempts):
        try:
            r = httpx.post(f"{url}/translate", json={"q": text, "source": "zh", "target": "en"}, timeout=120)
        except httpx.TransportError as exc:
            errors[type(exc).__name__] += 1
        else:
            if r.status_code == 200:
                assert r.json()["translatedText"].strip()
                return r.headers[REPLICA_HEADER]
            assert r.status_code >= 500 or r.status_code == 429, r.text  # never a 4xx for a good request
            errors[r.status_code] += 1
        time.sleep(0.5 * (attempt + 1))
    raise AssertionError(f"request {n} failed {attempts} times: {dict(errors)}")


def spread(url: str, count: int, start: int, errors: collections.Counter) -> collections.Counter:
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replicas = pool.map(lambda n: translate_with_retries(url, n, errors), range(start, start + count))
        return collections.Counter(replicas)


@pytest.mark.ray
@pytest.mark.model
@pytest.mark.skipif(not RAY_INSTALLED, reason="Ray Serve is not installed (pip install 'mtserve[ray]')")
def test_two_replicas_share_the_load_and_survive_losing_one(model_path):
    started = time.monotonic()
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    proc = start_server(port, model_path, {
        "MTSERVE_RAY": "1", "MTSERVE_RAY_MIN_REPLICAS": "2", "MTSERVE_RAY_MAX_REPLICAS": "2",
        "MTSERVE_RAY_REPLICA_CPUS": "1", "MTSERVE_THREADS": "1", "MTSERVE_N_PARALLEL": "2",
        # a busy 2-core machine must not turn slowness into 504s: this test is about replicas
        "MTSERVE_REQUEST_TIMEOUT_S": "300",
    })
    children: list[psutil.Process] = []
    try:
        wait_ready(proc, url, timeout_s=240)
        deadline = started + CLUSTER_TIME_BOX_S
        while len(replica_processes()) < 2 and time.monotonic() < deadline:
            time.sleep(0.5)
        children = psutil.Process(proc.pid).children(recursive=True)
        # the cluster mtserve started gives Ray's proxy time to start on a busy machine
        assert (controller_environ() or {}).get("RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S") == \
            LOCAL_CLUSTER_ENV["RAY_SERVE_PROXY_READY_CHECK_TIMEOUT_S"]

        # requests spread over both replicas; each loaded the model once
        errors: collections.Counter = collections.Counter()
        first = spread(url, 8, 0, errors)
        assert len(first) == 2, (first, server_log(proc))
        assert not errors, errors
        assert httpx.get(f"{url}/health/details", timeout=10).json()["ready"] is True

        # kill one replica's process while requests are in flight: none is lost
        victim = replica_processes()[0]
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            during = pool.submit(spread, url, 8, 100, errors)
            time.sleep(1.0)
            victim.send_signal(signal.SIGKILL)
            served_during = during.result(timeout=CLUSTER_TIME_BOX_S)
        assert sum(served_during.values()) == 8  # every request answered 200 (some after a retry)

        # Ray replaces the replica; traffic spreads over two again
        while time.monotonic() < deadline:
            alive = [p for p in replica_processes() if p.pid != victim.pid]
            if len(alive) == 2:
                after = spread(url, 8, 200, errors)
                if len(after) == 2:
                    break
            time.sleep(2)
        else:
            raise AssertionError(f"the killed replica did not come back: {server_log(proc)}")
        assert set(after) - set(first), "the replacement replica has a new id"
        # What the clients saw while a replica died: Ray's proxy answers the requests that were
        # inside it with a 500 naming the dead actor, and the clients' retries went to the other
        # replica. No hang, no dropped connection, no error for a request that was not inside it.
        print(f"errors seen and retried while a replica died: {dict(errors)}")
        assert set(errors) <= {500, 503}, errors
        assert sum(errors.values()) <= 8, errors
    except Exception:
        print(f"mtserve's log:\n{server_log(proc)}\nRay Serve's controller:\n{ray_serve_log()}")
        raise
    finally:
        stop_server(proc, timeout_s=60)  # SIGTERM: the exit code is checked below
        for child in children:  # Ray's own processes, if the shutdown left any behind
            try:
                child.kill()
            except psutil.NoSuchProcess:
                pass
    assert proc.returncode == 0, server_log(proc)
    assert time.monotonic() - started < CLUSTER_TIME_BOX_S + 60


@pytest.mark.skipif(importlib.util.find_spec("ray") is None, reason="Ray Serve is not installed")
def test_the_kuberay_manifest_is_a_valid_serve_config_for_this_builder():
    import yaml
    from ray.serve.schema import ServeDeploySchema

    from mtserve.deploy.ray_serve import app_builder

    manifest = yaml.safe_load((Path(__file__).parents[2] / "deploy/kubernetes/rayservice.yaml").read_text())
    config = ServeDeploySchema(**yaml.safe_load(manifest["spec"]["serveConfigV2"]))
    [app] = config.applications
    assert app.import_path == "mtserve.deploy.ray_serve:app_builder"
    built = app_builder(app.args)._bound_deployment._deployment_config.autoscaling_config
    assert (built.min_replicas, built.max_replicas) == \
        (app.args["ray_min_replicas"], app.args["ray_max_replicas"])
