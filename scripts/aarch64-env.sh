#!/usr/bin/env bash
# Prepares what the aarch64 release build needs, from Debian's archive only, and caches it:
#
#   CACHE/chroot    a Debian trixie amd64 chroot (debootstrap, minbase) with Debian's own Swift 6.0.3
#                   (`swiftlang`): trixie's compiler needs glibc 2.38, newer than the host's
#   CACHE/sysroot   trixie's arm64 C library, kernel headers, libgcc/libstdc++, libudev-dev,
#                   libbluetooth-dev, libsodium-dev, and bookworm's arm64 libmbedtls-dev (2.28, the
#                   API the TLS shim is written against)
#   CACHE/swiftarm  the arm64 `swiftlang` package's static Swift runtime (swift_static) and clang
#                   resource folder, with the ICU libraries it does not ship dropped from its
#                   static-executable link list
#
# The Debian mirror is the one this machine's apt uses. Idempotent: each part is made once (a
# stamp file marks it done), so a second run costs nothing.
#
#   bash scripts/aarch64-env.sh CACHE
set -euo pipefail
CACHE="${1:?usage: aarch64-env.sh CACHE}"
mkdir -p "$CACHE"
CACHE="$(cd "$CACHE" && pwd)"
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

mirror() {
  local m=""
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    m=$(awk '/^URIs:/{print $2; exit}' /etc/apt/sources.list.d/debian.sources)
  fi
  if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
    m=$(awk '$1=="deb"{for(i=2;i<=NF;i++) if($i ~ /^https?:/){print $i; exit}}' /etc/apt/sources.list)
  fi
  [ -n "$m" ] || { echo "aarch64-env: cannot find a Debian mirror in this machine's apt sources." >&2; exit 1; }
  echo "$m"
}

need_host_tools() {
  local missing=()
  command -v debootstrap >/dev/null || missing+=(debootstrap)
  command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
  if [ ${#missing[@]} -gt 0 ]; then
    $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
}

need_host_tools
MIRROR=$(mirror)
ROOT="$CACHE/chroot"

if [ ! -f "$CACHE/.chroot-done" ]; then
  echo "aarch64-env: debootstrap trixie (amd64) into $ROOT"
  rm -rf "$ROOT"
  $SUDO debootstrap --variant=minbase trixie "$ROOT" "$MIRROR" >"$CACHE/debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  echo "deb $MIRROR bookworm main" | $SUDO tee "$ROOT/etc/apt/sources.list.d/bookworm.list" >/dev/null
  printf 'Package: *\nPin: release n=bookworm\nPin-Priority: 100\n' | $SUDO tee "$ROOT/etc/apt/preferences.d/bookworm" >/dev/null
  $SUDO cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  $SUDO chroot "$ROOT" dpkg --add-architecture arm64
  $SUDO chroot "$ROOT" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      swiftlang libc6-dev git ca-certificates binutils-aarch64-linux-gnu lld-19 >/dev/null"
  touch "$CACHE/.chroot-done"
fi
# trixie's lld 19 links the release: the lld that comes with Debian's Swift 6.0.3 (LLVM 17, built
# with assertions) stops on an assertion with the linker script that drops the unwind tables
# (scripts/release-discard.ld). Installed into chroots made before it was needed, too.
if [ ! -x "$ROOT/usr/lib/llvm-19/bin/ld.lld" ]; then
  $SUDO cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
  $SUDO chroot "$ROOT" bash -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends lld-19 >/dev/null"
fi

if [ ! -f "$CACHE/.sysroot-done" ]; then
  echo "aarch64-env: arm64 sysroot and Swift runtime into $CACHE"
  $SUDO rm -rf "$ROOT/debs" "$CACHE/sysroot" "$CACHE/swiftarm"
  $SUDO mkdir -p "$ROOT/debs"
  $SUDO chroot "$ROOT" bash -c "cd /debs && apt-get download -qq \
      swiftlang:arm64 libc6:arm64 libc6-dev:arm64 linux-libc-dev:arm64 libgcc-14-dev:arm64 libgcc-s1:arm64 \
      libstdc++-14-dev:arm64 libstdc++6:arm64 libudev-dev:arm64 libbluetooth-dev:arm64 libsodium-dev:arm64 \
      libmbedtls-dev:arm64/bookworm 2>&1 | grep -v 'unsandboxed' || true"
  mkdir -p "$CACHE/sysroot" "$CACHE/swiftarm"
  for d in "$ROOT"/debs/*.deb; do
    case "$d" in *swiftlang_*) continue ;; esac
    dpkg-deb -x "$d" "$CACHE/sysroot"
  done
  dpkg-deb --fsys-tarfile "$ROOT"/debs/swiftlang_*_arm64.deb \
    | tar -x -C "$CACHE/swiftarm" ./usr/libexec/swift/lib/swift_static ./usr/libexec/swift/lib/clang
  sed -i '/-licu/d' "$CACHE/swiftarm/usr/libexec/swift/lib/swift_static/linux/static-executable-args.lnk"
  $SUDO rm -rf "$ROOT/debs"
  touch "$CACHE/.sysroot-done"
fi
