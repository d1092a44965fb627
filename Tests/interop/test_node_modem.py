"""`pocketmesh node --identity modem` in the roles that speak for a user: the key is the KISS
modem's (the simulator's `"role": "kiss"`, MeshCore's KISS modem firmware on a pty), so every
signature and shared secret is asked of the modem.

A companion node serves `--companion-listen` on loopback and real clients use it as their radio:
meshcore_py (from PyPI) reads the modem's key in its self-info, signs with it (the signature
verifies with the modem's key, PyNaCl), sends an acknowledged message to a simulated companion and
fetches the one that comes back; `pocketmesh --tcp` does the same. A room server with the modem's
key: one simulated companion logs in and posts, another logged-in one gets the room's push.

Environment: POCKETMESH_VENV (venv with meshcore_py and PyNaCl), POCKETMESH_BIN (default
.build/debug/pocketmesh).
"""
import json
import os
import pathlib
import subprocess
import time

import pytest

from test_sim_clients import Sim

from test_air import BIN, ENV, free_port  # noqa: F401  (the air's harness, shared)

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
PY = VENV / "bin" / "python"
pytestmark = pytest.mark.skipif(not BIN.exists() or not PY.exists(), reason=f"needs {BIN} (swift build) and a venv at {VENV}")

CLIENT = r"""
import asyncio, sys
from meshcore import MeshCore, EventType

async def main(port, peer, data):
    mc = await MeshCore.create_tcp("127.0.0.1", port)
    print("KEY", mc.self_info["public_key"], flush=True)
    ev = await mc.commands.sign(bytes.fromhex(data))
    assert ev.type == EventType.SIGNATURE, ev
    print("SIG", bytes(ev.payload["signature"]).hex(), flush=True)
    assert (await mc.commands.send_advert(flood=True)).type == EventType.OK
    got = asyncio.Event()
    dms = []
    def on_dm(ev):
        dms.append(ev.payload.get("text")); got.set()
    mc.subscribe(EventType.CONTACT_MSG_RECV, on_dm)
    contact = None
    for _ in range(60):
        await mc.commands.get_contacts()
        contact = mc.get_contact_by_name(peer)
        if contact:
            break
        await asyncio.sleep(0.5)
    # The MSG_SENT of the attempt whose ACK came back, None when none did.
    ev = await mc.commands.send_msg_with_retry(contact, "from meshcore_py via the modem's key", timeout=15)
    print("ACK", ev is not None, flush=True)
    await mc.start_auto_message_fetching()
    print("READY", flush=True)
    await asyncio.wait_for(got.wait(), 90)
    print("DM", dms[0], flush=True)
    await mc.disconnect()

asyncio.run(main(int(sys.argv[1]), sys.argv[2], sys.argv[3]))
"""


def pm(port, *args):
    return subprocess.run([str(BIN), "-t", f"127.0.0.1:{port}", "--timeout", "15", *args],
                          capture_output=True, text=True, timeout=90, env=ENV)


def js(port, *args):
    cp = pm(port, "--json", *args)
    assert cp.returncode == 0, cp.stdout + cp.stderr
    return json.loads(cp.stdout)


def wait_for_contacts(port, names):
    """Until the companion at `port` knows every name (adverts cross the air in wall time)."""
    deadline = time.time() + 30
    seen = set()
    while time.time() < deadline:
        seen = {c["name"] for c in js(port, "contacts")}
        if names <= seen:
            return
        time.sleep(0.5)
    assert names <= seen, seen


def modem_sim(tmp_path, companions):
    """A simulator with companions sim0.. each one hop from the KISS modem; its key and pty."""
    nodes = [{"name": f"sim{i}", "role": "companion"} for i in range(companions)] + [{"name": "modem", "role": "kiss"}]
    links = [{"a": f"sim{i}", "b": "modem", "snr": 8 - i} for i in range(companions)]
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({"nodes": nodes, "links": links}))
    sim = Sim("--topology", str(topo), nodes=companions)
    line = sim.proc.stdout.readline()
    assert line.startswith("kiss modem pubkey=") and " pty=/dev/" in line, line
    return sim, line.split("pubkey=")[1].split()[0], line.split("pty=")[1].strip()


def start_node(pty, state, role, *extra):
    node = subprocess.Popen([str(BIN), "node", "--role", role, "--radio", f"kiss:{pty}", "--identity", "modem",
                             "--state-dir", str(state), "--for", "300", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return node, node.stdout.readline()


def stop(node):
    if node is not None and node.poll() is None:
        node.terminate()
        try:
            node.wait(timeout=10)
        except subprocess.TimeoutExpired:
            node.kill()
            node.wait()


def test_a_companion_with_the_modems_key_serves_meshcore_py_and_pocketmesh(tmp_path):
    import nacl.signing as nacl  # PyNaCl, pinned by scripts/setup.sh
    sim, modem_key, pty = modem_sim(tmp_path, 1)
    port = free_port()
    node = client = None
    try:
        node, line = start_node(pty, tmp_path / "st", "companion", "--name", "ModemComp", "--companion-listen", f"127.0.0.1:{port}")
        assert line.startswith("companion ModemComp pubkey=") and f"companion=127.0.0.1:{port}" in line, line + node.stderr.read()
        assert line.split("pubkey=")[1].split()[0] == modem_key
        peer = sim.port("sim0")
        assert pm(peer, "advert", "--flood").returncode == 0

        # meshcore_py: self-info, a signature, an acknowledged message out and one in.
        data = bytes(range(200)) + b"signed by the modem"
        client = subprocess.Popen([str(PY), "-c", CLIENT, str(port), "sim0", data.hex()],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        out = []

        def expect(word):
            line = client.stdout.readline()
            out.append(line)
            parts = line.strip().split(" ", 1)
            assert parts[0] == word, "".join(out) + (client.stderr.read() if client.poll() is not None else "")
            return parts[1] if len(parts) > 1 else ""

        assert expect("KEY") == modem_key
        sig = bytes.fromhex(expect("SIG"))
        assert len(sig) == 64
        nacl.VerifyKey(bytes.fromhex(modem_key)).verify(data, sig)
        with pytest.raises(Exception):
            nacl.VerifyKey(bytes.fromhex(modem_key)).verify(data + b"!", sig)
        assert expect("ACK") == "True"
        got = {m["text"] for m in js(peer, "sync") if m["kind"] == "direct"}  # a retry may come twice
        assert got == {"from meshcore_py via the modem's key"}, got
        assert expect("READY") == ""
        wait_for_contacts(peer, {"ModemComp"})
        r = js(peer, "send", "ModemComp", "to meshcore_py")
        assert r["status"] == "acked", r
        assert expect("DM") == "to meshcore_py"
        assert client.wait(timeout=30) == 0, client.stderr.read()
        client = None

        # pocketmesh over TCP: the same key, a signature, a message each way.
        info = js(port, "info")
        assert info["public_key"] == modem_key and info["name"] == "ModemComp", info
        sig = bytes.fromhex(js(port, "sign", "c0ffee")["signature"])
        nacl.VerifyKey(bytes.fromhex(modem_key)).verify(bytes.fromhex("c0ffee"), sig)
        r = js(port, "send", "sim0", "from pocketmesh via the modem's key")
        assert r["status"] == "acked", r
        assert [m["text"] for m in js(peer, "sync") if m["kind"] == "direct"] == ["from pocketmesh via the modem's key"]
        assert js(peer, "send", "ModemComp", "to pocketmesh")["status"] == "acked"
        got = [m["text"] for m in js(port, "sync") if m["kind"] == "direct"]
        assert got == ["to pocketmesh"], got
        # The key never left the modem: nothing to export, nothing in the state folder.
        assert pm(port, "key", "export").returncode != 0
        assert not (tmp_path / "st" / "identity").exists()
    finally:
        if client is not None and client.poll() is None:
            client.kill()
            client.wait()
        stop(node)
        sim.stop()


def test_a_room_server_with_the_modems_key_pushes_a_post(tmp_path):
    sim, modem_key, pty = modem_sim(tmp_path, 2)
    node = None
    try:
        node, line = start_node(pty, tmp_path / "st", "room", "--name", "ModemRoom", "--password", "s3cret", "--guest-password", "hello")
        assert line.startswith("room ModemRoom pubkey=") and line.split("pubkey=")[1].split()[0] == modem_key, line + node.stderr.read()
        a, b = sim.port("sim0"), sim.port("sim1")
        wait_for_contacts(a, {"ModemRoom"})
        wait_for_contacts(b, {"ModemRoom"})
        rooms = {c["name"]: c for c in js(a, "contacts")}
        assert rooms["ModemRoom"]["public_key"] == modem_key
        assert js(b, "login", "ModemRoom", "-p", "hello")["admin"] is False
        assert js(a, "login", "ModemRoom", "-p", "s3cret")["admin"] is True
        r = js(a, "send", "ModemRoom", "first post")
        assert r["status"] == "acked", r
        deadline = time.time() + 60
        got = []
        while time.time() < deadline and not got:
            got = [m for m in js(b, "sync") if m.get("text") == "first post"]
            if not got:
                time.sleep(1)
        assert got, "the room's push did not come"
        # Signed by the room (from its key's prefix) and naming the poster (sim0's prefix).
        assert got[0]["kind"] == "room" and got[0]["from"] == modem_key[:12], got
        assert got[0]["author"] == sim.nodes["sim0"]["pubkey"][:8], got
        assert not (tmp_path / "st" / "identity").exists()
    finally:
        stop(node)
        sim.stop()
