#!/usr/bin/env bash
# The release binary: one fully static executable (no Swift toolchain, no shared libraries
# needed at run time), optimised for size, linked by lld with identical-code folding and
# with the functions the common commands and the daemon run placed next to each other
# (scripts/release-order.txt, made by scripts/release-order.sh), so that a command maps
# as few of the binary's pages as possible. The C code built here (the C helpers and shims)
# is built without unwind tables: nothing unwinds through it (it throws no exceptions), and they
# were a large part of .eh_frame. Writes dist/pocketmesh (stripped).
#
#   bash scripts/release.sh                  # x86_64 with the Swift on PATH: dist/pocketmesh
#   bash scripts/release.sh --arch aarch64   # aarch64 with Debian trixie's Swift 6.0.3: dist/pocketmesh-aarch64
#
# The aarch64 build runs Debian's own compiler in a trixie chroot against an arm64 sysroot, both made
# from Debian's archive by scripts/aarch64-env.sh and cached in .build-aarch64/ (or
# $POCKETMESH_AARCH64_CACHE); it needs root (chroot, bind mounts).
set -euo pipefail
cd "$(dirname "$0")/.."
ORDER="$PWD/scripts/release-order.txt"
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
# The build does not know the ordering file: remove the old binary so that it always relinks.
rm -f .build/release/pocketmesh
swift build -c release --product pocketmesh \
  -Xswiftc -static-executable -Xswiftc -Osize -Xswiftc -use-ld=lld -Xswiftc -Xfrontend -Xswiftc -function-sections -Xcc -ffunction-sections \
  -Xcc -fno-asynchronous-unwind-tables \
  -Xlinker --gc-sections -Xlinker --icf=all -Xlinker -O2 -Xlinker -T -Xlinker "$PWD/scripts/release-discard.ld" \
  -Xlinker "--symbol-ordering-file=$ORDER" -Xlinker --no-warn-symbol-ordering
mkdir -p dist
strip -o dist/pocketmesh .build/release/pocketmesh
echo "dist/pocketmesh: $(stat -c %s dist/pocketmesh) bytes"
