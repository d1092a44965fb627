"""A flood through each door of the daemon, from outside, through the built binary: MQTT commands
(Mosquitto on loopback, started here), the hub over TCP and over WebSocket (--companion-ws), the
local API socket. While the flood goes on, another node (`pocketmesh sim`) sends 5 channel messages
and 5 direct messages; every one must be stored once, and (MQTT) published once, (hub) handed to
another app. Each flood lasts 10 s at most; the daemon's memory (VmHWM) must stay under 32 MiB and
its CPU time is printed, never asserted on (timing is the machine's). Counts, not timing."""
import base64
import json
import os
import socket
import struct
import subprocess
import sys
import threading
import time

import pytest

from test_daemon_faults import BIN, Daemon, free_ports, tmpdir_short, venv_python, wait_for  # noqa: F401
from test_sim_clients import Sim

FLOOD_S = 10
MEMORY_CAP = 32 * 1024 * 1024
ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")


def pm(*args, timeout=60):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=ENV, timeout=timeout)


def vm_hwm(pid):
    """The process's peak resident memory in bytes (VmHWM)."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmHWM")


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def befriend(sim):
    for n in ("sim0", "sim1"):
        assert pm("-t", f"127.0.0.1:{sim.port(n)}", "advert", "--flood").returncode == 0
    deadline = time.time() + 20
    while time.time() < deadline:
        a = pm("-t", f"127.0.0.1:{sim.port('sim0')}", "contacts").stdout
        b = pm("-t", f"127.0.0.1:{sim.port('sim1')}", "contacts").stdout
        if "sim1" in a and "sim0" in b:
            return
        time.sleep(0.3)
    raise AssertionError("the sim nodes did not learn each other")


def send_ten(sim, tag):
    """5 channel messages and 5 direct messages from sim1; their texts."""
    texts = []
    for i in range(5):
        t = f"{tag} channel {i}"
        r = pm("-t", f"127.0.0.1:{sim.port('sim1')}", "channel", "send", "0", t)
        assert r.returncode == 0, r.stderr
        texts.append(t)
        t = f"{tag} direct {i}"
        r = pm("-t", f"127.0.0.1:{sim.port('sim1')}", "send", "sim0", t)
        assert r.returncode == 0, r.stderr
        texts.append(t)
    return texts


def stored_texts(d):
    got = []
    for thread in ("Public", "sim1"):
        r = d.call({"id": 1, "op": "history", "thread": thread, "limit": 1000}, timeout=30)
        got += [m.get("text", "") for m in r.get("messages", []) if m.get("direction") != "outgoing"]
    return got


def once_each(texts, got):
    return all(sum(1 for g in got if g.endswith(t)) == 1 for t in texts)


def report(door, d, cpu_before, extra):
    hwm = vm_hwm(d.proc.pid)
    cpu = cpu_seconds(d.proc.pid) - cpu_before
    print(f"flood {door}: {extra}; daemon VmHWM {hwm / 1048576:.1f} MiB, CPU {cpu:.2f} s over the flood")
    assert hwm < MEMORY_CAP, f"{door}: VmHWM {hwm} bytes"
    return hwm


@pytest.fixture
def sim():
    s = Sim("--seed", "7", nodes=2)
    befriend(s)
    yield s
    s.stop()


# MARK: MQTT

FLOODER = r"""
import sys, time
import paho.mqtt.client as paho
port, topic, seconds = int(sys.argv[1]), sys.argv[2], float(sys.argv[3])
c = paho.Client(paho.CallbackAPIVersion.VERSION2, client_id="flooder")
c.max_queued_messages_set(0)
c.connect("127.0.0.1", port, keepalive=60)
c.loop_start()
n, end = 0, time.time() + seconds
payload = b'{"id":7}'
while time.time() < end:
    for _ in range(500):
        c.publish(topic, payload, qos=0)
        n += 1
    time.sleep(0)
c.loop_stop()
c.disconnect()
print(n)
"""


def test_mqtt_command_flood_costs_no_message(tmp_path, sim):
    """`info` on the command topic as fast as a client can publish, for 10 s: every message from the
    air is stored and published once, the API answers, the daemon stays under its memory cap, and
    the commands over the bridge's rate are dropped and counted in status."""
    from test_mqtt import Listener, Mosquitto
    broker = Mosquitto(tmp_path)
    watch = Listener(broker.port, topic="pm/message/#")
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm"])
    try:
        d.wait_ready(timeout=60)
        wait_for(lambda: d.call({"id": 1, "op": "status"}).get("mqtt", [{}])[0].get("connected"), 20)
        cpu_before = cpu_seconds(d.proc.pid)
        script = tmp_path / "flooder.py"
        script.write_text(FLOODER)
        flooder = subprocess.Popen([venv_python(), str(script), str(broker.port), "pm/command/info", str(FLOOD_S)],
                                   stdout=subprocess.PIPE, text=True)
        time.sleep(1)
        texts = send_ten(sim, "mqtt")
        t0 = time.time()
        st = d.call({"id": 2, "op": "status"}, timeout=10)  # the API answers during the flood
        api_s = time.time() - t0
        written = int(flooder.communicate(timeout=FLOOD_S + 30)[0].strip() or 0)
        wait_for(lambda: once_each(texts, stored_texts(d)), 30)
        got = watch.wait(lambda g: all(any(json.loads(p).get("text", "").endswith(t) for _, p, _ in g) for t in texts),
                         seconds=60, what="every message on the broker")
        published = [json.loads(p)["text"] for _, p, _ in got]
        assert once_each(texts, published), published
        st = d.call({"id": 3, "op": "status"})
        m = st["mqtt"][0]
        report("mqtt", d, cpu_before, f"{written} commands published, {m['commands_run']} run, {m['commands_dropped']} dropped; "
               f"{len(texts)} stored and published; status answered in {api_s:.2f} s during the flood")
        assert m["commands_dropped"] > 0 and m["commands_run"] + m["commands_dropped"] <= written
        assert "link: lost" not in open(d.tmp / "daemon.log").read()
    finally:
        watch.close()
        d.stop()
        broker.stop()


# MARK: hub (TCP and WebSocket)

def frame(payload):
    return b"<" + struct.pack("<H", len(payload)) + payload


def read_frame(s, timeout=10.0):
    s.settimeout(timeout)
    buf = b""
    while len(buf) < 3:
        chunk = s.recv(3 - len(buf))
        if not chunk:
            return None
        buf += chunk
    n = struct.unpack("<H", buf[1:3])[0]
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def hub_app(port, app):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(frame(bytes([0x16, 3])))
    while read_frame(s)[0] != 0x0D:
        pass
    s.sendall(frame(b"\x01\x03" + b"\x00" * 6 + app))
    while read_frame(s)[0] != 0x05:
        pass
    return s


def hub_drain(s):
    got = []
    while True:
        s.sendall(frame(b"\x0a"))
        while True:
            f = read_frame(s)
            assert f is not None
            if f[0] < 0x80:
                break
        if f[0] == 0x0A:
            return got
        got.append(f)


def ws_connect(port):
    s = socket.create_connection(("127.0.0.1", port))
    key = base64.b64encode(os.urandom(16)).decode()
    s.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
               f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
    head = b""
    while b"\r\n\r\n" not in head:
        chunk = s.recv(1024)
        assert chunk, "no WebSocket answer"
        head += chunk
    assert b" 101 " in head.split(b"\r\n")[0], head
    return s


def ws_message(payload):
    """One masked binary WebSocket message (client to server)."""
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x82]) + (bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n))
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def ws_read_frame(s, timeout=10.0):
    """The companion frame in the server's next WebSocket message (its '>' header stripped)."""
    s.settimeout(timeout)

    def exactly(n):
        buf = b""
        while len(buf) < n:
            chunk = s.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf
    while True:
        head = exactly(2)
        if head is None:
            return None
        n = head[1] & 0x7F
        if n == 126:
            n = struct.unpack(">H", exactly(2))[0]
        elif n == 127:
            n = struct.unpack(">Q", exactly(8))[0]
        body = exactly(n)
        if head[0] & 0x0F == 0x2:
            return body[3:] if body[:1] == b">" else body


class WSApp:
    """A hub app over WebSocket: frames in masked binary messages, answers one message each."""

    def __init__(self, port, app):
        self.s = ws_connect(port)
        self.send(bytes([0x16, 3]))
        while self.read()[0] != 0x0D:
            pass
        self.send(b"\x01\x03" + b"\x00" * 6 + app)
        while self.read()[0] != 0x05:
            pass

    def send(self, body):
        self.s.sendall(ws_message(frame(body)))

    def read(self):
        f = ws_read_frame(self.s)
        assert f is not None, "connection closed"
        return f

    def drain(self):
        got = []
        while True:
            self.send(b"\x0a")
            while True:
                f = self.read()
                if f[0] < 0x80:
                    break
            if f[0] == 0x0A:
                return got
            got.append(f)

    def close(self):
        self.s.close()


def start_writer(s, batch, watch=None):
    """Writes `batch` as fast as the socket takes it, reads and drops what comes back (counting in
    `watch`, a dict, the occurrences of each of its keys); returns a function that stops it and
    gives the count of batches written."""
    stop, counts = threading.Event(), [0]

    def write():
        try:
            while not stop.is_set():
                s.sendall(batch)
                counts[0] += 1
        except OSError:
            pass

    def read():
        tail = b""
        try:
            s.settimeout(None)
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    return
                if watch is not None:
                    # Whole lines only: a key is not missed across two reads.
                    lines = (tail + chunk).split(b"\n")
                    tail = lines.pop()
                    for line in lines:
                        for k in watch:
                            watch[k] += line.count(k)
        except OSError:
            pass
    threads = [threading.Thread(target=f, daemon=True) for f in (write, read)]
    for t in threads:
        t.start()

    def end():
        stop.set()
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        s.close()
        for t in threads:
            t.join(5)
        return counts[0]
    return end


@pytest.mark.parametrize("ws", [False, True], ids=["tcp", "websocket"])
def test_hub_flood_costs_no_message(tmpdir_short, sim, ws):
    """Four hub clients sending GET_BATT (and, on the second, GET_CHANNEL) as fast as their sockets
    take it for 10 s: every message is stored once and handed to another app once, the API
    answers, memory stays under the cap; no channel secret reaches a client of a default listener."""
    port = free_ports(1)
    listen = ["--companion-ws", f"127.0.0.1:{port}"] if ws else ["--companion-listen", f"127.0.0.1:{port}"]
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False, extra=listen)
    ends = []
    try:
        d.wait_ready(timeout=60)
        cpu_before = cpu_seconds(d.proc.pid)
        for i in range(4):
            body = b"\x14" if i != 1 else b"\x1f\x00"
            if ws:
                s = ws_connect(port)
                ends.append(start_writer(s, ws_message(frame(body)) * 200))
            else:
                s = socket.create_connection(("127.0.0.1", port))
                ends.append(start_writer(s, frame(body) * 200))
        time.sleep(1)
        texts = send_ten(sim, "hub-ws" if ws else "hub")
        t0 = time.time()
        d.call({"id": 2, "op": "status"}, timeout=10)
        api_s = time.time() - t0
        time.sleep(max(0, FLOOD_S - 1 - (time.time() - t0)))
        written = sum(e() for e in ends) * 200
        ends = []
        wait_for(lambda: once_each(texts, stored_texts(d)), 30)
        app = WSApp(port, b"beside-the-flood") if ws else None
        sock = None if ws else hub_app(port, b"beside-the-flood")
        got = []

        def more():
            got.extend(app.drain() if ws else hub_drain(sock))
            return len(got) >= len(texts)
        wait_for(more, 30)
        (app or sock).close()
        delivered = [f.split(b": ", 1)[-1].decode(errors="replace") for f in got]
        assert once_each(texts, delivered), delivered
        report("hub over WebSocket" if ws else "hub over TCP", d, cpu_before,
               f"{written} requests written by 4 clients; {len(texts)} stored, {len(delivered)} handed to another app; "
               f"status answered in {api_s:.2f} s during the flood")
        assert "link: lost" not in open(d.tmp / "daemon.log").read()
    finally:
        for e in ends:
            e()
        d.stop()


# MARK: API socket

def test_api_flood_costs_no_message(tmpdir_short, sim):
    """Four API clients pipelining `status` and `send` as fast as their sockets take them for 10 s:
    every message from the air is stored once, the outbox stays within its bound (the excess is
    refused with a sentence that says so), memory stays under the cap."""
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False)
    ends = []
    try:
        d.wait_ready(timeout=60)
        cpu_before = cpu_seconds(d.proc.pid)
        batch = b"".join(json.dumps({"id": i, "op": "status"}).encode() + b"\n" for i in range(100))
        sends = b"".join(json.dumps({"id": i, "op": "send", "to": "sim1", "text": f"flood {i}"}).encode() + b"\n" for i in range(10))
        sub = socket.socket(socket.AF_UNIX)
        sub.connect(d.sock)
        sub.sendall(b'{"id":1,"op":"subscribe"}\n')
        events, stop = [], threading.Event()

        def listen():
            buf = b""
            sub.settimeout(1)
            while not stop.is_set():
                try:
                    chunk = sub.recv(65536)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not chunk:
                    return
                buf += chunk
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    e = json.loads(line)
                    if e.get("event") == "message":
                        events.append(e.get("message", {}).get("text", ""))
        listener = threading.Thread(target=listen, daemon=True)
        listener.start()
        refused = {b"the most one door may queue for one recipient": 0}
        for i in range(4):
            s = socket.socket(socket.AF_UNIX)
            s.connect(d.sock)
            ends.append(start_writer(s, sends if i == 0 else batch, watch=refused if i == 0 else None))
        time.sleep(1)
        texts = send_ten(sim, "api")
        time.sleep(max(0, FLOOD_S - 1))
        written = sum(e() for e in ends)
        ends = []
        wait_for(lambda: once_each(texts, stored_texts(d)), 30)
        wait_for(lambda: once_each(texts, events), 30)
        stop.set()
        sub.close()
        assert once_each(texts, events), events
        outbox = d.call({"id": 5, "op": "outbox"})["outbox"]
        n_refused = list(refused.values())[0]
        report("api", d, cpu_before, f"{written} request batches written by 4 clients; {len(texts)} stored, "
               f"{len(texts)} delivered to a subscriber; outbox {len(outbox)} items, {n_refused} sends refused")
        # One door may queue 32 messages for one recipient: the flood filled that (what was
        # delivered meanwhile made room for as many), and the rest was refused with a sentence
        # that says so.
        assert 0 < len(outbox) <= 32, outbox
        assert n_refused > 0
    finally:
        for e in ends:
            e()
        d.stop()
