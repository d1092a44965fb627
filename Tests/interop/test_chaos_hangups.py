"""Clients that hang up at any point, on every listener of every mode (issue 31, item 1).

One mesh with everything that listens: `pocketmesh sim` (a companion's TCP port and the air
socket), `pocketmesh node` as a repeater and as a companion on that air (each one's `node.sock`
CLI socket, the companion's `--companion-listen` port) and `pocketmesh daemon` on another of the
simulator's companions (its API socket and its companion hub, TCP and WebSocket). Each listener gets clients that
go away at seeded random points: before sending anything, after N bytes of a request (mid-frame,
mid-line), with replies pending (a burst of requests, closed without reading: the issue's 50
DEVICE_QUERY + 50 GET_CONTACTS), during a multi-frame answer (GET_CONTACTS, `contacts`), by reset
(SO_LINGER 0), or after stalling with a full socket buffer. After each round every process is
still running and the listener still serves a well-behaved client.

Loopback only; bounded in count (POCKETMESH_CHAOS_ROUNDS per listener, default 24) and time (each
socket operation has a timeout, the whole test a deadline). POCKETMESH_CHAOS_SEED picks the run.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import random
import signal
import socket
import struct
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

from test_air import BIN, ENV, free_port
from test_daemon_faults import Daemon, free_ports
from test_hub_ws import WS
from test_sim_clients import Sim

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

SEED = int(os.environ.get("POCKETMESH_CHAOS_SEED", "31"))
ROUNDS = int(os.environ.get("POCKETMESH_CHAOS_ROUNDS", "24"))
DEADLINE_S = 240


# --- what each listener speaks ----------------------------------------------------------------

def companion_frame(payload):
    return b"<" + struct.pack("<H", len(payload)) + payload


DEVICE_QUERY = companion_frame(bytes([0x16, 0x03]))
APP_START = companion_frame(b"\x01\x03" + b"\x00" * 6 + b"chaos")
GET_CONTACTS = companion_frame(bytes([0x04]))


def air_frame(body):
    return struct.pack("<H", len(body)) + body


class Listener:
    """A listening socket and the requests it understands."""

    def __init__(self, name, address, requests, burst, check):
        self.name, self.address, self.requests, self.burst, self.check = name, address, requests, burst, check

    def connect(self, timeout=5.0):
        if isinstance(self.address, str):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        else:
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(timeout)
        s.connect(self.address)
        return s


def companion_requests(rng):
    return rng.choice([DEVICE_QUERY, APP_START, GET_CONTACTS, DEVICE_QUERY + GET_CONTACTS])


def companion_burst():
    return DEVICE_QUERY * 50 + GET_CONTACTS * 50


def read_companion_frame(s):
    head = recv_exact(s, 3)
    assert head[:1] == b">", head
    return recv_exact(s, struct.unpack("<H", head[1:3])[0])


def recv_exact(s, n):
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise ConnectionError(f"closed after {len(buf)} of {n} bytes")
        buf += chunk
    return buf


def check_companion(listener):
    """A well-behaved app: DEVICE_QUERY answered with DEVICE_INFO (pushes may come first)."""
    with listener.connect() as s:
        s.sendall(DEVICE_QUERY)
        for _ in range(20):
            f = read_companion_frame(s)
            if f[0] == 0x0D:
                return
    raise AssertionError(f"{listener.name}: no DEVICE_INFO")


def cli_requests(rng):
    return rng.choice([b"get name\n", b"ver\n", b"clock\n", b"board\n", b"neighbors\n"])


def check_cli(listener):
    with listener.connect() as s:
        s.sendall(b"ver\n")
        out = b""
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            out += chunk
    assert out.startswith(b"v1."), (listener.name, out)


def api_requests(rng):
    return rng.choice([b'{"id":1,"op":"status"}\n', b'{"id":2,"op":"contacts"}\n', b'{"id":3,"op":"ping"}\n',
                       b'{"id":4,"op":"history","thread":"0"}\n'])


def check_api(listener):
    with listener.connect() as s:
        s.sendall(b'{"id":9,"op":"ping"}\n')
        buf = b""
        while b"\n" not in buf:
            chunk = s.recv(65536)
            assert chunk, f"{listener.name}: closed without an answer"
            buf += chunk
    assert json.loads(buf.split(b"\n")[0])["ok"] is True, buf


WS_UPGRADE = (b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
              b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n")


def ws_frame(payload):
    mask = b"\x01\x02\x03\x04"
    return bytes([0x82, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_requests(rng):
    return rng.choice([WS_UPGRADE, WS_UPGRADE + ws_frame(DEVICE_QUERY), WS_UPGRADE + ws_frame(GET_CONTACTS)])


def ws_burst():
    return WS_UPGRADE + ws_frame(DEVICE_QUERY) * 50 + ws_frame(GET_CONTACTS) * 50


def check_ws(listener):
    ws = WS(listener.address[1])
    try:
        assert ws.request(bytes([0x16, 0x03]))[0] == 0x0D
    finally:
        ws.s.close()


def air_requests(rng):
    # Only the topology's spare external node "x": a hello as "lin" or "nc" would replace the
    # nodes' own connections (a new connection replaces the old, by design).
    return rng.choice([air_frame(b"\x01x"), air_frame(b"\x01x") + air_frame(b"\x02" + bytes(rng.randrange(256) for _ in range(20))),
                       air_frame(b"\x01nobody"), air_frame(b"\x09junk")])


def check_air(listener):
    """Attached as "x": no error frame comes back and the connection stays up."""
    with listener.connect() as s:
        s.sendall(air_frame(b"\x01x"))
        s.settimeout(0.3)
        try:
            data = s.recv(4096)
            assert data and data[2:3] != b"\x04", (listener.name, data)  # heard packets are fine, an error is not
        except socket.timeout:
            pass


# --- the ways a client leaves ----------------------------------------------------------------

def hang_up(listener, rng):
    """One client of `listener` that leaves at a random point; returns what it did."""
    how = rng.choice(["at once", "mid-request", "replies pending", "mid-answer", "reset", "stalled"])
    try:
        s = listener.connect(timeout=2.0)
    except OSError as e:
        raise AssertionError(f"{listener.name}: cannot connect ({e})")
    try:
        if how == "at once":
            pass
        elif how == "mid-request":
            req = listener.requests(rng)
            s.sendall(req[:rng.randrange(1, len(req))] if len(req) > 1 else req)
        elif how == "replies pending":
            s.sendall(listener.burst() if rng.random() < 0.5 else listener.requests(rng) * rng.randrange(1, 20))
        elif how == "mid-answer":
            s.sendall(listener.burst())
            time.sleep(rng.random() * 0.05)
            try:
                s.recv(rng.randrange(1, 200))
            except OSError:
                pass
        elif how == "reset":
            s.sendall(listener.burst())
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        elif how == "stalled":
            s.setblocking(False)
            try:
                for _ in range(200):
                    s.send(listener.burst())
            except (BlockingIOError, OSError):
                pass
            time.sleep(0.2)
    except OSError:
        pass  # the server may have dropped us already: that is allowed
    finally:
        s.close()
    return how


# --- the mesh ---------------------------------------------------------------------------------

class Proc:
    def __init__(self, name, argv, log):
        self.name, self.log = name, log
        with open(log, "w") as err:
            self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=err, text=True, env=ENV)
        self.first = self.proc.stdout.readline()

    def logged(self):
        return Path(self.log).read_text()

    def alive(self):
        return self.proc.poll() is None

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                return self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode


@pytest.fixture(scope="module")
def mesh():
    d = Path(tempfile.mkdtemp(prefix="pmc-"))
    topo = d / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "sim1", "role": "companion"},
                  {"name": "lin", "role": "external"}, {"name": "nc", "role": "external"},
                  {"name": "x", "role": "external"}],
        "links": [{"a": "sim0", "b": "lin", "snr": 8}, {"a": "lin", "b": "sim1", "snr": 7},
                  {"a": "sim0", "b": "nc", "snr": 6}, {"a": "lin", "b": "x", "snr": 5}],
    }))
    air = free_port()
    sim = Sim("--topology", str(topo), "--air-port", str(air), nodes=2)
    procs = []
    daemon = None
    try:
        rpt = Proc("repeater", [str(BIN), "node", "--radio", f"air:127.0.0.1:{air}/lin", "--state-dir", str(d / "rpt"),
                                "--name", "ChaosRpt", "--for", "600"], d / "rpt.log")
        procs.append(rpt)
        assert rpt.first.startswith("repeater ChaosRpt"), rpt.first + rpt.logged()
        cport = free_port()
        comp = Proc("companion", [str(BIN), "node", "--role", "companion", "--radio", f"air:127.0.0.1:{air}/nc",
                                  "--state-dir", str(d / "comp"), "--name", "ChaosComp", "--companion-listen",
                                  f"127.0.0.1:{cport}", "--for", "600"], d / "comp.log")
        procs.append(comp)
        assert comp.first.startswith("companion ChaosComp"), comp.first + comp.logged()
        hub = free_ports(2)
        daemon = Daemon(str(d), sim.port("sim1"), hook=False,
                        extra=("--companion-listen", f"127.0.0.1:{hub}", "--companion-ws", f"127.0.0.1:{hub + 1}"))
        daemon.wait_ready(timeout=60)
        listeners = [
            Listener("sim companion port", ("127.0.0.1", sim.port("sim0")), companion_requests, companion_burst, check_companion),
            Listener("sim air socket", ("127.0.0.1", air), air_requests,
                     lambda: air_frame(b"\x01x") + air_frame(b"\x02" + b"\x11" * 30) * 3, check_air),
            Listener("repeater node.sock", str(d / "rpt" / "node.sock"), cli_requests, lambda: b"get name\n" * 50, check_cli),
            Listener("companion node.sock", str(d / "comp" / "node.sock"), cli_requests, lambda: b"get name\n" * 50, check_cli),
            Listener("companion node's port", ("127.0.0.1", cport), companion_requests, companion_burst, check_companion),
            Listener("daemon API socket", daemon.sock, api_requests,
                     lambda: b'{"id":1,"op":"status"}\n' * 50 + b'{"id":2,"op":"contacts"}\n' * 50, check_api),
            Listener("daemon hub", ("127.0.0.1", hub), companion_requests, companion_burst, check_companion),
            Listener("daemon hub (WebSocket)", ("127.0.0.1", hub + 1), ws_requests, ws_burst, check_ws),
        ]
        yield {"sim": sim, "procs": procs, "daemon": daemon, "listeners": listeners, "dir": d}
    finally:
        if daemon is not None:
            daemon.stop()
        for p in procs:
            p.stop()
        sim.stop()
        subprocess.run(["rm", "-rf", str(d)])


def alive(mesh):
    dead = [p.name for p in mesh["procs"] if not p.alive()]
    if mesh["sim"].proc.poll() is not None:
        dead.append(f"sim (exit {mesh['sim'].proc.returncode})")
    if mesh["daemon"].proc.poll() is not None:
        dead.append(f"daemon (exit {mesh['daemon'].proc.returncode})")
    return dead


def test_every_listener_survives_clients_that_hang_up_anywhere(mesh):
    rng = random.Random(SEED)
    end = time.monotonic() + DEADLINE_S
    only = os.environ.get("POCKETMESH_CHAOS_ONLY", "")  # replay one listener: a part of its name
    for listener in mesh["listeners"]:
        if only not in listener.name:
            continue
        listener.check(listener)  # served before
        for i in range(ROUNDS):
            assert time.monotonic() < end, "the chaos test ran past its deadline"
            how = hang_up(listener, rng)
            if os.environ.get("POCKETMESH_CHAOS_TRACE"):
                print(f"{listener.name}: round {i}: {how}", flush=True)
            dead = alive(mesh)
            assert not dead, f"{listener.name}: round {i} ({how}, seed {SEED}) left {dead} dead"
            if i % 6 == 5:
                listener.check(listener)
        listener.check(listener)  # and after
    assert not alive(mesh)


def test_the_issues_reproductions(mesh):
    """A TCP client that sends 50 DEVICE_QUERY + 50 GET_CONTACTS and closes without reading
    (`pocketmesh sim` exited 141), and `printf 'get name\\n' | socat - UNIX:node.sock` (the node
    died): each process lives on and answers."""
    sim_port = mesh["listeners"][0]
    for _ in range(5):
        with sim_port.connect() as s:
            s.sendall(companion_burst())
    node_sock = mesh["listeners"][2]
    for _ in range(5):
        with node_sock.connect() as s:
            s.sendall(b"get name\n")
    time.sleep(0.5)
    assert not alive(mesh)
    sim_port.check(sim_port)
    node_sock.check(node_sock)


def test_a_client_that_stops_reading_is_dropped_not_waited_for(mesh):
    """A companion client that keeps asking and never reads: its queue is bounded, it is
    disconnected and logged, and meanwhile the node's other listener answers at once."""
    port = mesh["listeners"][4]
    comp = mesh["procs"][1]
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)  # before connect: a small window
    s.settimeout(5)
    s.connect(port.address)
    s.setblocking(False)
    dropped = False
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not dropped:
        try:
            s.send(DEVICE_QUERY * 1000)
        except BlockingIOError:
            time.sleep(0.01)
        except OSError:
            dropped = True
        t0 = time.monotonic()
        mesh["listeners"][3].check(mesh["listeners"][3])  # the same process's CLI is not held up
        assert time.monotonic() - t0 < 2.0
    s.close()
    assert dropped, "the node never disconnected a client that does not read"
    assert comp.alive()
    assert "bytes unread" in comp.logged(), comp.logged()
    port.check(port)
