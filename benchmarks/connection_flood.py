"""Connection flood: does /health/live keep answering while clients hold, trickle and stall connections?

Not part of CI (minutes at full size). Traffic goes to loopback only; every phase is bounded in count
and time and ends by itself. It starts `mtserve serve` (log to a file) unless --url names a server.

    python benchmarks/connection_flood.py --slowloris 300 --idle 1000 --over 3000 --stalled 100 --out flood.json
    python benchmarks/connection_flood.py --idle 20 --slowloris 5 --over 30 --stalled 2 --phase-s 3 --stream-s 5 \
        --server-env MTSERVE_MAX_CONNECTIONS=40   # a smoke run

Phases, each with a /health/live probe on a new connection every --probe-every-s, and the server's
RSS, CPU and log growth sampled:

1. quiet: nothing but the probe.
2. idle: --idle connections that never send a byte.
3. slowloris: --slowloris connections that send a request head one byte a second.
4. over the bound: --over more connections than the server's max_connections, opened at once, idle.
5. stalled streams: --stalled streams whose client never reads (a 4 KiB receive buffer) and as many
   whose client resets after its request is sent; then how long until the server has no request
   admitted, and what a caller sending a sentence every 2 s meanwhile gets (200, 503, 504).
   A stalled stream is noticed only once its unread output fills the socket buffers; with the
   defaults that takes more output than a translation stream has, so it holds its ticket as a
   reading client would. MTSERVE_SEND_BUFFER_BYTES=16384 and a long --stream-chars show the
   write timeout at work.

Per phase: probes answered and failed, their latency (median, p99, max), sockets the server closed,
RSS, CPU (% of one core), log bytes. Settings for the server go in --server-env NAME=VALUE (e.g.
MTSERVE_MAX_CONNECTIONS=16000 MTSERVE_IDLE_TIMEOUT_S=600 to see what N idle connections cost).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

import httpx
import psutil

DEFAULT_MODEL = "qwen2.5-coder-0.5b-instruct-q4_k_m"
STREAM_SENTENCE = "这是一个用来测试连接的很长的句子，它会被翻译成英文。"  # 25 characters
CONNECT_BATCH = 200  # connections opened at once, then a breath, so the client does not spin on its own backlog


@dataclass
class Phase:
    name: str
    probes_ok: int = 0
    probes_failed: int = 0
    latencies_ms: list[float] = field(default_factory=list)
    rss_mb: list[float] = field(default_factory=list)
    cpu_percent: list[float] = field(default_factory=list)
    log_bytes: int = 0
    opened: int = 0
    closed_by_server: int = 0
    notes: dict = field(default_factory=dict)

    def summary(self) -> dict:
        lat = sorted(self.latencies_ms)
        return {
            "phase": self.name, "opened": self.opened, "closed_by_server": self.closed_by_server,
            "probes_ok": self.probes_ok, "probes_failed": self.probes_failed,
            "probe_median_ms": round(statistics.median(lat), 1) if lat else None,
            "probe_p99_ms": round(lat[min(len(lat) - 1, int(len(lat) * 0.99))], 1) if lat else None,
            "probe_max_ms": round(lat[-1], 1) if lat else None,
            "rss_mb_max": round(max(self.rss_mb), 1) if self.rss_mb else None,
            "cpu_percent_mean": round(statistics.mean(self.cpu_percent), 1) if self.cpu_percent else None,
            "log_bytes": self.log_bytes, **self.notes,
        }


# --- the server ---------------------------------------------------------------------------------------
def start_server(model: str, env_extra: dict[str, str], port: int, log_path: Path) -> subprocess.Popen:
    env = {**os.environ, "MTSERVE_MODEL": model, "MTSERVE_PORT": str(port), "MTSERVE_HOST": "127.0.0.1",
           "MTSERVE_WARM_STRICT": "", "MTSERVE_LOG_FORMAT": "json", **env_extra}
    log = log_path.open("wb")
    return subprocess.Popen([sys.executable, "-m", "mtserve.cli", "serve"], env=env, stdout=log,
                            stderr=subprocess.STDOUT)


def model_path(model: str) -> str:
    """A registry name as its file in the user's store (the server runs with a home of its own)."""
    if Path(model).exists():
        return model
    from mtserve.models.store import ModelStore
    from mtserve.settings import Settings

    return str(ModelStore(Settings().models_dir).resolve(model).path)


def wait_ready(url: str, proc: subprocess.Popen | None, timeout_s: float = 300) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise SystemExit(f"mtserve exited with {proc.returncode}")
        try:
            if httpx.get(f"{url}/health", timeout=2).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    raise SystemExit(f"{url} was not ready within {timeout_s:.0f} s")


def server_process(url: str) -> psutil.Process:
    port = urlsplit(url).port
    for conn in psutil.net_connections(kind="tcp"):
        if conn.status == psutil.CONN_LISTEN and conn.laddr.port == port and conn.pid:
            return psutil.Process(conn.pid)
    raise SystemExit(f"no local process listens on port {port}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# --- probes and samples -------------------------------------------------------------------------------
async def probe_once(host: str, port: int) -> bool:
    reader, writer = await asyncio.open_connection(host, port)
    try:
        writer.write(b"GET /health/live HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n" % host.encode())
        answer = await reader.read()  # to the server's close
        return answer.startswith(b"HTTP/1.1 200")
    finally:
        writer.close()


async def probe_loop(url: str, phase_of: list[Phase], every_s: float, stop: asyncio.Event) -> None:
    """/health/live on a new connection each time, as a load balancer's probe does; 5 s at most."""
    host, port = urlsplit(url).hostname or "127.0.0.1", urlsplit(url).port or 80
    while not stop.is_set():
        phase = phase_of[0]
        started = time.perf_counter()
        try:
            ok = await asyncio.wait_for(probe_once(host, port), 5)
        except (OSError, asyncio.TimeoutError):
            ok = False
        if ok:
            phase.probes_ok += 1
            phase.latencies_ms.append((time.perf_counter() - started) * 1000)
        else:
            phase.probes_failed += 1
        try:
            await asyncio.wait_for(stop.wait(), every_s)
        except asyncio.TimeoutError:
            pass


async def sample_loop(proc: psutil.Process, phase_of: list[Phase], stop: asyncio.Event) -> None:
    proc.cpu_percent(None)
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except asyncio.TimeoutError:
            pass
        try:
            phase_of[0].rss_mb.append(proc.memory_info().rss / 2**20)
            phase_of[0].cpu_percent.append(proc.cpu_percent(None))
        except psutil.Error:
            return


# --- the clients --------------------------------------------------------------------------------------
async def open_many(host: str, port: int, count: int, rcvbuf: int | None = None) -> list[socket.socket]:
    loop = asyncio.get_running_loop()
    opened: list[socket.socket] = []
    for start in range(0, count, CONNECT_BATCH):
        batch = []
        for _ in range(min(CONNECT_BATCH, count - start)):
            sock = socket.socket()
            sock.setblocking(False)
            if rcvbuf:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
            batch.append(sock)
        results = await asyncio.gather(*(asyncio.wait_for(loop.sock_connect(s, (host, port)), 10) for s in batch),
                                       return_exceptions=True)
        for sock, result in zip(batch, results):
            if isinstance(result, BaseException):
                sock.close()
            else:
                opened.append(sock)
        await asyncio.sleep(0.05)
    return opened


def count_closed(sockets: list[socket.socket]) -> int:
    """How many of ``sockets`` the server has closed (an answer it wrote first is read and dropped)."""
    closed = 0
    for sock in sockets:
        try:
            while sock.recv(65536):
                pass
            closed += 1
        except BlockingIOError:
            pass
        except OSError:
            closed += 1
    return closed


async def trickle(sockets: list[socket.socket], seconds: float) -> None:
    head = b"GET /health/live HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 10_000
    for i in range(int(seconds)):
        for sock in sockets:
            try:
                sock.send(head[i:i + 1])
            except OSError:
                pass
        await asyncio.sleep(1.0)


def stream_request(port: int, chars: int) -> bytes:
    text = STREAM_SENTENCE * max(1, chars // len(STREAM_SENTENCE))
    body = json.dumps({"q": text, "source": "zh", "target": "en"}, ensure_ascii=False).encode()
    return (b"POST /translate/stream HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % (port, len(body))) + body


async def stalled_streams(url: str, host: str, port: int, count: int, chars: int, phase: Phase,
                          seconds: float, other_key: str | None = None) -> None:
    """``count`` streams never read, ``count`` reset after their first bytes, all from one anonymous
    caller; then the queue as /health/details sees it, and whether another caller (with ``other_key``: an API
    key's, a caller of its own; without: the same address) is admitted meanwhile."""
    stalled = await open_many(host, port, count, rcvbuf=4096)
    resetting = await open_many(host, port, count)
    request = stream_request(port, chars)
    for sock in stalled + resetting:
        sock.setblocking(True)
        try:
            sock.sendall(request)
        except OSError:
            pass
        sock.setblocking(False)
    await asyncio.sleep(1.0)
    for sock in resetting:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")  # RST on close
        sock.close()
    phase.opened = len(stalled) + len(resetting)
    started = time.monotonic()
    admitted: list[tuple[float, int]] = []
    others: collections.Counter = collections.Counter()

    async def other_caller(client: httpx.AsyncClient) -> None:
        try:
            headers = {"Authorization": f"Bearer {other_key}"} if other_key else {}
            r = await client.post(f"{url}/translate", json={"q": "你好。", "source": "zh", "target": "en"},
                                  headers=headers)
            others[r.status_code] += 1
        except httpx.HTTPError as exc:
            others[type(exc).__name__] += 1

    async with httpx.AsyncClient(timeout=seconds) as client:
        callers = []
        while time.monotonic() - started < seconds:
            try:
                queue = (await client.get(f"{url}/health/details", timeout=5)).json().get("queue", {})
                admitted.append((round(time.monotonic() - started, 1), queue.get("admitted", -1)))
            except httpx.HTTPError:
                pass
            if len(callers) < seconds / 2:  # another caller every 2 s: is it admitted while the streams stall?
                callers.append(asyncio.create_task(other_caller(client)))
            await asyncio.sleep(1.0)
        await asyncio.gather(*callers)
    freed = next((t for t, n in admitted if n == 0), None)
    phase.closed_by_server = count_closed(stalled)
    phase.notes.update(admitted_over_time=admitted[::5], seconds_until_none_admitted=freed,
                       other_callers=dict(others))
    for sock in stalled:
        sock.close()


async def run(args: argparse.Namespace, url: str, proc: psutil.Process, log_path: Path | None) -> list[dict]:
    host, port = urlsplit(url).hostname or "127.0.0.1", urlsplit(url).port or 80
    phases: list[Phase] = []
    current: list[Phase] = [Phase("setup")]
    stop = asyncio.Event()
    tasks = [asyncio.create_task(probe_loop(url, current, args.probe_every_s, stop)),
             asyncio.create_task(sample_loop(proc, current, stop))]

    def log_size() -> int:
        return log_path.stat().st_size if log_path is not None and log_path.exists() else 0

    async def phase(name: str, body) -> None:
        current[0] = entry = Phase(name)
        phases.append(entry)
        before = log_size()
        await body(entry)
        entry.log_bytes = log_size() - before
        print(json.dumps(entry.summary()), flush=True)

    async def quiet(entry: Phase) -> None:
        await asyncio.sleep(args.phase_s)

    async def hold(entry: Phase, count: int, slow: bool) -> None:
        sockets = await open_many(host, port, count)
        entry.opened = len(sockets)
        if slow:
            await trickle(sockets, args.phase_s)
        else:
            await asyncio.sleep(args.phase_s)
        entry.closed_by_server = count_closed(sockets)
        for sock in sockets:
            sock.close()

    async def over(entry: Phase) -> None:
        bound = args.max_connections
        sockets = await open_many(host, port, bound + args.over)
        entry.opened = len(sockets)
        await asyncio.sleep(args.phase_s)
        entry.closed_by_server = count_closed(sockets)
        entry.notes["max_connections"] = bound
        for sock in sockets:
            sock.close()

    await phase("quiet", quiet)
    if args.idle:
        await phase(f"idle x{args.idle}", lambda e: hold(e, args.idle, slow=False))
    if args.slowloris:
        await phase(f"slowloris x{args.slowloris}", lambda e: hold(e, args.slowloris, slow=True))
    if args.over:
        await phase(f"over the bound by {args.over}", over)
    if args.stalled:
        await phase(f"stalled streams x{args.stalled} (+{args.stalled} reset)",
                    lambda e: stalled_streams(url, host, port, args.stalled, args.stream_chars, e, args.stream_s,
                                              args.other_key))
    await phase("quiet again", quiet)
    stop.set()
    await asyncio.gather(*tasks)
    closed = {}
    try:
        for line in httpx.get(f"{url}/metrics", timeout=10).text.splitlines():
            if line.startswith("mtserve_connections_closed_total{"):
                reason = line.split('reason="', 1)[1].split('"', 1)[0]
                closed[reason] = float(line.rsplit(" ", 1)[1])
    except (httpx.HTTPError, IndexError, ValueError):
        pass
    return [p.summary() for p in phases] + [{"connections_closed_total": closed}]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", help="a running server (default: start mtserve serve with --model)")
    parser.add_argument("--log", type=Path, help="with --url: the server's log file, to measure its growth")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--server-env", action="append", default=[], metavar="NAME=VALUE")
    parser.add_argument("--max-connections", type=int, default=None,
                        help="the server's MTSERVE_MAX_CONNECTIONS (default: from --server-env, else 1000)")
    parser.add_argument("--idle", type=int, default=1000)
    parser.add_argument("--slowloris", type=int, default=300)
    parser.add_argument("--over", type=int, default=3000)
    parser.add_argument("--stalled", type=int, default=100)
    parser.add_argument("--phase-s", type=float, default=20.0)
    parser.add_argument("--stream-chars", type=int, default=2000, help="characters of each stream's text")
    parser.add_argument("--stream-s", type=float, default=75.0,
                        help="how long the stalled-stream phase watches (past the 60 s request deadline)")
    parser.add_argument("--probe-every-s", type=float, default=0.2)
    parser.add_argument("--other-key", help="with --url: an API key for the caller measured beside the flood "
                        "(a server this script starts has keys on and makes one)")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    env = dict(item.split("=", 1) for item in args.server_env)
    if args.max_connections is None:
        args.max_connections = int(env.get("MTSERVE_MAX_CONNECTIONS", 1000))
    server = None
    log_path = args.log
    if args.url:
        url = args.url
    else:
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        home = tempfile.mkdtemp(prefix="mtserve-flood-")  # keys, jobs and files of its own; the model from the store
        log_path = Path(home) / "server.log"
        env.setdefault("MTSERVE_HOME", home)
        env.setdefault("MTSERVE_MAX_CONNECTIONS", str(args.max_connections))
        # keys on, anonymous use allowed: the flood is one anonymous caller, the other caller has a key
        env.setdefault("MTSERVE_API_KEYS", "true")
        env.setdefault("MTSERVE_ANONYMOUS_RPM", "1000000")  # the flood is measured past the rate limit
        from mtserve.service.access import KeyStore

        args.other_key, _ = KeyStore(Path(env["MTSERVE_HOME"]) / "keys.sqlite3").add(name="other caller")
        server = start_server(model_path(args.model), env, port, log_path)
    try:
        wait_ready(url, server)
        results = asyncio.run(run(args, url, server_process(url), log_path))
    finally:
        if server is not None:
            server.terminate()
            try:
                server.wait(timeout=60)
            except subprocess.TimeoutExpired:
                server.kill()
    alive = all(r.get("probes_failed", 0) == 0 for r in results if "phase" in r)
    print(f"/health/live answered every probe: {alive}")
    if log_path is not None:
        print(f"server log: {log_path} ({log_path.stat().st_size if log_path.exists() else 0} bytes)")
    if args.out:
        args.out.write_text(json.dumps(results, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())
