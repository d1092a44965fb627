#!/usr/bin/env bash
# Makes bench/.venv-stack: the Python stack the storm compares the daemon with, at the versions
# measured in bench/README.md.
#
#   bench/stack/setup.sh MESHCORE_MQTT_CHECKOUT PACKET_CAPTURE_CHECKOUT
#
# From PyPI: meshcore (meshcore_py) 2.3.17, meshcore-proxy 0.5.0 (shares one radio among TCP clients).
# Not on PyPI, so from a checkout of their repositories (GitHub) at the commits measured:
#   ipnet-mesh/meshcore-mqtt            bbc8584  (the MQTT bridge: messages and events to a broker)
#   agessaman/meshcore-packet-capture   36d10df  (the observer uploader: every packet heard)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
mqtt_src="${1:?usage: setup.sh MESHCORE_MQTT_CHECKOUT PACKET_CAPTURE_CHECKOUT}"
capture_src="${2:?usage: setup.sh MESHCORE_MQTT_CHECKOUT PACKET_CAPTURE_CHECKOUT}"
venv="$here/.venv-stack"
python3 -m venv "$venv"
"$venv/bin/pip" install --quiet meshcore==2.3.17 meshcore-proxy==0.5.0 paho-mqtt
"$venv/bin/pip" install --quiet "$mqtt_src" "$capture_src"
"$venv/bin/python" - <<'EOF'
import importlib.metadata as m
for p in ("meshcore", "meshcore-proxy", "meshcore-mqtt", "meshcore-packet-capture", "paho-mqtt"):
    print(f"{p} {m.version(p)}")
EOF
