#!/usr/bin/env bash
# Builds the package and its tests with Debian trixie's Swift 6.0.3 (the oldest compiler the code
# must build with; the aarch64 release uses it), for x86_64, in the chroot that
# scripts/aarch64-env.sh makes (with the x86_64 development packages added here). With --run it
# also runs the Swift tests there (Swift Testing comes with Debian's swiftlang).
#
#   bash scripts/test-swift6.0.sh          # swift build --build-tests
#   bash scripts/test-swift6.0.sh --run    # and swift test --skip-build
#
# The build directory is kept in the cache ($POCKETMESH_AARCH64_CACHE or .build-aarch64, build-tests-*),
# so a second run is incremental; it needs root (chroot, bind mounts), like the aarch64 release.
set -euo pipefail
cd "$(dirname "$0")/.."
SRC="$PWD"
RUN=0
case "${1:-}" in
  --run) RUN=1 ;;
  "") ;;
  *) echo "test-swift6.0: unknown argument $1 (use --run or nothing)." >&2; exit 2 ;;
esac
CACHE="${POCKETMESH_AARCH64_CACHE:-$PWD/.build-aarch64}"
bash scripts/aarch64-env.sh "$CACHE"
# In a mount namespace of its own: the chroot is shared (the aarch64 release uses it too), and
# another run unmounting the chroot's /proc when it ends must not take it from this one.
if [ -z "${POCKETMESH_SWIFT60_NS:-}" ] && command -v unshare >/dev/null; then
  exec $( [ "$(id -u)" -ne 0 ] && echo sudo ) env POCKETMESH_SWIFT60_NS=1 \
    POCKETMESH_AARCH64_CACHE="$CACHE" POCKETMESH_SWIFT60_TARGETS="${POCKETMESH_SWIFT60_TARGETS:-}" \
    unshare --mount --propagation private bash "$0" "$@"
fi
CACHE="$(cd "$CACHE" && pwd)"
ROOT="$CACHE/chroot"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# The x86_64 headers and static libraries the package links (the arm64 ones are in the sysroot);
# mbedTLS from bookworm, the 2.28 API the code is written against, as for the aarch64 build.
if ! $SUDO chroot "$ROOT" dpkg -s libmbedtls-dev libsodium-dev libudev-dev libbluetooth-dev >/dev/null 2>&1; then
  $SUDO cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  $SUDO chroot "$ROOT" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libmbedtls-dev/bookworm libsodium-dev libudev-dev libbluetooth-dev >/dev/null"
fi

# The source and the build directory at paths of this checkout's own (another checkout may be
# building in the same chroot at the same time; a fixed path keeps the build incremental).
mounts=()
cleanup() {
  for ((i=${#mounts[@]}-1; i>=0; i--)); do $SUDO umount "${mounts[$i]}" 2>/dev/null || $SUDO umount -l "${mounts[$i]}" || true; done
  for m in "${mounts[@]}"; do case "$m" in "$ROOT"/src-*|"$ROOT"/tests-*) $SUDO rmdir "$m" 2>/dev/null || true ;; esac; done
}
trap cleanup EXIT
bind() {  # bind SOURCE TARGET-IN-CHROOT
  $SUDO mkdir -p "$ROOT$2"
  if ! mountpoint -q "$ROOT$2"; then
    $SUDO mount --bind "$1" "$ROOT$2"
    mounts+=("$ROOT$2")
  fi
}
bind /proc /proc
bind /dev /dev
bind /dev/pts /dev/pts  # the serial link tests open pseudo-terminals
key=$(printf %s "$SRC" | md5sum | cut -c1-8)
mkdir -p "$CACHE/build-tests-$key"
S="/src-$key" B="/tests-$key"
bind "$SRC" "$S"
bind "$CACHE/build-tests-$key" "$B"
if [ -n "${POCKETMESH_SWIFT60_TARGETS:-}" ]; then  # one target after the other, each reported
  $SUDO chroot "$ROOT" bash -c "cd $S && for t in $POCKETMESH_SWIFT60_TARGETS; do
    if swift build --target \$t --scratch-path $B >$B/swift60-\$t.log 2>&1; then echo \"\$t: builds\"; else echo \"\$t: FAILS (log: the cache's build-tests-$key/swift60-\$t.log)\"; grep -m3 -E 'error:|While evaluating request TypeCheckFunctionBody' $B/swift60-\$t.log | cut -c1-300; fi
  done"
  exit 0
fi
$SUDO chroot "$ROOT" bash -c "cd $S && swift --version 2>&1 | head -1 && swift build --build-tests --scratch-path $B"
if [ $RUN = 1 ]; then
  $SUDO chroot "$ROOT" bash -c "cd $S && swift test --skip-build --scratch-path $B"
fi
