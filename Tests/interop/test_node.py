"""`pocketmesh node`: this host as a repeater on the simulator's air socket (`--radio
air:HOST:PORT/NAME`). Two simulated companions that hear each other only through it exchange
acknowledged messages; an admin logs into it from a companion and reads its status, neighbours
and `ver`; its local CLI (`pocketmesh node cli`) answers and what it sets is kept in the state
folder, with its key, across a restart.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import stat
import subprocess
import time

import pytest

from test_sim_clients import Sim

from test_air import BIN, ENV, free_port  # noqa: F401  (the air's harness, shared)

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def run(*args, timeout=90):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=ENV)


def pm(port, *args):
    return run("-t", f"127.0.0.1:{port}", "--timeout", "15", *args)


def js(port, *args):
    cp = pm(port, "--json", *args)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


class Node:
    def __init__(self, state, air, *extra):
        self.state = state
        self.proc = subprocess.Popen([str(BIN), "node", "--role", "repeater", "--radio", f"air:127.0.0.1:{air}/lin",
                                      "--state-dir", str(state), "--for", "300", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.line = self.proc.stdout.readline()
        assert self.line.startswith("repeater "), self.line + self.proc.stderr.read()
        self.name = self.line.split()[1]
        self.pubkey = self.line.split("pubkey=")[1].split()[0]

    def cli(self, *words):
        cp = run("node", "cli", "--state-dir", str(self.state), *words)
        assert cp.returncode == 0, cp.stderr
        return cp.stdout.strip()

    def stop(self):
        self.proc.terminate()
        assert self.proc.wait(timeout=10) == 0


@pytest.fixture(scope="module")
def mesh(tmp_path_factory):
    d = tmp_path_factory.mktemp("node")
    topo = d / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "lin", "role": "external"},
                  {"name": "sim1", "role": "companion"}],
        "links": [{"a": "sim0", "b": "lin", "snr": 8}, {"a": "lin", "b": "sim1", "snr": 7}],
    }))
    air = free_port()
    sim = Sim("--topology", str(topo), "--air-port", str(air), nodes=2)
    node = Node(d / "state", air, "--name", "LinuxRpt", "--password", "s3cret", "--lat", "51.5")
    try:
        yield sim, node, air
    finally:
        if node.proc.poll() is None:
            node.stop()
        sim.stop()


def test_companions_exchange_acknowledged_messages_through_the_linux_repeater(mesh):
    sim, node, _ = mesh
    a, b = sim.port("sim0"), sim.port("sim1")
    assert pm(a, "advert", "--flood").returncode == 0
    assert pm(b, "advert", "--flood").returncode == 0
    deadline = time.time() + 30
    while time.time() < deadline:
        ca = {c["name"] for c in js(a, "contacts")}
        cb = {c["name"] for c in js(b, "contacts")}
        if {"sim1", "LinuxRpt"} <= ca and {"sim0", "LinuxRpt"} <= cb:
            break
        time.sleep(0.5)
    assert {"sim1", "LinuxRpt"} <= ca and {"sim0", "LinuxRpt"} <= cb, (ca, cb)
    r = js(a, "send", "sim1", "hello via linux")
    assert r["status"] == "acked" and r["flood"] is True, r
    assert [m["text"] for m in js(b, "sync") if m["kind"] == "direct"] == ["hello via linux"]
    r = js(b, "send", "sim0", "and back")
    assert r["status"] == "acked", r
    r = js(a, "send", "sim1", "now direct")
    assert r["status"] == "acked" and r["flood"] is False, r
    assert js(a, "contacts", "show", "sim1")["path_length"] == 1
    assert [m["text"] for m in js(b, "sync") if m["kind"] == "direct"] == ["now direct"]


def test_an_admin_logs_in_and_reads_status_neighbours_and_ver(mesh):
    sim, node, _ = mesh
    a = sim.port("sim0")
    # The repeater is a contact once its advert is heard (also when this test runs alone).
    assert pm(a, "advert", "--flood").returncode == 0
    deadline = time.time() + 30
    while "LinuxRpt" not in {c["name"] for c in js(a, "contacts")} and time.time() < deadline:
        time.sleep(0.5)
    assert pm(a, "login", "LinuxRpt", "-p", "wrong").returncode != 0
    cp = pm(a, "--json", "login", "LinuxRpt", "-p", "s3cret")
    assert cp.returncode == 0 and json.loads(cp.stdout)["admin"] is True, cp.stdout + cp.stderr
    st = js(a, "status", "LinuxRpt")
    assert st["stats"]["packets_sent"] > 0 and st["stats"]["uptime_s"] >= 0, st
    cp = pm(a, "cmd", "LinuxRpt", "ver")
    assert cp.returncode == 0 and cp.stdout.startswith("v1."), cp.stdout + cp.stderr
    assert pm(a, "--json", "neighbours", "LinuxRpt").returncode == 0
    cp = pm(a, "cmd", "LinuxRpt", "get", "lat")
    assert cp.stdout.strip() == "> 51.5", cp.stdout


def test_the_local_cli_and_the_state_folder(mesh, tmp_path):
    sim, node, air = mesh
    assert node.cli("get", "name") == "> LinuxRpt"
    assert node.cli("board") == "Linux (pocketmesh)"
    assert node.cli("set", "owner.info", "Ann|mast") == "OK"
    st = node.state
    for f in ("identity", "prefs"):
        assert stat.S_IMODE(os.stat(st / f).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(st).st_mode) == 0o700
    deadline = time.time() + 5
    while "owner.info Ann|mast" not in (st / "prefs").read_text() and time.time() < deadline:
        time.sleep(0.1)
    assert "owner.info Ann|mast" in (st / "prefs").read_text()
    assert "password s3cret" in (st / "prefs").read_text()
    # A restart keeps the key and the settings; first-run options no longer apply.
    node.stop()
    cp = run("node", "cli", "--state-dir", str(st), "get", "name")
    assert cp.returncode == 3 and "no node is running" in cp.stderr and cp.stderr.count("\n") == 1
    again = Node(st, air, "--name", "Ignored")
    try:
        assert again.pubkey == node.pubkey and again.name == "LinuxRpt"
        assert again.cli("get", "owner.info") == "> Ann|mast"
    finally:
        again.stop()


def test_bad_radio_and_role_are_usage_errors(tmp_path):
    cp = run("node", "--radio", "serial:/dev/null", "--state-dir", str(tmp_path / "s"))
    assert cp.returncode == 2 and "air:HOST:PORT/NAME" in cp.stderr and cp.stderr.count("\n") == 1
    cp = run("node", "--role", "bridge", "--radio", "air:127.0.0.1:1/x", "--state-dir", str(tmp_path / "s"))
    assert cp.returncode == 2 and cp.stderr.count("\n") <= 2, cp.stderr
    port = free_port()
    cp = run("node", "--radio", f"air:127.0.0.1:{port}/x", "--state-dir", str(tmp_path / "s"))
    assert cp.returncode == 3 and "cannot reach the air socket" in cp.stderr


def test_a_repeater_on_the_simulators_kiss_modem(tmp_path):
    """`"role": "kiss"`: a simulated radio running MeshCore's KISS modem firmware, on a pty;
    `pocketmesh node --radio kiss:PTY` is the repeater between two companions."""
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "modem", "role": "kiss"},
                  {"name": "sim1", "role": "companion"}],
        "links": [{"a": "sim0", "b": "modem", "snr": 8}, {"a": "modem", "b": "sim1", "snr": -3.5}],
    }))
    sim = Sim("--topology", str(topo), nodes=2)
    node = None
    try:
        line = sim.proc.stdout.readline()
        assert line.startswith("kiss modem pubkey=") and " pty=/dev/" in line, line
        pty = line.split("pty=")[1].strip()
        proc = subprocess.Popen([str(BIN), "node", "--radio", f"kiss:{pty}", "--state-dir", str(tmp_path / "st"),
                                 "--name", "KissRpt", "--for", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        node = proc
        assert proc.stdout.readline().startswith("repeater KissRpt pubkey="), proc.stderr.read()
        a, b = sim.port("sim0"), sim.port("sim1")
        assert pm(a, "advert", "--flood").returncode == 0
        assert pm(b, "advert", "--flood").returncode == 0
        deadline = time.time() + 30
        while time.time() < deadline:
            if "sim1" in {c["name"] for c in js(a, "contacts")} and "sim0" in {c["name"] for c in js(b, "contacts")}:
                break
            time.sleep(0.5)
        r = js(a, "send", "sim1", "through the modem")
        assert r["status"] == "acked", r
        got = [m for m in js(b, "sync") if m["kind"] == "direct"]
        assert [m["text"] for m in got] == ["through the modem"] and got[0]["snr"] == -3.5, got
        # The last packet the repeater heard came with the modem's RxMeta.
        cp = run("node", "cli", "--state-dir", str(tmp_path / "st"), "stats-radio")
        assert '"last_rssi":' in cp.stdout and '"last_rssi":0' not in cp.stdout, cp.stdout
    finally:
        if node is not None:
            node.terminate()
            node.wait(timeout=10)
        sim.stop()


def test_a_repeater_with_the_kiss_modems_identity(tmp_path):
    """`--identity modem`: the node's key is the modem's (the simulator's `"role": "kiss"` signs and
    makes the shared secrets with its own key); the advert on the air carries it, an admin logs
    in, and the state folder keeps no key."""
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "modem", "role": "kiss"},
                  {"name": "sim1", "role": "companion"}],
        "links": [{"a": "sim0", "b": "modem", "snr": 8}, {"a": "modem", "b": "sim1", "snr": 6}],
    }))
    sim = Sim("--topology", str(topo), nodes=2)
    node = None
    st = tmp_path / "st"
    try:
        line = sim.proc.stdout.readline()
        assert line.startswith("kiss modem pubkey="), line
        modem_key = line.split("pubkey=")[1].split()[0]
        pty = line.split("pty=")[1].strip()
        node = subprocess.Popen([str(BIN), "node", "--radio", f"kiss:{pty}", "--identity", "modem", "--state-dir", str(st),
                                 "--name", "ModemKey", "--password", "s3cret", "--for", "120"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        first = node.stdout.readline()
        assert first.startswith("repeater ModemKey pubkey="), first + node.stderr.read()
        assert first.split("pubkey=")[1].split()[0] == modem_key
        a, b = sim.port("sim0"), sim.port("sim1")
        assert pm(a, "advert", "--flood").returncode == 0
        assert pm(b, "advert", "--flood").returncode == 0
        deadline = time.time() + 30
        while time.time() < deadline:
            ca = {c["name"]: c for c in js(a, "contacts")}
            if "ModemKey" in ca and "sim1" in ca:
                break
            time.sleep(0.5)
        # The repeater's advert, verified by the companion, carries the modem's key.
        assert ca["ModemKey"]["public_key"] == modem_key, ca
        cp = pm(a, "--json", "login", "ModemKey", "-p", "s3cret")
        assert cp.returncode == 0 and json.loads(cp.stdout)["admin"] is True, cp.stdout + cp.stderr
        cp = pm(a, "cmd", "ModemKey", "get", "name")
        assert cp.stdout.strip() == "> ModemKey", cp.stdout + cp.stderr
        r = js(a, "send", "sim1", "past the modem's key")
        assert r["status"] == "acked", r
        # No key in the folder: only the settings, and the ACL and regions when they were written
        # (the ACL a few seconds after the login above).
        kept = {p.name for p in st.iterdir() if p.name != "node.sock"}
        assert not (st / "identity").exists() and "prefs" in kept and kept <= {"prefs", "acl", "regions"}, kept
        cp = run("node", "cli", "--state-dir", str(st), "get", "prv.key")
        assert "the key is the modem's" in cp.stdout, cp.stdout
    finally:
        if node is not None:
            node.terminate()
            node.wait(timeout=10)
        sim.stop()


def test_identity_modem_needs_a_kiss_radio(tmp_path):
    cp = run("node", "--radio", "air:127.0.0.1:1/x", "--identity", "modem", "--state-dir", str(tmp_path / "s"))
    assert cp.returncode == 2 and "--identity modem needs --radio kiss:PATH" in cp.stderr and cp.stderr.count("\n") == 1, cp.stderr
    cp = run("node", "--radio", "kiss:/dev/null", "--identity", "disk", "--state-dir", str(tmp_path / "s"))
    assert cp.returncode == 2 and "host" in cp.stderr and "modem" in cp.stderr, cp.stderr


def test_options_from_a_node_table_of_the_config_file(tmp_path):
    port = free_port()
    cfg = tmp_path / "config.toml"
    cfg.write_text(f'[node.mast]\nrole = "room"\nradio = "air:127.0.0.1:{port}/x"\nstate_dir = "{tmp_path / "st"}"\nsf = 13\n')
    env = dict(ENV, POCKETMESH_CONFIG=str(cfg))
    cp = subprocess.run([str(BIN), "node", "mast"], capture_output=True, text=True, timeout=30, env=env)
    assert cp.returncode == 2 and "--sf must be 5 to 12" in cp.stderr, cp.stderr
    cp = subprocess.run([str(BIN), "node", "mast", "--sf", "9"], capture_output=True, text=True, timeout=30, env=env)
    assert cp.returncode == 3 and f"127.0.0.1:{port}" in cp.stderr, cp.stderr  # the radio came from the table
    cp = subprocess.run([str(BIN), "node", "other"], capture_output=True, text=True, timeout=30, env=env)
    assert cp.returncode == 6 and "[node.other]" in cp.stderr
    cfg.write_text(cfg.read_text() + "colour = 1\n")
    cp = subprocess.run([str(BIN), "node", "mast"], capture_output=True, text=True, timeout=30, env=env)
    assert cp.returncode == 2 and "line 6: colour is not a setting of [node.mast]" in cp.stderr, cp.stderr


def test_sx1262_options_are_checked(tmp_path):
    st = str(tmp_path / "s")
    cp = run("node", "--radio", "sx1262:/dev/spidev9.9", "--state-dir", st)
    assert cp.returncode == 2 and "--irq, --reset and --busy" in cp.stderr
    cp = run("node", "--radio", "sx1262:/dev/spidev9.9", "--state-dir", st, "--irq", "22", "--reset", "18", "--busy", "23", "--tcxo", "2.0")
    assert cp.returncode == 2 and "--tcxo must be one of" in cp.stderr
    cp = run("node", "--radio", "sx1262:/dev/spidev9.9", "--state-dir", st, "--irq", "22", "--reset", "18", "--busy", "23")
    assert cp.returncode == 3 and "cannot open the SPI device /dev/spidev9.9" in cp.stderr and cp.stderr.count("\n") == 1
