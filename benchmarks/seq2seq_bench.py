"""Seq2seq engines side by side: latency, throughput, memory, and the dynamic batcher.

Speed does not depend on weight values, so the model is an opus-mt-sized
Marian with random weights (d_model 512, 6+6 layers, 8 heads, FFN 2048, a
65k vocabulary), built here, and every decode is forced to exactly 32 new
tokens (min = max), so every engine does the same work.

Each engine variant runs in its own process (so peak RSS is its own), all
loaded at once; the measurements take turns engine by engine, round by
round, in a rotating order, so a noisy shared machine slows them alike and
the ratios within one run stay fair.

    .venv/bin/python benchmarks/seq2seq_bench.py --threads 2 --rounds 3 \\
        --json benchmarks/results/seq2seq.json

Measured per engine: latency of one request at batch 1; tokens/s at batch 8
and 32; peak RSS; and served throughput with 8 concurrent clients through the
scheduler and dynamic batcher against strictly sequential one-at-a-time
serving (the naive design), both on the same engine.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing as mp
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

NEW_TOKENS = 32
MODEL_SHAPE = dict(d_model=512, layers=6, heads=8, ffn=2048, vocab_size=65_000)
VARIANTS = {
    # name: (engine, model dir, compute type)
    "pytorch-fp32": ("transformers", "hf", "default"),
    "onnx-fp32": ("onnx", "onnx-fp32", "default"),
    "onnx-int8-dynamic": ("onnx", "onnx-int8-dynamic", "default"),
    "onnx-int8-static": ("onnx", "onnx-int8-static", "default"),
    "ct2-fp32": ("ctranslate2", "ct2-fp32", "float32"),
    "ct2-int8": ("ctranslate2", "ct2-int8", "int8"),
}


# --- the model ---------------------------------------------------------------------------------------
def sentences(count: int, seed: int = 1) -> list[str]:
    """Chinese sentences of 8-20 characters from the test corpus generator."""
    from tests.engines.tiny_models import synthetic_corpus

    zh = [line for line in synthetic_corpus(4 * count, seed) if not line[0].isascii()]
    return [s for s in zh if 8 <= len(s) <= 20][:count]


def prepare(work: Path) -> dict[str, Path]:
    """Build the random opus-mt-sized Marian and every conversion of it (kept between runs)."""
    from mtserve.convert import Quantization, convert
    from tests.engines.tiny_models import build_marian

    hf = work / "hf"
    stamp = work / "shape.json"
    if not stamp.exists() or json.loads(stamp.read_text()) != MODEL_SHAPE:
        import shutil

        shutil.rmtree(work, ignore_errors=True)
        work.mkdir(parents=True)
        print("building the opus-mt-sized random Marian ...", file=sys.stderr)
        build_marian(hf, spm_vocab=800, init_std=0.02, eos_bias=0.0, **MODEL_SHAPE)
        stamp.write_text(json.dumps(MODEL_SHAPE))
    calibration = work / "calibration.zh.txt"
    calibration.write_text("\n".join(sentences(64, seed=7)) + "\n", encoding="utf-8")
    dirs = {"hf": hf}
    plans = {
        "onnx-fp32": dict(target="onnx"),
        "onnx-int8-dynamic": dict(target="onnx", quantize="int8"),
        "onnx-int8-static": dict(
            target="onnx", quantize="int8", quantization=Quantization(static=True, calibration=calibration)
        ),
        "ct2-fp32": dict(target="ctranslate2"),
        "ct2-int8": dict(target="ctranslate2", quantize="int8"),
    }
    for name, plan in plans.items():
        out = work / name
        if not (out / "mtserve.json").exists():
            started = time.perf_counter()
            print(f"converting: {name} ...", file=sys.stderr)
            convert(hf, out=out, threads=os.cpu_count() or 1, **plan)
            print(f"  {name}: {time.perf_counter() - started:.0f} s", file=sys.stderr)
        dirs[name] = out
    return dirs


# --- a worker process per engine --------------------------------------------------------------------
def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def _current_rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def worker(
    conn: Any, variant: str, model_dir: str, threads: int, max_batch_size: int, max_queue_delay_ms: float
) -> None:
    from mtserve.engines.base import EngineRequest
    from mtserve.engines.seq2seq import DecodeOptions

    engine_name, _, compute_type = VARIANTS[variant]
    baseline_mb = _current_rss_mb()
    decode = DecodeOptions(num_beams=1, max_output_tokens=NEW_TOKENS, min_new_tokens=NEW_TOKENS)
    common = dict(threads=threads, max_batch_size=max_batch_size, decode=decode)
    if engine_name == "transformers":
        from mtserve.engines.transformers import TransformersEngine

        engine = TransformersEngine(Path(model_dir), **common)
    elif engine_name == "onnx":
        from mtserve.engines.onnx import OnnxEngine

        engine = OnnxEngine(Path(model_dir), **common)
    else:
        from mtserve.engines.ctranslate2 import CTranslate2Engine

        engine = CTranslate2Engine(Path(model_dir), compute_type=compute_type, **common)
    imported_mb = _current_rss_mb()
    engine.load()
    texts = sentences(128)

    def requests(n: int, offset: int = 0) -> list[EngineRequest]:
        return [
            EngineRequest(texts[(offset + i) % len(texts)], "zh", "en", max_tokens=NEW_TOKENS)
            for i in range(n)
        ]

    def check(results) -> None:
        bad = [r.generated_tokens for r in results if r.generated_tokens != NEW_TOKENS]
        if bad:
            raise RuntimeError(f"{variant}: forced decode length not honoured: {bad[:5]}")

    check(engine.translate_batch(requests(4)))  # warm-up: first-run allocations, lazy inits
    conn.send(
        {
            "ready": True,
            "baseline_mb": baseline_mb,
            "imported_mb": imported_mb,
            "loaded_mb": _current_rss_mb(),
        }
    )
    while True:
        command = conn.recv()
        op = command["op"]
        if op == "stop":
            conn.send({"peak_rss_mb": _rss_mb()})
            return
        started = time.perf_counter()
        if op == "latency":
            latencies = []
            for request in requests(command["n"], offset=command.get("offset", 0)):
                t0 = time.perf_counter()
                check(engine.translate_batch([request]))
                latencies.append(time.perf_counter() - t0)
            conn.send({"latencies_s": latencies})
        elif op == "throughput":
            batch, reps = command["batch"], command["reps"]
            for rep in range(reps):
                check(engine.translate_batch(requests(batch, offset=rep * batch)))
            elapsed = time.perf_counter() - started
            conn.send({"tokens_per_s": batch * reps * NEW_TOKENS / elapsed, "elapsed_s": elapsed})
        elif op == "sequential":
            for request in requests(command["n"]):
                check([engine.translate(request)])
            elapsed = time.perf_counter() - started
            conn.send({"requests_per_s": command["n"] / elapsed, "elapsed_s": elapsed})
        elif op == "batched":
            conn.send(
                asyncio.run(_served(engine, requests(command["n"]), command["clients"], max_queue_delay_ms))
            )


async def _served(engine: Any, reqs: list, clients: int, max_queue_delay_ms: float) -> dict:
    """Closed-loop clients through the real scheduler and dynamic batcher."""
    from mtserve.service.batcher import batcher_for
    from mtserve.service.scheduler import Scheduler

    batcher = batcher_for(engine, max_queue_delay_ms)
    scheduler = Scheduler(
        engine.translate, concurrency=engine.max_concurrency, max_queue=4 * clients, batcher=batcher
    )
    await scheduler.start()
    queue = list(reqs)

    async def client() -> None:
        while queue:
            request = queue.pop()
            async with scheduler.ticket(600) as ticket:
                [outcome] = await ticket.wait([ticket.submit(request)])
                if outcome.result.generated_tokens != NEW_TOKENS:
                    raise RuntimeError("forced decode length not honoured under the batcher")

    started = time.perf_counter()
    await asyncio.gather(*(client() for _ in range(clients)))
    elapsed = time.perf_counter() - started
    await scheduler.stop()
    assert batcher is not None
    return {
        "requests_per_s": len(reqs) / elapsed,
        "elapsed_s": elapsed,
        "mean_batch": batcher.jobs / max(1, batcher.batches),
    }


# --- orchestration ------------------------------------------------------------------------------------
def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--work",
        type=Path,
        default=Path("/tmp/mtserve-seq2seq-bench"),
        help="where the model and its conversions are kept between runs",
    )
    parser.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--rounds", type=int, default=3, help="measurement rounds (the median is reported)")
    parser.add_argument("--engines", default=",".join(VARIANTS), help="comma-separated variants")
    parser.add_argument("--latency-requests", type=int, default=6)
    parser.add_argument("--clients", type=int, default=8)
    parser.add_argument("--served-requests", type=int, default=24, help="requests per served measurement")
    parser.add_argument("--max-queue-delay-ms", type=float, default=5.0)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    variants = [v.strip() for v in args.engines.split(",") if v.strip()]
    dirs = prepare(args.work)

    ctx = mp.get_context("spawn")
    workers: dict[str, Any] = {}
    loaded: dict[str, dict] = {}
    for variant in variants:
        parent, child = ctx.Pipe()
        model_dir = dirs[VARIANTS[variant][1]]
        proc = ctx.Process(
            target=worker,
            args=(child, variant, str(model_dir), args.threads, 32, args.max_queue_delay_ms),
            daemon=True,
        )
        proc.start()
        workers[variant] = (proc, parent)
    for variant, (_, conn) in workers.items():  # load one after another's readiness, all stay loaded
        loaded[variant] = conn.recv()
        print(f"loaded {variant}: {loaded[variant]['loaded_mb']:.0f} MB", file=sys.stderr)

    def ask(variant: str, command: dict) -> dict:
        conn = workers[variant][1]
        conn.send(command)
        return conn.recv()

    samples: dict[str, dict[str, list]] = {v: {} for v in variants}
    plan = [
        ("latency_b1", {"op": "latency", "n": args.latency_requests}),
        ("tps_b8", {"op": "throughput", "batch": 8, "reps": 2}),
        ("tps_b32", {"op": "throughput", "batch": 32, "reps": 1}),
        ("served_sequential", {"op": "sequential", "n": args.served_requests}),
        ("served_batched", {"op": "batched", "n": args.served_requests, "clients": args.clients}),
    ]
    for round_index in range(args.rounds):
        order = variants[round_index % len(variants) :] + variants[: round_index % len(variants)]
        for key, command in plan:
            for variant in order:
                result = ask(variant, {**command, "offset": round_index})
                result["load1"] = os.getloadavg()[0]
                samples[variant].setdefault(key, []).append(result)
                shown = {k: round(v, 3) if isinstance(v, float) else v for k, v in result.items()}
                if "latencies_s" in shown:
                    shown["median_ms"] = round(1000 * statistics.median(shown.pop("latencies_s")), 1)
                print(f"round {round_index + 1} {key:<18} {variant:<18} {json.dumps(shown)}", file=sys.stderr)
    peaks = {variant: ask(variant, {"op": "stop"})["peak_rss_mb"] for variant in variants}
    for proc, _ in workers.values():
        proc.join(timeout=30)

    report = summarize(variants, samples, loaded, peaks, args)
    print(render(report))
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


def summarize(variants, samples, loaded, peaks, args) -> dict:
    rows = {}
    for variant in variants:
        s = samples[variant]
        per_round_median = [statistics.median(r["latencies_s"]) for r in s["latency_b1"]]
        rows[variant] = {
            "latency_b1_ms": 1000 * statistics.median(per_round_median),
            "tokens_per_s_b1": NEW_TOKENS / statistics.median(per_round_median),
            "tokens_per_s_b8": statistics.median(r["tokens_per_s"] for r in s["tps_b8"]),
            "tokens_per_s_b32": statistics.median(r["tokens_per_s"] for r in s["tps_b32"]),
            "sequential_rps": statistics.median(r["requests_per_s"] for r in s["served_sequential"]),
            "batched_rps": statistics.median(r["requests_per_s"] for r in s["served_batched"]),
            "mean_batch": statistics.median(r["mean_batch"] for r in s["served_batched"]),
            "peak_rss_mb": peaks[variant],
            "model_rss_mb": loaded[variant]["loaded_mb"] - loaded[variant]["imported_mb"],
        }
        rows[variant]["batcher_speedup"] = rows[variant]["batched_rps"] / rows[variant]["sequential_rps"]
    targets = {}
    if "pytorch-fp32" in rows:
        base = rows["pytorch-fp32"]
        if "onnx-int8-dynamic" in rows:
            targets["onnx_int8_vs_pytorch_b1_latency"] = (
                base["latency_b1_ms"] / rows["onnx-int8-dynamic"]["latency_b1_ms"]
            )
        if "onnx-int8-static" in rows:
            targets["onnx_int8_static_vs_pytorch_b1_latency"] = (
                base["latency_b1_ms"] / rows["onnx-int8-static"]["latency_b1_ms"]
            )
        if "ct2-int8" in rows:
            targets["ct2_int8_vs_pytorch_b32_tps"] = (
                rows["ct2-int8"]["tokens_per_s_b32"] / base["tokens_per_s_b32"]
            )
    targets["batcher_vs_sequential"] = {v: r["batcher_speedup"] for v, r in rows.items()}
    return {
        "model": {**MODEL_SHAPE, "new_tokens": NEW_TOKENS, "weights": "random"},
        "load1_during_run": [
            min(r["load1"] for v in variants for k in samples[v] for r in samples[v][k]),
            max(r["load1"] for v in variants for k in samples[v] for r in samples[v][k]),
        ],
        "machine": {
            "cpu": platform.processor() or platform.machine(),
            "cores": os.cpu_count(),
            "threads": args.threads,
            "load_avg_at_end": os.getloadavg(),
        },
        "settings": {
            "rounds": args.rounds,
            "clients": args.clients,
            "served_requests": args.served_requests,
            "max_queue_delay_ms": args.max_queue_delay_ms,
            "max_batch_size": 32,
        },
        "engines": rows,
        "targets": targets,
    }


def render(report: dict) -> str:
    head = (
        "| engine | latency b=1 (ms) | tok/s b=1 | tok/s b=8 | tok/s b=32 | peak RSS (MB) | "
        "sequential req/s | batcher req/s (8 clients) | batcher ÷ sequential | mean batch |"
    )
    lines = [head, "|" + "---|" * (head.count("|") - 1)]
    for name, r in report["engines"].items():
        lines.append(
            f"| {name} | {r['latency_b1_ms']:.0f} | {r['tokens_per_s_b1']:.0f} | "
            f"{r['tokens_per_s_b8']:.0f} | "
            f"{r['tokens_per_s_b32']:.0f} | {r['peak_rss_mb']:.0f} | {r['sequential_rps']:.2f} | "
            f"{r['batched_rps']:.2f} | {r['batcher_speedup']:.1f}× | {r['mean_batch']:.1f} |"
        )
    t = report["targets"]
    low, high = report["load1_during_run"]
    lines.append("")
    lines.append(f"1-minute load average during the measurements: {low:.1f} to {high:.1f} "
                 f"on {report['machine']['cores']} cores; {report['machine']['threads']} engine thread(s)")
    for key, label, goal in (
        ("onnx_int8_vs_pytorch_b1_latency", "ONNX INT8 (dynamic) vs PyTorch FP32, batch-1 latency", 1.5),
        (
            "onnx_int8_static_vs_pytorch_b1_latency",
            "ONNX INT8 (static) vs PyTorch FP32, batch-1 latency",
            1.5,
        ),
        ("ct2_int8_vs_pytorch_b32_tps", "CTranslate2 INT8 vs PyTorch FP32, tokens/s at batch 32", 3.0),
    ):
        if key in t:
            lines.append(
                f"- {label}: {t[key]:.2f}× (target ≥ {goal}×: {'met' if t[key] >= goal else 'MISSED'})"
            )
    for name, ratio in t["batcher_vs_sequential"].items():
        lines.append(
            f"- dynamic batcher, 8 clients vs sequential, {name}: {ratio:.1f}× "
            f"(target ≥ 3×: {'met' if ratio >= 3 else 'MISSED'})"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
