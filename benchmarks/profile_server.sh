#!/usr/bin/env bash
# Where a busy mtserve process spends its time: py-spy samples the server while
# `mtserve bench` keeps 8 clients of short sentences on it.
#
#   benchmarks/profile_server.sh qwen2.5-coder-0.5b-instruct-q4_k_m [OUT_DIR]
#
# Writes py-spy's collapsed stacks (profile.txt, one "stack count" a line) and
# a summary of the hottest frames (profile-top.txt). Needs `pip install py-spy`.
set -euo pipefail
cd "$(dirname "$0")/.."
MODEL=${1:?usage: benchmarks/profile_server.sh MODEL [OUT_DIR]}
OUT=${2:-benchmarks/results/$MODEL/profile}
PORT=${PORT:-8792}
URL=http://127.0.0.1:$PORT
mkdir -p "$OUT"
MTSERVE_CACHE_SIZE=0 MTSERVE_LOG_LEVEL=warning .venv/bin/mtserve serve --model "$MODEL" --port "$PORT" \
  >"$OUT/server.log" 2>&1 &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do curl -sf "$URL/health" >/dev/null && break; sleep 1; done
.venv/bin/mtserve bench --url "$URL" --concurrency 8 --requests 400 --duration "${DURATION:-40}" --no-progress \
  --out "$OUT/load" >"$OUT/load.txt" 2>&1 &
LOAD=$!
sleep 5
.venv/bin/py-spy record --pid $SERVER --duration "$(( ${DURATION:-40} - 10 ))" --rate 100 --format raw \
  --idle --threads --output "$OUT/profile.txt" >/dev/null 2>&1 || true
wait $LOAD
.venv/bin/python benchmarks/profile_summary.py "$OUT/profile.txt" | tee "$OUT/profile-top.txt"
