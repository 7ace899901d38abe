"""CPU utilisation and peak resident memory of the process under test, sampled with psutil.

For a server over HTTP the process is the one listening on the URL's port
(or ``--server-pid``); for in-process targets it is the benchmark itself.
CPU is averaged over the point (100 = one core busy); RSS is the highest
sample, the process and its children together.
"""

from __future__ import annotations

import threading
from typing import Any

from mtserve.bench.stats import ProcessFigures


def find_listening_pid(port: int) -> int | None:
    """The pid of the process listening on TCP ``port`` on this machine, if psutil can see it."""
    try:
        import psutil
    except ImportError:
        return None
    try:
        for conn in psutil.net_connections(kind="tcp"):
            if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port and conn.pid:
                return conn.pid
    except (psutil.AccessDenied, PermissionError):
        pass
    for proc in psutil.process_iter(["pid"]):  # slower path: per-process connection tables
        try:
            for conn in proc.net_connections(kind="tcp"):
                if conn.status == psutil.CONN_LISTEN and conn.laddr and conn.laddr.port == port:
                    return proc.pid
        except (psutil.AccessDenied, psutil.NoSuchProcess, psutil.ZombieProcess):
            continue
    return None


class ProcessSampler:
    """Samples a process every ``interval_s`` while a point runs; use as a context manager."""

    def __init__(self, pid: int | None, interval_s: float = 0.25, psutil_module: Any = None):
        self.pid = pid
        self.interval_s = interval_s
        self._psutil = psutil_module
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._procs: list[Any] = []
        self._cpu_start = 0.0
        self._cpu_end = 0.0
        self._wall_start = 0.0
        self._wall_end = 0.0
        self.peak_rss = 0
        self.samples = 0

    def _module(self) -> Any:
        if self._psutil is None:
            try:
                import psutil
            except ImportError:
                return None
            self._psutil = psutil
        return self._psutil

    def _tree(self, psutil: Any) -> list[Any]:
        root = psutil.Process(self.pid)
        try:
            return [root, *root.children(recursive=True)]
        except psutil.Error:
            return [root]

    def _cpu_and_rss(self, procs: list[Any]) -> tuple[float, int]:
        cpu, rss = 0.0, 0
        for proc in procs:
            try:
                times = proc.cpu_times()
                cpu += times.user + times.system
                rss += proc.memory_info().rss
            except Exception:  # a child that just exited
                continue
        return cpu, rss

    def sample(self) -> None:
        cpu, rss = self._cpu_and_rss(self._procs)
        self._cpu_end = cpu
        self.peak_rss = max(self.peak_rss, rss)
        self.samples += 1

    def _run(self) -> None:
        import time

        while not self._stop.wait(self.interval_s):
            self.sample()
            self._wall_end = time.monotonic()

    def __enter__(self) -> "ProcessSampler":
        import time

        psutil = self._module()
        if psutil is None or self.pid is None:
            return self
        try:
            self._procs = self._tree(psutil)
        except Exception:
            self._procs = []
            return self
        self._cpu_start, rss = self._cpu_and_rss(self._procs)
        self._cpu_end = self._cpu_start
        self.peak_rss = rss
        self._wall_start = self._wall_end = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        import time

        if self._thread is None:
            return
        self._stop.set()
        self._thread.join()
        self.sample()
        self._wall_end = time.monotonic()

    def figures(self) -> ProcessFigures:
        if not self._procs:
            return ProcessFigures()
        wall = max(self._wall_end - self._wall_start, 1e-9)
        return ProcessFigures(cpu_percent=100 * (self._cpu_end - self._cpu_start) / wall,
                              peak_rss_mb=self.peak_rss / 2**20)
