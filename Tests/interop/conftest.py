"""Fixtures for the interop tests: a third-party MeshCore companion peer (openhop-core, from PyPI)
on loopback, and the built `pocketmesh` binary run against it over TCP and over a pty.

Environment:
  POCKETMESH_BIN     the binary under test (default <repo>/.build/debug/pocketmesh)
  POCKETMESH_VENV    a venv with openhop-core (default <repo>/.venv-interop)
"""
import atexit
import json
import os
import select
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

# Each test process (each pytest-xdist worker) has folders of its own for what the programs under
# test find by default: the daemons' registry (runtime folder), their state and the config file. Two
# workers that simulate the same radio (the same seed gives the same keys) then never find each
# other's daemon, state or lock. A test that sets these itself still wins.
_PROCESS_HOME = tempfile.mkdtemp(prefix="pocketmesh-interop-")
atexit.register(shutil.rmtree, _PROCESS_HOME, True)
for _name in ("XDG_RUNTIME_DIR", "XDG_STATE_HOME", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
    _folder = os.path.join(_PROCESS_HOME, _name.lower())
    os.makedirs(_folder, mode=0o700, exist_ok=True)
    os.environ[_name] = _folder


def venv_python():
    p = VENV / "bin" / "python"
    return str(p) if p.exists() else sys.executable


# Ports for the programs under test come from a range below the kernel's ephemeral ports
# (net.ipv4.ip_local_port_range starts at 32768), so no connection another test opens can take one,
# and each pytest-xdist worker has a block of its own, so two workers never race for the same port.
# Within a worker the next port is the one after the last handed out (a port just closed may still
# be in TIME_WAIT), and a range is handed out only when every port in it can be bound.
_PORT_LOW, _PORT_HIGH = 20000, 32700
_next_port = None


def _port_block():
    workers = max(1, int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or "1"))
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    index = int(worker[2:]) if worker[2:].isdigit() else 0
    size = (_PORT_HIGH - _PORT_LOW) // workers
    low = _PORT_LOW + (index % workers) * size
    return low, low + size


def free_ports(n=1):
    """The first of n consecutive loopback ports that are free, from this worker's own block."""
    global _next_port
    low, high = _port_block()
    if _next_port is None or not (low <= _next_port < high):
        _next_port = low
    for _ in range((high - low) // max(1, n) + 1):
        base = _next_port
        if base + n > high:
            base = low
        _next_port = base + n
        socks = []
        try:
            for i in range(n):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", base + i))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError(f"no {n} consecutive free loopback ports in {low}..{high - 1}")


def free_port_pair():
    """Two consecutive free loopback ports (the peer listens on base and base+1)."""
    return free_ports(2)


def free_port():
    return free_ports(1)


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


PEER_START_S = 180  # a Python peer's imports on 2 shared cores under every other stage's load


def start_companion_peer(base, extra=()):
    """companion_peer.py (two openhop-core companion nodes on base and base + 1) in a session of its
    own. Returns (process, [Node, Node]) once it has printed both nodes; fails with the peer's own
    last words if it exits, or if it prints nothing for PEER_START_S seconds (it is slow to import
    on a loaded machine, never fast to fail: so the bound is long, and the wait ends as soon as
    the nodes are there)."""
    if not PEER_SCRIPT.exists():
        pytest.fail(f"{PEER_SCRIPT} not found")
    err = tempfile.TemporaryFile(mode="w+")
    proc = subprocess.Popen([venv_python(), str(PEER_SCRIPT), "--nodes", "2", "--base-port", str(base), *extra],
                            stdout=subprocess.PIPE, stderr=err, start_new_session=True)
    nodes, pending = [], b""
    deadline = time.monotonic() + PEER_START_S
    while len(nodes) < 2:
        # Read the pipe's bytes as they come (a buffered readline could hold the second node's
        # line while select waits on the empty pipe).
        ready, _, _ = select.select([proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
        data = os.read(proc.stdout.fileno(), 65536) if ready else b""
        if not data:
            why = "exited" if ready or proc.poll() is not None else f"printed no node in {PEER_START_S} s"
            stop_session(proc)
            err.seek(0)
            tail = err.read()[-1500:]
            pytest.fail(f"the openhop-core peer did not start: it {why} (is openhop-core installed in "
                        f"POCKETMESH_VENV?){': ' + tail if tail else ''}")
        pending += data
        while b"\n" in pending and len(nodes) < 2:
            raw, pending = pending.split(b"\n", 1)
            line = raw.decode(errors="replace")
            if line.startswith("node "):
                parts = dict(p.split("=", 1) for p in line.split()[2:])
                nodes.append(Node(line.split()[1], parts["pubkey"], int(parts["tcp"].rsplit(":", 1)[1])))
    return proc, nodes


def stop_session(proc):
    """SIGTERM to the process's session, SIGKILL after 10 s."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        return
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)


@pytest.fixture(scope="session")
def peer():
    proc, nodes = start_companion_peer(free_port_pair())
    try:
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
        stop_session(proc)


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
