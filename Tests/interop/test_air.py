"""Another implementation on the simulated air: `pocketmesh sim --air-port` with an `external`
node in the topology, and openhop-core (PyPI, a MeshCore node nobody on this project wrote)
attached to it through `harness/air_peer.py`. Between the simulator's companion (driven by
pocketmesh) and the openhop-core node (driven by pocketmesh through openhop-core's own companion
server), one repeater of ours apart: adverts, a direct message with its ACK both ways, the path
each side learns from the first (flooded) exchange, and channel messages both ways.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV (openhop-core).
"""
import json
import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

import conftest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
PY = VENV / "bin" / "python" if (VENV / "bin" / "python").exists() else pathlib.Path(sys.executable)
PEER = pathlib.Path(__file__).resolve().parent / "harness" / "air_peer.py"

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")
ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


def free_port():
    return conftest.free_ports(1)


def pm(port, *args, timeout=90):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{port}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=timeout, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def js(port, *args):
    code, out, err = pm(port, "--json", *args)
    assert code == 0, err
    return json.loads(out)


@pytest.fixture(scope="module")
def mixed(tmp_path_factory):
    d = tmp_path_factory.mktemp("air")
    topo = d / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "r1", "role": "repeater"},
                  {"name": "ext0", "role": "external"}],
        "links": [{"a": "sim0", "b": "r1", "snr": 8}, {"a": "r1", "b": "ext0", "snr": 7}],
    }))
    air = free_port()
    sim = Sim("--topology", str(topo), "--air-port", str(air), nodes=1)
    port = free_port()
    peer = subprocess.Popen([str(PY), str(PEER), "--air", f"127.0.0.1:{air}", "--name", "ext0", "--port", str(port)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = peer.stdout.readline()
    assert line.startswith("node ext0 pubkey="), line + peer.stderr.read()
    ext_key = line.split("pubkey=")[1].split()[0]
    try:
        yield sim, sim.port("sim0"), port, ext_key
    finally:
        peer.terminate()
        peer.wait(timeout=10)
        sim.stop()


def test_adverts_messages_paths_and_channels_both_ways(mixed):
    sim, ours, theirs, ext_key = mixed
    assert pm(ours, "advert", "--flood")[0] == 0
    assert pm(theirs, "advert", "--flood")[0] == 0
    deadline = time.time() + 30
    while time.time() < deadline:
        a = {c["name"]: c for c in js(ours, "contacts")}
        b = {c["name"]: c for c in js(theirs, "contacts")}
        if "ext0" in a and "sim0" in b:
            break
        time.sleep(0.5)
    assert a["ext0"]["public_key"] == ext_key and b["sim0"]["public_key"] == sim.nodes["sim0"]["pubkey"]
    # Ours to theirs: flooded first (no path yet), acknowledged; the PATH that came back with the
    # ACK gives our side the route through r1.
    r = js(ours, "send", "ext0", "hello openhop")
    assert r["status"] == "acked" and r["flood"] is True, r
    got = js(theirs, "sync")
    assert [m["text"] for m in got if m["kind"] == "direct"] == ["hello openhop"], got
    c = js(ours, "contacts", "show", "ext0")
    assert c["path_length"] == 1, c
    # Theirs to ours: acknowledged, and openhop-core learns its route back the same way.
    r = js(theirs, "send", "sim0", "hello pocketmesh")
    assert r["status"] == "acked", r
    assert js(theirs, "contacts", "show", "sim0")["path_length"] == 1
    r = js(theirs, "send", "sim0", "now direct")
    assert r["status"] == "acked" and r["flood"] is False, r
    texts = [m["text"] for m in js(ours, "sync") if m["kind"] == "direct"]
    assert texts == ["hello pocketmesh", "now direct"], texts
    # Channels, both ways (through r1).
    assert pm(ours, "channel", "send", "0", "from our side")[0] == 0
    assert pm(theirs, "channel", "send", "0", "from their side")[0] == 0
    deadline, seen_theirs, seen_ours = time.time() + 20, [], []
    while time.time() < deadline and not (seen_theirs and seen_ours):
        seen_theirs += [m["text"] for m in js(theirs, "sync") if m["kind"] == "channel"]
        seen_ours += [m["text"] for m in js(ours, "sync") if m["kind"] == "channel"]
        time.sleep(0.5)
    assert seen_theirs == ["sim0: from our side"] and seen_ours == ["ext0: from their side"], (seen_theirs, seen_ours)


def test_the_air_socket_refuses_what_is_not_in_the_topology(mixed):
    import struct
    sim, _, _, _ = mixed
    args = sim.proc.args
    port = int(args[args.index("--air-port") + 1])
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(struct.pack("<H", 6) + b"\x01nobod")
        head = s.recv(2)
        body = s.recv(struct.unpack("<H", head)[0])
        assert body[0] == 0x04 and b"no external node named nobod" in body
        assert s.recv(10) == b""  # then it closes
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        s.sendall(b"\x00\x00")  # a zero-length frame is malformed
        head = s.recv(2)
        assert head and s.recv(100)[0] == 0x04


def test_external_nodes_need_the_air_port(tmp_path):
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({"nodes": [{"name": "sim0", "role": "companion"}, {"name": "x", "role": "external"}], "links": []}))
    cp = subprocess.run([str(BIN), "sim", "--topology", str(topo), "--for", "1"], capture_output=True, text=True, timeout=30)
    assert cp.returncode == 2 and "--air-port" in cp.stderr and cp.stderr.count("\n") == 1
