"""`history --tcp LINK` finds what a command without a daemon took off the radio: `sync` keeps the
messages it fetched in the radio's store and records which radio the link reached (as the daemon
and the chat do). Against `pocketmesh sim`.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import subprocess

import pytest

from test_protocol14 import know_each_other, pm
from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def test_history_by_link_after_sync_without_a_daemon(tmp_path):
    sim = Sim("--seed", "7")
    try:
        env = {"XDG_STATE_HOME": str(tmp_path)}
        know_each_other(sim, "sim0", "sim1", tmp_path)
        link = f"127.0.0.1:{sim.port('sim0')}"

        def history(*args):
            cp = subprocess.run([str(BIN), "history", *args], capture_output=True, text=True, timeout=30,
                                env=dict(os.environ, **env))
            return cp.returncode, cp.stdout, cp.stderr

        # Nothing ran on that link yet: one sentence, exit 6.
        code, out, err = history("sim1", "--tcp", link)
        assert code == 6 and err.count("\n") == 1, (code, err)
        assert pm(sim, "sim1", "send", "sim0", "kept by sync", env=env, timeout=90)[0] == 0
        code, out, err = pm(sim, "sim0", "--json", "sync", env=env)
        assert code == 0 and any(m.get("text") == "kept by sync" for m in json.loads(out)), (out, err)
        code, out, err = history("sim1", "--tcp", link, "--json")
        assert code == 0, err
        assert [m["text"] for m in json.loads(out)["messages"]] == ["kept by sync"], out
        # The same link written another way (no port is 5000: a different radio) finds nothing.
        code, out, err = history("sim1", "--tcp", "127.0.0.1")
        assert code == 6, (code, out, err)
    finally:
        sim.stop()
