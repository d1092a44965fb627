#!/usr/bin/env bash
# CLI round trip: `pocketmesh --tcp 127.0.0.1:P info` (release build) versus
# `meshcore-cli -q -t 127.0.0.1 -p P infos`, against the same openhop-core peer on loopback.
# Prints wall time and max RSS per run, the means, and the ratios. pocketmesh runs from an installed
# copy of the binary (`install -m 755` into a fresh folder, as a package install writes it), not the
# file the release build wrote (whose page-cache state differs).
#
# Env: POCKETMESH_BIN (default dist/pocketmesh, from scripts/release.sh), POCKETMESH_VENV (default .venv-interop),
#      RUNS (default 10).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BIN="${POCKETMESH_BIN:-$REPO/dist/pocketmesh}"
VENV="${POCKETMESH_VENV:-$REPO/.venv-interop}"
RUNS="${RUNS:-10}"
TIME=/usr/bin/time
[ -x "$BIN" ] || { echo "bench: $BIN missing: run bash scripts/release.sh first." >&2; exit 1; }
[ -x "$TIME" ] || { echo "bench: /usr/bin/time missing: apt-get install time." >&2; exit 1; }
[ -x "$VENV/bin/meshcore-cli" ] || { echo "bench: $VENV/bin/meshcore-cli missing: run scripts/setup.sh." >&2; exit 1; }

PORT=$("$VENV/bin/python" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
LOG=$(mktemp)
"$VENV/bin/python" "$REPO/Tests/interop/harness/companion_peer.py" --nodes 1 --base-port "$PORT" >"$LOG" 2>/dev/null &
PEER=$!
INST=$(mktemp -d)
install -m 755 "$BIN" "$INST/pocketmesh"
BIN="$INST/pocketmesh"
trap 'kill $PEER 2>/dev/null; wait $PEER 2>/dev/null; rm -rf "$LOG" "$INST"' EXIT
for _ in $(seq 100); do grep -q "^node " "$LOG" && break; sleep 0.1; done
grep -q "^node " "$LOG" || { echo "bench: the peer did not start." >&2; exit 1; }
sleep 0.5

measure() {  # name, command...: prints "wall_s rss_kb" per run, then the means
  local name=$1; shift
  local walls=() rsss=()
  "$@" >/dev/null 2>&1 || true   # warm-up
  for _ in $(seq "$RUNS"); do
    local out tf
    tf=$(mktemp)
    "$TIME" -f "%e %M" -o "$tf" "$@" >/dev/null 2>&1 || true
    out=$(tail -1 "$tf"); rm -f "$tf"
    walls+=("${out% *}"); rsss+=("${out#* }")
    sleep 0.2   # the peer takes one client at a time
  done
  local wall rss
  wall=$(printf '%s\n' "${walls[@]}" | awk '{s+=$1} END {printf "%.3f", s/NR}')
  if command -v hyperfine >/dev/null 2>&1; then   # finer wall clock than time(1)'s 10 ms
    local js; js=$(mktemp)
    hyperfine -N --warmup 1 --prepare "sleep 0.2" --runs "$RUNS" --export-json "$js" "$(printf '%q ' "$@")" >/dev/null 2>&1 \
      && wall=$("$VENV/bin/python" -c 'import json,sys; print("%.4f" % json.load(open(sys.argv[1]))["results"][0]["mean"])' "$js")
    rm -f "$js"
  fi
  rss=$(printf '%s\n' "${rsss[@]}" | awk '{s+=$1} END {printf "%.0f", s/NR}')
  echo "$name: wall ${wall} s (mean of $RUNS), max RSS ${rss} KB (mean)" >&2
  echo "$wall $rss"
}

read -r PM_WALL PM_RSS < <(measure "pocketmesh info" "$BIN" --tcp "127.0.0.1:$PORT" info)
read -r MC_WALL MC_RSS < <(measure "meshcore-cli infos" "$VENV/bin/meshcore-cli" -q -t 127.0.0.1 -p "$PORT" infos)
awk -v a="$PM_WALL" -v b="$MC_WALL" -v c="$PM_RSS" -v d="$MC_RSS" 'BEGIN {
  printf "wall ratio pocketmesh/meshcore-cli: %.4f (1/%.0f)\n", a/b, (a > 0 ? b/a : 0)
  printf "RSS ratio pocketmesh/meshcore-cli:  %.4f (1/%.1f)\n", c/d, d/c
}'
