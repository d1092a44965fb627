#!/usr/bin/env bash
# Simulator scale benchmark: 100 nodes (80 repeaters in a grid, 20 companions), one hour of
# virtual time, 1,000 direct messages sent through the companion protocol. Prints the simulator's
# own counters, then wall time, user CPU and max RSS of the release binary (GNU time).
# Usage: bench/sim-scale.sh [extra sim-bench options, e.g. --collisions --seed 2]
#        bench/sim-scale.sh --scale [extra options]
#   --scale: N = 100, 300, 1,000 and 3,000 nodes (N/10 companions, 5·N messages, one hour; 1,000
#   is the 1,000-node hour of bench/README.md), then the exponents of a least-squares fit of
#   log(user CPU) and log(receptions) against log(N).
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product pocketmesh >/dev/null
BIN=.build/release/pocketmesh
if [ "${1:-}" != "--scale" ]; then
    exec /usr/bin/time -f "wall_s=%e user_s=%U max_rss_kb=%M" "$BIN" sim-bench --nodes 100 --companions 20 --seconds 3600 --messages 1000 "$@"
fi
shift
for n in 100 300 1000 3000; do
    /usr/bin/time -f "n=$n wall_s=%e user_s=%U max_rss_kb=%M" "$BIN" sim-bench --nodes "$n" --companions $((n / 10)) \
        --seconds 3600 --messages $((n * 5)) "$@" 2>&1
done | awk '
    { print }
    /^n=/ { split($1, a, "="); split($3, u, "="); n[++k] = a[2]; t[k] = u[2] }
    /receptions=/ { for (i = 1; i <= NF; i++) if ($i ~ /^receptions=/) { split($i, r, "="); rec[k + 1] = r[2] } }
    function slope(y,   i, sx, sy, sxx, sxy, x) {
        sx = sy = sxx = sxy = 0
        for (i = 1; i <= k; i++) { x = log(n[i]); sx += x; sy += log(y[i]); sxx += x * x; sxy += x * log(y[i]) }
        return (k * sxy - sx * sy) / (k * sxx - sx * sx)
    }
    END { if (k >= 2) printf "fitted exponent: user CPU ~ N^%.2f, receptions ~ N^%.2f\n", slope(t), slope(rec) }
'
