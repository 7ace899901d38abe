"""Results out: a JSON file, a short terminal table, the ratio table and a PNG plot.

The plot is latency against throughput, one curve per target (p50 solid,
p95 dashed), each point labelled with its load; it uses matplotlib's Agg
backend, so it needs no display.
"""

from __future__ import annotations

import json
import math
import os
import platform
import sys
import time
from pathlib import Path
from typing import Any, Iterable

from mtserve.bench.stats import PointStats, Ratio


def machine() -> dict[str, Any]:
    """What the figures were measured on."""
    info: dict[str, Any] = {
        "platform": platform.platform(),
        "python": sys.version.split()[0],
        "logical_cpus": os.cpu_count(),
    }
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    try:
        import psutil

        info["physical_cores"] = psutil.cpu_count(logical=False)
        info["memory_gib"] = round(psutil.virtual_memory().total / 2**30, 1)
        info["load_average_at_start"] = [round(x, 2) for x in os.getloadavg()]
    except (ImportError, OSError):
        pass
    try:
        from importlib.metadata import version

        info["xllamacpp"] = version("xllamacpp")
    except Exception:
        pass
    return info


def write_json(path: Path, *, meta: dict, targets: dict, points: Iterable[PointStats],
               per_round: Iterable[PointStats], ratios: Iterable[Ratio]) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {
        "meta": {"written": time.strftime("%Y-%m-%dT%H:%M:%S%z"), **meta},
        "targets": targets,
        "points": [p.to_dict() for p in points],
        "per_round": [p.to_dict() for p in per_round],
        "ratios": [
            {"scenario": r.scenario, "load": r.load, "a": r.a, "b": r.b, "b_over_a": r.ratios,
             "per_round": r.per_round}
            for r in ratios
        ],
    }
    path.write_text(json.dumps(body, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:,.{digits}f}"
    return str(value)


COLUMNS = (
    ("target", "target", 0), ("scenario", "scenario", 0), ("load", "load", 0), ("n", "requests", 0),
    ("err", "errors", 0), ("req/s", "rps", 2), ("tok/s", "tokens_per_s", 1), ("p50 ms", "p50_ms", 0),
    ("p95 ms", "p95_ms", 0), ("p99 ms", "p99_ms", 0), ("ttft p50", "ttft_p50_ms", 0),
    ("queue ms", "queue_ms_mean", 0), ("engine ms", "engine_ms_mean", 0), ("cpu %", "cpu_percent", 0),
    ("rss MB", "peak_rss_mb", 0), ("load1", "loadavg_1m", 1),
)


def table(points: Iterable[PointStats], markdown: bool = False) -> str:
    rows = [[h for h, _, _ in COLUMNS]]
    for p in points:
        row = []
        for _, attr, digits in COLUMNS:
            value = getattr(p, attr)
            if attr == "load":
                value = f"{value:g}" + ("/s" if p.scenario == "open" else "")
            row.append(_fmt(value, digits) if digits or not isinstance(value, float) else _fmt(value, 0))
        rows.append(row)
    if markdown:
        lines = ["| " + " | ".join(rows[0]) + " |", "|" + "---|" * len(rows[0])]
        lines += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(lines)
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(cell.rjust(w) if i > 1 else cell.ljust(w) for i, (cell, w) in
                               enumerate(zip(r, widths))) for r in rows)


RATIO_COLUMNS = ("rps", "tokens_per_s", "p50_ms", "p95_ms", "p99_ms", "ttft_p50_ms", "peak_rss_mb")


def ratio_table(ratios: Iterable[Ratio], markdown: bool = False) -> str:
    ratios = list(ratios)
    if not ratios:
        return ""
    header = ["point", *(f"{c} B/A" for c in RATIO_COLUMNS), "per-round rps"]
    rows = [header]
    for r in ratios:
        spread = ", ".join(_fmt(x.get("rps"), 3) for x in r.per_round) if r.per_round else "-"
        rows.append([f"{r.scenario} {r.load:g}", *(_fmt(r.ratios.get(c), 3) for c in RATIO_COLUMNS), spread])
    title = f"B/A with A = {ratios[0].a}, B = {ratios[0].b}"
    if markdown:
        lines = [title, "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in rows[1:]]
        return "\n".join(lines)
    widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
    body = "\n".join("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths)))
                     for row in rows)
    return f"{title}\n{body}"


def plot(path: Path, points: Iterable[PointStats], title: str = "") -> Path | None:
    """Latency (p50 solid, p95 dashed) against requests/s; one colour per target. None without matplotlib."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    points = list(points)
    panels = [s for s in ("closed", "open") if any(p.scenario == s for p in points)]
    if not panels:
        panels = sorted({p.scenario for p in points})
    if not panels:
        return None
    fig, axes = plt.subplots(1, len(panels), figsize=(6.4 * len(panels), 4.2), squeeze=False)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    names = list(dict.fromkeys(p.target for p in points))
    for ax, scenario in zip(axes[0], panels):
        for i, name in enumerate(names):
            series = sorted((p for p in points if p.target == name and p.scenario == scenario),
                            key=lambda p: p.load)
            if not series:
                continue
            colour = colours[i % len(colours)]
            xs = [p.rps for p in series]
            ax.plot(xs, [p.p50_ms for p in series], "o-", color=colour, label=f"{name} p50")
            ax.plot(xs, [p.p95_ms for p in series], "s--", color=colour, alpha=0.7, label=f"{name} p95")
            for p in series:
                ax.annotate(f"{p.load:g}" + ("/s" if scenario == "open" else ""), (p.rps, p.p50_ms),
                            textcoords="offset points", xytext=(4, 4), fontsize=7, color=colour)
        ax.set_xlabel("throughput (requests/s)")
        ax.set_ylabel("latency (ms)")
        ys = [p.p50_ms for p in points if p.scenario == scenario] + [p.p95_ms for p in points
                                                                    if p.scenario == scenario]
        if ys and all(y > 0 for y in ys):  # log only where every value can be drawn on it
            ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        label = "closed loop: points are clients" if scenario == "closed" else (
            "open loop: points are arrivals/s" if scenario == "open" else scenario)
        ax.set_title(f"{title}\n{label}" if title else label, fontsize=9)
        ax.legend(fontsize=7)
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90)
    plt.close(fig)
    return path
