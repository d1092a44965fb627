#!/bin/sh
# Discovery tests under umockdev, with a fake CP210x on /dev/ttyUSB0 (cp210x.umockdev):
#  1. the MeshLink tests that need it (UmockdevTests), the port scripted to answer DEVICE_QUERY
#     (cp210x-device-query.script);
#  2. the command line: `pocketmesh scan --json` with the fake device and with none (exit 6), and
#     `pocketmesh --serial auto info` against a port scripted to complete the handshake
#     (cp210x-handshake.script).
# umockdev works through LD_PRELOAD, so everything must be a dynamically linked debug build.
# Usage: Tests/umockdev/run.sh [extra `swift test` arguments]   (from anywhere in the package)
# POCKETMESH_BIN overrides the binary (default .build/debug/pocketmesh).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
package=$(cd "$here/../.." && pwd)
command -v umockdev-run >/dev/null || { echo "umockdev-run not found: apt-get install umockdev" >&2; exit 1; }
cd "$package"
swift build --build-tests
POCKETMESH_UMOCKDEV_SCRIPT=1 umockdev-run \
    --device "$here/cp210x.umockdev" \
    --script /dev/ttyUSB0="$here/cp210x-device-query.script" -- \
    swift test --skip-build --filter 'UmockdevTests' "$@"

bin=${POCKETMESH_BIN:-$package/.build/debug/pocketmesh}
export POCKETMESH_NO_DAEMON=1
failed=0
fail() { echo "FAIL: $*" >&2; failed=1; }
expect() {  # expect NAME TEXT NEEDLE...
    name=$1 text=$2
    shift 2
    for needle in "$@"; do
        case $text in *"$needle"*) ;; *) fail "$name: no '$needle' in: $text" ;; esac
    done
}

echo "-- pocketmesh scan --json (fake CP210x)"
code=0
out=$(umockdev-run --device "$here/cp210x.umockdev" -- "$bin" scan --json) || code=$?
[ "$code" = 0 ] || fail "scan --json exited $code"
expect "scan --json" "$out" '"path":"/dev/ttyUSB0"' '"usb_id":"10c4:ea60"' '"bridge":"CP210x"' \
    '"known_bridge":true' '"manufacturer":"Silicon Labs"' '"use":"--serial '

echo "-- pocketmesh scan (fake CP210x, text)"
code=0
out=$(umockdev-run --device "$here/cp210x.umockdev" -- "$bin" scan) || code=$?
[ "$code" = 0 ] || fail "scan exited $code"
expect "scan" "$out" "/dev/ttyUSB0" "10c4:ea60" "CP210x"

echo "-- pocketmesh scan with no device: exit 6"
code=0
out=$(umockdev-run -- "$bin" scan --json 2>/dev/null) || code=$?
[ "$code" = 6 ] || fail "scan with no device exited $code, expected 6"
expect "empty scan" "$out" '{"serial":[]}'

echo "-- pocketmesh --serial auto info (scripted handshake)"
code=0
out=$(umockdev-run --device "$here/cp210x.umockdev" \
    --script /dev/ttyUSB0="$here/cp210x-handshake.script" -- \
    "$bin" --serial auto --timeout 5 --json info) || code=$?
[ "$code" = 0 ] || fail "--serial auto info exited $code"
expect "--serial auto info" "$out" '"name":"Heltec Radio"' \
    '"public_key":"a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"' \
    '"model":"Heltec V3"' '"firmware_version":"v1.17.1"'

echo "-- pocketmesh --serial auto info with no device: exit 3"
code=0
err=$(umockdev-run -- "$bin" --serial auto info 2>&1 >/dev/null) || code=$?
[ "$code" = 3 ] || fail "--serial auto with no device exited $code, expected 3"
expect "--serial auto, no device" "$err" "no USB serial device is connected"

[ "$failed" = 0 ] && echo "umockdev command-line checks passed"
exit "$failed"
