#!/usr/bin/env bash
# Builds the libFuzzer targets over every parser of outside bytes, seeds their corpora, and runs
# each for N seconds (default 30). Exits non-zero if any target crashes or fails an invariant.
#   fuzz/run.sh [seconds] [target...]
# Targets (one Swift file each in fuzz/, compiled together with the sources of the module it tests):
#   frame     companion frames and the serial/TCP framing (MeshCompanion)
#   air       on-air packets, payloads, adverts, plaintexts (MeshAir)
#   att       ATT PDUs into the GATT client and the simulated GATT server (MeshLink)
#   store     store records, the index file, contacts/channels/outbox/state files (MeshStore; its file
#             calls go through MeshErrno's errno layer)
#   json      API request lines: JSONParser (MeshNet) and DaemonRequest.parse (MeshOps), the
#             companion-stream deframer (MeshCompanion), the WebSocket client with SHA-1 from MeshAir (built
#             with the MeshDaemon sources, which link MeshHub and MeshBridge)
#   topology  simulator topology files (MeshSim)
#   config    the config file: the TOML reader and the config model (MeshOps)
#   mqtt      what a broker sends: the MQTT decoder and the client session; DNS answers (MeshNet)
#   websocket what a client sends to the hub's WebSocket door: the upgrade and the frames (MeshNet)
#   http      what a browser sends to the web console's door: HTTP requests, then a WebSocket's
#             text frames (MeshNet)
#   kiss      what a KISS modem sends: the deframer and the modem's SetHardware answers (MeshNode)
#   doors     what comes in through the remote doors, by class: MQTT command payloads (the bridge's
#             reading of them and the results it publishes, without secrets) and hub frames (each
#             listener's refusal, reply frames' secret bytes zeroed); built with the MeshDaemon sources
# Inputs that once made a target fail are kept in fuzz/regressions/TARGET/ and run on every run.
# The module under test is built with -sanitize=fuzzer,address, without optimisation (-Onone builds
# in half the time, and the short runs of the test command are mostly build); FUZZ_OPT=-O for long
# runs. The modules it imports come from the package's debug build (.build/debug, built here if
# missing) and are linked uninstrumented.
set -uo pipefail
seconds="${1:-30}"
shift || true
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=(frame air att store json topology config mqtt websocket http kiss doors)
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/fuzz/out"
deps="$root/.build/debug"
mkdir -p "$out/artifacts"
# The Swift runtime's backtracer and ASan's report fight over a crashing process: let ASan report.
export SWIFT_BACKTRACE=enable=no

if [ ! -f "$deps/Modules/MeshSession.swiftmodule" ] || [ ! -d "$deps/CMeshCrypto.build" ]; then
    (cd "$root" && swift build) || { echo "the package's debug build failed" >&2; exit 1; }
fi

# The object files of the given modules of the debug build (a module named twice is taken once).
objects() {
    local m f seen=" "
    for m in "$@"; do
        [[ "$seen" == *" $m "* ]] && continue
        seen+="$m "
        [ -d "$deps/$m.build" ] || continue
        while IFS= read -r -d '' f; do
            # An incremental build leaves the object of a removed or moved source behind: only
            # the objects of sources the module still has.
            case "$f" in
                *.swift.o|*.c.o) [ -n "$(find "$root/Sources/$m" -name "$(basename "$f" .o)" -print -quit 2>/dev/null)" ] || continue ;;
            esac
            objs+=("$f")
        done < <(find "$deps/$m.build" -name '*.o' -print0)
    done
}

crypto=(CMeshCrypto)  # with libsodium and mbedTLS's libmbedcrypto
link=(MeshLink MeshNet MeshErrno CMeshLink)

# build TARGET FILE MODULE "SOURCES..." DEP-MODULES...: compiles fuzz/FILE.swift into $out/TARGET-fuzz.
build() {
    local name="$1" file="$2" module="$3" sources="$4"
    shift 4
    objs=()
    objects "$@"
    local maps=() libs=()
    # mbedTLS for the daemon's TLS sessions (CMeshTLS); libsodium and mbedTLS's crypto for CMeshCrypto.
    [[ " $* " == *" CMeshTLS "* ]] && libs=(-lmbedtls -lmbedx509 -lmbedcrypto)
    [[ " $* " == *" CMeshCrypto "* ]] && libs+=(-lsodium -lmbedcrypto)
    [ -f "$deps/CMeshLink.build/module.modulemap" ] && maps=(-Xcc "-fmodule-map-file=$deps/CMeshLink.build/module.modulemap")
    [ -f "$deps/CMeshTLS.build/module.modulemap" ] && maps+=(-Xcc "-fmodule-map-file=$deps/CMeshTLS.build/module.modulemap")
    [ -f "$deps/CMeshCrypto.build/module.modulemap" ] && maps+=(-Xcc "-fmodule-map-file=$deps/CMeshCrypto.build/module.modulemap")
    [ -f "$deps/CMeshWebPage.build/module.modulemap" ] && maps+=(-Xcc "-fmodule-map-file=$deps/CMeshWebPage.build/module.modulemap")
    # Built already, and nothing it is made of changed since (sources, the fuzz file, the objects of
    # the modules it links): kept.
    # shellcheck disable=SC2086
    if [ -x "$out/$name-fuzz" ] && [ "$(cat "$out/$name-fuzz.opt" 2>/dev/null)" = "${FUZZ_OPT:--Onone}" ] && [ -z "$(find $sources "$root/fuzz/$file.swift" "$0" "${objs[@]}" -newer "$out/$name-fuzz" -print -quit 2>/dev/null)" ]; then
        echo "fuzz target $name is up to date"
        return 0
    fi
    rm -f "$out/$name-fuzz"
    # (ld.gold warns about every ASan helper symbol; those lines are noise.)
    # shellcheck disable=SC2086
    swiftc -parse-as-library -module-name "$module" -sanitize=fuzzer,address "${FUZZ_OPT:--Onone}" \
        -I "$deps/Modules" -I "$root/Sources/CBluetooth" -I "$root/Sources/CMeshLink/include" -I "$root/Sources/CMeshTLS/include" -I "$root/Sources/CSodium" -I "$root/Sources/CMeshCrypto/include" -I "$root/Sources/CMeshWebPage/include" "${maps[@]}" \
        $sources "$root/fuzz/$file.swift" "${objs[@]}" "${libs[@]}" -o "$out/$name-fuzz" 2>&1 \
        | { grep -v 'Cannot export local symbol' || true; }
    [ -x "$out/$name-fuzz" ] || { echo "fuzz target $name did not build" >&2; return 1; }
    echo "${FUZZ_OPT:--Onone}" > "$out/$name-fuzz.opt"
}

# Seeds for the frame target: byte 0 picks the side (bit 0) and the read size; the rest is a frame or a stream.
seed() {  # name hex
    local bytes
    bytes="$(printf '%s' "$2" | tr -d ' ' | sed 's/\(..\)/\\x\1/g')"
    printf "$bytes" > "$out/corpus-frame/$1"
}

seed_frame() {
    local key="1ec77175b0918ed206f9ae04ec136d6d5d4315bb26305427f645b492e9350c10"
    local zeros64
    zeros64="$(printf '0%.0s' $(seq 1 128))"
    seed device-query      "01 3c0200 1603"
    seed app-start         "01 3c0d00 0103202020202020 6d63636c69"
    seed send-txt          "03 3c1200 0200000000f15365 1ec77175b091 48656c6c6f"
    seed device-info       "00 3e0c00 0d0daf2840e20100 31342041"
    seed self-info         "00 3e3e00 05011416${key}0075190 3a01ce9ff010006 01f2440d0024f4000008056261"
    seed contact           "00 3e9400 03${key}020102 5f33${zeros64:0:124}72707400${zeros64:0:52}00f153650075190 3a01ce9ff01f15365"
    seed dm-v3             "00 3e1500 10f40000 1ec77175b091 ff00 00f15365 48656c6c6f"
    seed dm-legacy         "00 3e1000 07 1ec77175b091 0200 00f15365 486921"
    seed chan-v3           "00 3e1400 112800000001 0000f15365 416c6963653a204869"
    seed sent              "00 3e0a00 0601918d0c8e88130000"
    seed confirmed         "00 3e0900 82918d0c8e7b000000"
    seed log-rx            "00 3e1000 8830c4 260130a24d89bd0000000000fb"
    seed trace             "00 3e0f00 89000100a24d89bd00000000fb3028"
    seed telemetry         "00 3e1000 8b00 1ec77175b091 01740173016700fa"
    seed stats             "00 3e1e00 1802 010000000200000003000000040000000500000006000000 07000000"
    seed path-disc         "00 3e0d00 8d00 1ec77175b091 015f02335f"
    seed rescue-cli        "00 3d3d3d20434c4920526573637565203d3d3d0d0a3e20 3e0100 83"
    seed oversized-dev     "01 3cc800 0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a0a 3c0100 0a"
    seed chan-data-cmd     "01 3c0800 3e0141123400ffaa"
    seed trace-cmd         "01 3c0e00 24a24d89bd0000000000fb"
}

failed=()
for t in "${targets[@]}"; do
    echo "== fuzz $t"
    case "$t" in
        frame) build frame FrameFuzz MeshCompanion "$root/Sources/MeshCompanion/*.swift" ;;
        air) build air AirFuzz MeshAir "$root/Sources/MeshAir/*.swift" MeshCompanion "${crypto[@]}" ;;
        att) build att ATTFuzz MeshLink "$root/Sources/MeshLink/ATT.swift $root/Sources/MeshLink/ATTClient.swift $root/Sources/MeshLink/SimulatedGATTServer.swift" ;;
        store) build store StoreFuzz MeshStore "$root/Sources/MeshStore/*.swift" MeshCompanion "${link[@]}" ;;
        json) build json JSONFuzz MeshDaemon "$root/Sources/MeshDaemon/*.swift" \
                  MeshHub MeshBridge MeshDaemonClient MeshNet MeshOps CMeshTLS CMeshWebPage MeshSession MeshStore MeshAir MeshCompanion "${link[@]}" "${crypto[@]}" ;;
        topology) build topology TopologyFuzz MeshSim "$root/Sources/MeshSim/*.swift" \
                  MeshNode MeshNet MeshAir MeshCompanion "${link[@]}" "${crypto[@]}" ;;
        config) build config ConfigFuzz MeshOps "$root/Sources/MeshOps/TOML.swift $root/Sources/MeshOps/Config.swift" \
                  MeshSession MeshAir MeshCompanion "${link[@]}" "${crypto[@]}" ;;
        mqtt) build mqtt MQTTFuzz MeshNet "$root/Sources/MeshNet/*.swift" ;;
        websocket) build websocket WebSocketFuzz MeshNet "$root/Sources/MeshNet/*.swift" ;;
        http) build http HTTPFuzz MeshNet "$root/Sources/MeshNet/*.swift" ;;
        kiss) build kiss KISSFuzz MeshNode "$root/Sources/MeshNode/*.swift" MeshAir MeshCompanion "${crypto[@]}" ;;
        doors) build doors DoorFuzz MeshDaemon "$root/Sources/MeshDaemon/*.swift" \
                  MeshHub MeshBridge MeshDaemonClient MeshNet MeshOps CMeshTLS CMeshWebPage MeshSession MeshStore MeshAir MeshCompanion "${link[@]}" "${crypto[@]}" ;;
        *) echo "unknown fuzz target $t" >&2; failed+=("$t"); continue ;;
    esac || { failed+=("$t"); continue; }
    corpus="$out/corpus-$t"
    mkdir -p "$corpus"
    bin="$out/$t-fuzz"
    # The json and doors targets reach the operation table, whose result shapes (indirect enums, built once
    # into globals) LeakSanitizer takes for leaks: their boxes are referenced with the enum's tag
    # bits set, which it does not recognise as pointers. Leak checks stay on for the other targets.
    extra=()
    asan="${ASAN_OPTIONS:-}"
    if [ "$t" = json ] || [ "$t" = doors ]; then extra=(-detect_leaks=0); asan="detect_leaks=0${asan:+:$asan}"; fi
    # Inputs that once failed (fuzz/regressions/TARGET/) are run first, every time.
    regressions=()
    [ -d "$root/fuzz/regressions/$t" ] && regressions=("$root/fuzz/regressions/$t")
    if [ "$t" = frame ]; then seed_frame; else FUZZ_WRITE_SEEDS="$corpus" ASAN_OPTIONS="$asan" "$bin" >/dev/null 2>&1; fi
    (cd "$out" && ASAN_OPTIONS="$asan" "$bin" "${extra[@]}" -max_total_time="$seconds" -max_len=4096 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$out/artifacts/$t-" "$corpus" "${regressions[@]}" > "$out/last-run-$t.log" 2>&1)
    rc=$?
    grep -E '^#|stat::|ERROR|SUMMARY|Done|invariant' "$out/last-run-$t.log" | tail -n 8
    if [ $rc -ne 0 ]; then
        echo "fuzz target $t failed (exit $rc); see $out/last-run-$t.log and $out/artifacts/" >&2
        failed+=("$t")
    fi
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "fuzzing failed: ${failed[*]}" >&2
    exit 1
fi
