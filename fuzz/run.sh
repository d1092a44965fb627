#!/usr/bin/env bash
# Builds the libFuzzer target over the framing decoder and both frame decoders, seeds a
# corpus, and runs it for N seconds (default 30).
#   fuzz/run.sh [seconds]
set -euo pipefail
seconds="${1:-30}"
root="$(cd "$(dirname "$0")/.." && pwd)"
out="$root/fuzz/out"
mkdir -p "$out/corpus" "$out/artifacts"

rm -f "$out/frame-fuzz"
# (ld.gold warns about every ASan helper symbol; those lines are noise.)
swiftc -parse-as-library -module-name FrameFuzz -sanitize=fuzzer,address -O \
    "$root"/Sources/MeshCompanion/*.swift "$root/fuzz/FrameFuzz.swift" -o "$out/frame-fuzz" 2>&1 \
    | { grep -v 'Cannot export local symbol' || true; }
[ -x "$out/frame-fuzz" ] || { echo "fuzz target did not build" >&2; exit 1; }

# Seeds: byte 0 picks the side (bit 0) and the read size; the rest is a frame or a stream.
seed() {  # name hex
    local bytes
    bytes="$(printf '%s' "$2" | tr -d ' ' | sed 's/\(..\)/\\x\1/g')"
    printf "$bytes" > "$out/corpus/$1"
}
key="1ec77175b0918ed206f9ae04ec136d6d5d4315bb26305427f645b492e9350c10"
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

cd "$out"
./frame-fuzz -max_total_time="$seconds" -max_len=1024 -print_final_stats=1 \
    -artifact_prefix="$out/artifacts/" "$out/corpus" 2>&1 | tee "$out/last-run.log" | grep -E '^#|stat::|ERROR|SUMMARY|Done' | tail -n 20
