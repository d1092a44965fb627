"""`pocketmesh node` on radios that misbehave, through the real binary: the simulator's KISS modem
with its faults (a topology's `"faults"`), a port that runs companion firmware, a port that says
nothing. Each fault is recovered from (a line in the log, a count in `stats-recovery`, the mesh
goes on) or stops the node with one sentence and exit 3 within its bound; the systemd watchdog is
fed only while the modem answers; `pocketmesh node check` passes on a good modem and fails on a
bad one, saying what to check.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pty
import socket
import subprocess
import time

import pytest

from test_sim_clients import Sim

from test_air import BIN, ENV  # noqa: F401  (the air's harness, shared)

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

# KISSIdentify's bound (GetVersion for 5 s, a companion query for 1 s) and a margin for the process.
IDENTIFY_BOUND = 6 + 2


def run(*args, timeout=90, env=None):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=env or ENV)


def js(port, *args):
    cp = run("-t", f"127.0.0.1:{port}", "--timeout", "15", "--json", *args)
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


def modem_sim(tmp_path, faults=None, pty_dir=None):
    """sim0 - modem - sim1, the modem a KISS modem with `faults`; the sim and the modem's pty."""
    modem = {"name": "modem", "role": "kiss"}
    if faults:
        modem["faults"] = faults
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, modem, {"name": "sim1", "role": "companion"}],
        "links": [{"a": "sim0", "b": "modem", "snr": 8}, {"a": "modem", "b": "sim1", "snr": 7}],
    }))
    sim = Sim("--topology", str(topo), nodes=2, pty_dir=pty_dir)
    line = sim.proc.stdout.readline()
    assert line.startswith("kiss modem pubkey=") and " pty=" in line, line
    return sim, line.split("pty=")[1].strip()


def start_node(pty_path, state, *extra, env=None):
    proc = subprocess.Popen([str(BIN), "node", "--radio", f"kiss:{pty_path}", "--state-dir", str(state), "--name", "Faulty",
                             "--for", "120", *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or ENV)
    first = proc.stdout.readline()
    assert first.startswith("repeater Faulty pubkey="), first + proc.stderr.read()
    return proc


def stop(proc):
    if proc is not None and proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_a_port_running_companion_firmware_is_refused(tmp_path):
    sim, _ = modem_sim(tmp_path, pty_dir=tmp_path)
    try:
        t0 = time.time()
        cp = run("node", "--radio", f"kiss:{tmp_path / 'sim0'}", "--state-dir", str(tmp_path / "st"), timeout=30)
        took = time.time() - t0
        assert cp.returncode == 3 and cp.stderr.count("\n") == 1, cp.stderr
        assert "runs MeshCore's companion firmware, not the KISS modem firmware" in cp.stderr, cp.stderr
        assert took < IDENTIFY_BOUND, took
        # node check says the same, as its first check, and exits 3.
        cp = run("node", "check", "--radio", f"kiss:{tmp_path / 'sim0'}", timeout=30)
        assert cp.returncode == 3 and cp.stdout.startswith("FAIL  modem ") and "companion firmware" in cp.stdout, cp.stdout
        assert cp.stdout.count("skip  ") == 4 and "1 of 5 checks failed" in cp.stderr, cp.stdout + cp.stderr
    finally:
        sim.stop()


def test_a_port_that_says_nothing_is_refused(tmp_path):
    master, slave = pty.openpty()
    try:
        t0 = time.time()
        cp = run("node", "--radio", f"kiss:{os.ttyname(slave)}", "--state-dir", str(tmp_path / "st"), timeout=30)
        took = time.time() - t0
        assert cp.returncode == 3 and cp.stderr.count("\n") == 1, cp.stderr
        assert f"nothing answered on {os.ttyname(slave)} in 6 s" in cp.stderr, cp.stderr
        assert 5 < took < IDENTIFY_BOUND, took
        # What it was sent: GetVersion (KISS), then a companion DEVICE_QUERY.
        sent = os.read(master, 4096)
        assert sent.startswith(bytes([0xC0, 0x06, 0x11, 0xC0])) and sent.endswith(bytes([0x3C, 0x02, 0x00, 0x16, 0x03])), sent.hex()
    finally:
        os.close(master)
        os.close(slave)


def test_a_lost_txdone_and_a_modem_reset_mid_transmit_are_recovered(tmp_path):
    """Packet 1 (the boot advert) loses its TxDone; the modem resets while sending packet 2. The
    node gives each up at its deadline, finds the modem's settings gone, sets it up again, and
    still carries an acknowledged message; each recovery is one log line and a count."""
    sim, path = modem_sim(tmp_path, {"drop_tx_done": [1], "reset_in_tx": [2]})
    node = None
    try:
        node = start_node(path, tmp_path / "st")
        a, b = sim.port("sim0"), sim.port("sim1")
        deadline = time.time() + 60
        names = set()
        while time.time() < deadline and not ({"sim1"} <= names):
            run("-t", f"127.0.0.1:{a}", "advert", "--flood")
            run("-t", f"127.0.0.1:{b}", "advert", "--flood")
            time.sleep(4)
            names = {c["name"] for c in js(a, "contacts")}
        assert "sim1" in names, names
        r = js(a, "send", "sim1", "past a lost TxDone and a reset modem")
        assert r["status"] == "acked", r
        stats = json.loads(run("node", "cli", "--state-dir", str(tmp_path / "st"), "stats-recovery").stdout)
        assert stats["tx_timeouts"] == 2 and stats["modem_resets"] == 1 and stats["chip_resets"] == 0, stats
        stop(node)
        log = node.stderr.read()
        lines = log.splitlines()
        assert [l.split("(")[-1] for l in lines] == ["tx_timeouts: 1).", "tx_timeouts: 2).", "modem_resets: 1)."], log
        assert "no TxDone" in lines[0] and "it rebooted" in lines[2], log
    finally:
        stop(node)
        sim.stop()


def test_a_hung_modem_stops_the_node_and_starves_the_watchdog(tmp_path):
    """The modem hangs after it starts the boot advert. systemd's watchdog (WATCHDOG_USEC 2 s:
    checked every second) stops being fed; the node stops with one sentence and exit 3 within the
    TxDone deadline and three GetRadio tries."""
    sim, path = modem_sim(tmp_path, {"hang_after_tx": 1})
    sock_path = str(tmp_path / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(sock_path)
    s.settimeout(0.2)
    node = None
    try:
        env = dict(ENV, NOTIFY_SOCKET=sock_path, WATCHDOG_USEC="2000000")
        node = start_node(path, tmp_path / "st", env=env)
        t0 = time.time()
        got = []
        while node.poll() is None and time.time() - t0 < 40:
            try:
                got.append((time.time(), s.recv(4096).decode()))
            except socket.timeout:
                pass
        assert node.wait(timeout=10) == 3
        log = node.stderr.read()
        assert "the KISS modem stopped answering" in log and "check its power" in log, log
        assert log.strip().splitlines()[-1].startswith("pocketmesh: kiss "), log
        assert "the systemd watchdog is no longer fed" in log, log
        assert got and got[0][1].startswith("READY=1\nSTATUS=radio kiss "), got[:2]
        fed = [t for t, m in got if m == "WATCHDOG=1"]
        assert fed, got
        # Not fed for the last seconds before the stop.
        assert time.time() - fed[-1] > 2, [m for _, m in got]
    finally:
        stop(node)
        s.close()
        sim.stop()


def test_node_check_on_a_good_and_a_bad_modem(tmp_path):
    sim, path = modem_sim(tmp_path)
    try:
        cp = run("node", "check", "--radio", f"kiss:{path}", timeout=60)
        assert cp.returncode == 0, cp.stdout + cp.stderr
        lines = cp.stdout.splitlines()
        assert [l.split()[1] for l in lines[:5]] == ["modem", "identity", "radio", "irq", "tx"], lines
        assert all(l.startswith("ok  ") for l in lines[:5]) and lines[5] == "all 5 checks passed", lines
        assert "TxDone after" in lines[4], lines
    finally:
        sim.stop()
    sim, path = modem_sim(tmp_path, {"drop_tx_done": [1]})
    try:
        cp = run("node", "check", "--radio", f"kiss:{path}", "--freq", "869.525", timeout=60)
        assert cp.returncode == 3, cp.stdout + cp.stderr
        assert cp.stdout.splitlines()[-1].startswith("FAIL  tx         no TxDone within"), cp.stdout
        assert "869.525 MHz" in cp.stdout, cp.stdout
    finally:
        sim.stop()
