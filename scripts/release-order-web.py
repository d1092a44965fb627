#!/usr/bin/env python3
"""A web console session against a daemon's `--web` port, as the page runs one (for
scripts/release-order.sh's profile, so that the console's code is placed with the daemon's):
the page, /whoami, then the JSON API over a WebSocket at /api with the page's start-up
operations and its subscription, then live events (answering pings, asking `status` every 5 s)
until it is stopped (SIGTERM) or the daemon goes. Beside it, what a browser also does: a
connection opened ahead and never used (Chromium's preconnect; the daemon answers 408 after its
request timeout and logs the refusal) and a call the daemon refuses (an error answer), so that
those paths' code is placed with the rest too: left out, the first such refusal in a storm maps
about 0.7 MB of code from all over the binary.

    python3 scripts/release-order-web.py PORT
"""
import base64
import json
import os
import signal
import socket
import struct
import sys

HOST = "127.0.0.1"
PORT = int(sys.argv[1])
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))


def get(path):
    with socket.create_connection((HOST, PORT), timeout=120) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nAccept-Encoding: gzip\r\n"
                  f"Connection: close\r\n\r\n".encode())
        while s.recv(65536):
            pass


class Socket:
    def __init__(self):
        self.s = socket.create_connection((HOST, PORT), timeout=120)
        key = base64.b64encode(os.urandom(16)).decode()
        self.s.sendall(f"GET /api HTTP/1.1\r\nHost: {HOST}:{PORT}\r\nUpgrade: websocket\r\n"
                       f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                       f"Origin: http://{HOST}:{PORT}\r\n\r\n".encode())
        self.buf = b""
        while b"\r\n\r\n" not in self.buf:
            self.more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if b" 101 " not in head.split(b"\r\n")[0]:
            sys.exit(f"release-order-web: no WebSocket: {head.splitlines()[0]!r}")
        self.next_id = 1

    def more(self):
        data = self.s.recv(65536)
        if not data:
            sys.exit(0)  # the daemon went
        self.buf += data

    def frame(self, op, data):
        mask = os.urandom(4)
        n = len(data)
        head = bytes([0x80 | op]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
        self.s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(data)))

    def read(self):
        while len(self.buf) < 2:
            self.more()
        op, n, off = self.buf[0] & 0x0F, self.buf[1] & 0x7F, 2
        if n >= 126:
            size = 2 if n == 126 else 8
            while len(self.buf) < 2 + size:
                self.more()
            n = int.from_bytes(self.buf[2:2 + size], "big")
            off += size
        while len(self.buf) < off + n:
            self.more()
        payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
        if op == 0x9:
            self.frame(0xA, payload)
        elif op == 0x8:
            sys.exit(0)
        return payload if op == 0x1 else None

    def call(self, op, **args):
        i = self.next_id
        self.next_id += 1
        self.frame(0x1, json.dumps({"id": i, "op": op, **args}).encode())
        while True:
            m = self.read()
            if m is not None and json.loads(m).get("id") == i:
                return


idle = socket.create_connection((HOST, PORT), timeout=120)  # sends nothing: 408 in time
get("/")
get("/whoami")
get("/favicon.ico")
ws = Socket()
for op, args in (("info", {}), ("contacts", {}), ("contacts_pending", {}), ("channels", {}), ("subscribe", {}),
                 ("status", {}), ("chats", {}), ("history", {"thread": "channel 0", "limit": 200}), ("stats", {}),
                 ("battery", {}), ("samples_signal", {"limit": 4096}), ("samples_battery", {"limit": 4096}),
                 ("outbox", {}), ("hooks_failed", {})):
    ws.call(op, **args)
ws.call("history", thread="no such thread")  # refused: an error answer
ws.call("contacts_reset_path", name="nobody")  # a class this listener does not allow
ws.s.settimeout(5)
while True:
    try:
        ws.read()
    except socket.timeout:  # (its answer is read with the events)
        ws.frame(0x1, json.dumps({"id": 0, "op": "status"}).encode())
