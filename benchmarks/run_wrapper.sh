#!/usr/bin/env bash
# What the prompt costs: mtserve over HTTP against a bare llama.cpp wrapper with a one-line prompt
# (`mtserve bench --wrapper`), alternated in one run (A B, then B A), at 8 clients (BENCHMARKS.md's target: >= 0.95x).
#
#   benchmarks/run_wrapper.sh qwen2.5-coder-0.5b-instruct-q4_k_m [OUT_DIR] [REQUESTS]
#   MTSERVE_SCRIPT_GRAMMAR=retry benchmarks/run_wrapper.sh MODEL OUT   # a server setting under test
#
#   WRAPPER=http benchmarks/run_wrapper.sh MODEL OUT   # the wrapper as its own HTTP server
#                                                    # (benchmarks/wrapper_server.py): HTTP against HTTP
#
# The server starts with the translation cache off; MTSERVE_* variables in the environment reach it.
set -euo pipefail
cd "$(dirname "$0")/.."
. benchmarks/serve_lib.sh
MODEL=${1:?usage: benchmarks/run_wrapper.sh MODEL [OUT_DIR] [REQUESTS]}
OUT=${2:-benchmarks/results/$MODEL/wrapper}
N=${3:-48}
PORT=${PORT:-8792}
URL=http://127.0.0.1:$PORT
THREADS=${THREADS:-$(nproc)}
mkdir -p "$OUT"
MTSERVE_CACHE_SIZE=0 MTSERVE_LOG_LEVEL=warning .venv/bin/mtserve serve --model "$MODEL" --threads "$THREADS" \
  --port "$PORT" >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
wait_for "$URL/health/ready" $SERVER "$OUT/server.log"
B=wrapper
if [ "${WRAPPER:-}" = http ]; then
  WPORT=$((PORT + 1))
  .venv/bin/python benchmarks/wrapper_server.py "$HOME/.cache/mtserve/models/$MODEL.gguf" --port "$WPORT" \
    --threads "$THREADS" >"$OUT/wrapper-server.log" 2>&1 &
  WSERVER=$!
  trap 'kill $SERVER $WSERVER 2>/dev/null || true; wait $SERVER $WSERVER 2>/dev/null || true' EXIT
  wait_for "http://127.0.0.1:$WPORT/health" $WSERVER "$OUT/wrapper-server.log"
  B=http://127.0.0.1:$WPORT
fi
echo "== wrapper: mtserve bench --compare $URL $B --concurrency ${CLIENTS:-8} --requests $N --rounds ${ROUNDS:-4}" \
  | tee "$OUT/wrapper.txt"
.venv/bin/mtserve bench --model "$MODEL" --threads "$THREADS" --no-progress --out "$OUT/wrapper" --markdown \
  --compare "$URL" "$B" --concurrency "${CLIENTS:-8}" --requests "$N" --rounds "${ROUNDS:-4}" \
  --label "$MODEL: mtserve over HTTP vs a bare llama.cpp wrapper with a one-line prompt" | tee -a "$OUT/wrapper.txt"
# What the server did besides translating once (strict retries by problem, markup retries): the run's figures
# are read against these.
curl -sf "$URL/metrics" | grep -E '^mtserve_(guardrail|markup)_[a-z_]*total' >"$OUT/server-metrics.txt" || true
