"""openhop-core (PyPI) and a Linux node of ours on the simulator's air, both attached over the
air socket: a Linux repeater (`pocketmesh node --radio air:...`) between a simulated companion and
an openhop-core companion carries their acknowledged messages both ways, and a Linux companion
node (`--role companion --companion-listen`) talks to openhop-core directly.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV (openhop-core).
"""
import json
import subprocess
import time

import pytest

from test_sim_clients import Sim

from test_air import BIN, ENV, PEER, PY, free_port  # noqa: F401  (the air's harness, shared)

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def js(port, *args):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{port}", "--timeout", "15", "--json", *args],
                        capture_output=True, text=True, timeout=90, env=ENV)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def start(argv, prefix):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert line.startswith(prefix), line + p.stderr.read()
    return p, line


def wait_contacts(port, names):
    deadline = time.time() + 40
    while time.time() < deadline:
        have = {c["name"] for c in js(port, "contacts")}
        if names <= have:
            return
        time.sleep(0.5)
    raise AssertionError(f"{names} not all in {have}")


@pytest.fixture
def procs():
    ps = []
    yield ps
    for p in reversed(ps):
        p.terminate()
        try:
            p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            p.kill()


def test_openhop_and_a_simulated_companion_through_a_linux_repeater(tmp_path, procs):
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "lin", "role": "external"}, {"name": "ext0", "role": "external"}],
        "links": [{"a": "sim0", "b": "lin", "snr": 8}, {"a": "lin", "b": "ext0", "snr": 7}],
    }))
    air = free_port()
    sim = Sim("--topology", str(topo), "--air-port", str(air), nodes=1)
    procs.append(sim.proc)
    p, _ = start([str(BIN), "node", "--radio", f"air:127.0.0.1:{air}/lin", "--state-dir", str(tmp_path / "st"),
                  "--name", "LinRpt", "--for", "300"], "repeater LinRpt ")
    procs.append(p)
    theirs = free_port()
    p, _ = start([str(PY), str(PEER), "--air", f"127.0.0.1:{air}", "--name", "ext0", "--port", str(theirs)], "node ext0 ")
    procs.append(p)
    ours = sim.port("sim0")
    js(ours, "advert", "--flood")
    js(theirs, "advert", "--flood")
    wait_contacts(ours, {"ext0", "LinRpt"})
    wait_contacts(theirs, {"sim0"})
    r = js(ours, "send", "ext0", "to openhop via linux")
    assert r["status"] == "acked", r
    assert [m["text"] for m in js(theirs, "sync") if m["kind"] == "direct"] == ["to openhop via linux"]
    r = js(theirs, "send", "sim0", "to sim via linux")
    assert r["status"] == "acked", r
    assert [m["text"] for m in js(ours, "sync") if m["kind"] == "direct"] == ["to sim via linux"]


def test_a_linux_companion_and_openhop_talk_directly(tmp_path, procs):
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "lin", "role": "external"}, {"name": "ext0", "role": "external"}],
        "links": [{"a": "lin", "b": "ext0", "snr": 6}],
    }))
    air = free_port()
    sim = subprocess.Popen([str(BIN), "sim", "--topology", str(topo), "--air-port", str(air), "--for", "300"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    procs.append(sim)
    assert sim.stdout.readline().startswith("external lin ")
    ours = free_port()
    p, _ = start([str(BIN), "node", "--role", "companion", "--radio", f"air:127.0.0.1:{air}/lin", "--state-dir", str(tmp_path / "st"),
                  "--name", "LinComp", "--companion-listen", f"127.0.0.1:{ours}", "--for", "300"], "companion LinComp ")
    procs.append(p)
    theirs = free_port()
    p, _ = start([str(PY), str(PEER), "--air", f"127.0.0.1:{air}", "--name", "ext0", "--port", str(theirs)], "node ext0 ")
    procs.append(p)
    js(ours, "advert", "--flood")
    js(theirs, "advert", "--flood")
    wait_contacts(ours, {"ext0"})
    wait_contacts(theirs, {"LinComp"})
    r = js(ours, "send", "ext0", "linux to openhop")
    assert r["status"] == "acked", r
    assert [m["text"] for m in js(theirs, "sync") if m["kind"] == "direct"] == ["linux to openhop"]
    r = js(theirs, "send", "LinComp", "openhop to linux")
    assert r["status"] == "acked", r
    assert [m["text"] for m in js(ours, "sync") if m["kind"] == "direct"] == ["openhop to linux"]
