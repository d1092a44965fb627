"""Share links, favourites, channel add and time set (issue "the whole protocol"), against
`pocketmesh sim`, directly and through a daemon's API: links round trip between two radios,
bad links and unknown names are one sentence with exit 2 or 6 and change nothing.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import socket
import subprocess
import tempfile
import time
import urllib.parse

import pytest

from test_daemon_faults import Daemon
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


def at(sim, node, *args, timeout=60):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port(node)}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=timeout, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def js(sim, node, *args):
    code, out, err = at(sim, node, "--json", *args)
    assert code == 0, (args, err)
    return json.loads(out)


@pytest.fixture(scope="module")
def sim():
    s = Sim(nodes=3)
    for n in ("sim0", "sim1"):
        at(s, n, "advert", "--flood")
    deadline = time.time() + 20
    while time.time() < deadline and "sim1" not in at(s, "sim0", "contacts")[1]:
        time.sleep(0.5)
    yield s
    s.stop()


def test_contact_links_round_trip(sim):
    links = js(sim, "sim0", "contacts", "uri", "sim1")
    card, by_key = links["uri"], links["contact_uri"]
    assert card.startswith("meshcore://") and len(card) > 11 + 196
    q = urllib.parse.parse_qs(urllib.parse.urlparse(by_key).query)
    assert q["public_key"] == [sim.nodes["sim1"]["pubkey"]] and q["name"] == ["sim1"] and q["type"] == ["1"]
    # sim2 forgets sim1 (it may have heard its advert): each kind of link adds it back.
    at(sim, "sim2", "contacts", "remove", "sim1")
    assert "sim1" not in at(sim, "sim2", "contacts")[1]
    assert at(sim, "sim2", "contacts", "import", card)[0] == 0
    got = {c["name"]: c for c in js(sim, "sim2", "contacts")}
    assert got["sim1"]["public_key"] == sim.nodes["sim1"]["pubkey"]
    assert at(sim, "sim2", "contacts", "remove", "sim1")[0] == 0
    assert at(sim, "sim2", "contacts", "import", by_key.replace("name=sim1", "name=Bob%20One"))[0] == 0
    assert "Bob One" in {c["name"] for c in js(sim, "sim2", "contacts")}


@pytest.mark.parametrize("bad,code", [
    ("meshcore://", 2), ("meshcore://zz", 2), ("http://example.com", 2), ("meshcore://contact/add?name=x", 2),
    ("meshcore://contact/add?name=x&public_key=1234", 2), ("meshcore://contact/add?name=%G1&public_key=" + "ab" * 32, 2),
    ("meshcore://channel/add?name=x&secret=00", 2), ("meshcore://contact/add?name=x&type=9&public_key=" + "ab" * 32, 2),
])
def test_bad_links_change_nothing(sim, bad, code):
    before = js(sim, "sim2", "contacts"), js(sim, "sim2", "channel", "list")
    c, out, err = at(sim, "sim2", "contacts", "import", bad)
    assert c == code and err.startswith("pocketmesh: ") and err.count("\n") == 1, (c, err)
    c, out, err = at(sim, "sim2", "channel", "import", bad)
    assert c == 2, (c, err)
    assert (js(sim, "sim2", "contacts"), js(sim, "sim2", "channel", "list")) == before


def test_favourites(sim):
    assert js(sim, "sim0", "contacts", "favourite", "sim1", "on")["favourite"] is True
    c = next(x for x in js(sim, "sim0", "contacts") if x["name"] == "sim1")
    assert c["flags"] & 1 == 1
    assert at(sim, "sim0", "contacts", "favourite", "sim1", "off")[0] == 0
    c2 = next(x for x in js(sim, "sim0", "contacts") if x["name"] == "sim1")
    assert c2["flags"] & 1 == 0 and c2["public_key"] == c["public_key"] and c2["path"] == c["path"]
    assert at(sim, "sim0", "contacts", "favourite", "nobody", "on")[0] == 6
    assert at(sim, "sim0", "contacts", "favourite", "sim1", "maybe")[0] == 2


def test_channel_add_uri_and_import(sim):
    added = js(sim, "sim0", "channel", "add", "#hiking")
    slots = {c["index"]: c for c in js(sim, "sim0", "channel", "list")}
    assert slots[added["index"]]["name"] == "#hiking"
    assert all(i in slots for i in range(added["index"]))  # the first free slot
    again = js(sim, "sim0", "channel", "add", "#hiking")
    assert again["index"] == added["index"]  # the same name keeps its slot
    uri = js(sim, "sim0", "channel", "uri", "#hiking")["uri"]
    assert uri.startswith("meshcore://channel/add?name=%23hiking&secret=")
    imported = js(sim, "sim2", "channel", "import", uri)
    theirs = {c["index"]: c for c in js(sim, "sim2", "channel", "list")}[imported["index"]]
    assert theirs["secret"] == slots[added["index"]]["secret"] and theirs["name"] == "#hiking"
    assert at(sim, "sim0", "channel", "add", "private")[0] == 2  # no secret and no #


def test_an_empty_slot_has_no_link(sim):
    """A slot without a secret has nothing to share or send on: `channel uri N` (and sending on it)
    is one sentence and exit 6, as an unknown channel, never a link with an all-zero secret."""
    used = {c["index"] for c in js(sim, "sim2", "channel", "list")}  # the list leaves empty slots out
    empty = min(set(range(8)) - used)
    for args in (["channel", "uri", str(empty)], ["channel", "send", str(empty), "hello"],
                 ["channel", "data", str(empty), "65280", "cafe"]):
        code, out, err = at(sim, "sim2", *args)
        assert code == 6 and out == "" and err.count("\n") == 1 and "empty" in err, (args, code, out, err)
    assert js(sim, "sim2", "channel", "uri", "0")["uri"].startswith("meshcore://channel/add?name=Public&secret=")


def test_time_set(sim):
    t = js(sim, "sim2", "time", "get")["epoch"]
    assert js(sim, "sim2", "time", "set", str(t + 3600))["epoch"] == t + 3600
    assert abs(js(sim, "sim2", "time", "get")["epoch"] - (t + 3600)) <= 2
    for bad in ("soon", "1e9", "-5", "99999999999"):
        assert at(sim, "sim2", "time", "set", bad)[0] == 2, bad


def test_through_a_daemon_api(sim, tmp_path):
    d = Daemon(str(tmp_path), sim.port("sim2"), hook=False)
    try:
        def api(req):
            return d.call(req, timeout=60)
        uri = js(sim, "sim0", "channel", "uri", "#hiking")["uri"] if "#hiking" in at(sim, "sim0", "channel", "list")[1] else None
        r = api({"id": 1, "op": "channel_add", "name": "#daemon"})
        assert r["ok"], r
        r = api({"id": 2, "op": "channel_uri", "channel": "#daemon"})
        assert r["ok"] and r["uri"].startswith("meshcore://channel/add?name=%23daemon"), r
        r = api({"id": 3, "op": "contacts_import", "uri": "meshcore://nothex"})
        assert not r["ok"] and r["error"]["exit"] == 2, r
        r = api({"id": 4, "op": "time_set", "epoch": 1.5})
        assert not r["ok"] and r["error"]["exit"] == 2, r
        del uri
    finally:
        d.stop()
