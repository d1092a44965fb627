"""Companion protocol 14 (the firmware's dev line, "Companion CLI") against `pocketmesh sim
--protocol 14`: meshcore-cli's `cli` and meshcore_py's run_cli_command (RUN_CLI_COMMAND /
CLI_REPLY), pocketmesh's `cmd` to a companion (text type 3) with and without the remote CLI
permission (`contacts permissions C cli`, contact flag 0x10); and protocol 13 radios refusing it.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh), POCKETMESH_VENV (the interop venv).
"""
import json
import os
import pathlib
import subprocess
import time

import pytest

from test_sim_clients import CLI, PY, Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists() or not CLI.exists(), reason=f"needs {BIN} (swift build) and meshcore-cli")


def pm(sim, node, *args, env=None, timeout=60):
    e = dict(os.environ, POCKETMESH_NO_DAEMON="1", **(env or {}))
    cp = subprocess.run([str(BIN), *args, "--tcp", f"127.0.0.1:{sim.port(node)}"], capture_output=True, text=True,
                        timeout=timeout, env=e)
    return cp.returncode, cp.stdout, cp.stderr


def mccli(sim, node, *commands, timeout=60):
    r = subprocess.run([str(CLI), "-t", "127.0.0.1", "-p", str(sim.port(node)), *commands],
                       capture_output=True, text=True, timeout=timeout)
    return r.stdout + r.stderr


def know_each_other(sim, a, b, tmp):
    env = {"XDG_STATE_HOME": str(tmp)}
    deadline = time.time() + 30
    while time.time() < deadline:
        pm(sim, a, "advert", "--flood", env=env)
        pm(sim, b, "advert", "--flood", env=env)
        time.sleep(1)
        ca = json.loads(pm(sim, a, "--json", "contacts", env=env)[1] or "[]")
        cb = json.loads(pm(sim, b, "--json", "contacts", env=env)[1] or "[]")
        if b in {c["name"] for c in ca} and a in {c["name"] for c in cb}:
            return
    pytest.fail("contacts not exchanged")


@pytest.fixture(scope="module")
def sim14():
    s = Sim("--protocol", "14", "--seed", "5")
    yield s
    s.stop()


def test_meshcore_cli_cli_command_and_protocol_version(sim14):
    out = mccli(sim14, "sim0", "cli", "ver")
    assert "v1.17.1 (Build: 14 Aug 2026)" in out, out
    out = mccli(sim14, "sim0", "cli", "get name")
    assert "> sim0" in out, out


def test_meshcore_py_run_cli_command(sim14):
    script = f"""
import asyncio
from meshcore import MeshCore, EventType
async def main():
    mc = await MeshCore.create_tcp("127.0.0.1", {sim14.port("sim1")})
    info = await mc.commands.send_device_query()
    print("FW", info.payload.get("fw ver"))
    r = await mc.commands.run_cli_command("ab|get name")
    print("TYPE", r.type.name)
    print("REPLY", r.payload)
    r = await mc.commands.run_cli_command("frobnicate")
    print("REPLY2", r.payload)
    await mc.disconnect()
asyncio.run(main())
"""
    r = subprocess.run([str(PY), "-c", script], capture_output=True, text=True, timeout=60)
    assert "FW 14" in r.stdout, r.stdout + r.stderr
    assert "TYPE CLI_REPLY" in r.stdout and "ab|> sim1" in r.stdout, r.stdout + r.stderr
    assert "Unknown command" in r.stdout, r.stdout + r.stderr


def test_cmd_to_a_companion_needs_its_remote_cli_permission(sim14, tmp_path):
    env = {"XDG_STATE_HOME": str(tmp_path)}
    know_each_other(sim14, "sim0", "sim1", tmp_path)
    code, out, err = pm(sim14, "sim0", "info", "--json", env=env)
    assert json.loads(out)["protocol_version"] == 14
    # Without the permission sim1 does not run it: no reply (exit 4), its app gets the command.
    code, out, err = pm(sim14, "sim0", "cmd", "sim1", "get name", "--timeout", "8", env=env, timeout=90)
    assert code == 4 and "remote CLI permission" in err and err.count("\n") == 1, (code, out, err)
    code, out, err = pm(sim14, "sim1", "--json", "sync", env=env)
    assert any(m.get("text") == "get name" for m in json.loads(out)), out
    # sim1 gives sim0 the permission (flag 0x10): the command runs there and its reply comes back.
    code, out, err = pm(sim14, "sim1", "--json", "contacts", "permissions", "sim0", "cli", env=env)
    assert code == 0 and json.loads(out)["cli"] is True and json.loads(out)["flags"] & 0x10, (out, err)
    code, out, err = pm(sim14, "sim0", "--json", "cmd", "sim1", "get name", env=env, timeout=90)
    assert code == 0 and json.loads(out)["reply"] == "> sim1", (code, out, err)
    # The old names still work and keep the list whole (clearing cli).
    code, out, err = pm(sim14, "sim1", "--json", "contacts", "permissions", "sim0", "base,location", env=env)
    assert code == 0 and json.loads(out)["cli"] is False and json.loads(out)["flags"] & 0x1E == 0x06, out


def test_protocol_13_radios_refuse_protocol_14(tmp_path):
    sim = Sim("--seed", "6")
    try:
        env = {"XDG_STATE_HOME": str(tmp_path)}
        know_each_other(sim, "sim0", "sim1", tmp_path)
        code, out, err = pm(sim, "sim0", "cmd", "sim1", "ver", env=env)
        assert code == 2 and "protocol 14" in err and err.count("\n") == 1, (code, err)
        code, out, err = pm(sim, "sim0", "cli", "ver", env=env)
        assert code == 2 and "protocol 14" in err, (code, err)
        code, out, err = pm(sim, "sim0", "contacts", "permissions", "sim1", "cli", env=env)
        assert code == 2 and "protocol 14" in err, (code, err)
        # meshcore-cli's cli gets the firmware's ERR 1.
        assert "Error" in mccli(sim, "sim0", "cli", "ver")
        # A repeater's status still answers (the default simulator is protocol 13).
        code, out, err = pm(sim, "sim0", "--json", "info", env=env)
        assert json.loads(out)["protocol_version"] == 13
    finally:
        sim.stop()


def test_sim_rejects_other_protocol_versions():
    cp = subprocess.run([str(BIN), "sim", "--protocol", "12", "--for", "1"], capture_output=True, text=True, timeout=30)
    assert cp.returncode != 0 and "--protocol must be 13 or 14" in cp.stderr, cp.stderr
