"""`pocketmesh node --role companion --companion-listen HOST:PORT`: a Linux companion node on the
simulator's air, used as their radio by meshcore-cli 1.6.6 and meshcore_py (unmodified, from PyPI)
and by pocketmesh itself: device info, adverts both ways, an acknowledged message to a simulated
companion through a simulated repeater, and one back that meshcore_py receives.

Environment: POCKETMESH_VENV (venv with the clients), POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import socket
import subprocess
import time

import pytest

import conftest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
PY = VENV / "bin" / "python"
CLI = VENV / "bin" / "meshcore-cli"
pytestmark = pytest.mark.skipif(not BIN.exists() or not CLI.exists(),
                                reason=f"needs {BIN} (swift build) and meshcore-cli in {VENV}")
ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


def free_port():
    return conftest.free_ports(1)


def pm(port, *args):
    return subprocess.run([str(BIN), "-t", f"127.0.0.1:{port}", "--timeout", "15", *args],
                          capture_output=True, text=True, timeout=90, env=ENV)


def mccli(port, *commands, timeout=60):
    r = subprocess.run([str(CLI), "-t", "127.0.0.1", "-p", str(port), *commands], capture_output=True, text=True, timeout=timeout)
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def linux(tmp_path_factory):
    d = tmp_path_factory.mktemp("nodec")
    topo = d / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "r1", "role": "repeater"},
                  {"name": "lin", "role": "external"}],
        "links": [{"a": "sim0", "b": "r1", "snr": 8}, {"a": "r1", "b": "lin", "snr": 7}],
    }))
    air = free_port()
    sim = Sim("--topology", str(topo), "--air-port", str(air), nodes=1)
    port = free_port()
    node = subprocess.Popen([str(BIN), "node", "--role", "companion", "--radio", f"air:127.0.0.1:{air}/lin",
                             "--state-dir", str(d / "state"), "--name", "LinComp", "--companion-listen", f"127.0.0.1:{port}",
                             "--for", "300"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = node.stdout.readline()
    assert line.startswith("companion LinComp pubkey=") and f"companion=127.0.0.1:{port}" in line, line + node.stderr.read()
    try:
        yield sim, port, line.split("pubkey=")[1].split()[0]
    finally:
        node.terminate()
        node.wait(timeout=10)
        sim.stop()


def test_meshcore_cli_uses_it_as_its_radio(linux):
    sim, port, key = linux
    out = mccli(port, "infos")
    assert "LinComp" in out and key in out, out
    assert "v1.17.1" in mccli(port, "ver")
    mccli(port, "floodadv")
    assert pm(sim.port("sim0"), "advert", "--flood").returncode == 0
    deadline = time.time() + 30
    while time.time() < deadline and "sim0" not in mccli(port, "contacts"):
        time.sleep(1)
    out = mccli(port, "msg", "sim0", "hello from meshcore-cli on linux", "wait_ack")
    assert "Msg acked" in out, out
    got = json.loads(pm(sim.port("sim0"), "--json", "sync").stdout)
    assert [m["text"] for m in got if m["kind"] == "direct"] == ["hello from meshcore-cli on linux"], got


def test_meshcore_py_receives_a_message(linux):
    sim, port, key = linux
    script = f"""
import asyncio
from meshcore import MeshCore, EventType
async def main():
    mc = await MeshCore.create_tcp("127.0.0.1", {port})
    done = asyncio.Event()
    got = {{}}
    def on_dm(ev):
        got["dm"] = ev.payload.get("text"); done.set()
    mc.subscribe(EventType.CONTACT_MSG_RECV, on_dm)
    await mc.start_auto_message_fetching()
    print("READY", flush=True)
    await asyncio.wait_for(done.wait(), 60)
    print("DM", got["dm"], flush=True)
    await mc.disconnect()
asyncio.run(main())
"""
    p = subprocess.Popen([str(PY), "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY", p.stderr.read() if p.poll() is not None else ""
        deadline = time.time() + 30
        while time.time() < deadline:
            names = {c["name"] for c in json.loads(pm(sim.port("sim0"), "--json", "contacts").stdout)}
            if "LinComp" in names:
                break
            time.sleep(1)
        r = pm(sim.port("sim0"), "--json", "send", "LinComp", "for meshcore_py on linux")
        assert json.loads(r.stdout)["status"] == "acked", r.stdout + r.stderr
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
    assert "DM for meshcore_py on linux" in out, out + err


def test_pocketmesh_uses_it_too(linux):
    sim, port, key = linux
    info = json.loads(pm(port, "--json", "info").stdout)
    assert info["name"] == "LinComp" and info["public_key"] == key and info["model"] == "Linux (pocketmesh)", info
