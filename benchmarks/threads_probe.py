"""Threads probe: four sequential short sentences on the raw engine, printing llama.cpp timings.

    python benchmarks/threads_probe.py N_PARALLEL THREADS [POLL]

Used for the threads-under-load figures in BENCHMARKS.md: run it alternately with THREADS 1 and 2.
"""
import sys
import time

from mtserve.engines.base import EngineRequest
from mtserve.engines.factory import create_engine
from mtserve.settings import Settings

TIMINGS = ("prompt_n", "prompt_ms", "predicted_n", "predicted_ms", "cache_n")

e = create_engine(Settings(model="qwen2.5-coder-0.5b-instruct-q4_k_m", n_parallel=int(sys.argv[1]),
                           threads=int(sys.argv[2])))
if len(sys.argv) > 3:
    e._overrides = {"cpuparams.poll": int(sys.argv[3]), "cpuparams_batch.poll": int(sys.argv[3])}
e.load()
e.translate(EngineRequest("预热。", "zh", "en"))
for i in range(4):
    t0 = time.perf_counter()
    r = e.translate(EngineRequest(f"他在第{i+5}个房间里看书。", "zh", "en"))
    timings = {k: round(v) for k, v in (e.last_timings() or {}).items() if k in TIMINGS}
    print(round((time.perf_counter() - t0) * 1000), r.generated_tokens, timings, flush=True)
