#!/usr/bin/env bash
# Reproduces every LLM figure in BENCHMARKS.md for one model, in a few minutes per model.
#
#   benchmarks/run_llm.sh qwen2.5-coder-0.5b-instruct-q4_k_m [OUT_DIR] [REQUESTS]
#   THREADS=1 SWEEP=1,4,16 ROUNDS=2 HF_REQUESTS=6 benchmarks/run_llm.sh qwen2.5-coder-1.5b-instruct-q4_k_m
#
# It starts `mtserve serve` on a loopback port with the translation cache off
# (every benchmark text is fresh anyway; with the cache off a repeat can never
# flatter mtserve), runs the bench scenarios against it and the baselines, and
# stops the server. Each scenario is its own `mtserve bench` run, so its
# targets alternate (A B, then B A) within that run and their ratios hold.
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/serve_lib.sh
MODEL=${1:?usage: benchmarks/run_llm.sh MODEL [OUT_DIR] [REQUESTS]}
OUT=${2:-benchmarks/results/$MODEL}
N=${3:-24}
PORT=${PORT:-8791}
URL=http://127.0.0.1:$PORT
THREADS=${THREADS:-$(nproc)}  # engine threads, the same for the server and the in-process targets
BENCH=".venv/bin/mtserve bench --model $MODEL --threads $THREADS --no-progress"
mkdir -p "$OUT"

MTSERVE_CACHE_SIZE=0 MTSERVE_LOG_LEVEL=warning .venv/bin/mtserve serve --model "$MODEL" --threads "$THREADS" --port "$PORT" \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
wait_for "$URL/health" $SERVER "$OUT/server.log"

run() {  # run NAME ARGS...: one bench run, its table saved beside its JSON and plot
  local name=$1; shift
  echo "== $name: mtserve bench $*" | tee "$OUT/$name.txt"
  $BENCH --out "$OUT/$name" --markdown "$@" | tee -a "$OUT/$name.txt"
}

# 1. The sweep: mtserve over HTTP, the raw engine, naive serving; one curve each.
run sweep --url "$URL" --engine llamacpp --naive --concurrency "${SWEEP:-1,2,4,8,16}" --requests "$N" \
  --label "$MODEL: closed-loop sweep, short zh->en sentences"
# 2. Overhead: mtserve against the raw engine, alternated, at 1 and 8 clients (and 16 for memory).
run overhead --compare "$URL" engine --concurrency 1,8,16 --requests "$N" --rounds "${ROUNDS:-3}" \
  --label "$MODEL: mtserve over HTTP vs the raw engine"
# 3. Fairness: one long document in the queue, 8 clients of short sentences beside it.
run fairness --compare "$URL" naive --scenario fairness --fairness-clients 8 \
  --long-sentences "${LONG_SENTENCES:-30}" --requests 400 --duration 180 --rounds "${FAIR_ROUNDS:-2}" --label "$MODEL: short requests beside a long document"
# 4. Streaming: time to first token for a lone short sentence.
run ttft --compare "$URL" engine --scenario ttft --requests "$N" --rounds "${ROUNDS:-3}"
# 5. What a user would start from: transformers generate, FP32 (needs the baseline extra).
if .venv/bin/python -c "import torch, transformers, gguf" 2>/dev/null; then
  run transformers --compare "$URL" transformers --concurrency 8 --requests "${HF_REQUESTS:-12}" \
    --duration "${HF_DURATION:-120}" --rounds 1 --warmup 1
fi
echo "results in $OUT"
