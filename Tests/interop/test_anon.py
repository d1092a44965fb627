"""Anonymous requests to a repeater (no login): `regions`, `owner`, `clock` against `pocketmesh
sim` with a repeater that has regions; a contact without a path gets a zero-hop request and its
path back afterwards; through a daemon's API too.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import re
import socket
import subprocess
import time

import pytest

from test_daemon_faults import Daemon
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    topo = tmp_path_factory.mktemp("topo") / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"},
                  {"name": "r1", "role": "repeater", "regions": ["#north", "#south"]}],
        "links": [{"a": "sim0", "b": "r1", "snr": 8}],
    }))
    s = Sim("--topology", str(topo), nodes=1)
    key = None
    deadline = time.time() + 10
    while key is None and time.time() < deadline:
        m = re.match(r"repeater r1 pubkey=([0-9a-f]{64})", s.proc.stdout.readline())
        key = m and m[1]
    assert key
    s.r1 = key
    yield s
    s.stop()


def at(sim, *args):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port('sim0')}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=60, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def test_regions_owner_clock(sim):
    assert at(sim, "contacts", "add", sim.r1, "r1", "--type", "repeater")[0] == 0
    code, out, err = at(sim, "--json", "regions", "r1")
    assert code == 0, err
    r = json.loads(out)
    assert {"north", "south"} <= set(r["regions"]) and r["clock"] > 0
    code, out, err = at(sim, "--json", "owner", "r1")
    assert code == 0 and json.loads(out)["node_name"] == "r1", err
    code, out, err = at(sim, "--json", "clock", "r1")
    c = json.loads(out)
    assert code == 0 and abs(c["offset_s"]) < 60 and c["repeating"] is True, err
    # The contact had no path: it was zero-hop for the request only.
    code, out, err = at(sim, "--json", "contacts")
    assert {x["name"]: x for x in json.loads(out)}["r1"]["path_length"] == -1
    assert at(sim, "regions", "nobody")[0] == 6


def test_through_a_daemon(sim, tmp_path):
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False)
    try:
        r = d.call({"id": 1, "op": "regions", "name": "r1"}, timeout=60)
        assert r["ok"] and {"north", "south"} <= set(r["regions"]), r
    finally:
        d.stop()


def test_scope(sim):
    for name, shown in (("#north", "#north"), ("north", "#north"), ("none", "none"), ("default", "default")):
        code, out, err = at(sim, "--json", "scope", name)
        assert code == 0 and json.loads(out)["scope"] == shown, err
    for bad in ("#", "two words", "#" + "x" * 40):
        code, out, err = at(sim, "scope", bad)
        assert code == 2 and err.count("\n") == 1, (bad, err)


def test_saved_passwords(sim, tmp_path):
    env = dict(ENV, XDG_STATE_HOME=str(tmp_path))

    def run(*args):
        cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port('sim0')}", "--timeout", "10", *args],
                            capture_output=True, text=True, timeout=60, env=env)
        assert "s3cret-pw" not in cp.stdout + cp.stderr  # never printed
        return cp.returncode, cp.stdout, cp.stderr

    at(sim, "contacts", "add", sim.r1, "r1", "--type", "repeater")
    # A wrong password is not saved.
    code, out, err = run("login", "r1", "-p", "wrong")
    assert code != 0
    f = tmp_path / "pocketmesh" / "passwords"
    assert not f.exists() or sim.r1 not in f.read_text()
    code, out, err = run("--json", "login", "r1", "-p", "password")
    assert code == 0, err
    assert json.loads(out)["saved_password"] is False
    assert oct(f.stat().st_mode & 0o777) == "0o600" and sim.r1 in f.read_text() and "password" not in f.read_text()
    code, out, err = run("--json", "login", "r1")  # the saved one
    assert code == 0 and json.loads(out)["saved_password"] is True, err
    code, out, err = run("logout", "r1", "--forget")
    assert code == 0, err
    assert sim.r1 not in f.read_text()
    code, out, err = run("--json", "login", "r1", "--forget")
    assert code == 0 and json.loads(out)["forgotten"] is False


def test_heard_repeats_of_a_channel_send(tmp_path):
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "r1", "role": "repeater"},
                  {"name": "r2", "role": "repeater"}, {"name": "sim1", "role": "companion"}],
        "links": [{"a": "sim0", "b": "r1", "snr": 8}, {"a": "sim0", "b": "r2", "snr": 6},
                  {"a": "r1", "b": "sim1", "snr": 8}],
    }))
    s = Sim("--topology", str(topo), nodes=2)
    try:
        code, out, err = at(s, "--json", "channel", "send", "0", "anyone there?")
        assert code == 0, err
        r = json.loads(out)
        # Both repeaters next to sim0 send it on; each is heard once (a one-hop path each).
        assert r["heard_repeats"] == 2, r
        assert sorted(len(x["path"]) for x in r["repeats"]) == [2, 2]
        code, out, err = at(s, "--json", "channel", "send", "0", "quick", "--repeats-wait", "0")
        assert code == 0 and "heard_repeats" not in json.loads(out)
        assert at(s, "channel", "send", "0", "x", "--repeats-wait", "99")[0] == 2
    finally:
        s.stop()
