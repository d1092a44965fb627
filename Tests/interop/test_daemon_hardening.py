"""`pocketmesh daemon` against hostile hooks and clients, from outside, through the built binary:
a hook that ignores SIGTERM (never run beside itself, given up after --hook-attempts, listed by
`pocketmesh hooks failed`), and idle API connections that must not lock the command line out."""
import json
import os
import socket
import subprocess
import time
from pathlib import Path

from test_daemon_faults import BIN, Daemon, mesh, start_sender, tmpdir_short, wait_for  # noqa: F401


def alive(pids_file):
    """The pids listed in the file that are still running (zombies do not count)."""
    out = []
    p = Path(pids_file)
    for line in (p.read_text().split() if p.exists() else []):
        try:
            stat = Path(f"/proc/{line}/stat").read_text()
        except OSError:
            continue
        if stat[stat.rindex(")") + 2] != "Z":
            out.append(int(line))
    return out


def test_a_hook_ignoring_sigterm_never_runs_beside_itself_and_is_given_up(mesh, tmpdir_short):
    tmp = Path(tmpdir_short)
    pids = tmp / "pids"
    hook = tmp / "stubborn.sh"
    hook.write_text(f"#!/bin/sh\ntrap '' TERM\necho $$ >> {pids}\nsleep 60\n")
    hook.chmod(0o755)
    port0, port1 = mesh.nodes[0][2], mesh.nodes[1][2]
    d = Daemon(tmp, port0, hook=False, extra=["--on-message", str(hook), "--hook-timeout", "1", "--hook-attempts", "3"])
    try:
        d.wait_ready()
        assert start_sender(tmp, port1, 1, 0, "stubborn").wait(30) == 0
        peak = 0
        deadline = time.time() + 40
        while time.time() < deadline:
            peak = max(peak, len(alive(pids)))
            if len(pids.read_text().split() if pids.exists() else []) >= 3 and not alive(pids):
                break
            time.sleep(0.1)
        runs = pids.read_text().split()
        assert len(runs) == 3, runs
        assert peak <= 1
        assert wait_for(lambda: not alive(pids), 10)
        r = subprocess.run([str(BIN), "hooks", "failed", "--socket", d.sock, "--json"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        failed = json.loads(r.stdout)["failed"]
        assert len(failed) == 1 and failed[0]["attempts"] == 3 and failed[0]["message"]["text"] == "stubborn-0"
        assert "given up after 3 attempts" in (tmp / "daemon.log").read_text()
        r = subprocess.run([str(BIN), "hooks", "drop", str(failed[0]["id"]), "--socket", d.sock], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert d.call({"id": 3, "op": "hooks_failed"})["failed"] == []
        assert d.call({"id": 4, "op": "hooks_drop", "message": failed[0]["id"]})["error"]["code"] == "not_found"
    finally:
        d.stop()
        for p in alive(pids):
            os.kill(p, 9)


def test_idle_api_connections_do_not_lock_the_command_line_out(mesh, tmpdir_short):
    tmp = Path(tmpdir_short)
    port0 = mesh.nodes[0][2]
    d = Daemon(tmp, port0, hook=False, default_socket=True)
    idle = []
    try:
        d.wait_ready()
        for _ in range(40):  # more than the 32 the daemon takes; none ever sends a byte
            s = socket.socket(socket.AF_UNIX)
            s.connect(d.sock)
            idle.append(s)
        time.sleep(0.5)
        r = subprocess.run([str(BIN), "info", "--tcp", f"127.0.0.1:{port0}", "--json"], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, XDG_RUNTIME_DIR=str(tmp)))
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["public_key"] == mesh.nodes[0][1]
        assert "evicted to make room" in (tmp / "daemon.log").read_text()
    finally:
        for s in idle:
            s.close()
        d.stop()
