#!/usr/bin/env bash
# The release binary: one fully static executable (no Swift toolchain, no shared libraries
# needed at run time), optimised for size, linked by lld with identical-code folding and
# with the functions the common commands and the daemon run placed next to each other
# (the ordering list: scripts/release-order-base.txt for the toolchain's and the libraries' symbols,
# scripts/release-order-project.txt for the package's own, both made by scripts/release-order.sh),
# so that a command maps as few of the binary's pages as possible. The link fails when more than
# 5% of the list's entries name nothing in the binary (a stale list: rerun scripts/release-order.sh,
# or `scripts/release-order.sh --project` for the package's part). The binary must be at most
# 10,000,000 bytes stripped. Nothing in the binary unwinds, so it has no unwind tables: the link
# drops .eh_frame and .eh_frame_hdr (scripts/release-discard.ld; 1.37 MB), and the C code built
# here is compiled without them. No module imports _StringProcessing (Package.swift). Writes
# dist/pocketmesh (stripped).
#
#   bash scripts/release.sh                  # x86_64 with the Swift on PATH: dist/pocketmesh
#   bash scripts/release.sh --arch aarch64   # aarch64 with Debian trixie's Swift 6.0.3: dist/pocketmesh-aarch64
#
# The aarch64 build runs Debian's own compiler in a trixie chroot against an arm64 sysroot, both made
# from Debian's archive by scripts/aarch64-env.sh and cached in .build-aarch64/ (or
# $POCKETMESH_AARCH64_CACHE); it needs root (chroot, bind mounts).
set -euo pipefail
cd "$(dirname "$0")/.."
BUDGET=10000000
ARCH=x86_64
while [ $# -gt 0 ]; do
  case "$1" in
    --arch) ARCH="${2:?--arch takes x86_64 or aarch64}"; shift 2 ;;
    --arch=*) ARCH="${1#--arch=}"; shift ;;
    *) echo "release.sh: unknown argument $1 (use --arch x86_64|aarch64)" >&2; exit 2 ;;
  esac
done
case "$ARCH" in
  x86_64|amd64) ARCH=x86_64 ;;
  aarch64|arm64) exec bash scripts/release-aarch64.sh ;;
  *) echo "release.sh: --arch $ARCH: x86_64 or aarch64" >&2; exit 2 ;;
esac
# The ordering list: the stable part (toolchain, libraries) and the package's part, one after the
# other. The build does not know the list: remove the old binary so that it always relinks.
mkdir -p .build
ORDER="$PWD/.build/release-order.txt"
cat scripts/release-order-base.txt scripts/release-order-project.txt > "$ORDER"
rm -f .build/release/pocketmesh
LOG="$PWD/.build/release-link.log"
set +e
swift build -c release --product pocketmesh \
  -Xswiftc -static-executable -Xswiftc -Osize -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
  -Xcc -fno-asynchronous-unwind-tables \
  -Xlinker --gc-sections -Xlinker --icf=all -Xlinker -O2 -Xlinker -T -Xlinker "$PWD/scripts/release-discard.ld" \
  -Xlinker "--symbol-ordering-file=$ORDER" -Xlinker "-Map=$PWD/.build/release-link.map" > "$LOG" 2>&1
status=$?
set -e
# lld names every entry of the list it cannot place: shown as one count, not 8,000 lines.
grep -v -e 'symbol ordering file: no such symbol' -e 'unable to order' "$LOG" || true
[ $status -eq 0 ] || exit $status
bash scripts/release-order-check.sh "$ORDER" "$LOG"
mkdir -p dist
strip -o dist/pocketmesh .build/release/pocketmesh
size=$(stat -c %s dist/pocketmesh)
echo "dist/pocketmesh: $size bytes"
[ "$size" -le $BUDGET ] || { echo "release.sh: dist/pocketmesh is $size bytes, over the budget of $BUDGET bytes." >&2; exit 1; }
