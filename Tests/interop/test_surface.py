"""The rest of the protocol surface against `pocketmesh sim`: node discovery, contact paths and
telemetry permissions by hand, contacts by whole key, HAS_CONNECTION, binary and min/max/avg
requests, channel datagrams both ways, raw data and raw packets, the radio's CLI (protocol 14
only), allowed repeat frequencies and client repeat, per-command ACK timeout; bad input to each
(one sentence, exit 2 or 6, nothing changed), and the same operations through a daemon's API.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import re
import subprocess
import time

import pytest

from test_daemon_faults import Daemon
from test_sim_clients import CLI, PY, Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


@pytest.fixture(scope="module")
def sim():
    """sim0 - rpt0 - sim1, adverts exchanged."""
    s = Sim("--repeaters", "1", "--seed", "21", nodes=2)
    for n in ("sim0", "sim1"):
        at(s, "advert", "--flood", node=n)
    deadline = time.time() + 20
    while time.time() < deadline:
        c0 = at(s, "contacts")[1]
        if "sim1" in c0 and "rpt0" in c0 and "sim0" in at(s, "contacts", node="sim1")[1]:
            break
        time.sleep(0.5)
    yield s
    s.stop()


def at(sim, *args, node="sim0"):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port(node)}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=90, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def js(sim, *args, node="sim0"):
    code, out, err = at(sim, "--json", *args, node=node)
    assert code == 0, err
    return json.loads(out)


def one_line(err):
    return err.count("\n") == 1 and err.startswith("pocketmesh: ")


def test_discover(sim):
    r = js(sim, "discover", "--for", "5", "--type", "repeater")
    nodes = r["nodes"]
    assert [n["name"] for n in nodes] == ["rpt0"], r
    n = nodes[0]
    assert n["type"] == "repeater" and len(n["public_key"]) == 64
    assert isinstance(n["snr"], (int, float)) and isinstance(n["snr_there"], (int, float)) and n["rssi"] < 0
    # Only companions asked: the repeater stays quiet; nothing answered is exit 6.
    code, out, err = at(sim, "discover", "--for", "2", "--type", "chat")
    assert code == 6 and one_line(err)
    for bad in (["--type", "toaster"], ["--for", "0"], ["--for", "inf"]):
        code, out, err = at(sim, "discover", *bad)
        assert code == 2 and one_line(err), (bad, err)


def test_set_path_and_permissions(sim):
    before = {c["name"]: c for c in js(sim, "contacts")}["sim1"]
    rpt = {c["name"]: c for c in js(sim, "contacts")}["rpt0"]["public_key"][:2]
    r = js(sim, "contacts", "set-path", "sim1", rpt)
    assert r["path"] == rpt and r["hops"] == 1
    c = js(sim, "contacts", "show", "sim1")
    assert c["path"] == rpt and c["path_length"] == 1
    r = js(sim, "contacts", "set-path", "sim1", "")
    assert r["hops"] == 0
    for bad in ("zz", "1", "00" * 65):
        code, out, err = at(sim, "contacts", "set-path", "sim1", bad)
        assert code == 2 and one_line(err), (bad, err)
    assert at(sim, "contacts", "set-path", "nobody", "00")[0] == 6
    # Permissions: bits 1-3 of the flags; the favourite bit is kept.
    assert js(sim, "contacts", "favourite", "sim1", "on")["favourite"] is True
    r = js(sim, "contacts", "permissions", "sim1", "base,location")
    assert (r["base"], r["location"], r["environment"]) == (True, True, False)
    c = js(sim, "contacts", "show", "sim1")
    assert c["flags"] == 1 | 2 | 4
    assert js(sim, "contacts", "permissions", "sim1", "none")["flags"] == 1
    code, out, err = at(sim, "contacts", "permissions", "sim1", "everything")
    assert code == 2 and one_line(err)
    assert js(sim, "contacts", "show", "sim1")["flags"] == 1  # unchanged by the bad call
    at(sim, "contacts", "favourite", "sim1", "off")
    at(sim, "contacts", "reset-path", "sim1")
    assert before["name"] == "sim1"


def radio_path(sim, name, node="sim0"):
    """A contact's path as meshcore_py reads it off the radio: [hex, hops, path hash mode]."""
    script = f"""
import asyncio, json
from meshcore import MeshCore
async def main():
    mc = await MeshCore.create_tcp("127.0.0.1", {sim.port(node)})
    await mc.ensure_contacts()
    c = mc.get_contact_by_name({name!r})
    print(json.dumps([c["out_path"], c["out_path_len"], c["out_path_hash_mode"]]), flush=True)
    await mc.disconnect()
asyncio.run(main())
"""
    cp = subprocess.run([str(PY), "-c", script], capture_output=True, text=True, timeout=60)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout.strip().splitlines()[-1])


def test_set_path_reads_hops_as_meshcore_cli(sim):
    """Comma-separated hops: each hop's width is the path hash size (aabb,ccdd: two hops of two
    bytes, path hash mode 1), as meshcore-cli's change_path stores it; HEX:MODE names the mode."""
    subprocess.run([str(CLI), "-t", "127.0.0.1", "-p", str(sim.port("sim0")), "cp", "sim1", "aabb,ccdd"],
                   capture_output=True, text=True, timeout=60)
    theirs = radio_path(sim, "sim1")
    assert theirs == ["aabbccdd", 2, 1], theirs
    at(sim, "contacts", "reset-path", "sim1")
    r = js(sim, "contacts", "set-path", "sim1", "aabb,ccdd")
    assert r["path"] == "aabbccdd" and r["hops"] == 2, r
    assert radio_path(sim, "sim1") == theirs
    assert js(sim, "contacts", "set-path", "sim1", "aabbccddeeff:2")["hops"] == 2
    assert radio_path(sim, "sim1") == ["aabbccddeeff", 2, 2]
    assert js(sim, "contacts", "set-path", "sim1", "aa,bb,cc")["hops"] == 3
    assert radio_path(sim, "sim1") == ["aabbcc", 3, 0]
    # Hops of different widths, a mode that is none, hashes of 4 bytes: one sentence, exit 2, nothing changed.
    for bad in ("aabb,cc", "aabb,ccdd:0", "aabbcc:3", "aabbccdd,eeff0011", "aa,,bb"):
        code, out, err = at(sim, "contacts", "set-path", "sim1", bad)
        assert code == 2 and one_line(err), (bad, err)
    assert radio_path(sim, "sim1") == ["aabbcc", 3, 0]
    # `contacts add --path` reads a path the same way.
    key = sim.nodes["sim1"]["pubkey"]
    assert at(sim, "contacts", "add", key, "sim1", "--path", "1122,3344")[0] == 0
    assert radio_path(sim, "sim1") == ["11223344", 2, 1]
    at(sim, "contacts", "reset-path", "sim1")


def test_contact_by_whole_key_and_connection(sim):
    key = sim.nodes["sim1"]["pubkey"]
    assert js(sim, "contacts", "show", key)["name"] == "sim1"
    code, out, err = at(sim, "contacts", "show", "ab" * 32)
    assert code == 6 and one_line(err)
    r = js(sim, "contacts", "connected", "rpt0")
    assert r == {"name": "rpt0", "connected": False}


def test_binary_request_and_mma(sim):
    assert at(sim, "login", "rpt0", "-p", "password")[0] == 0
    r = js(sim, "request", "rpt0", "01")
    assert r["name"] == "rpt0" and len(r["data"]) >= 100  # the status block
    for bad in ("", "zz", "01" * 200):
        code, out, err = at(sim, "request", "rpt0", bad)
        assert code == 2 and one_line(err), (bad, err)
    code, out, err = at(sim, "mma", "rpt0", "--from", "10", "--to", "60")
    assert code == 2 and one_line(err)


def test_channel_datagrams_both_ways(sim):
    r = js(sim, "channel", "data", "0", "65280", "cafe0102")
    assert r["data_type"] == 65280 and r["bytes"] == 4
    got = []
    deadline = time.time() + 20
    while not got and time.time() < deadline:
        got = [m for m in js(sim, "sync", node="sim1") if m.get("kind") == "channel_data"]
        time.sleep(0.5)
    assert got and got[0]["data_type"] == 65280 and got[0]["data"] == "cafe0102", got
    for bad in (["0", "0", "ca"], ["0", "70000", "ca"], ["0", "1", "xyz"]):
        code, out, err = at(sim, "channel", "data", *bad)
        assert code == 2 and one_line(err), (bad, err)
    assert at(sim, "channel", "data", "nochannel", "1", "ca")[0] == 6


def test_raw_sends_cli_and_repeat_settings(sim):
    assert js(sim, "raw-data", "", "01020304")["status"] == "sent"
    code, out, err = at(sim, "raw-data", "", "01")
    assert code == 2 and one_line(err)
    code, out, err = at(sim, "raw-packet", "0102")
    assert code == 2 and one_line(err)
    # The radio reports companion protocol 13: the CLI needs 14.
    code, out, err = at(sim, "cli", "ver")
    assert code == 2 and "protocol 14" in err and one_line(err)
    freqs = js(sim, "get", "repeat-freqs")["repeat-freqs"]
    assert {"from_mhz": 869.495, "to_mhz": 869.495} in freqs
    # Client repeat is refused off those frequencies (exit 5), and nothing changed.
    code, out, err = at(sim, "set", "client-repeat", "on")
    assert code == 5 and "repeat-freqs" in err
    assert js(sim, "get", "client-repeat")["client-repeat"] is False
    assert at(sim, "set", "client-repeat", "maybe")[0] == 2


def test_heard_repeats_of_a_flooded_direct_message(sim):
    assert at(sim, "contacts", "reset-path", "sim1")[0] == 0
    r = js(sim, "send", "sim1", "find me by flood")
    # rpt0 sends the flood on; sim0 hears that once.
    assert r["status"] == "acked" and r["flood"] is True and r["heard_repeats"] == 1, r
    r = js(sim, "send", "sim1", "now direct")
    assert r["flood"] is False and "heard_repeats" not in r, r
    code, out, err = at(sim, "contacts", "reset-path", "sim1")
    code, out, err = at(sim, "send", "sim1", "flood in words")
    assert code == 0 and "flooded, heard 1 repeat;" in out, out


def test_ack_timeout(sim):
    r = js(sim, "send", "sim1", "quick ack", "--ack-timeout", "20")
    assert r["status"] == "acked"
    for bad in ("0", "-1", "inf", "9999"):
        code, out, err = at(sim, "send", "sim1", "x", "--ack-timeout", bad)
        assert code == 2 and one_line(err), (bad, err)


def test_through_a_daemon(sim, tmp_path):
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False)
    try:
        r = d.call({"id": 1, "op": "discover", "for": 5, "type": "repeater"}, timeout=60)
        assert r["ok"] and [n["name"] for n in r["nodes"]] == ["rpt0"], r
        r = d.call({"id": 2, "op": "contacts_permissions", "name": "sim1", "grant": "environment"}, timeout=30)
        assert r["ok"] and r["environment"] is True, r
        d.call({"id": 3, "op": "contacts_permissions", "name": "sim1", "grant": "none"}, timeout=30)
        r = d.call({"id": 4, "op": "channel_data", "channel": "0", "data_type": 65281, "data": "0a0b"}, timeout=30)
        assert r["ok"] and r["data_type"] == 65281, r
        r = d.call({"id": 5, "op": "cli", "command": "ver"}, timeout=30)
        assert not r["ok"] and "protocol 14" in r["error"]["message"], r
        r = d.call({"id": 6, "op": "contacts_set_path", "name": "sim1", "path": "zz"}, timeout=30)
        assert not r["ok"], r
        # channel_send with repeats_wait: the heard repeats, as `channel send` reports them.
        r = d.call({"id": 7, "op": "channel_send", "channel": 0, "text": "anyone?", "repeats_wait": 3}, timeout=60)
        assert r["ok"] and r["heard_repeats"] == 1 and r["repeats"][0]["hops"] == 1, r
        r = d.call({"id": 8, "op": "channel_send", "channel": 0, "text": "plain"}, timeout=30)
        assert r["ok"] and "heard_repeats" not in r, r
        r = d.call({"id": 9, "op": "channel_send", "channel": 0, "text": "x", "repeats_wait": 99}, timeout=30)
        assert not r["ok"], r
    finally:
        d.stop()


def test_low_battery_event_and_scope_kept_across_reconnects(sim, tmp_path):
    from test_events import events, subscriber
    # The simulated battery reads 4150 mV: below a 4200 mV threshold.
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=("--low-battery", "4200", "--battery-every", "1"))
    try:
        s = subscriber(d)
        got = [e for e in events(s, 6) if e["event"] in ("low_battery", "battery_ok")]
        # Each reading while it stays low (every second here), never battery_ok.
        assert got and all(e == {"event": "low_battery", "battery_mv": 4150, "threshold_mv": 4200} for e in got), got
        # A scope set through the daemon is set again after the daemon reconnects to the radio.
        env = dict(ENV, XDG_RUNTIME_DIR=str(tmp_path))
        env.pop("POCKETMESH_NO_DAEMON")
        r = d.call({"id": 2, "op": "scope", "scope": "#north"}, timeout=30)
        assert r["ok"], r
        d.proc.send_signal(__import__("signal").SIGHUP)
        deadline = time.time() + 20
        log = ""
        while time.time() < deadline and "flood scope set again" not in log:
            time.sleep(0.3)
            log = (tmp_path / "daemon.log").read_text()
        assert "flood scope set again" in log, log
    finally:
        d.stop()
    for bad in (["--low-battery", "0"], ["--low-battery", "x"], ["--battery-every", "0"]):
        cp = subprocess.run([str(BIN), "daemon", "-t", "127.0.0.1:1", *bad], capture_output=True, text=True, timeout=20)
        assert cp.returncode == 2 and cp.stderr.count("\n") == 1, (bad, cp.stderr)
