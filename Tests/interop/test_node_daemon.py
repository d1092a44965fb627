"""The daemon with a Linux companion node as its radio: `pocketmesh node --role companion --radio
air:... --companion-listen 127.0.0.1:PORT` on the simulator's air, and `pocketmesh daemon --tcp
127.0.0.1:PORT` owning it, with a hook, the companion hub and the MQTT bridge (Mosquitto on
loopback, started here). A simulated companion sends the node a direct message: the store keeps
it, the hook runs, a hub client gets it, the bridge publishes it; the daemon's own message goes the
other way and is acknowledged.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV.
"""
import json
import shutil
import subprocess
import time

import pytest

from test_daemon_faults import Daemon, hook_lines, tmpdir_short, wait_for  # noqa: F401
from test_mqtt import Listener, Mosquitto, messages
from test_sim_clients import Sim
from test_air import BIN, ENV, free_port

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)"),
    pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto (scripts/setup.sh installs it)"),
]


def pm(*args, timeout=60):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def test_the_daemon_owns_a_linux_companion_node(tmpdir_short):
    topo = f"{tmpdir_short}/t.json"
    with open(topo, "w") as f:
        json.dump({"nodes": [{"name": "sim0", "role": "companion"}, {"name": "r1", "role": "repeater"},
                             {"name": "lin", "role": "external"}],
                   "links": [{"a": "sim0", "b": "r1", "snr": 8}, {"a": "r1", "b": "lin", "snr": 7}]}, f)
    air = free_port()
    sim = Sim("--topology", topo, "--air-port", str(air), nodes=1)
    port, hub = free_port(), free_port()
    node = subprocess.Popen([str(BIN), "node", "--role", "companion", "--radio", f"air:127.0.0.1:{air}/lin",
                             "--state-dir", f"{tmpdir_short}/node", "--name", "LinComp",
                             "--companion-listen", f"127.0.0.1:{port}", "--for", "300"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    broker = watch = d = None
    try:
        line = node.stdout.readline()
        assert line.startswith("companion LinComp pubkey="), line + node.stderr.read()
        key = line.split("pubkey=")[1].split()[0]
        broker = Mosquitto(tmpdir_short)
        watch = Listener(broker.port)
        d = Daemon(tmpdir_short, port, extra=["--companion-listen", f"127.0.0.1:{hub}",
                                              "--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm"])
        d.wait_ready(timeout=60)
        st = d.call({"id": 1, "op": "status"})
        assert st["radio"] == key and st["mqtt"][0]["connected"] is True, st
        # Adverts both ways: the daemon's through the node, sim0's through the repeater.
        assert d.call({"id": 2, "op": "advert", "flood": True})["ok"]
        sim0 = ["--tcp", f"127.0.0.1:{sim.port('sim0')}", "--timeout", "15"]
        assert pm(*sim0, "advert", "--flood").returncode == 0
        assert wait_for(lambda: any(c["name"] == "sim0" for c in d.call({"id": 3, "op": "contacts"})["contacts"]), 30)
        assert wait_for(lambda: "LinComp" in pm(*sim0, "contacts").stdout, 30)
        # sim0 -> the node: acknowledged by the node, kept in the daemon's store, the hook runs.
        cp = pm(*sim0, "--json", "send", "LinComp", "to the daemon behind a linux node")
        assert cp.returncode == 0 and json.loads(cp.stdout)["status"] == "acked", cp.stdout + cp.stderr
        assert wait_for(lambda: any(m.get("text") == "to the daemon behind a linux node"
                                    for m in d.call({"id": 4, "op": "history", "thread": "sim0"})["messages"]), 30)
        assert wait_for(lambda: any(h.endswith("|to the daemon behind a linux node") for h in hook_lines(tmpdir_short)), 20), \
            hook_lines(tmpdir_short)
        # The MQTT bridge publishes it.
        got = watch.wait(lambda g: any(m["text"] == "to the daemon behind a linux node" for _, m in messages(g, "pm")),
                         what="the direct message on pm/message")
        assert any(t.startswith("pm/message/direct/") for t, m in messages(got, "pm")), messages(got, "pm")
        # A hub client (pocketmesh over the hub's port) reads the stored message and the radio's info.
        out = pm("--tcp", f"127.0.0.1:{hub}", "--timeout", "15", "sync")
        assert out.returncode == 0 and "to the daemon behind a linux node" in out.stdout, out.stdout + out.stderr
        out = pm("--tcp", f"127.0.0.1:{hub}", "--timeout", "15", "--json", "info")
        assert out.returncode == 0 and json.loads(out.stdout)["public_key"] == key, out.stdout + out.stderr
        # The daemon's own message out through the node, acknowledged.
        r = d.call({"id": 5, "op": "send", "to": "sim0", "text": "from the daemon", "wait": True}, timeout=60)
        assert r["ok"] and r["message"]["status"] == "acked", r
        assert "from the daemon" in pm(*sim0, "sync").stdout
    finally:
        if d:
            d.stop()
        if watch:
            watch.close()
        if broker:
            broker.stop()
        node.terminate()
        node.wait(timeout=10)
        sim.stop()
