"""The web console's door (`--web`): the page, /whoami, the login and the JSON API over a
WebSocket at /api, against a daemon on `pocketmesh sim`, spoken by hand (HTTP/1.1 and RFC 6455 as
a browser sends them) on 127.0.0.1. The API's answers are the Unix socket's, byte for byte.
"""
import base64
import gzip
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from test_daemon_faults import BIN, Daemon, free_ports, tmpdir_short, wait_for  # noqa: F401
from test_hub import pm, send_channel
from test_hub_ws import WS
from test_sim_clients import Sim

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")
ROOT = Path(__file__).resolve().parents[2]


def http(port, request, timeout=10):
    """Sends one request; (status, headers (lowercase names), body) once the server closed."""
    s = socket.create_connection(("127.0.0.1", port))
    s.settimeout(timeout)
    s.sendall(request if isinstance(request, bytes) else request.encode())
    buf = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        buf += chunk
    s.close()
    head, _, body = buf.partition(b"\r\n\r\n")
    lines = head.decode().split("\r\n")
    headers = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return int(lines[0].split(" ")[1]), headers, body


class APIWS(WS):
    """The console's WebSocket: JSON text messages."""

    def __init__(self, port, cookie=None, origin=None, expect=b"HTTP/1.1 101"):
        self.s = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall((f"GET /api HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                        + (f"Origin: {origin}\r\n" if origin else "") + (f"Cookie: {cookie}\r\n" if cookie else "")
                        + f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        self.s.settimeout(10)
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.s.recv(1)
            if not chunk:
                break
            head += chunk
        self.head = head
        assert head.startswith(expect), head
        self.buf = b""

    def send(self, payload, opcode=1):
        mask = os.urandom(4)
        n = len(payload)
        length = bytes([0x80 | n]) if n < 126 else (bytes([0x80 | 126]) + n.to_bytes(2, "big") if n < 65536
                                                     else bytes([0x80 | 127]) + n.to_bytes(8, "big"))
        try:
            self.s.sendall(bytes([0x80 | opcode]) + length + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
        except (BrokenPipeError, ConnectionResetError):
            pass  # the server closed early (an oversized message): its close frame is what counts

    def ask(self, req):
        self.send(json.dumps(req).encode(), opcode=1)
        while True:
            op, data = self.recv(timeout=20)
            assert op == 1, (op, data)
            v = json.loads(data)
            if v.get("id") == req.get("id", 0) and "ok" in v:
                return v

    def event(self, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            op, data = self.recv(timeout=max(0.1, deadline - time.time()))
            v = json.loads(data)
            if "event" in v:
                return v
        return None


@pytest.fixture
def web(tmpdir_short):
    """Listeners: port (read+message, no login), port+1 (read only), port+2 (with the password)."""
    sim = Sim("--repeaters", "1", "--seed", "5")
    port = free_ports(3)
    pw = Path(tmpdir_short) / "web.pw"
    pw.write_text("correct horse\n")
    pw.chmod(0o600)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
               extra=("--web", f"127.0.0.1:{port}", "--web", f"127.0.0.1:{port + 1},allow=read"))
    try:
        d.wait_ready(timeout=60)
        yield sim, d, port, pw
    finally:
        d.stop()
        sim.stop()


def test_the_page_whoami_and_errors(web):
    sim, d, port, _ = web
    status, h, body = http(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    assert status == 200 and h["content-encoding"] == "gzip" and h["content-type"] == "text/html; charset=utf-8"
    assert gzip.decompress(body) == (ROOT / "web" / "index.html").read_bytes()
    assert "default-src 'none'" in h["content-security-policy"] and h["x-frame-options"] == "DENY"
    status, h, body = http(port + 1, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
    assert json.loads(body) == {"allow": ["read"], "login": False, "loggedIn": False}
    for req, want in (("GET /x HTTP/1.1\r\nHost: x\r\n\r\n", 404), ("DELETE / HTTP/1.1\r\nHost: x\r\n\r\n", 405),
                      ("GET / HTTP/1.1\r\n\r\n", 400), ("GET /whoami?password=x HTTP/1.1\r\nHost: x\r\n\r\n", 400),
                      ("GET / HTTP/1.1\r\nHost: x\r\nX: " + "a" * 9000 + "\r\n\r\n", 431),
                      ("POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 99999\r\n\r\n", 413)):
        status, h, body = http(port, req)
        assert status == want, (req[:40], status)
        assert json.loads(body)["ok"] is False
    # The page is the one web/index.html makes (the generated file is current).
    r = subprocess.run([sys.executable, str(ROOT / "scripts" / "gen-web-page.py"), "--check"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_the_api_over_the_websocket_is_the_sockets(web):
    sim, d, port, _ = web
    w = APIWS(port, origin=f"http://127.0.0.1:{port}")
    assert w.ask({"id": 1, "op": "contacts"}) == d.call({"id": 1, "op": "contacts"})
    assert w.ask({"id": 2, "op": "subscribe"}) == {"id": 2, "ok": True, "subscribed": True}
    send_channel(sim, "to the browser")
    ev = w.event()
    while ev and ev.get("event") != "message":
        ev = w.event()
    assert ev and ev["message"]["text"] == "to the browser", ev
    bad = w.ask({"id": 3, "op": "no_such_op"})
    assert bad["ok"] is False and bad["error"]["code"] == "unsupported"
    # read only: send is refused as the socket refuses a class it does not allow.
    r = APIWS(port + 1).ask({"id": 4, "op": "send", "to": "sim1", "text": "hi"})
    assert r["ok"] is False and r["error"]["code"] == "denied" and "it allows read" in r["error"]["message"], r
    # A message over 64 KiB closes with 1009.
    w.send(b"x" * (65 * 1024), opcode=1)
    msg = w.recv()
    while msg is not None and msg[0] != 8:
        msg = w.recv()
    assert msg is not None and msg[1][:2] == b"\x03\xf1"


def test_another_origin_is_refused(web):
    sim, d, port, _ = web
    APIWS(port, origin="http://evil.example", expect=b"HTTP/1.1 403")
    status, _, _ = http(port, "POST /login HTTP/1.1\r\nHost: x\r\nOrigin: http://evil.example\r\nContent-Length: 0\r\n\r\n")
    assert status == 403
    assert wait_for(lambda: "origin http://evil.example" in open(d.tmp / "daemon.log").read(), timeout=5)


def test_login_with_a_password_file(tmpdir_short):
    sim = Sim("--repeaters", "1", "--seed", "5")
    port = free_ports(1)
    pw = Path(tmpdir_short) / "web.pw"
    pw.write_text("correct horse\n")
    pw.chmod(0o600)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False, extra=("--web", f"127.0.0.1:{port}", "--web-password-file", str(pw)))
    try:
        d.wait_ready(timeout=60)
        APIWS(port, expect=b"HTTP/1.1 401")
        _, _, body = http(port, "GET /whoami HTTP/1.1\r\nHost: x\r\n\r\n")
        assert json.loads(body) == {"allow": ["read", "message"], "login": True, "loggedIn": False}
        form = "password=wrong"
        status, _, _ = http(port, f"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: {len(form)}\r\n\r\n{form}")
        assert status == 401
        body = json.dumps({"password": "correct horse"})
        status, h, _ = http(port, f"POST /login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n{body}")
        assert status == 204 and h["set-cookie"].endswith("; HttpOnly; SameSite=Strict; Path=/")
        cookie = h["set-cookie"].split(";")[0]
        w = APIWS(port, cookie=cookie)
        assert w.ask({"id": 1, "op": "ping"})["ok"] is True
        log = open(d.tmp / "daemon.log").read()
        assert "correct horse" not in log and cookie.split("=")[1] not in log
    finally:
        d.stop()
        sim.stop()


def test_a_listener_beyond_loopback_needs_a_password_file(tmpdir_short):
    r = pm("daemon", "--tcp", "127.0.0.1:1", "--web", "0.0.0.0:8080")
    assert r.returncode == 2 and "--web-password-file" in r.stderr
    pw = Path(tmpdir_short) / "open.pw"
    pw.write_text("x\n")
    pw.chmod(0o644)
    r = pm("daemon", "--tcp", "127.0.0.1:1", "--web", "0.0.0.0:8080", "--web-password-file", str(pw))
    assert r.returncode == 2 and "chmod 600" in r.stderr
    assert pm("daemon", "--tcp", "127.0.0.1:1", "--web", "127.0.0.1:8080,allow=nothing").returncode == 2
