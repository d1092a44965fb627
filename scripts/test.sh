#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds, runs the Swift tests, the interop tests
# against third-party MeshCore software, the udev discovery tests and a short fuzz run; builds the
# package and its tests with Swift 6.0.3 and runs those tests too (POCKETMESH_SKIP_SWIFT60=1 leaves
# that out: it needs root or sudo for its chroot); then the release binaries.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
export POCKETMESH_VENV="${POCKETMESH_VENV:-$PWD/.venv-interop}"

swift build --build-tests
export POCKETMESH_BIN="$PWD/.build/debug/pocketmesh"

echo "== Swift tests"
swift test --skip-build

if [ -x Tests/umockdev/run.sh ]; then
  echo "== udev discovery tests (umockdev)"
  bash Tests/umockdev/run.sh
fi

# Swift 6.0.3 (Debian trixie's, the aarch64 release's compiler): the package and its tests are
# built in the aarch64 build's chroot (scripts/test-swift6.0.sh) in the background at the lowest
# CPU priority while the interop tests and the fuzz run (which leave most of a core idle) go on;
# after the fuzz run the build is waited for and its tests run in the foreground.
SWIFT60_PID=""
if [ "${POCKETMESH_SKIP_SWIFT60:-0}" != 1 ]; then
  SWIFT60_LOG="$(mktemp)"
  setsid nice -n 19 bash scripts/test-swift6.0.sh > "$SWIFT60_LOG" 2>&1 &
  SWIFT60_PID=$!
  trap '[ -z "$SWIFT60_PID" ] || kill -- -"$SWIFT60_PID" 2>/dev/null || true' EXIT
fi

if [ -d Tests/interop ]; then
  echo "== interop tests (third-party peers and clients)"
  "$POCKETMESH_VENV/bin/python" -m pytest -q -p no:cacheprovider Tests/interop
fi

if [ -x fuzz/run.sh ]; then
  echo "== fuzz (short run: each target for this many seconds)"
  bash fuzz/run.sh "${POCKETMESH_FUZZ_SECONDS:-10}"
fi
if [ -n "$SWIFT60_PID" ]; then
  echo "== Swift 6.0.3: the package and its tests built in the background (scripts/test-swift6.0.sh), then the Swift tests"
  status=0
  wait "$SWIFT60_PID" || status=$?
  SWIFT60_PID=""
  if [ $status -ne 0 ]; then
    tail -60 "$SWIFT60_LOG"
    echo "the Swift 6.0.3 build failed (exit $status)" >&2
    exit 1
  fi
  grep -E '^Swift version|^Build complete' "$SWIFT60_LOG" || true
  bash scripts/test-swift6.0.sh --run > "$SWIFT60_LOG" 2>&1 || { tail -80 "$SWIFT60_LOG"; echo "the Swift tests failed with Swift 6.0.3" >&2; exit 1; }
  grep -E '✘|Test run with' "$SWIFT60_LOG" | grep -v ' skipped' || true
  rm -f "$SWIFT60_LOG"
fi
if [ "${POCKETMESH_SKIP_RELEASE:-0}" != 1 ]; then
  echo "== release binary (scripts/release.sh): fully static, at most 10,000,000 bytes stripped, the ordering list's package part redone, runs the demo and the CLI/daemon interop tests"
  # Build, with the committed list's package part possibly stale; then that part from this build
  # (valgrind, about 2 minutes) and the link again, which fails when more than 5% of the list
  # names nothing in the binary or the binary is over 10,000,000 bytes.
  POCKETMESH_ORDER_MAX_MISS=100 bash scripts/release.sh
  bash scripts/release-order.sh --project
  bash scripts/release.sh
  size=$(stat -c %s dist/pocketmesh)
  [ "$size" -le 10000000 ] || { echo "release binary is $size bytes, over the 10,000,000-byte budget" >&2; exit 1; }
  if ldd dist/pocketmesh >/dev/null 2>&1; then echo "release binary is not static" >&2; exit 1; fi
  dist/pocketmesh demo >/dev/null
  # The release binary is linked differently (lld, identical-code folding, reordered): run the
  # command-line and daemon interop tests against it as well.
  POCKETMESH_BIN="$PWD/dist/pocketmesh" "$POCKETMESH_VENV/bin/python" -m pytest -q -p no:cacheprovider \
    Tests/interop/test_cli_peer.py Tests/interop/test_daemon_cli.py
fi
if [ "${POCKETMESH_SKIP_RELEASE:-0}" != 1 ] && [ "${POCKETMESH_SKIP_AARCH64:-0}" != 1 ]; then
  echo "== aarch64 release binary (Debian trixie's Swift 6.0.3, scripts/release.sh --arch aarch64), run under qemu-user"
  bash scripts/release.sh --arch aarch64
  size=$(stat -c %s dist/pocketmesh-aarch64)
  [ "$size" -le 10000000 ] || { echo "aarch64 release binary is $size bytes, over the 10,000,000-byte budget" >&2; exit 1; }
  file dist/pocketmesh-aarch64 | grep -q "ARM aarch64.*statically linked" || { echo "dist/pocketmesh-aarch64 is not a static aarch64 executable" >&2; exit 1; }
  qemu-aarch64-static dist/pocketmesh-aarch64 --version
  qemu-aarch64-static dist/pocketmesh-aarch64 demo >/dev/null
  # The same command-line and daemon interop tests as the x86_64 release, through qemu-user.
  QEMU_BIN="$(mktemp -d)"
  printf '#!/bin/sh\nexec qemu-aarch64-static "%s" "$@"\n' "$PWD/dist/pocketmesh-aarch64" > "$QEMU_BIN/pocketmesh"
  chmod +x "$QEMU_BIN/pocketmesh"
  POCKETMESH_BIN="$QEMU_BIN/pocketmesh" "$POCKETMESH_VENV/bin/python" -m pytest -q -p no:cacheprovider \
    Tests/interop/test_cli_peer.py Tests/interop/test_daemon_cli.py
  rm -rf "$QEMU_BIN"
fi
echo "all test stages passed"
