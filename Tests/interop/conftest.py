"""Fixtures for the interop tests: a third-party MeshCore companion peer (openhop-core, from PyPI)
on loopback, and the built `pocketmesh` binary run against it over TCP and over a pty.

Environment:
  POCKETMESH_BIN     the binary under test (default <repo>/.build/debug/pocketmesh)
  POCKETMESH_VENV    a venv with openhop-core (default <repo>/.venv-interop)
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
VENV = Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))
PEER_SCRIPT = Path(__file__).resolve().parent / "harness" / "companion_peer.py"


def venv_python():
    p = VENV / "bin" / "python"
    return str(p) if p.exists() else sys.executable


def free_port_pair():
    """Two consecutive free loopback ports (the peer listens on base and base+1)."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base >= 65534:
            continue
        try:
            with socket.socket() as a, socket.socket() as b:
                a.bind(("127.0.0.1", base))
                b.bind(("127.0.0.1", base + 1))
            return base
        except OSError:
            continue
    raise RuntimeError("no two consecutive free loopback ports")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Node:
    def __init__(self, name, pubkey, port):
        self.name, self.pubkey, self.port = name, pubkey, port

    @property
    def tcp(self):
        return ["--tcp", f"127.0.0.1:{self.port}"]


class Peer:
    def __init__(self, proc, nodes):
        self.proc, self.nodes = proc, nodes


@pytest.fixture(scope="session")
def binary():
    if not BIN.exists():
        pytest.fail(f"{BIN} not found: run `swift build` first or set POCKETMESH_BIN")
    return BIN


@pytest.fixture(scope="session")
def peer():
    if not PEER_SCRIPT.exists():
        pytest.fail(f"{PEER_SCRIPT} not found")
    base = free_port_pair()
    proc = subprocess.Popen(
        [venv_python(), str(PEER_SCRIPT), "--nodes", "2", "--base-port", str(base)],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, start_new_session=True)
    nodes = []
    deadline = time.monotonic() + 60
    try:
        while len(nodes) < 2:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("the openhop-core peer did not start (is openhop-core installed in POCKETMESH_VENV?)")
            line = proc.stdout.readline()
            if line.startswith("node "):
                parts = dict(p.split("=", 1) for p in line.split()[2:])
                nodes.append(Node(line.split()[1], parts["pubkey"], int(parts["tcp"].rsplit(":", 1)[1])))
        for n in nodes:  # wait until each port accepts
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", n.port), timeout=0.5).close()
                    break
                except OSError:
                    time.sleep(0.1)
        time.sleep(0.3)
        yield Peer(proc, nodes)
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)


@pytest.fixture
def pty_node(peer):
    """Node 0 behind a pty: socat PTY <-> TCP. Yields the serial link options."""
    if shutil.which("socat") is None:
        pytest.fail("socat is not installed")
    d = tempfile.mkdtemp(prefix="pm-pty-")
    tty = os.path.join(d, "ttyMC0")
    node = peer.nodes[0]
    proc = subprocess.Popen(
        ["socat", f"PTY,link={tty},raw,echo=0", f"TCP:127.0.0.1:{node.port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        for _ in range(100):
            if os.path.exists(tty):
                break
            time.sleep(0.05)
        assert os.path.exists(tty), "socat did not create the pty"
        time.sleep(0.2)
        yield ["--serial", tty]
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)
        shutil.rmtree(d, ignore_errors=True)
        time.sleep(0.3)  # let the peer notice the client went away


class Result:
    def __init__(self, cp):
        self.code, self.out, self.err = cp.returncode, cp.stdout, cp.stderr

    def json(self):
        return json.loads(self.out)

    def __repr__(self):
        return f"exit {self.code}\nstdout: {self.out}\nstderr: {self.err}"


@pytest.fixture(scope="session")
def pm(binary):
    """Runs pocketmesh; every run has a hard limit so no test can hang."""
    def run(*args, limit=60):
        cp = subprocess.run([str(binary), *map(str, args)], capture_output=True, text=True, timeout=limit)
        return Result(cp)
    return run


def wait_for(fn, timeout=20.0, interval=0.5):
    """Calls fn until it returns something truthy or the timeout passes; returns the last value."""
    deadline = time.monotonic() + timeout
    value = fn()
    while not value and time.monotonic() < deadline:
        time.sleep(interval)
        value = fn()
    return value
