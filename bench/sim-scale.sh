#!/usr/bin/env bash
# Simulator scale benchmark: 100 nodes (80 repeaters in a grid, 20 companions), one hour of
# virtual time, 1,000 direct messages sent through the companion protocol. Prints the simulator's
# own counters, then wall time and max RSS of the release binary (GNU time).
# Usage: bench/sim-scale.sh [extra sim-bench options, e.g. --collisions --seed 2]
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product pocketmesh >/dev/null
BIN=.build/release/pocketmesh
/usr/bin/time -f "wall_s=%e max_rss_kb=%M" "$BIN" sim-bench --nodes 100 --companions 20 --seconds 3600 --messages 1000 "$@"
