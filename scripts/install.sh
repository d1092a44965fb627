#!/usr/bin/env bash
# Installs pocketmesh under PREFIX (default /usr/local): the binary, the man page, bash/zsh/fish
# completions, the systemd unit and the udev rule for MeshCore radios.
#   scripts/install.sh [PREFIX]
# The binary is dist/pocketmesh (scripts/release.sh's static build) if it exists, else it is built
# now; POCKETMESH_BIN=PATH installs another one. Nothing outside PREFIX is touched: to activate the
# unit and the rule under a PREFIX other than /, see the lines printed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
PREFIX="${1:-/usr/local}"
case "$PREFIX" in /*) ;; *) PREFIX="$PWD/$PREFIX" ;; esac
BIN="${POCKETMESH_BIN:-}"
if [ -z "$BIN" ]; then
  [ -x dist/pocketmesh ] || bash scripts/release.sh
  BIN=dist/pocketmesh
fi
[ -x "$BIN" ] || { echo "install: $BIN is not an executable" >&2; exit 2; }

install -d "$PREFIX/bin" "$PREFIX/share/man/man1" "$PREFIX/share/bash-completion/completions" \
  "$PREFIX/share/zsh/site-functions" "$PREFIX/share/fish/vendor_completions.d" \
  "$PREFIX/lib/systemd/system" "$PREFIX/lib/udev/rules.d"
install -m 0755 "$BIN" "$PREFIX/bin/pocketmesh"
install -m 0644 docs/pocketmesh.1 "$PREFIX/share/man/man1/pocketmesh.1"
"$PREFIX/bin/pocketmesh" completions bash > "$PREFIX/share/bash-completion/completions/pocketmesh"
"$PREFIX/bin/pocketmesh" completions zsh > "$PREFIX/share/zsh/site-functions/_pocketmesh"
"$PREFIX/bin/pocketmesh" completions fish > "$PREFIX/share/fish/vendor_completions.d/pocketmesh.fish"
sed "s#/usr/local/bin/pocketmesh#$PREFIX/bin/pocketmesh#g" contrib/pocketmesh.service > "$PREFIX/lib/systemd/system/pocketmesh.service"
chmod 0644 "$PREFIX/lib/systemd/system/pocketmesh.service"
install -m 0644 contrib/61-pocketmesh.rules "$PREFIX/lib/udev/rules.d/61-pocketmesh.rules"

echo "installed pocketmesh $("$PREFIX/bin/pocketmesh" --version) under $PREFIX"
if [ "$PREFIX" != "/usr" ] && [ "$PREFIX" != "/usr/local" ]; then
  echo "  man page: MANPATH=$PREFIX/share/man man pocketmesh"
fi
echo "  the udev rule takes effect with: sudo ln -sf $PREFIX/lib/udev/rules.d/61-pocketmesh.rules /etc/udev/rules.d/ && sudo udevadm control --reload && sudo udevadm trigger --subsystem-match=tty"
echo "  the daemon as a system service (docs/unattended.md), in this order:"
echo "    sudo groupadd --system pocketmesh"
echo "    sudo useradd --system --gid pocketmesh --groups dialout --home-dir /var/lib/pocketmesh --no-create-home --shell /usr/sbin/nologin pocketmesh"
echo "    sudo usermod -aG pocketmesh \$USER    # each user who may use the service's socket (then log in again)"
echo "    edit the radio on ExecStart in $PREFIX/lib/systemd/system/pocketmesh.service (before enabling it)"
echo "    sudo systemctl link $PREFIX/lib/systemd/system/pocketmesh.service && sudo systemctl enable --now pocketmesh"
