"""`channel rekey NAME --members A,B`: against `pocketmesh sim`, the slot gets a new random secret,
each member gets the channel's link by direct message and ACKs it, the link decodes to the secret
the radio now has; an unknown member changes nothing (exit 6).

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import subprocess
import time
import urllib.parse

import pytest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")


def at(sim, node, *args, timeout=120):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port(node)}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=timeout, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


@pytest.fixture(scope="module")
def sim():
    s = Sim(nodes=3)
    for n in ("sim0", "sim1", "sim2"):
        at(s, n, "advert", "--flood")
    deadline = time.time() + 20
    while time.time() < deadline:
        out = at(s, "sim0", "contacts")[1]
        if "sim1" in out and "sim2" in out:
            break
        time.sleep(0.5)
    assert at(s, "sim0", "channel", "set", "1", "Team Ops & Co", "--secret", "00112233445566778899aabbccddeeff")[0] == 0
    yield s
    s.stop()


def channel(sim, node, index):
    code, out, err = at(sim, node, "--json", "channel", "list")
    assert code == 0, err
    return next(c for c in json.loads(out) if c["index"] == index)


def test_unknown_member_changes_nothing(sim):
    before = channel(sim, "sim0", 1)
    code, out, err = at(sim, "sim0", "channel", "rekey", "Team Ops & Co", "--members", "sim1,nobody")
    assert code == 6 and "nobody" in err, err
    assert channel(sim, "sim0", 1) == before


def test_rekey_sends_the_link_to_each_member(sim):
    before = channel(sim, "sim0", 1)
    code, out, err = at(sim, "sim0", "--json", "channel", "rekey", "1", "--members", "sim1, sim2")
    assert code == 0, err
    r = json.loads(out)
    assert [m["name"] for m in r["members"]] == ["sim1", "sim2"] and all(m["acked"] for m in r["members"])
    after = channel(sim, "sim0", 1)
    assert after["name"] == "Team Ops & Co" and after["secret"] != before["secret"]
    u = urllib.parse.urlparse(r["uri"])
    assert (u.scheme, u.netloc, u.path) == ("meshcore", "channel", "/add")
    q = urllib.parse.parse_qs(u.query)
    assert q["name"] == ["Team Ops & Co"] and q["secret"] == [after["secret"]]
    for n in ("sim1", "sim2"):
        got, deadline = [], time.time() + 20
        while not got and time.time() < deadline:
            code, out, err = at(sim, n, "--json", "sync")
            got = [m for m in json.loads(out) if m.get("text") == r["uri"]]
            time.sleep(0.3)
        assert got, n
