#!/usr/bin/env bash
# Measures the receive path on the same frames (bench/frames.txt), side by side in one run:
#   ours:        FrameDecoder + CompanionFrame.decode + dispatch (package-benchmark, release build)
#   meshcore_py: MessageReader.handle_rx (parse + event dispatch)
# and prints the ratio. Set PYTHON to an interpreter that has `meshcore` installed, or let
# the script make bench/.venv-bench with the pinned version.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cd "$here"

py="${PYTHON:-python3}"
if ! "$py" -c 'import meshcore' 2>/dev/null; then
    if [ ! -x "$here/.venv-bench/bin/python" ]; then
        python3 -m venv "$here/.venv-bench"
        "$here/.venv-bench/bin/pip" install --quiet meshcore==2.3.17
    fi
    py="$here/.venv-bench/bin/python"
fi

echo "== ours (package-benchmark, per frame)"
swift package --allow-writing-to-package-directory benchmark --no-progress --filter '.*' > "$here/.last-swift-bench.txt" 2>&1 \
    || { tail -n 30 "$here/.last-swift-bench.txt"; exit 1; }
# p50 of a metric in one benchmark's table: the 3rd number on its row (p0, p25, p50, ...).
metric() {  # benchmark-title-prefix metric-name-prefix
    awk -v b="$1" -v m="$2" '
        index($0, b) == 1 { inside = 1; next }
        inside && /^[a-z]/ { inside = 0 }
        inside && index($0, m) > 0 { gsub(/[│*]/, " "); n = split($0, f, " +"); c = 0
            for (i = 1; i <= n; i++) if (f[i] ~ /^[0-9]+$/) { c++; if (c == 3) { print f[i]; exit } } }
    ' "$here/.last-swift-bench.txt"
}
while read -r title; do
    printf '  %-52s p50 %5s ns/frame, %s mallocs/frame\n' "$title" \
        "$(metric "$title" 'Time (wall clock)')" "$(metric "$title" 'Malloc (total)')"
done < <(grep -E '^(receive|decode)' "$here/.last-swift-bench.txt")
ours="$(metric 'receive mix' 'Time (wall clock)')"
allocs="$(metric 'receive mix' 'Malloc (total)')"

echo "== meshcore_py ($("$py" -c 'import importlib.metadata as m; print(m.version("meshcore"))'), MessageReader.handle_rx)"
"$py" "$here/py_reader_bench.py" --rounds "${ROUNDS:-300}" | tee "$here/.last-py-bench.txt" | sed 's/^/  /'
theirs="$(sed -n 's/^mix_ns_per_frame=//p' "$here/.last-py-bench.txt")"

echo "== receive mix: ours ${ours} ns/frame (${allocs} mallocs/frame), meshcore_py ${theirs} ns/frame"
awk -v o="$ours" -v t="$theirs" 'BEGIN { if (o > 0) printf "== ratio: ours is %.0fx faster\n", t / o; else print "== ratio: n/a" }'
