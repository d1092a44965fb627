"""The manual-add workflow (`set manual-add on`): the daemon keeps adverts of nodes that are not
contacts, `contacts pending` lists them (name, type, key, location, hops, when heard), and
`contacts add-pending PREFIX` adds one with its advert's data; against `pocketmesh sim`.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import subprocess
import time

import pytest

from test_daemon_faults import Daemon, tmpdir_short  # noqa: F401
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def test_pending_adverts_through_the_daemon(tmpdir_short):
    # A short folder: the daemon's socket path in it must stay under 108 bytes (a worker's
    # pytest folder is longer).
    tmp_path = pathlib.Path(tmpdir_short)
    sim = Sim(nodes=3)
    d = None
    try:
        env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp_path), POCKETMESH_NO_DAEMON="1")
        link = ["--tcp", f"127.0.0.1:{sim.port('sim0')}"]

        def pm(*args, node=None, direct=False):
            e = env if direct else dict(env, POCKETMESH_NO_DAEMON="")
            e = {k: v for k, v in e.items() if v != ""}
            l = ["--tcp", f"127.0.0.1:{sim.port(node)}"] if node else link
            cp = subprocess.run([str(BIN), *args, *l], capture_output=True, text=True, timeout=60, env=e)
            return cp.returncode, cp.stdout, cp.stderr

        assert pm("set", "manual-add", "on", direct=True)[0] == 0
        # Without a daemon there is no one to collect them: a link error, one sentence.
        code, out, err = pm("contacts", "pending")
        assert code == 3 and err.count("\n") == 1, err
        d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, default_socket=True)
        # Its socket is registered and its radio synced (not a guess of how long that takes).
        d.wait_ready(60)
        for args in (["set", "coords", "45.5", "-73.6"], ["set", "advert-loc-policy", "1"], ["advert", "--flood"]):
            assert pm(*args, node="sim1", direct=True)[0] == 0
        pending = []
        deadline = time.time() + 20
        while not pending and time.time() < deadline:
            code, out, err = pm("--json", "contacts", "pending")
            assert code == 0, err
            pending = json.loads(out)
            time.sleep(0.3)
        assert [p["name"] for p in pending] == ["sim1"]
        p = pending[0]
        assert p["public_key"] == sim.nodes["sim1"]["pubkey"] and p["type"] == "chat"
        assert abs(p["latitude"] - 45.5) < 1e-6 and abs(p["longitude"] + 73.6) < 1e-6
        assert p["heard"] > 0 and p["last_advert"] > 0 and "path_length" in p
        # Not a contact yet (manual add).
        code, out, err = pm("--json", "contacts")
        assert "sim1" not in {c["name"] for c in json.loads(out)}
        # Unknown prefixes: exit 6, nothing changes.
        assert pm("contacts", "add-pending", "ffffffff")[0] == 6
        assert pm("contacts", "add-pending", p["public_key"][:8])[0] == 0
        code, out, err = pm("--json", "contacts")
        c = {c["name"]: c for c in json.loads(out)}["sim1"]
        assert c["public_key"] == p["public_key"] and abs(c["latitude"] - 45.5) < 1e-6
        assert c["last_advert"] == p["last_advert"]  # the advert's own time, not this host's clock
        code, out, err = pm("--json", "contacts", "pending")
        assert json.loads(out) == []
        # flush_pending: another node's advert waits, then `--clear` forgets it (and says how many).
        assert pm("advert", "--flood", node="sim2", direct=True)[0] == 0
        deadline = time.time() + 20
        while time.time() < deadline and not json.loads(pm("--json", "contacts", "pending")[1]):
            time.sleep(0.3)
        code, out, err = pm("--json", "contacts", "pending", "--clear")
        assert code == 0 and json.loads(out) == {"dropped": 1}, (out, err)
        assert json.loads(pm("--json", "contacts", "pending")[1]) == []
        # The store follows removals: sim1, added and then removed, is pending again when it adverts.
        assert pm("contacts", "remove", "sim1")[0] == 0
        assert pm("advert", "--flood", node="sim1", direct=True)[0] == 0
        pending = []
        deadline = time.time() + 20
        while not pending and time.time() < deadline:
            pending = json.loads(pm("--json", "contacts", "pending")[1])
            time.sleep(0.3)
        assert [p["name"] for p in pending] == ["sim1"], pending
    finally:
        if d:
            d.stop()
        sim.stop()
