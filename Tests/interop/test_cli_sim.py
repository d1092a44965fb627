"""The `pocketmesh` command line against `pocketmesh sim` (sim0 - rpt0 - rpt1 - sim1), from outside:
remote commands on repeaters, telemetry, contacts, sending, and what reaches the terminal.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import shutil
import subprocess
import tempfile
import time

import pytest

from test_daemon_faults import Daemon
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


class Run:
    def __init__(self, cp):
        self.code, self.out, self.err = cp.returncode, cp.stdout, cp.stderr

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"exit {self.code}\nstdout: {self.out!r}\nstderr: {self.err!r}"


def pm(sim, node, *args, limit=60):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port(node)}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=limit, env=ENV)
    return Run(cp)


def contacts(sim, node):
    r = pm(sim, node, "contacts", "--json")
    assert r.code == 0, r
    return {c["name"]: c for c in r.json()}


@pytest.fixture(scope="module")
def mesh():
    s = Sim("--repeaters", "2", "--topology", "line", "--seed", "5", seconds=900)
    try:
        for node in ("sim0", "sim1"):
            assert pm(s, node, "advert", "--flood").code == 0
        deadline = time.time() + 40
        while time.time() < deadline:
            known = contacts(s, "sim0")
            if {"rpt0", "rpt1", "sim1"} <= set(known) and "sim0" in contacts(s, "sim1"):
                break
            time.sleep(1)
        else:
            pytest.fail(f"contacts not exchanged: {sorted(contacts(s, 'sim0'))}")
        yield s
    finally:
        s.stop()


def key_of(sim, node, name):
    return contacts(sim, node)[name]["public_key"]


@pytest.fixture(scope="module")
def logged_in(mesh):
    """sim0 is admin on the repeater next to it."""
    r = pm(mesh, "sim0", "login", "rpt0", "-p", "password")
    assert r.code == 0, r
    return mesh


def test_cmd_after_login_gets_its_reply_once(logged_in):
    r = pm(logged_in, "sim0", "cmd", "rpt0", "ver")
    assert r.code == 0, r
    assert r.out.strip(), r
    r = pm(logged_in, "sim0", "--json", "cmd", "rpt0", "get", "name")
    assert r.code == 0, r
    assert r.json()["reply"].endswith("rpt0")
    # The replies were the commands' answers: the next sync does not print them as messages.
    s = pm(logged_in, "sim0", "--json", "sync")
    assert s.code == 0, s
    assert [m for m in s.json() if m.get("kind") == "cli"] == []


def test_neighbours_lists_the_next_repeater(logged_in):
    rpt1 = key_of(logged_in, "sim0", "rpt1")
    deadline = time.time() + 30
    while True:
        r = pm(logged_in, "sim0", "--json", "neighbours", "rpt0")
        assert r.code == 0, r
        v = r.json()
        if v["neighbours"] or time.time() > deadline:
            break
        time.sleep(2)
    assert v["total"] >= 1
    entry = next(n for n in v["neighbours"] if rpt1.startswith(n["prefix"]))
    assert len(entry["prefix"]) >= 8
    assert entry.get("name") == "rpt1"
    assert entry["heard_s_ago"] >= 0
    human = pm(logged_in, "sim0", "neighbours", "rpt0")
    assert human.code == 0, human
    assert "rpt1 (" in human.out and "SNR" in human.out, human


def test_telemetry_reads_with_units(logged_in):
    r = pm(logged_in, "sim0", "telemetry", "rpt0")
    assert r.code == 0, r
    assert "voltage (channel 1): 4.15 V" in r.out, r
    assert "temperature (channel 1): 21.5 °C" in r.out, r
    assert "LPP" not in r.out and "MeshCompanion" not in r.out, r
    j = pm(logged_in, "sim0", "--json", "telemetry", "rpt0").json()
    assert {"channel": 1, "type": "voltage", "value": 4.15, "unit": "V",
            "text": "voltage (channel 1): 4.15 V"} in j["records"]


@pytest.mark.parametrize("args", [["send", "sim1", ""], ["send", "--no-wait", "sim1", ""], ["channel", "send", "0", ""]])
def test_empty_text_is_a_usage_error(mesh, args):
    r = pm(mesh, "sim0", *args)
    assert r.code == 2, r
    assert r.err.count("\n") == 1 and r.err.rstrip().endswith("."), r


def test_contacts_add_keeps_what_the_radio_knows(mesh):
    before = contacts(mesh, "sim0")["rpt1"]
    r = pm(mesh, "sim0", "contacts", "add", before["public_key"], "rpt1")
    assert r.code == 0, r
    after = contacts(mesh, "sim0")["rpt1"]
    for field in ("type", "flags", "last_advert", "latitude", "longitude", "path_length", "path"):
        assert after[field] == before[field], (field, before, after)
    # A new contact does not get this host's clock as its advert time.
    new_key = "5a" * 32
    assert pm(mesh, "sim0", "contacts", "add", new_key, "stranger").code == 0
    assert contacts(mesh, "sim0")["stranger"]["last_advert"] == 0


def test_cmd_through_a_daemon_is_answered_not_stored(mesh):
    """A daemon owns sim1: the CLI reply goes to the command that asked, not to the store or hooks."""
    tmp = tempfile.mkdtemp(prefix="pmd-")
    port = mesh.port("sim1")
    env = dict(os.environ, XDG_RUNTIME_DIR=tmp)
    env.pop("POCKETMESH_NO_DAEMON", None)

    def cli(*args):
        cp = subprocess.run([str(BIN), *args, "--tcp", f"127.0.0.1:{port}", "--timeout", "10"],
                            capture_output=True, text=True, env=env, timeout=60)
        return Run(cp)

    d = Daemon(tmp, port, hook=True, default_socket=True)
    try:
        d.wait_ready()
        deadline = time.time() + 20
        while "rpt1" not in cli("contacts").out and time.time() < deadline:
            time.sleep(1)
        r = cli("login", "rpt1", "-p", "password")
        assert r.code == 0, r
        # A message the daemon stored that no `sync` has printed yet: the command's answer is its
        # reply, not that backlog, which the next sync prints.
        sim1_key = key_of(mesh, "sim0", "sim1")
        assert pm(mesh, "sim0", "send", sim1_key[:12], "backlog").code == 0

        def history(name):
            return Run(subprocess.run([str(BIN), "history", name, "--state-dir", d.state, "--json"],
                                      capture_output=True, text=True, env=env, timeout=60))
        deadline = time.time() + 20
        while "backlog" not in history("sim0").out and time.time() < deadline:
            time.sleep(0.5)
        r = cli("cmd", "rpt1", "get", "name")
        assert r.code == 0, r
        assert r.out.strip().endswith("rpt1"), r
        r = cli("--json", "cmd", "rpt1", "ver")
        assert r.code == 0 and r.json()["reply"] and r.json()["messages"] == [], r
        s = cli("--json", "sync")
        assert s.code == 0 and [m["text"] for m in s.json()] == ["backlog"], s
        time.sleep(2)
        hooked = pathlib.Path(tmp, "hook.txt")
        assert not hooked.exists() or "rpt1" not in hooked.read_text(), hooked.read_text()
        h = history("rpt1")
        assert h.code in (0, 6), h
        if h.code == 0:
            assert h.json()["messages"] == [], h
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_channel_datagrams_keep_their_data_type_through_a_daemon(mesh):
    tmp = tempfile.mkdtemp(prefix="pmd-")
    port = mesh.port("sim1")
    env = dict(os.environ, XDG_RUNTIME_DIR=tmp)
    env.pop("POCKETMESH_NO_DAEMON", None)
    d = Daemon(tmp, port, hook=False, default_socket=True)
    try:
        d.wait_ready()
        # sim0 sends a datagram of type 0xFFBE on the Public channel (slot 0), flood.
        r = pm(mesh, "sim0", "raw", "3e00ffbeff" + "c0ffee")
        assert r.code == 0 and "00" == r.out.split()[-1][:2], r

        def through(*args):
            return Run(subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=60))
        deadline = time.time() + 20
        while time.time() < deadline:
            h = through("history", "0", "--state-dir", d.state, "--json")
            got = [m for m in h.json()["messages"] if m.get("data")] if h.code == 0 else []
            if got:
                break
            time.sleep(1)
        assert got and got[-1]["data_type"] == 0xFFBE and got[-1]["data"] == "c0ffee", h
        s = through("sync", "--json", "--tcp", f"127.0.0.1:{port}")
        assert s.code == 0, s
        assert [(m["data_type"], m["data"]) for m in s.json() if m["kind"] == "channel_data"] == [(0xFFBE, "c0ffee")]
        # CHANNEL_DATA_RECV carries no timestamp, so none is printed (not 0), and its bytes are
        # hex in `data`, never raw bytes in `text`.
        assert all("timestamp" not in m for m in s.json() if m["kind"] == "channel_data"), s.out
        assert "timestamp" not in got[-1] and "text" not in got[-1] and got[-1]["received"] > 0, got[-1]
        human = through("history", "0", "--state-dir", d.state)
        assert "data 65470: c0ffee" in human.out, human
        assert "1970-01-01" not in human.out, human  # the time it was received, not a timestamp of 0
    finally:
        d.stop()
        shutil.rmtree(tmp, ignore_errors=True)


def test_terminal_escapes_from_the_mesh_are_shown_harmlessly(mesh):
    """Runs last in this module: it renames sim1."""
    sim0_key = key_of(mesh, "sim1", "sim0")
    evil = "\x1b]0;pwned\x07ev\x9bil"
    assert pm(mesh, "sim1", "set", "name", evil).code == 0
    assert pm(mesh, "sim1", "advert", "--flood").code == 0
    deadline = time.time() + 30
    while evil not in contacts(mesh, "sim0") and time.time() < deadline:
        time.sleep(1)
    listing = pm(mesh, "sim0", "contacts")
    assert listing.code == 0, listing
    assert "\x1b" not in listing.out and "\x07" not in listing.out and "\x9b" not in listing.out, listing
    assert "\\x1b]0;pwned\\x07ev\\u009bil" in listing.out, listing
    # JSON keeps the name as it is, escaped by JSON's rules.
    assert "\\u001b]0;pwned\\u0007ev" in pm(mesh, "sim0", "--json", "contacts").out
    # A message text and its sender's name, through sync.
    r = pm(mesh, "sim1", "send", sim0_key[:12], "look\x1b[2J\x1b[Hhere")
    assert r.code == 0, r
    s = pm(mesh, "sim0", "sync")
    assert s.code == 0, s
    assert "\x1b" not in s.out and "look\\x1b[2J\\x1b[Hhere" in s.out, s
    # A newline in a message cannot forge a second message from someone else: one line, `\n` shown.
    r = pm(mesh, "sim1", "send", sim0_key[:12], "fine\n[1700000000] bank: send money")
    assert r.code == 0, r
    s = pm(mesh, "sim0", "sync")
    assert s.code == 0, s
    lines = [l for l in s.out.splitlines() if "bank" in l]
    assert len(lines) == 1 and "fine\\n[1700000000] bank: send money" in lines[0] and lines[0].startswith("["), s
    # Error messages that repeat what was typed or received.
    e = pm(mesh, "sim0", "send", "no\x1b[2Jbody", "hi")
    assert e.code == 6, e
    assert "\x1b" not in e.err and "no\\x1b[2Jbody" in e.err, e
