#!/usr/bin/env bash
# Installs what building and testing PocketMesh needs on Debian/Ubuntu (a Swift 6 toolchain must
# already be on PATH): system libraries, test tools, and a Python venv with the third-party
# MeshCore peers and clients used by the interop tests.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
if ! command -v swift >/dev/null 2>&1; then
  echo "setup: no 'swift' on PATH; install a Swift 6.x toolchain first (https://www.swift.org/install/linux/)." >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends \
  libudev-dev libbluetooth-dev libmbedtls-dev libsodium-dev pkg-config \
  socat umockdev libumockdev-dev rsync \
  python3 python3-venv time binutils file man-db tmux mosquitto openssl debootstrap qemu-user-static zsh fish valgrind \
  chromium >/dev/null
VENV="${POCKETMESH_VENV:-$PWD/.venv-interop}"
if [ ! -x "$VENV/bin/python" ]; then
  python3 -m venv "$VENV"
fi
"$VENV/bin/pip" install -q --disable-pip-version-check \
  pytest==9.0.3 pytest-xdist==3.8.0 pytest-timeout==2.4.0 openhop-core==1.1.3 meshcore==2.3.17 meshcore-cli==1.6.6 meshcoredecoder==0.3.2 \
  paho-mqtt==2.1.0 amqtt==0.12.1 jsonschema==4.26.0 PyNaCl==1.6.2
echo "setup: system packages and $VENV ready."
