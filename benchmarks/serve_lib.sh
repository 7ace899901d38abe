# Sourced by the run_*.sh scripts: wait for a server started in the background.
#   wait_for URL PID LOG   # up to 180 s for URL to answer; if PID dies first, print LOG and exit 1
wait_for() {
  local url=$1 pid=$2 log=$3
  for _ in $(seq 1 180); do
    curl -sf "$url" >/dev/null && return 0
    kill -0 "$pid" || { cat "$log"; exit 1; }
    sleep 1
  done
}
