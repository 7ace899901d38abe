"""``mtserve bench``: argument wiring. The work is in the modules beside this one.

    mtserve bench --url http://127.0.0.1:8000 --concurrency 1,2,4,8,16
    mtserve bench --engine llamacpp --model qwen2.5-coder-0.5b-instruct-q4_k_m
    mtserve bench --compare http://127.0.0.1:8000 engine --concurrency 8 --rounds 3
    mtserve bench --compare http://127.0.0.1:8000 naive --scenario fairness
    mtserve bench --compare http://127.0.0.1:8000 wrapper --concurrency 8 --rounds 4

A target is a loopback URL (a running server), ``engine`` (the raw engine in
this process), ``naive`` (one request at a time), ``wrapper`` (a bare llama.cpp
wrapper with a one-line prompt) or ``transformers`` (HF ``generate``; needs the
``baseline`` extra). In-process targets are built
from the same settings flags as ``mtserve serve`` (--model, --threads, ...).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from mtserve.cli.common import add_setting_flags, settings_from

DESCRIPTION = """\
Measure requests/s, tokens/s, latency percentiles, time to first token, queue against
engine time, and the server's CPU and peak RSS, for one or more targets, side by side
in one run."""
EXAMPLES = __doc__.split("\n\n", 1)[1]

BENCH_SETTING_FIELDS = ("home", "model", "threads", "n_parallel", "ctx_per_slot", "max_output_tokens",
                        "segment_max_chars", "segment_budget_chars")


def _floats(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected numbers separated by commas, got {text!r}") from None
    if not values or any(v <= 0 for v in values):
        raise argparse.ArgumentTypeError(f"expected positive numbers, got {text!r}")
    return values


def _scenarios(text: str) -> list[str]:
    from mtserve.bench.runner import SCENARIOS

    names = [x.strip() for x in text.split(",") if x.strip()]
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown scenario {unknown}; use any of {', '.join(SCENARIOS)}")
    return names


def add_parser(commands: Any) -> argparse.ArgumentParser:

    bench = commands.add_parser(
        "bench", help="measure throughput and latency of mtserve and its baselines",
        description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=EXAMPLES,
    )
    what = bench.add_argument_group("targets")
    what.add_argument("--url", dest="server_urls", action="append", default=[], metavar="URL",
                      help="a running server on loopback (repeatable)")
    what.add_argument("--engine", choices=("llamacpp",),
                      help="the raw engine, in process, with --model (the only engine: llamacpp)")
    what.add_argument("--naive", action="store_true", help="naive serving: one request at a time")
    what.add_argument("--wrapper", action="store_true",
                      help="a bare llama.cpp wrapper with a one-line prompt (what the prompt must pay for)")
    what.add_argument("--transformers", action="store_true",
                      help="Hugging Face transformers generate on the same GGUF (needs the baseline extra)")
    what.add_argument("--compare", nargs=2, metavar=("A", "B"),
                      help="run two targets alternately (A B, then B A in the next round) and print B/A ratios")
    what.add_argument("--server-pid", type=int, help="pid of the server to sample (default: the one on the port)")

    load = bench.add_argument_group("load")
    load.add_argument("--scenario", type=_scenarios, default=["closed"],
                      help="comma list of closed (clients sweep), open (arrival rates), fairness "
                           "(a long document in the queue, short requests beside it), ttft (streaming) "
                           "(default: closed)")
    load.add_argument("--concurrency", type=_floats, default=[1, 2, 4, 8, 16],
                      help="closed-loop clients, a comma list (default: 1,2,4,8,16)")
    load.add_argument("--rates", type=_floats, default=[0.5, 1, 2, 4],
                      help="open-loop arrivals per second, a comma list (default: 0.5,1,2,4)")
    load.add_argument("--fixed-rate", action="store_true", help="open loop: fixed gaps instead of Poisson")
    load.add_argument("--fairness-clients", type=int, default=8, help="short-request clients in fairness")
    load.add_argument("--ttft-clients", type=int, default=1, help="streaming clients in ttft")
    load.add_argument("--requests", type=int, default=32, help="most requests per point and round")
    load.add_argument("--duration", type=float, default=60.0, help="most seconds per point and round")
    load.add_argument("--rounds", type=int, default=None, help="passes over all points (default 1; 2 with --compare)")
    load.add_argument("--warmup", type=int, default=None,
                      help="concurrent warm-up calls per target (default: the largest load, at most 16)")

    inputs = bench.add_argument_group("inputs")
    inputs.add_argument("--workload", choices=("short", "paragraph", "long", "file"), default="short",
                        help="what each request sends: short (one HSK sentence), paragraph (four sentences "
                             "joined), long (a document of --long-sentences sentences in paragraphs), or file "
                             "(the texts of --file, cut by --file-mode); every request gets text no earlier "
                             "one had, so no cache answers it")
    inputs.add_argument("--file", type=Path, help="a UTF-8 text file of texts to send, for --workload file")
    inputs.add_argument("--file-mode", choices=("lines", "paragraphs", "whole"), default="lines",
                        help="how --file is cut into requests: one per non-empty line, one per paragraph "
                             "(blank-line separated), or the whole file as one")
    inputs.add_argument("--long-sentences", type=int, default=40, help="sentences in the long document")
    inputs.add_argument("--source", default="zh", help="source language of the inputs")
    inputs.add_argument("--target", default="en", help="target language")
    inputs.add_argument("--seed", type=int, default=0,
                        help="shuffles the sentence pool and the arrivals (default: 0)")

    out = bench.add_argument_group("output")
    out.add_argument("--out", type=Path, help="folder for result.json and plot.png (default bench-results/TIME)")
    out.add_argument("--label", default="", help="title of the plot (default: none)")
    out.add_argument("--markdown", action="store_true", help="print the tables as Markdown")
    out.add_argument("--no-progress", action="store_true", help="no progress bar")
    add_setting_flags(bench, BENCH_SETTING_FIELDS, "in-process targets (each also MTSERVE_<NAME>)")
    bench.set_defaults(func=cmd_bench)
    return bench


def _target_specs(args: argparse.Namespace) -> list[str]:
    if args.compare:
        return list(args.compare)
    specs = list(args.server_urls)
    if args.engine:
        specs.append("engine")
    if args.naive:
        specs.append("naive")
    if args.wrapper:
        specs.append("wrapper")
    if args.transformers:
        specs.append("transformers")
    return specs


def cmd_bench(args: argparse.Namespace) -> int:
    from mtserve.bench.load import Bounds
    from mtserve.bench.report import machine, plot, ratio_table, table, write_json
    from mtserve.bench.runner import Plan, Point, Workloads, execute
    from mtserve.bench.targets import NotLoopback, make_target
    from mtserve.bench.workloads import build_workload

    specs = _target_specs(args)
    if not specs:
        print("mtserve bench: name a target: --url http://127.0.0.1:PORT, --engine llamacpp, --naive, "
              "--transformers, or --compare A B", file=sys.stderr)
        return 2
    settings = settings_from(args)
    try:
        targets = [make_target(spec, settings, server_pid=args.server_pid) for spec in specs]
    except (NotLoopback, ValueError) as exc:
        print(f"mtserve bench: {exc}", file=sys.stderr)
        return 2
    names = [t.name for t in targets]
    if len(set(names)) != len(names):
        for i, target in enumerate(targets):
            target.name = f"{target.name}#{i + 1}"

    points: list[Point] = []
    for scenario in args.scenario:
        if scenario == "closed":
            points += [Point("closed", c) for c in args.concurrency]
        elif scenario == "open":
            points += [Point("open", r) for r in args.rates]
        elif scenario == "fairness":
            points.append(Point("fairness", args.fairness_clients))
        elif scenario == "ttft":
            points.append(Point("ttft", args.ttft_clients))
    largest = int(max(p.load for p in points if p.scenario != "open")) if any(
        p.scenario != "open" for p in points) else 4
    rounds = args.rounds or (2 if args.compare else 1)
    plan = Plan(points=points, bounds=Bounds(args.requests, args.duration), rounds=rounds,
                poisson=not args.fixed_rate, seed=args.seed,
                warmup=args.warmup if args.warmup is not None else min(16, max(1, largest)))
    try:
        main_workload = build_workload(args.workload, args.source, args.target, args.file, args.file_mode,
                                       seed=args.seed, long_sentences=args.long_sentences)
        workloads = Workloads(
            main=main_workload,
            short=main_workload if args.workload == "short" else build_workload("short", args.source, args.target,
                                                                                seed=args.seed),
            long=build_workload("long", args.source, args.target, seed=args.seed,
                                long_sentences=args.long_sentences),
        )
    except (OSError, ValueError) as exc:
        print(f"mtserve bench: {exc}", file=sys.stderr)
        return 2

    out_dir = args.out or Path("bench-results") / time.strftime("%Y%m%d-%H%M%S")
    started = []
    try:
        for target in targets:
            print(f"mtserve bench: starting {target.name}", file=sys.stderr)
            target.start()
            started.append(target)
        bar = None
        if not args.no_progress:
            from tqdm import tqdm

            bar = tqdm(total=len(plan.runs(targets)) * plan.bounds.max_requests, unit="req", file=sys.stderr,
                       dynamic_ncols=True)

        def progress(description: str, n: int) -> None:
            if bar is not None:
                bar.set_description(description, refresh=False)
                bar.update(n)

        result = execute(targets, plan, workloads, progress=progress)
        if bar is not None:
            bar.close()
    except RuntimeError as exc:
        print(f"mtserve bench: {exc}", file=sys.stderr)
        return 2
    finally:
        for target in started:
            target.stop()

    meta = {
        "command": " ".join(sys.argv),
        "machine": machine(),
        "settings": {name: getattr(settings, name) for name in BENCH_SETTING_FIELDS if name != "home"},
        "workload": {"name": workloads.main.name, "origin": workloads.main.origin,
                     "items_used": workloads.main.used, "wrapped": workloads.main.wrapped,
                     "source": args.source, "target": args.target},
        "plan": {"points": [p.label for p in plan.points], "rounds": plan.rounds,
                 "max_requests": plan.bounds.max_requests, "max_seconds": plan.bounds.max_seconds,
                 "order": result.order},
    }
    json_path = write_json(out_dir / "result.json", meta=meta, targets={t.name: t.describe() for t in targets},
                           points=result.points, per_round=result.per_round, ratios=result.ratios)
    png_path = plot(out_dir / "plot.png", result.points, title=args.label)
    print(table(result.points, markdown=args.markdown))
    if result.ratios:
        print()
        print(ratio_table(result.ratios, markdown=args.markdown))
    if workloads.main.wrapped:
        print(f"note: the {workloads.main.name} pool ran out and wrapped {workloads.main.wrapped} time(s); "
              "repeats may hit a cache", file=sys.stderr)
    print(f"\nresults: {json_path}" + (f"\nplot: {png_path}" if png_path else ""), file=sys.stderr)
    return 0
