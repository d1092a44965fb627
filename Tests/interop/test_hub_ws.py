"""The companion hub over WebSocket (`--companion-ws`): a browser-style client (RFC 6455, masked
frames, one binary message per companion frame with its '<'/'>' header) handshakes with the
daemon, gets the radio's answers and every message once, like a TCP hub client; protocol errors
close that client only. The radio is `pocketmesh sim`.
"""
import base64
import hashlib
import os
import socket
import struct
import time

import pytest

from test_daemon_faults import BIN, Daemon, free_ports, tmpdir_short, wait_for  # noqa: F401
from test_hub import frame as tcp_frame, pm, read_frame, send_channel
from test_sim_clients import Sim, free_port_base

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")


class WS:
    def __init__(self, port, origin=None, expect=b"HTTP/1.1 101"):
        self.s = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + (f"Origin: {origin}\r\n" if origin else "")
                        + f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        self.s.settimeout(10)
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(1)
            if not chunk:
                break
            head += chunk
        self.head = head
        if expect != b"HTTP/1.1 101":
            assert head.startswith(expect), head
            return
        want = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        assert head.startswith(b"HTTP/1.1 101") and f"Sec-WebSocket-Accept: {want}".encode() in head, head
        self.buf = b""

    def send(self, payload, opcode=2):
        mask = os.urandom(4)
        n = len(payload)
        head = bytes([0x80 | opcode]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def recv(self, timeout=5.0):
        """(opcode, payload) of the next message, None at the end."""
        self.s.settimeout(timeout)
        while True:
            if len(self.buf) >= 2:
                n, off = self.buf[1] & 0x7F, 2
                if n == 126 and len(self.buf) >= 4:
                    n, off = struct.unpack(">H", self.buf[2:4])[0], 4
                if len(self.buf) >= off + n:
                    op, data = self.buf[0] & 0x0F, self.buf[off:off + n]
                    self.buf = self.buf[off + n:]
                    return op, data
            chunk = self.s.recv(4096)
            if not chunk:
                return None
            self.buf += chunk

    def request(self, payload, header=True):
        self.send(tcp_frame(payload) if header else payload)
        while True:
            op, data = self.recv()
            assert op == 2 and data[0:1] == b">" and struct.unpack("<H", data[1:3])[0] == len(data) - 3, data
            if data[3] < 0x80:
                return data[3:]


@pytest.fixture
def ws_hub(tmpdir_short):
    sim = Sim("--repeaters", "1", "--seed", "5")
    port = free_ports(2)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
               extra=("--companion-ws", f"127.0.0.1:{port}", "--companion-ws", f"127.0.0.1:{port + 1},origin=http://localhost:8080"))
    try:
        d.wait_ready(timeout=60)
        yield sim, d, port
    finally:
        d.stop()
        sim.stop()


def test_a_websocket_client_is_a_full_companion_session(ws_hub):
    sim, d, port = ws_hub
    c = WS(port)
    assert c.request(bytes([0x16, 3]))[0] == 0x0D              # DEVICE_QUERY -> DEVICE_INFO
    assert c.request(b"\x01\x03" + b"\x00" * 6 + b"webapp", header=False)[0] == 0x05  # a bare payload works too
    send_channel(sim, "over the web")
    deadline, got = time.time() + 20, []
    while not got and time.time() < deadline:
        while True:
            f = c.request(b"\x0a")
            if f[0] == 0x0A:
                break
            got.append(f)
        time.sleep(0.3)
    assert len(got) == 1 and got[0].endswith(b"over the web")
    # A ping is answered.
    c.send(b"hi", opcode=9)
    op, data = c.recv()
    while op == 2:  # pushes (MSG_WAITING) may come first
        op, data = c.recv()
    assert (op, data) == (10, b"hi")


def test_protocol_errors_close_that_client_only(ws_hub):
    sim, d, port = ws_hub
    good = WS(port)
    assert good.request(bytes([0x16, 3]))[0] == 0x0D
    for bad in (lambda w: w.send(b"text", opcode=1), lambda w: w.send(b"\x00" * 300),
                lambda w: w.s.sendall(b"\x82\x05hello")):  # text, over one frame, unmasked
        w = WS(port)
        bad(w)
        r = w.recv()
        while r is not None and r[0] != 8:
            r = w.recv()
        assert r is None or r[0] == 8
    # Not WebSocket at all: a 400.
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
    s.settimeout(5)
    assert s.recv(100).startswith(b"HTTP/1.1 400")
    assert good.request(bytes([0x16, 3]))[0] == 0x0D
    assert pm("daemon", "--tcp", "127.0.0.1:1", "--companion-ws", "nope").returncode == 2


def test_a_browser_page_from_an_origin_not_named_is_refused(ws_hub):
    """A web page open in a local browser cannot reach the loopback listener: its Origin must be
    one the listener names (origin=); a client that sends no Origin is not a browser page."""
    sim, d, port = ws_hub
    for p in (port, port + 1):
        w = WS(p, origin="http://evil.example", expect=b"HTTP/1.1 403")
        w.s.settimeout(5)
        assert w.s.recv(10) == b""
    ok = WS(port + 1, origin="http://localhost:8080")
    assert ok.request(bytes([0x16, 3]))[0] == 0x0D
    assert wait_for(lambda: "does not accept" in open(d.tmp / "daemon.log").read(), timeout=5)


def test_a_message_is_exactly_one_frame(ws_hub):
    """Two companion frames in one WebSocket message (they ran as a command 0x3C) close the client."""
    sim, d, port = ws_hub
    w = WS(port)
    assert w.request(bytes([0x16, 3]))[0] == 0x0D
    w.send(b"<\x01\x00\x05<\x01\x00\x0a")
    r = w.recv()
    while r is not None and r[0] == 2 and r[1][3] >= 0x80:  # pushes
        r = w.recv()
    assert r is None, r
    assert wait_for(lambda: "not one companion frame" in open(d.tmp / "daemon.log").read(), timeout=5)
