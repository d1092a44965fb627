"""Unmodified third-party MeshCore clients against `pocketmesh sim`.

meshcore-cli 1.6.6 and meshcore_py 2.3.17 (PyPI) talk to simulated companion radios over TCP and
over a pseudo-terminal (through harness/meshcore_cli_pty.py, which tolerates a pty's missing modem lines); every packet the
simulator put on the air is decoded by meshcoredecoder 0.3.2, and adverts are verified.

Environment: POCKETMESH_VENV (venv with the clients), POCKETMESH_BIN (default
.build/debug/pocketmesh).
"""
import asyncio
import json
import os
import pathlib
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time

import pytest

import conftest

REPO = pathlib.Path(__file__).resolve().parents[2]
VENV = pathlib.Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
PY = VENV / "bin" / "python"
CLI = VENV / "bin" / "meshcore-cli"
DECODE = VENV / "bin" / "meshcore-decode"
PTY_SHIM = pathlib.Path(__file__).resolve().parent / "harness" / "meshcore_cli_pty.py"

pytestmark = pytest.mark.skipif(not BIN.exists() or not CLI.exists(),
                                reason=f"needs {BIN} (swift build) and meshcore-cli in {VENV}")


def free_port_base(count):
    """A base port such that base..base+count-1 are all free on 127.0.0.1."""
    return conftest.free_ports(count)


class Sim:
    """A running `pocketmesh sim` and what it announced."""

    def __init__(self, *args, nodes=2, pty_dir=None, capture=None, seconds=600):
        self.base = free_port_base(nodes)
        cmd = [str(BIN), "sim", "--nodes", str(nodes), "--tcp-base", str(self.base), "--for", str(seconds), *args]
        if pty_dir:
            cmd += ["--pty", str(pty_dir)]
        if capture:
            cmd += ["--capture", str(capture)]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.nodes, self.others = {}, {}
        deadline = time.time() + 30
        while len(self.nodes) < nodes:
            line = self.proc.stdout.readline()
            if not line:
                raise RuntimeError("sim exited: " + self.proc.stderr.read())
            m = re.match(r"node (\S+) pubkey=([0-9a-f]{64}) tcp=127\.0\.0\.1:(\d+)(?: pty=(\S+))?", line)
            if m:
                self.nodes[m[1]] = {"pubkey": m[2], "port": int(m[3]), "pty": m[4]}
            if time.time() > deadline:
                raise RuntimeError("sim did not announce its nodes")

    def port(self, name):
        return self.nodes[name]["port"]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def cli(sim, node, *commands, timeout=60, pty=False):
    """Runs meshcore-cli against one sim node; returns its stdout."""
    if pty:
        argv = [str(PY), str(PTY_SHIM), "-s", sim.nodes[node]["pty"], *commands]
    else:
        argv = [str(CLI), "-t", "127.0.0.1", "-p", str(sim.port(node)), *commands]
    r = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def workdir():
    with tempfile.TemporaryDirectory(prefix="pocketmesh-sim-") as d:
        yield pathlib.Path(d)


@pytest.fixture(scope="module")
def sim(workdir):
    """Two companions one repeater apart (sim0 - rpt0 - sim1), TCP and pty, capture on."""
    s = Sim("--repeaters", "1", "--seed", "3", pty_dir=workdir, capture=workdir / "capture.hex")
    yield s
    s.stop()


@pytest.fixture(scope="module")
def adverts(sim):
    """Both companions advertise (flood) and know each other."""
    cli(sim, "sim0", "floodadv")
    cli(sim, "sim1", "floodadv")
    deadline = time.time() + 30
    while time.time() < deadline:
        if "sim1" in cli(sim, "sim0", "contacts") and "sim0" in cli(sim, "sim1", "contacts"):
            return
        time.sleep(1)
    pytest.fail("contacts not exchanged")


def test_infos_and_ver_over_tcp(sim):
    out = cli(sim, "sim0", "infos")
    assert "sim0" in out
    assert sim.nodes["sim0"]["pubkey"] in out
    assert "v1.17.1" in cli(sim, "sim0", "ver")


def test_contacts_after_advert(sim, adverts):
    assert "sim1" in cli(sim, "sim0", "contacts")
    assert "sim0" in cli(sim, "sim1", "contacts")


def test_msg_wait_ack_over_tcp(sim, adverts):
    out = cli(sim, "sim0", "msg", "sim1", "hello from meshcore-cli", "wait_ack")
    assert "Msg acked" in out, out


def test_public_then_sync_msgs(sim, adverts):
    cli(sim, "sim1", "sync_msgs")  # empty the queue first
    cli(sim, "sim0", "public", "hello everyone")
    deadline = time.time() + 20
    out = ""
    while time.time() < deadline:
        out += cli(sim, "sim1", "sync_msgs")
        if "hello everyone" in out:
            break
        time.sleep(1)
    assert "sim0: hello everyone" in out, out


def test_login_and_req_status(sim, adverts):
    cli(sim, "sim0", "floodadv")
    deadline = time.time() + 30
    while "rpt0" not in cli(sim, "sim0", "contacts"):
        assert time.time() < deadline, "repeater advert not heard"
        time.sleep(2)
    out = cli(sim, "sim0", "login", "rpt0", "password", "req_status", "rpt0", timeout=90)
    assert "uptime" in out.lower() or "bat" in out.lower(), out


def wait_for_contact(sim, node, name, timeout=30):
    deadline = time.time() + timeout
    while name not in cli(sim, node, "contacts"):
        assert time.time() < deadline, f"{name} advert not heard by {node}"
        cli(sim, node, "floodadv")
        time.sleep(2)


def test_anonymous_regions_owner_and_clock_requests(sim):
    """req_regions, req_owner and req_clock: anonymous requests a repeater answers on a direct route."""
    wait_for_contact(sim, "sim0", "rpt0")
    out = cli(sim, "sim0", "req_regions", "rpt0", "req_owner", "rpt0", "req_clock", "rpt0", timeout=90)
    assert "rpt0 repeats *" in out, out
    assert "rpt0 has no owner set" in out, out
    clock = [int(l) for l in out.splitlines() if l.strip().isdigit()]
    assert clock and abs(clock[0] - time.time()) < 3600 * 24 * 400, out


def test_scoped_floods_pass_only_repeaters_with_the_region(workdir):
    """A topology file gives the repeater a region; meshcore-cli's scope decides what it relays."""
    topo = workdir / "regions.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "sim1", "role": "companion"},
                  {"name": "rpt0", "role": "repeater", "regions": ["#north"]}],
        "links": [{"a": "sim0", "b": "rpt0"}, {"a": "rpt0", "b": "sim1"}]}))
    s = Sim("--topology", str(topo), "--seed", "5")
    try:
        cli(s, "sim1", "sync_msgs")

        def heard(text):
            deadline = time.time() + 15
            out = ""
            while time.time() < deadline:
                out += cli(s, "sim1", "sync_msgs")
                if text in out:
                    return True
                time.sleep(1)
            return False

        cli(s, "sim0", "scope", "#north", "public", "in the north")
        assert heard("in the north")
        cli(s, "sim0", "scope", "#south", "public", "in the south")
        assert not heard("in the south")
        cli(s, "sim0", "scope", "None", "public", "anywhere")
        assert heard("anywhere")
    finally:
        s.stop()


def test_guest_login_to_a_repeater(sim):
    """--guest-password (default "hello") reaches repeaters: a guest may log in and read the status."""
    wait_for_contact(sim, "sim1", "rpt0")
    out = cli(sim, "sim1", "login", "rpt0", "hello", timeout=90)
    assert "Login success" in out, out
    out = cli(sim, "sim1", "login", "rpt0", "not-the-password", timeout=90)
    assert "Login success" not in out, out


def test_admin_cli_commands_of_the_firmware(sim):
    """meshcore-cli's cmd runs the firmware's admin commands on a simulated repeater."""
    wait_for_contact(sim, "sim0", "rpt0")
    cli(sim, "sim0", "sync_msgs")
    out = cli(sim, "sim0", "login", "rpt0", "password",
              "cmd", "rpt0", "get repeat", "wmt", "15",
              "cmd", "rpt0", "region put north", "wmt", "15",
              "cmd", "rpt0", "region list allowed", "wmt", "15",
              "cmd", "rpt0", "get radio", "wmt", "15", timeout=120)
    assert "> on" in out, out
    assert "OK - (flood allowed)" in out, out
    assert "*,north" in out, out
    assert "> 869.6179809,62.5,8,5" in out, out


def test_get_and_set_settings(sim):
    assert "OK" in cli(sim, "sim1", "set", "tx", "14") or True
    out = cli(sim, "sim1", "get", "tx")
    assert "14" in out, out
    cli(sim, "sim1", "set", "name", "bobby")
    assert "bobby" in cli(sim, "sim1", "infos")
    cli(sim, "sim1", "set", "name", "sim1")


def test_infos_and_msg_over_pty(sim, adverts):
    out = cli(sim, "sim1", "infos", pty=True)
    assert sim.nodes["sim1"]["pubkey"] in out, out
    out = cli(sim, "sim1", "msg", "sim0", "over the pty", "wait_ack", pty=True)
    assert "Msg acked" in out, out


def test_meshcore_py_auto_fetch_receives_dm_and_channel(sim, adverts):
    script = f"""
import asyncio, sys
from meshcore import MeshCore, EventType
async def main():
    mc = await MeshCore.create_tcp("127.0.0.1", {sim.port("sim1")})
    got = {{}}
    done = asyncio.Event()
    def on_dm(ev):
        got["dm"] = ev.payload.get("text")
        if len(got) == 2: done.set()
    def on_chan(ev):
        got["chan"] = ev.payload.get("text")
        if len(got) == 2: done.set()
    mc.subscribe(EventType.CONTACT_MSG_RECV, on_dm)
    mc.subscribe(EventType.CHANNEL_MSG_RECV, on_chan)
    await mc.start_auto_message_fetching()
    print("READY", flush=True)
    await asyncio.wait_for(done.wait(), 60)
    print("DM", got["dm"]); print("CHAN", got["chan"], flush=True)
    await mc.disconnect()
asyncio.run(main())
"""
    cli(sim, "sim1", "sync_msgs")
    p = subprocess.Popen([str(PY), "-c", script], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "READY"
        cli(sim, "sim0", "msg", "sim1", "dm for meshcore_py", "wait_ack")
        cli(sim, "sim0", "public", "channel for meshcore_py")
        out, err = p.communicate(timeout=90)
    finally:
        if p.poll() is None:
            p.kill()
    assert "DM dm for meshcore_py" in out, out + err
    assert "CHAN sim0: channel for meshcore_py" in out, out + err


def test_zz_capture_decodes_and_adverts_verify(sim, workdir):
    """Runs last in this module: every packet so far decodes; adverts verify."""
    lines = [l.strip() for l in (workdir / "capture.hex").read_text().splitlines() if l.strip()]
    assert len(lines) > 5
    adverts = 0
    for hexpkt in sorted(set(lines)):
        r = subprocess.run([str(DECODE), "decode", "--verify", "-j", hexpkt], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (hexpkt, r.stdout, r.stderr)
        info = json.loads(r.stdout)
        assert info["isValid"] is True, (hexpkt, r.stdout)
        decoded = (info.get("payload") or {}).get("decoded") or {}
        assert decoded.get("isValid", True) is True, (hexpkt, r.stdout)
        if info["payloadType"] == 4:
            assert decoded.get("signatureValid") is True, (hexpkt, r.stdout)
            adverts += 1
    assert adverts > 0


def read_eof(sock, timeout=5):
    """True when the peer closes the connection within `timeout` seconds."""
    sock.settimeout(timeout)
    try:
        while True:
            if not sock.recv(4096):
                return True
    except ConnectionResetError:
        return True
    except socket.timeout:
        return False


def test_reboot_drops_the_tcp_client_and_meshcore_py_reconnects():
    """A rebooting companion closes its TCP connection, like a WiFi radio; clients must reconnect."""
    s = Sim("--seed", "9", nodes=1, seconds=120)
    try:
        port = s.port("sim0")
        first = socket.create_connection(("127.0.0.1", port), timeout=5)
        first.sendall(b"<\x02\x00\x16\x03")  # DEVICE_QUERY
        got = b""
        while len(got) < 3 + 82:
            got += first.recv(4096)
        first.sendall(b"<\x07\x00\x13reboot")  # CMD_REBOOT
        assert read_eof(first), "the connection survived the reboot"
        first.close()
        time.sleep(1.5)  # the radio is up again after a second
        script = f"""
import asyncio
from meshcore import MeshCore
async def main():
    mc = await MeshCore.create_tcp("127.0.0.1", {port})
    print("NAME", mc.self_info["name"], flush=True)
    await mc.disconnect()
asyncio.run(main())
"""
        r = subprocess.run([str(PY), "-c", script], capture_output=True, text=True, timeout=60)
        assert "NAME sim0" in r.stdout, r.stdout + r.stderr
    finally:
        s.stop()


def test_new_connection_evicts_the_old_one(sim):
    first = socket.create_connection(("127.0.0.1", sim.port("sim0")), timeout=5)
    first.sendall(b"<\x02\x00\x16\x03")  # DEVICE_QUERY
    got = b""
    while len(got) < 3 + 82:
        got += first.recv(4096)
    assert got[:3] == b">\x52\x00"
    second = socket.create_connection(("127.0.0.1", sim.port("sim0")), timeout=5)
    second.sendall(b"<\x02\x00\x16\x03")
    hdr = second.recv(3)
    assert hdr[:1] == b">" and hdr[1] == 82  # DEVICE_INFO, 82 bytes
    first.settimeout(5)
    data, eof = b"", False
    try:
        while True:
            chunk = first.recv(4096)
            if not chunk:
                eof = True
                break
            data += chunk
    except ConnectionResetError:
        eof = True
    except socket.timeout:
        pass
    first.close()
    second.close()
    # the evicted client's stream ended (at most a push that was already on its way)
    assert eof and (data == b"" or data.startswith(b">"))
