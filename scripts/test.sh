#!/usr/bin/env bash
# The whole test suite: installs what it needs, builds, then runs each stage and reports each:
#   swift      the Swift tests (Swift 6.3 on PATH)
#   umockdev   the udev discovery tests
#   interop    the interop tests against third-party MeshCore software (pytest, in parallel:
#              pytest-xdist, each file's tests on one worker, each worker its own ports and folders)
#   fuzz       a short run of every fuzz target
#   swift6.0   the package and its tests built with Debian's Swift 6.0.3 (in the background from the
#              start, at the lowest priority), then its Swift tests
#   release    the static x86_64 release binary: size, static, demo, CLI/daemon interop tests
#   aarch64    the same for the aarch64 binary (Debian's Swift 6.0.3), run under qemu-user, beside
#              the release stage
# Both release binaries are built beside the interop tests (one after the other, below their
# priority), as the fuzz targets are (at a lower priority still; the fuzz run reports last).
# A stage that fails does not stop the others: every stage reports, and the command fails at the
# end when any did. The working tree is left as it was (builds go to ignored folders).
#
# POCKETMESH_SKIP_SWIFT60=1, POCKETMESH_SKIP_RELEASE=1 and POCKETMESH_SKIP_AARCH64=1 leave stages
# out (the 6.0.3 and aarch64 stages need root or sudo for their chroot). POCKETMESH_BUILD_CACHE=DIR
# (CI sets it) builds and tests in DIR/src, a copy of this tree that keeps the modification time of
# every file whose content did not change, so that the Swift builds there (debug, release, 6.0.3,
# aarch64, fuzz targets) only redo what changed since the last run on this machine.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ -n "${POCKETMESH_BUILD_CACHE:-}" ] && [ -z "${POCKETMESH_IN_CACHE:-}" ]; then
  cache="$POCKETMESH_BUILD_CACHE"
  mkdir -p "$cache/src"
  command -v rsync >/dev/null || { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq rsync >/dev/null; }
  # One run at a time in the cache.
  exec 9>"$cache/lock"
  flock 9
  # Content-checked copy (-c) without times (no -t): a file whose content is the same keeps its
  # old time; the ignored folders (.build, venvs, fuzz/out) in the copy are kept (not deleted).
  rsync -rlpc --delete --exclude=/.git --filter=':- .gitignore' ./ "$cache/src/"
  echo "test: building and testing in $cache/src (a copy of this tree; builds kept between runs)"
  cd "$cache/src"
  export POCKETMESH_IN_CACHE=1
  exec bash scripts/test.sh "$@"
fi

bash scripts/setup.sh
export POCKETMESH_VENV="${POCKETMESH_VENV:-$PWD/.venv-interop}"
PY="$POCKETMESH_VENV/bin/python"
# Parallel workers for the interop tests: they mostly wait for processes and sockets.
WORKERS="${POCKETMESH_TEST_WORKERS:-4}"
# Each interop test has a time limit (pytest-timeout): one that hangs fails and names itself; the
# slowest eight of each run are listed.
PYTEST=("$PY" -m pytest -q -p no:cacheprovider -n "$WORKERS" --dist loadfile --durations=8 --timeout "${POCKETMESH_INTEROP_TEST_LIMIT:-300}")

declare -a STAGES=() RESULTS=()
START=$SECONDS
record() {  # record NAME STATUS SECONDS
  STAGES+=("$1"); RESULTS+=("$2 ($3 s)")
  if [ "$2" = passed ]; then echo "-- stage $1 passed in $3 s"; else echo "-- stage $1 FAILED in $3 s" >&2; fi
}
stage() {  # stage NAME COMMAND...: runs it, records it, goes on whatever it returned
  local name="$1" t0=$SECONDS status=0
  shift
  echo "== $name"
  "$@" || status=$?
  if [ $status -eq 0 ]; then record "$name" passed $((SECONDS - t0)); else record "$name" "failed (exit $status)" $((SECONDS - t0)); fi
}
finish() {
  echo "== stages (total $((SECONDS - START)) s)"
  local i failed=0
  for i in "${!STAGES[@]}"; do
    printf '  %-10s %s\n' "${STAGES[$i]}" "${RESULTS[$i]}"
    case "${RESULTS[$i]}" in passed*) ;; *) failed=1 ;; esac
  done
  if [ $failed -ne 0 ]; then echo "some test stages failed" >&2; exit 1; fi
  echo "all test stages passed"
}

# Swift 6.0.3 (Debian trixie's, the aarch64 release's compiler): built in the aarch64 build's chroot
# in the background at the lowest CPU priority from the start; its tests run at the end.
SWIFT60_PID=""
SWIFT60_LOG=""
if [ "${POCKETMESH_SKIP_SWIFT60:-0}" != 1 ]; then
  SWIFT60_LOG="$(mktemp)"
  setsid nice -n 19 bash scripts/test-swift6.0.sh > "$SWIFT60_LOG" 2>&1 &
  SWIFT60_PID=$!
fi
FUZZ_PID=""
FUZZ_LOG=""
RELEASE_PID=""
AARCH64_PID=""
AARCH64_STAGE_PID=""
RELEASE_BUILD_LOG=""
AARCH64_BUILD_LOG=""
cleanup() {
  local pid
  for pid in "$SWIFT60_PID" "$FUZZ_PID" "$RELEASE_PID" "$AARCH64_PID"; do
    [ -z "$pid" ] || kill -- -"$pid" 2>/dev/null || true
  done
  [ -z "$AARCH64_STAGE_PID" ] || kill "$AARCH64_STAGE_PID" 2>/dev/null || true
  local log
  for log in "${RELEASE_BUILD_LOG:-}" "${AARCH64_BUILD_LOG:-}"; do [ -z "$log" ] || rm -f "$log" "$log.rc"; done
}
trap cleanup EXIT

t0=$SECONDS
echo "== build (swift build --build-tests)"
if ! swift build --build-tests; then
  record build "failed" $((SECONDS - t0))
  # Without the debug build no other stage but the 6.0.3 build can run.
  finish
fi
record build passed $((SECONDS - t0))
export POCKETMESH_BIN="$PWD/.build/debug/pocketmesh"

# Every stage has a time limit: a test that hangs fails its stage (and names itself) instead of
# holding CI until its own limit. (timeout signals the whole process group.)
limited() {  # limited SECONDS COMMAND...
  local secs="$1" status=0
  shift
  timeout --kill-after=20 "$secs" "$@" || status=$?
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then echo "stopped after its limit of $secs s" >&2; fi
  return $status
}
# The Swift tests: on a timeout, the tests that had started and not ended are named.
swift_tests() {
  local log status=0
  log="$(mktemp)"
  # (errexit is off here: stage runs this function as `swift_tests || status=$?`)
  limited "${POCKETMESH_SWIFT_TEST_LIMIT:-900}" swift test --skip-build 2>&1 | tee "$log"
  status=${PIPESTATUS[0]}
  if [ $status -eq 124 ] || [ $status -eq 137 ]; then
    echo "tests that started and did not end:" >&2
    sed -n 's/.*◇ Test \([^ ]*\) started.*/\1/p' "$log" | sort -u > "$log.started"
    sed -n 's/.*[✔✘] Test \([^ ]*\) .*/\1/p' "$log" | sort -u > "$log.ended"
    comm -23 "$log.started" "$log.ended" | sed 's/^/  /' >&2
    rm -f "$log.started" "$log.ended"
  fi
  rm -f "$log"
  return $status
}
stage swift swift_tests

if [ -x Tests/umockdev/run.sh ]; then
  stage umockdev limited 600 bash Tests/umockdev/run.sh
fi

# The fuzz run (CPU-bound, one process at a time) goes on beside the interop tests (which mostly
# wait) and the stages after them, at a lower priority; its report comes last.
FUZZ_T0=$(date +%s)
if [ -x fuzz/run.sh ]; then
  FUZZ_LOG="$(mktemp)"
  # (its end time is written beside its log: the stage's time is its own, not the wait for it)
  setsid nice -n 10 bash -c 'timeout --kill-after=20 1500 bash fuzz/run.sh "$1"; rc=$?; date +%s > "$2.end"; exit $rc' fuzz \
    "${POCKETMESH_FUZZ_SECONDS:-10}" "$FUZZ_LOG" > "$FUZZ_LOG" 2>&1 &
  FUZZ_PID=$!
fi

# The release builds (CPU-bound: x86_64, then aarch64 in its chroot) go on beside the interop tests
# too, one after the other at a priority between theirs and the fuzz run's; the release stages
# then wait for them.
if [ "${POCKETMESH_SKIP_RELEASE:-0}" != 1 ]; then
  # (each writes its exit status to LOG.rc when it ends; the aarch64 build starts after that of x86_64)
  RELEASE_BUILD_LOG="$(mktemp)"
  setsid nice -n 5 bash -c 'timeout --kill-after=20 1500 bash scripts/release.sh > "$1" 2>&1; echo $? > "$1.rc"' \
    release "$RELEASE_BUILD_LOG" &
  RELEASE_PID=$!
  if [ "${POCKETMESH_SKIP_AARCH64:-0}" != 1 ]; then
    AARCH64_BUILD_LOG="$(mktemp)"
    setsid nice -n 5 bash -c 'for _ in $(seq 1600); do [ -f "$1.rc" ] && break; sleep 1; done
      timeout --kill-after=20 1500 bash scripts/release.sh --arch aarch64 > "$2" 2>&1; echo $? > "$2.rc"' \
      aarch64 "$RELEASE_BUILD_LOG" "$AARCH64_BUILD_LOG" &
    AARCH64_PID=$!
  fi
fi

if [ -d Tests/interop ]; then
  stage interop limited "${POCKETMESH_INTEROP_LIMIT:-1500}" "${PYTEST[@]}" Tests/interop
fi

swift60() {
  local status=0
  wait "$SWIFT60_PID" || status=$?
  SWIFT60_PID=""
  if [ $status -ne 0 ]; then
    tail -60 "$SWIFT60_LOG"
    echo "the Swift 6.0.3 build failed (exit $status)" >&2
    return 1
  fi
  grep -E '^Swift version|^Build complete' "$SWIFT60_LOG" || true
  limited "${POCKETMESH_SWIFT_TEST_LIMIT:-900}" bash scripts/test-swift6.0.sh --run > "$SWIFT60_LOG" 2>&1 || { tail -80 "$SWIFT60_LOG"; echo "the Swift tests failed with Swift 6.0.3" >&2; return 1; }
  grep -E '✘|Test run with' "$SWIFT60_LOG" | grep -v ' skipped' || true
}
if [ -n "$SWIFT60_PID" ]; then
  stage swift6.0 swift60
  rm -f "$SWIFT60_LOG"
fi

# The release binaries are linked differently (lld, identical-code folding, reordered): the
# command-line and daemon interop tests run against each as well. The ordering list is the
# committed one (scripts/release-order.sh --project redoes its package part; the link fails when
# more than 5% of it names nothing in the binary).
built() {  # built LOG: waits for a background release build (its LOG.rc) and prints its log
  local status
  for _ in $(seq 1600); do [ -f "$1.rc" ] && break; sleep 1; done
  status=$(cat "$1.rc" 2>/dev/null || echo 124)
  cat "$1"
  rm -f "$1"  # (LOG.rc stays until the end: the aarch64 build may still be looking for x86_64's)
  [ "$status" = 124 ] && echo "the build did not end within its limit" >&2
  return "$status"
}
release_x86_64() {
  built "$RELEASE_BUILD_LOG" || return 1
  local size
  size=$(stat -c %s dist/pocketmesh)
  [ "$size" -le 10000000 ] || { echo "release binary is $size bytes, over the 10,000,000-byte budget" >&2; return 1; }
  if ldd dist/pocketmesh >/dev/null 2>&1; then echo "release binary is not static" >&2; return 1; fi
  dist/pocketmesh demo >/dev/null || { echo "the release binary's demo failed" >&2; return 1; }
  bash scripts/release-checks.sh dist/pocketmesh .build/release/pocketmesh \
    "$(dirname "$(readlink -f "$(command -v swift)")")/../lib/swift_static/linux/libswiftCore.a" || return 1
  # and every command's --json output against its schema (test_json_schema.py), on this one.
  POCKETMESH_BIN="$PWD/dist/pocketmesh" "${PYTEST[@]}" Tests/interop/test_cli_peer.py Tests/interop/test_daemon_cli.py \
    Tests/interop/test_json_schema.py
}
release_aarch64() {
  built "$AARCH64_BUILD_LOG" || return 1
  local size qemu status=0
  size=$(stat -c %s dist/pocketmesh-aarch64)
  [ "$size" -le 10000000 ] || { echo "aarch64 release binary is $size bytes, over the 10,000,000-byte budget" >&2; return 1; }
  file dist/pocketmesh-aarch64 | grep -q "ARM aarch64.*statically linked" || { echo "dist/pocketmesh-aarch64 is not a static aarch64 executable" >&2; return 1; }
  qemu-aarch64-static dist/pocketmesh-aarch64 --version || return 1
  qemu-aarch64-static dist/pocketmesh-aarch64 demo >/dev/null || { echo "the aarch64 binary's demo failed under qemu" >&2; return 1; }
  local cache="${POCKETMESH_AARCH64_CACHE:-$PWD/.build-aarch64}"
  bash scripts/release-checks.sh dist/pocketmesh-aarch64 "$cache/build/aarch64-unknown-linux-gnu/release/pocketmesh" \
    "$cache/swiftarm/usr/libexec/swift/lib/swift_static/linux/libswiftCore.a" qemu-aarch64-static || return 1
  qemu="$(mktemp -d)"
  printf '#!/bin/sh\nexec qemu-aarch64-static "%s" "$@"\n' "$PWD/dist/pocketmesh-aarch64" > "$qemu/pocketmesh"
  chmod +x "$qemu/pocketmesh"
  POCKETMESH_BIN="$qemu/pocketmesh" "${PYTEST[@]}" Tests/interop/test_cli_peer.py Tests/interop/test_daemon_cli.py || status=$?
  rm -rf "$qemu"
  return $status
}
if [ "${POCKETMESH_SKIP_RELEASE:-0}" != 1 ]; then
  # The aarch64 stage (its build's end, then qemu) runs beside the x86_64 one; its report follows.
  if [ "${POCKETMESH_SKIP_AARCH64:-0}" != 1 ]; then
    AARCH64_STAGE_LOG="$(mktemp)"
    AARCH64_T0=$(date +%s)
    ( status=0; release_aarch64 > "$AARCH64_STAGE_LOG" 2>&1 || status=$?; date +%s > "$AARCH64_STAGE_LOG.end"; exit $status ) &
    AARCH64_STAGE_PID=$!
  fi
  stage release release_x86_64
  if [ -n "$AARCH64_STAGE_PID" ]; then
    echo "== aarch64"
    status=0
    wait "$AARCH64_STAGE_PID" || status=$?
    AARCH64_STAGE_PID=""
    cat "$AARCH64_STAGE_LOG"
    end=$(cat "$AARCH64_STAGE_LOG.end" 2>/dev/null || date +%s)
    rm -f "$AARCH64_STAGE_LOG" "$AARCH64_STAGE_LOG.end"
    if [ $status -eq 0 ]; then record aarch64 passed $((end - AARCH64_T0)); else record aarch64 "failed (exit $status)" $((end - AARCH64_T0)); fi
  fi
fi
fuzz_report() {
  [ -n "$FUZZ_PID" ] || return 0
  echo "== fuzz (short run: each target for ${POCKETMESH_FUZZ_SECONDS:-10} seconds)"
  local status=0 end
  wait "$FUZZ_PID" || status=$?
  FUZZ_PID=""
  cat "$FUZZ_LOG"
  end=$(cat "$FUZZ_LOG.end" 2>/dev/null || date +%s)
  rm -f "$FUZZ_LOG" "$FUZZ_LOG.end"
  if [ $status -eq 0 ]; then record fuzz passed $((end - FUZZ_T0)); else record fuzz "failed (exit $status)" $((end - FUZZ_T0)); fi
}
fuzz_report
finish
