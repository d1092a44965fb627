#!/usr/bin/env bash
# Regenerates the release link's ordering list: the functions that the everyday commands and the
# daemon execute (valgrind's callgrind; then perf's page faults and lackey's instruction trace for
# what callgrind does not name), then the static data they load and store (valgrind's lackey:
# metadata caches, globals). scripts/release.sh hands the list to the linker
# (--symbol-ordering-file), which places those side by side, so a command touches about a MB of
# contiguous code and a few pages of data instead of pages spread over 14 MB.
# The list has two parts, split by where each symbol comes from (the release link's map):
# scripts/release-order-base.txt, the Swift runtime and standard library, the C library, libsodium
# and mbedTLS, whose names do not change with the package's code (committed; regenerate after a
# toolchain or library update, then scripts/release-order-aarch64.sh --base for the aarch64 build's
# copy of it), and scripts/release-order-project.txt, the package's own functions,
# specialisations and data, whose names change with its code. `--project` redoes only the second
# (callgrind's and lackey's runs of the commands and the daemon, about 4 minutes; run it by hand after
# large changes and commit the list); scripts/release.sh fails when more than 5% of the list names nothing in the binary.
#
# Needs valgrind and a release build from scripts/release.sh (the binary and its link map). Uses
# the built-in simulator on loopback as the radio; stops everything it starts.
#
#   bash scripts/release-order.sh             # both parts (about 8 to 11 minutes on 2 cores)
#   bash scripts/release-order.sh --project   # the package's part only
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
BIN=.build/release/pocketmesh
MAP=.build/release-link.map
PROJECT_ONLY=0
case "${1:-}" in
  --project) PROJECT_ONLY=1 ;;
  "") ;;
  *) echo "release-order: unknown argument $1 (use --project or nothing)." >&2; exit 2 ;;
esac
[ -f "$MAP" ] || { echo "release-order: $MAP missing: run scripts/release.sh first." >&2; exit 1; }
command -v valgrind >/dev/null || { echo "release-order: valgrind is needed (apt-get install valgrind)." >&2; exit 1; }
[ -x "$BIN" ] || { echo "release-order: $BIN missing: run scripts/release.sh first." >&2; exit 1; }

WORK=$(mktemp -d)
SIM=""; DAEMON=""; MEMREADER=""; BROKER=""; NODE=""; NODESIM=""
cleanup() {
  [ -n "$NODE" ] && kill "$NODE" 2>/dev/null || true
  [ -n "$NODESIM" ] && kill "$NODESIM" 2>/dev/null || true
  [ -n "$BROKER" ] && kill "$BROKER" 2>/dev/null || true
  [ -n "$MEMREADER" ] && kill "$MEMREADER" 2>/dev/null || true
  [ -n "$DAEMON" ] && kill "$DAEMON" 2>/dev/null || true
  [ -n "$SIM" ] && kill "$SIM" 2>/dev/null || true
  wait 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
strip --strip-debug -o "$WORK/pm" "$BIN"   # valgrind reads the symbol table, not the DWARF
PM="$WORK/pm"
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
mkdir -p "$WORK/pty"
"$PM" sim --nodes 2 --tcp-base "$PORT" --pty "$WORK/pty" >"$WORK/sim.log" 2>&1 &
SIM=$!
for _ in $(seq 100); do grep -q "^node sim1" "$WORK/sim.log" && break; sleep 0.1; done
grep -q "^node sim1" "$WORK/sim.log" || { echo "release-order: the simulator did not start." >&2; exit 1; }
A="127.0.0.1:$PORT"; B="127.0.0.1:$((PORT + 1))"
# The daemon holds sim1 through its serial port (a pty), as a daemon on a USB radio does: the
# serial link's code is placed with the rest (the commands above and below use TCP).
B_SERIAL="$WORK/pty/sim1"

n=0
profile() {  # runs one command under callgrind; its output is not needed
  n=$((n + 1))
  valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.$(printf %03d $n)" "$PM" "$@" >/dev/null 2>&1 || true
}
profile --help
profile --tcp "$A" info
profile --tcp "$A" --json info
profile --tcp "$B" advert --flood
# Both nodes advertise: a direct message is only decrypted (and acknowledged) by a node that has
# heard its sender's advert, so without sim0's the sends below would profile only the retries.
profile --tcp "$A" advert --flood
profile --tcp "$A" contacts
profile --tcp "$A" get
profile --tcp "$A" battery
profile --tcp "$A" channel list
profile --tcp "$A" channel send 0 "order hello"
profile --tcp "$A" send sim1 "order direct"
profile --tcp "$A" --json send sim1 "order json"
profile --tcp "$B" sync
profile --tcp "$B" --json sync
profile --tcp "$A" time get
profile --tcp "$A" listen --for 1
echo "release-order: the commands under callgrind done (${SECONDS} s)"

# The daemon, with a hook, while the other node sends it channel and direct messages and the CLI
# goes through it: run under `valgrind ARGS...`, then stopped.
export XDG_RUNTIME_DIR="$WORK/run" XDG_STATE_HOME="$WORK/state"
mkdir -p "$XDG_RUNTIME_DIR" "$XDG_STATE_HOME"
# With Mosquitto at hand, the daemon also runs the MQTT bridge and the observer uploader.
MQTT_ARGS=()
if command -v mosquitto >/dev/null; then
  MQTT_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$MQTT_PORT" >"$WORK/mosquitto.conf"
  mosquitto -c "$WORK/mosquitto.conf" >"$WORK/mosquitto.log" 2>&1 &
  BROKER=$!
  MQTT_ARGS=(--mqtt "mqtt://127.0.0.1:$MQTT_PORT" --mqtt-observer "mqtt://127.0.0.1:$MQTT_PORT" --mqtt-iata ORD)
fi
# The daemon serves the companion hub too: two clients go through it (one listening the whole
# time, one syncing), so that the hub's code is placed with the rest.
HUB_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# And the web console: a session as the page runs one (scripts/release-order-web.py) stays open
# through the messages, so that the console's code (HTTP, WebSocket, the page's operations and
# its live events) is placed with the rest.
WEB_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# The daemon runs twice under each tool: on the serial port (a USB radio) and on TCP (a WiFi or
# Ethernet radio, and bench/stack/storm.py --daemon-link tcp): each link's connector, resolver and
# reconnect code is placed with the rest (left out, each of its functions maps a 64 KiB block from
# elsewhere: 0.7 MB more for a TCP daemon when only the serial run was profiled).
DAEMON_LINK=(--serial "$B_SERIAL")
daemon_run() {  # MESSAGES RUNNER... (valgrind or perf and their options)
  local messages=$1; shift
  "$@" "$PM" daemon "${DAEMON_LINK[@]}" --on-message true --companion-listen "127.0.0.1:$HUB_PORT" \
    --web "127.0.0.1:$WEB_PORT" "${MQTT_ARGS[@]}" >>"$WORK/daemon.log" 2>&1 &
  DAEMON=$!
  for _ in $(seq 600); do ls "$XDG_RUNTIME_DIR"/pocketmesh/*.sock >/dev/null 2>&1 && break; sleep 0.1; done
  # A program's first calls as soon as the socket is there, the radio perhaps not reached yet: the
  # daemon holds such a request until it is (a service started right after the daemon does this).
  python3 -c 'import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(120); s.connect(sys.argv[1])
for i, op in enumerate(("status", "info")):
    s.sendall((json.dumps({"id": i, "op": op}) + "\n").encode()); s.recv(65536)' \
    "$(ls "$XDG_RUNTIME_DIR"/pocketmesh/*.sock | head -1)" >>"$WORK/api.log" 2>&1 || true
  sleep 1
  "$PM" --tcp "127.0.0.1:$HUB_PORT" listen >/dev/null 2>&1 &
  local listener=$!
  python3 "$REPO/scripts/release-order-web.py" "$WEB_PORT" >>"$WORK/web.log" 2>&1 &
  local web=$! web_start=$SECONDS
  for i in $(seq "$messages"); do
    "$PM" --tcp "$A" channel send 0 "storm $i" >/dev/null 2>&1 || true
    "$PM" --tcp "$A" send sim1 "direct $i" --no-wait >/dev/null 2>&1 || true
    if [ $((i % 5)) = 0 ]; then "$PM" --tcp "127.0.0.1:$HUB_PORT" sync >/dev/null 2>&1 || true; fi
  done
  # The daemon's socket API as a program uses it (status and sync, as bench/daemon/storm.py asks
  # after its storm): the operations the daemon runs for it are placed with the rest; the hub's
  # client is still there, so that status lists it (as it does a hub's clients under the storm).
  local sock
  sock=$(ls "$XDG_RUNTIME_DIR"/pocketmesh/*.sock 2>/dev/null | head -1)
  for op in status sync status sync; do
    python3 -c 'import json, socket, sys
s = socket.socket(socket.AF_UNIX); s.settimeout(120); s.connect(sys.argv[1])
s.sendall((json.dumps({"id": 1, "op": sys.argv[2]}) + "\n").encode()); s.recv(65536)' "$sock" "$op" \
      >>"$WORK/api.log" 2>&1 || echo "release-order: the daemon's $op failed" >>"$WORK/api.log"
  done
  # The web session's unused connection is refused after the daemon's 10 s request timeout.
  while [ $((SECONDS - web_start)) -lt 13 ]; do sleep 1; done
  kill "$listener" "$web" 2>/dev/null || true; wait "$listener" "$web" 2>/dev/null || true
  "$PM" "${DAEMON_LINK[@]}" info >/dev/null 2>&1 || true
  "$PM" "${DAEMON_LINK[@]}" sync >/dev/null 2>&1 || true
  "$PM" "${DAEMON_LINK[@]}" channel send 0 "from the daemon's radio" >/dev/null 2>&1 || true
  "$PM" chats >/dev/null 2>&1 || true
  sleep 3
  kill -TERM "$DAEMON"; wait "$DAEMON" 2>/dev/null || true; DAEMON=""
  grep -h "failed" "$WORK/api.log" 2>/dev/null | head -2 || true
}
daemon_run 20 valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.daemon"
DAEMON_LINK=(--tcp "$B")
daemon_run 10 valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.daemon-tcp"
DAEMON_LINK=(--serial "$B_SERIAL")
echo "release-order: the daemon under callgrind done (${SECONDS} s)"

# The node (`pocketmesh node --role repeater`) on a second simulator's air socket, relaying channel
# messages between two companions and answering its local CLI, so that the node's code is placed
# with the rest: a node then touches a few contiguous pages of it instead of pages all over the
# binary (bench/node_storm.py's peak RSS).
node_run() {  # RUNNER... (valgrind and its options)
  local air nbase
  air=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  nbase=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  printf '%s' '{"nodes":[{"name":"c0","role":"companion"},{"name":"c1","role":"companion"},{"name":"relay","role":"external"}],' \
    '"links":[{"a":"c0","b":"relay","snr":8},{"a":"c1","b":"relay","snr":8}]}' >"$WORK/node.json"
  "$PM" sim --topology "$WORK/node.json" --air-port "$air" --tcp-base "$nbase" >"$WORK/nodesim.log" 2>&1 &
  NODESIM=$!
  for _ in $(seq 100); do grep -q "^node c1" "$WORK/nodesim.log" && break; sleep 0.1; done
  "$@" "$PM" node --role repeater --radio "air:127.0.0.1:$air/relay" --state-dir "$WORK/node" --name relay >"$WORK/node.log" 2>&1 &
  NODE=$!
  for _ in $(seq 600); do grep -q "^repeater " "$WORK/node.log" && break; sleep 0.1; done
  "$PM" --tcp "127.0.0.1:$nbase" advert --flood >/dev/null 2>&1 || true
  for i in 1 2 3 4 5; do
    "$PM" --tcp "127.0.0.1:$nbase" channel send 0 "relay $i" >/dev/null 2>&1 || true
  done
  "$PM" node cli --state-dir "$WORK/node" get name >/dev/null 2>&1 || true
  sleep 3
  kill -TERM "$NODE"; wait "$NODE" 2>/dev/null || true; NODE=""
  kill -TERM "$NODESIM"; wait "$NODESIM" 2>/dev/null || true; NODESIM=""
}
node_run valgrind -q --tool=callgrind --demangle=no --callgrind-out-file="$WORK/cg.node"
echo "release-order: the node under callgrind done (${SECONDS} s)"

# Static data the same work touches (valgrind's lackey sees every load and store): the linker
# then also puts the metadata caches and globals in use side by side, so a command dirties a few
# pages of .bss/.data instead of a hundred. Lackey also sees every instruction executed: the
# functions those belong to that callgrind did not name are added after the others.
mem() {  # prints each distinct address the program executes, loads or stores, once
  awk '$1 == "I" || $1 == "L" || $1 == "S" || $1 == "M" { split($2, a, ","); if (!seen[a[1]]++) print a[1] }'
}
trace() {
  n=$((n + 1))
  valgrind -q --tool=lackey --trace-mem=yes --log-fd=9 "$PM" "$@" 9>&1 >/dev/null 2>/dev/null | mem >"$WORK/mem.$(printf %03d $n)" || true
}
trace --tcp "$A" info
trace --tcp "$A" channel send 0 "order data"
trace --tcp "$B" sync
if [ $PROJECT_ONLY = 0 ]; then  # --project: the three above give most of the package's data
  trace --help
  trace --tcp "$A" contacts
  trace --tcp "$A" send sim1 "order data direct"
fi
echo "release-order: the commands under lackey done (${SECONDS} s)"
# The daemon under lackey in both modes: callgrind does not name all it runs (folded, outlined and
# merged functions, witness thunks), and each of those left out maps a block of code from elsewhere.
if true; then
mkfifo "$WORK/lackey.fifo"
for link in serial tcp; do
  if [ $link = serial ]; then DAEMON_LINK=(--serial "$B_SERIAL"); else DAEMON_LINK=(--tcp "$B"); fi
  mem <"$WORK/lackey.fifo" >"$WORK/mem.daemon-$link" &
  MEMREADER=$!
  daemon_run 5 valgrind -q --tool=lackey --trace-mem=yes --log-file="$WORK/lackey.fifo"
  wait "$MEMREADER" 2>/dev/null || true; MEMREADER=""
done
DAEMON_LINK=(--serial "$B_SERIAL")
echo "release-order: the daemon under lackey done (${SECONDS} s)"
fi

# Code that valgrind does not name: the C library's start-up and its CPU-specific string
# functions (valgrind replaces those with its own). Where perf works, the page faults of a few
# plain runs name them; all variants of the string functions are added as well, since the
# machine that runs the binary may pick other ones than this one.
if [ $PROJECT_ONLY = 0 ] && perf stat -e page-faults true >/dev/null 2>&1; then
  for args in "--help" "--tcp $A info" "--tcp $A contacts" "--tcp $A channel send 0 perf"; do
    n=$((n + 1))
    # shellcheck disable=SC2086
    perf record -q -e page-faults -c 1 -d -o "$WORK/pf.data" "$BIN" $args >/dev/null 2>&1 || true
    perf script -i "$WORK/pf.data" -F addr 2>/dev/null >"$WORK/pf.$(printf %03d $n)" || true
  done
  # The daemon's page faults too (with the bridge and the observer when Mosquitto is there): the
  # first touch of each block of code it maps names what callgrind did not (folded and outlined
  # functions, witness thunks).
  for link in serial tcp; do
    if [ $link = serial ]; then DAEMON_LINK=(--serial "$B_SERIAL"); else DAEMON_LINK=(--tcp "$B"); fi
    daemon_run 10 perf record -q -e page-faults -c 1 -d -o "$WORK/pfd.data"
    perf script -i "$WORK/pfd.data" -F addr 2>/dev/null >"$WORK/pf.daemon-$link" || true
  done
  DAEMON_LINK=(--serial "$B_SERIAL")
fi
nm -n -S --defined-only "$BIN" >"$WORK/nm.txt"
echo "release-order: page faults done (${SECONDS} s)"

python3 - "$WORK" "$REPO/scripts/release-order-base.txt" "$REPO/scripts/release-order-project.txt" "$MAP" "$PROJECT_ONLY" <<'PY'
import bisect, glob, os, re, sys
work, base_out, project_out, map_file, project_only = sys.argv[1:6]
# Each symbol in the order the work first reached it, with which work reached it: the commands
# (files NNN), the daemon, the node. The list then places what the daemon and the commands share,
# then what only the daemon runs, then what only the commands run, then the rest: the daemon and
# each command map two compact blocks each, not pages spread over everything either runs.
seen, order, who = set(), [], {}
label = "cmd"
def add(name):
    if name not in seen:
        seen.add(name)
        order.append(name)
        who[name] = set()
    who[name].add(label)
def work_of(f):
    base = os.path.basename(f)
    return "daemon" if "daemon" in base else "node" if "node" in base else "cmd"
for f in sorted(glob.glob(work + "/cg.*")):
    label = work_of(f)
    for line in open(f, errors="replace"):
        m = re.match(r"c?fn=\(\d+\) (.+)$", line.rstrip("\n"))
        if m and not m.group(1).startswith("0x"):
            # callgrind marks a recursive call's level ('2, '3): the symbol is the name before it
            add(re.sub(r"'\d+$", "", m.group(1)))
addrs, names = [], []          # code
data = []                      # (address, size, name) of static data
for line in open(work + "/nm.txt", errors="replace"):
    p = line.split()
    if len(p) == 3:
        p = [p[0], "0", p[1], p[2]]
    if len(p) != 4:
        continue
    if p[2] in "tTwWiI":
        addrs.append(int(p[0], 16))
        names.append(p[3])
    elif p[2] in "bBdDrRvV":
        data.append((int(p[0], 16), int(p[1], 16), p[3]))
def add_function_at(a):
    """Adds the function holding code address `a`, by every name at its start: identical-code
    folding leaves several names on one function."""
    i = bisect.bisect_right(addrs, a) - 1
    if 0 <= i and i + 1 < len(addrs) and a < addrs[i + 1]:
        j = i
        while j >= 0 and addrs[j] == addrs[i]:
            add(names[j])
            j -= 1
for f in sorted(glob.glob(work + "/pf.*")):
    if f.endswith(".data"):
        continue
    label = work_of(f)
    for line in open(f, errors="replace"):
        try:
            a = int(line.split()[0], 16)
        except (ValueError, IndexError):
            continue
        add_function_at(a)
variant = re.compile(r"^__(mem|str|stp|raw|wmem|wcs)\w*_(sse\d|ssse3|avx\w*|evex\w*|erms|unaligned\w*)$")
for n in names:  # (the C library's string functions: everyone's)
    if variant.match(n):
        for label in ("cmd", "daemon"):
            add(n)
data.sort()
starts = [d[0] for d in data]
for f in sorted(glob.glob(work + "/mem.*")):
    label = work_of(f)
    for line in open(f, errors="replace"):
        try:
            a = int(line.strip(), 16)
        except ValueError:
            continue
        i = bisect.bisect_right(starts, a) - 1
        if i >= 0 and a < data[i][0] + max(data[i][1], 1):
            add(data[i][2])
            continue
        # An instruction: every function the work executed, including those callgrind does not
        # name (folded, outlined, thunks), which would otherwise each pull in a block of code
        # from elsewhere in the binary.
        add_function_at(a)
def tier(n):
    w = who[n]
    if "daemon" in w and "cmd" in w:
        return 0
    return 1 if "daemon" in w else 2 if "cmd" in w else 3
order.sort(key=tier)  # stable: each tier keeps the order of first use
# Where each symbol comes from (the link map: an input section's file, then its symbols): the
# package's objects are in its build directory, NAME.build/FILE.o; everything else is the
# toolchain's or a library's.
project = set()
row = re.compile(r"^\s*[0-9a-f]+\s+[0-9a-f]+\s+[0-9a-f]+\s+\d+ (\s*)(.*)$")
inside = False
for line in open(map_file, errors="replace"):
    m = row.match(line.rstrip("\n"))
    if not m:
        continue
    indent, text = len(m.group(1)), m.group(2)
    if indent == 8:
        inside = re.search(r"/[^/]+\.build/[^/()]+\.o:\(", text) is not None
    elif indent == 16 and inside:
        project.add(text)
mine = [n for n in order if n in project]
open(project_out, "w").write("".join(n + "\n" for n in mine))
if project_only == "1":
    print(f"release-order: {len(mine)} of the package's symbols in scripts/release-order-project.txt")
else:
    theirs = [n for n in order if n not in project]
    open(base_out, "w").write("".join(n + "\n" for n in theirs))
    print(f"release-order: {len(theirs)} symbols of the toolchain and libraries in scripts/release-order-base.txt, "
          f"{len(mine)} of the package's in scripts/release-order-project.txt")
PY
