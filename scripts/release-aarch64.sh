#!/usr/bin/env bash
# The aarch64 release binary (called by `scripts/release.sh --arch aarch64`): Debian trixie's Swift
# 6.0.3 cross-compiles the package in a chroot against an arm64 sysroot (scripts/aarch64-env.sh),
# fully static, optimised for size, linked by lld (trixie's lld 19) with unused sections dropped,
# identical code folded and no unwind tables, like the x86_64 build; at most 10,000,000 bytes.
# Writes dist/pocketmesh-aarch64 (stripped).
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="$PWD"
CACHE="${POCKETMESH_AARCH64_CACHE:-$PWD/.build-aarch64}"
bash scripts/aarch64-env.sh "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
ROOT="$CACHE/chroot"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# Inside the chroot: the source at /src, the sysroot and the arm64 runtime at /cross, the build at
# /build (kept in the cache, so a second build is incremental), and git's URL rewrites (a local
# mirror of the package dependencies) bound at the same paths.
mounts=()
bind() {  # bind SOURCE TARGET-IN-CHROOT [ro]
  $SUDO mkdir -p "$ROOT$2"
  if ! mountpoint -q "$ROOT$2"; then
    $SUDO mount --bind "$1" "$ROOT$2"
    [ "${3:-}" = ro ] && $SUDO mount -o remount,bind,ro "$ROOT$2"
    mounts+=("$ROOT$2")
  fi
}
cleanup() {
  for ((i=${#mounts[@]}-1; i>=0; i--)); do $SUDO umount "${mounts[$i]}" 2>/dev/null || $SUDO umount -l "${mounts[$i]}" || true; done
}
trap cleanup EXIT
bind /proc /proc
bind /dev /dev
bind "$SRC" /src
mkdir -p "$CACHE/build" "$CACHE/cross"
bind "$CACHE/build" /build
bind "$CACHE/sysroot" /cross/sysroot ro
bind "$CACHE/swiftarm" /cross/swift ro
$SUDO cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
# git config: the same URL rewrites as this machine (dependencies from a local mirror, if any).
$SUDO chroot "$ROOT" git config --system --remove-section url 2>/dev/null || true
git config --get-regexp '^url\..*\.insteadof$' 2>/dev/null | while read -r key value; do
  base="${key#url.}"; base="${base%.insteadof}"
  if [ -d "$base" ]; then
    bind "$base" "$base" ro
    $SUDO chroot "$ROOT" git config --system --add "url.$base.insteadOf" "$value"
  fi
done
# The loop above ran in a subshell: record its mounts for cleanup.
while read -r _ target _; do
  case "$target" in "$ROOT"/*) [[ " ${mounts[*]} " == *" $target "* ]] || mounts+=("$target") ;; esac
done < /proc/mounts

# The ordering list: the aarch64 base list (scripts/release-order-base-aarch64.txt: the x86_64
# base list's entries that this link has, and arm64's string function variants), then the package's
# list without what only x86_64 has (scripts/release-order-aarch64.sh). Both come from x86_64 runs
# (valgrind cannot profile a program under qemu-user); what still misses here are specialisations
# Swift 6.0.3 makes differently from 6.3 (about 3%). The link fails above 5%, as for x86_64.
{ cat scripts/release-order-base-aarch64.txt; bash scripts/release-order-aarch64.sh --project scripts/release-order-project.txt; } \
  > "$CACHE/build/release-order.txt"
SYSROOT=/cross/sysroot
RES=/cross/swift/usr/libexec/swift/lib/swift_static
set +e
$SUDO chroot "$ROOT" bash -c "cd /src && rm -f /build/aarch64-unknown-linux-gnu/release/pocketmesh && swift build -c release --product pocketmesh \
  --scratch-path /build --triple aarch64-unknown-linux-gnu \
  -Xswiftc -sdk -Xswiftc $SYSROOT -Xswiftc -resource-dir -Xswiftc $RES \
  -Xcc --sysroot=$SYSROOT -Xcc -fno-asynchronous-unwind-tables -Xcc -ffunction-sections \
  -Xswiftc -static-executable -Xswiftc -Osize -Xswiftc -use-ld=/usr/lib/llvm-19/bin/ld.lld -Xswiftc -Xfrontend -Xswiftc -function-sections \
  -Xlinker --gc-sections -Xlinker --icf=all -Xlinker -O2 -Xlinker -T -Xlinker /src/scripts/release-discard.ld \
  -Xlinker --symbol-ordering-file=/build/release-order.txt -Xlinker -Map=/build/release-link.map > /build/release-link.log 2>&1 \
  && aarch64-linux-gnu-strip -o /build/pocketmesh-aarch64 /build/aarch64-unknown-linux-gnu/release/pocketmesh"
status=$?
set -e
grep -v -e 'symbol ordering file: no such symbol' -e 'unable to order' "$CACHE/build/release-link.log" || true
[ $status -eq 0 ] || exit $status
bash scripts/release-order-check.sh "$CACHE/build/release-order.txt" "$CACHE/build/release-link.log"
mkdir -p dist
cp "$CACHE/build/pocketmesh-aarch64" dist/pocketmesh-aarch64
size=$(stat -c %s dist/pocketmesh-aarch64)
echo "dist/pocketmesh-aarch64: $size bytes"
[ "$size" -le 10000000 ] || { echo "release: dist/pocketmesh-aarch64 is $size bytes, over the budget of 10000000 bytes." >&2; exit 1; }
