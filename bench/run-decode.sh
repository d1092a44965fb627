#!/usr/bin/env bash
# The receive path on the same frames (bench/frames.txt), side by side in one run, same statistic:
#   ours:        bench/decode (release build): each payload decoded into the owned event MeshSession
#                hands out (ReceivedMessage, Push, Contact, SentInfo) and delivered to a subscriber
#   meshcore_py: bench/py_reader_bench.py: MessageReader.handle_rx (parse, then event dispatch to a
#                subscriber, the dispatcher's queue joined inside the timed part)
# Both: RUNS runs of ROUNDS passes over the six frames, time per frame = run time / frames, the median
# of the runs, on the process's CPU-time clock and on the monotonic clock (wall). Prints the ratios.
# Set PYTHON to an interpreter that has `meshcore` installed, or let the script make
# bench/.venv-bench with the pinned version.
#
#   bench/run-decode.sh            # RUNS=15, ROUNDS (ours)=20000, PY_ROUNDS=300
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
runs="${RUNS:-15}"

py="${PYTHON:-python3}"
if ! "$py" -c 'import meshcore' 2>/dev/null; then
    if [ ! -x "$here/.venv-bench/bin/python" ]; then
        python3 -m venv "$here/.venv-bench"
        "$here/.venv-bench/bin/pip" install --quiet meshcore==2.3.17
    fi
    py="$here/.venv-bench/bin/python"
fi

echo "== ours (bench/decode, decode + owned event + subscriber)"
"$here/decode/run.sh" --runs "$runs" --rounds "${ROUNDS:-20000}" | tee "$here/.last-swift-bench.txt" | sed 's/^/  /'
echo "== meshcore_py $("$py" -c 'import importlib.metadata as m; print(m.version("meshcore"))') (MessageReader.handle_rx + EventDispatcher)"
"$py" "$here/py_reader_bench.py" --runs "$runs" --rounds "${PY_ROUNDS:-300}" | tee "$here/.last-py-bench.txt" | sed 's/^/  /'

get() { sed -n "s/^$1=\([0-9.]*\).*/\1/p" "$2"; }
for metric in mix_cpu_ns_per_frame mix_ns_per_frame; do
    o="$(get $metric "$here/.last-swift-bench.txt")"; t="$(get $metric "$here/.last-py-bench.txt")"
    awk -v m="$metric" -v o="$o" -v t="$t" 'BEGIN {
        printf "== %s (median of runs): ours %.1f ns, meshcore_py %.1f ns: ours is %.0fx faster\n", m, o, t, t / o }'
done
