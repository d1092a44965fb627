"""The daemon's `subscribe` stream carries every push as a typed event (`advert`, `new_advert`,
`path_updated`, `status`, `login`, `trace`, `telemetry`, `control_data`, `raw_data`, …), and
LOG_RX_DATA (`log_rx`) only for a subscriber that asked; against `pocketmesh sim`.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import socket
import subprocess
import time

import pytest

from test_daemon_faults import Daemon
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def subscriber(d, **args):
    deadline = time.time() + 20
    while True:
        try:
            s = socket.socket(socket.AF_UNIX)
            s.connect(d.sock)
            break
        except (FileNotFoundError, ConnectionRefusedError):
            if time.time() > deadline:
                raise
            time.sleep(0.1)
    s.sendall((json.dumps({"id": 1, "op": "subscribe", **args}) + "\n").encode())
    s.settimeout(0.2)
    return s


def events(s, seconds):
    buf, out, deadline = b"", [], time.time() + seconds
    while time.time() < deadline:
        try:
            chunk = s.recv(65536)
            if not chunk:
                break
            buf += chunk
        except socket.timeout:
            pass
    for line in buf.split(b"\n"):
        if line.strip():
            v = json.loads(line)
            if "event" in v:
                out.append(v)
    return out


def test_typed_push_events(tmp_path):
    sim = Sim(nodes=2)
    d = None
    try:
        d = Daemon(str(tmp_path), sim.port("sim0"), hook=False)
        plain = subscriber(d)
        with_rx = subscriber(d, log_rx=True)
        time.sleep(1.5)
        env = dict(os.environ, POCKETMESH_NO_DAEMON="1")
        cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port('sim1')}", "advert", "--flood"], capture_output=True, text=True, env=env, timeout=30)
        assert cp.returncode == 0, cp.stderr
        a, b = events(plain, 4), events(with_rx, 0.5)
        kinds_a, kinds_b = {e["event"] for e in a}, {e["event"] for e in b}
        adverts = [e for e in a if e["event"] in ("advert", "new_advert")]
        assert adverts and adverts[0]["public_key"] == sim.nodes["sim1"]["pubkey"], a
        assert "log_rx" not in kinds_a
        rx = [e for e in b if e["event"] == "log_rx"]
        assert rx and all(len(e["raw"]) > 0 and "snr" in e and "rssi" in e for e in rx), b
        assert kinds_a <= kinds_b
    finally:
        if d:
            d.stop()
        sim.stop()
