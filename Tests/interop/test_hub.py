"""The daemon as a companion hub (`--companion-listen`): several real companion clients on one
daemon whose radio is `pocketmesh sim` (sim0 - rpt0 - sim1; the daemon owns sim0, sim1 sends).

Clients: pocketmesh itself (`--tcp`), meshcore_py (`MeshCore.create_tcp`) and meshcore-cli
(`-t HOST -p PORT`), all pointed at the hub's port."""
import asyncio
import os
import socket
import struct
import subprocess
import time

import pytest

from test_daemon_faults import BIN, Daemon, Mesh, start_sender, tmpdir_short, wait_for  # noqa: F401
from test_sim_clients import CLI, PY, Sim, free_port_base

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")


def pm(*args, timeout=60):
    env = dict(os.environ, POCKETMESH_NO_DAEMON="1")
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def hub(tmpdir_short):
    sim = Sim("--repeaters", "1", "--seed", "5")
    port = free_port_base(2)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
               extra=("--companion-listen", f"127.0.0.1:{port}", "--companion-listen", f"127.0.0.1:{port + 1},read-only",
                      "--companion-max-clients", "6"))
    try:
        d.wait_ready(timeout=60)
        yield sim, d, port
    finally:
        d.stop()
        sim.stop()


def send_channel(sim, text):
    r = pm("--tcp", f"127.0.0.1:{sim.port('sim1')}", "channel", "send", "0", text)
    assert r.returncode == 0, r.stderr


def frame(payload):
    return b"<" + struct.pack("<H", len(payload)) + payload


def read_frame(s, timeout=5.0):
    s.settimeout(timeout)
    buf = b""
    while len(buf) < 3:
        chunk = s.recv(3 - len(buf))
        if not chunk:
            return None
        buf += chunk
    assert buf[0:1] == b">"
    n = struct.unpack("<H", buf[1:3])[0]
    body = b""
    while len(body) < n:
        chunk = s.recv(n - len(body))
        if not chunk:
            return None
        body += chunk
    return body


def raw_client(port, app=b"rawapp", version=3):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(frame(bytes([0x16, version])))
    assert read_frame(s)[0] == 0x0D  # DEVICE_INFO
    s.sendall(frame(b"\x01\x03" + b"\x00" * 6 + app))
    assert read_frame(s)[0] == 0x05  # SELF_INFO
    return s


def drain(s):
    """SYNC_NEXT_MESSAGE until NO_MORE_MESSAGES; the message frames (pushes skipped)."""
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


def texts(frames):
    return [f.split(b": ", 1)[1].decode() for f in frames if b": " in f]


async def py_fetch(port):
    from meshcore import EventType, MeshCore
    mc = await MeshCore.create_tcp("127.0.0.1", port)
    got = []
    try:
        while True:
            r = await mc.commands.get_msg()
            if r.type != EventType.CHANNEL_MSG_RECV:
                break
            got.append(r.payload["text"].split(": ", 1)[1])
    finally:
        await mc.disconnect()
    return got


def py_fetch_sub(port):
    code = f"import asyncio, json, test_hub; print(json.dumps(asyncio.run(test_hub.py_fetch({port}))))"
    r = subprocess.run([str(PY), "-c", code], capture_output=True, text=True, timeout=60,
                       cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stderr
    import json
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_every_client_gets_every_message_once(hub):
    sim, d, port = hub
    a = raw_client(port, b"app-a")
    b = raw_client(port, b"app-a")  # the same app name at the same time: each still gets everything
    assert drain(a) == [] and drain(b) == []
    sent = [f"hub message {i}" for i in range(4)]
    for t in sent:
        send_channel(sim, t)
    wait_for(lambda: len(texts(drain_keep(a, acc_a))) >= 4, timeout=20)
    wait_for(lambda: len(texts(drain_keep(b, acc_b))) >= 4, timeout=20)
    assert texts(acc_a) == sent and texts(acc_b) == sent
    # V3 frames (SNR) for a client that asked for version 3.
    assert all(f[0] == 0x11 for f in acc_a)
    # meshcore_py (no DEVICE_QUERY version sent by create_tcp: legacy frames) and pocketmesh, new apps:
    # the recent backlog.
    assert py_fetch_sub(port) == sent
    out = pm("--tcp", f"127.0.0.1:{port}", "sync").stdout
    assert [line.split(": ", 1)[1] for line in out.splitlines() if ": " in line] == sent
    # The daemon's store holds each once.
    ms = d.call({"id": 1, "op": "history", "thread": "Public", "limit": 100})["messages"]
    for t in sent:
        assert sum(1 for m in ms if m.get("text", "").endswith(t)) == 1
    a.close()
    b.close()


acc_a, acc_b = [], []


@pytest.mark.skipif(not CLI.exists(), reason="meshcore-cli not installed")
def test_meshcore_cli_gets_each_message_once(hub):
    # meshcore-cli and meshcore_py send the same app name: one after the other they share its cursor.
    sim, d, port = hub
    for t in ("cli one", "cli two"):
        send_channel(sim, t)
    time.sleep(2)
    def run():
        r = subprocess.run([str(CLI), "-t", "127.0.0.1", "-p", str(port), "sync_msgs"], capture_output=True, text=True, timeout=60)
        return r.stdout + r.stderr
    out = run()
    assert out.count("cli one") == 1 and out.count("cli two") == 1, out
    out = run()
    assert "cli one" not in out and "cli two" not in out


def drain_keep(s, acc):
    acc.extend(drain(s))
    return acc


def test_reconnecting_app_gets_what_it_missed_once(hub):
    sim, d, port = hub
    a = raw_client(port, b"phone")
    drain(a)
    a.close()
    send_channel(sim, "while away")
    time.sleep(2)
    a = raw_client(port, b"phone")
    got = []
    wait_for(lambda: texts(drain_keep(a, got)) == ["while away"], timeout=20)
    a.close()
    a = raw_client(port, b"phone")
    assert drain(a) == []
    a.close()


def test_setting_changed_by_one_is_seen_by_the_others(hub):
    sim, d, port = hub
    assert pm("--tcp", f"127.0.0.1:{port}", "set", "name", "hub-renamed").returncode == 0
    r = pm("--tcp", f"127.0.0.1:{port}", "info", "--json")
    assert '"hub-renamed"' in r.stdout
    wait_for(lambda: d.call({"id": 1, "op": "info"})["name"] == "hub-renamed", timeout=10)


def test_policy_read_only_and_dangerous_commands(hub):
    sim, d, port = hub
    ro = raw_client(port + 1, b"ro")
    ro.sendall(frame(b"\x08newname"))  # SET_ADVERT_NAME
    assert read_frame(ro) == b"\x01\x01"
    ro.sendall(frame(b"\x05"))  # GET_DEVICE_TIME is fine
    assert read_frame(ro)[0] == 0x09
    rw = raw_client(port, b"rw")
    rw.sendall(frame(b"\x17"))  # EXPORT_PRIVATE_KEY: denied by default
    assert read_frame(rw) == b"\x01\x01"
    rw.sendall(frame(b"\x13reboot"))
    assert read_frame(rw) == b"\x01\x01"
    ro.close()
    rw.close()
    assert "refused" in open(d.tmp / "daemon.log").read()


def test_faults_garbage_half_frames_flood_and_a_client_that_never_reads(hub):
    sim, d, port = hub
    good = raw_client(port, b"good")
    # Garbage closes that client only.
    g = socket.create_connection(("127.0.0.1", port))
    g.sendall(b"GET / HTTP/1.0\r\n\r\n")
    g.settimeout(5)
    assert g.recv(10) == b""
    # An oversized length closes it too.
    o = socket.create_connection(("127.0.0.1", port))
    o.sendall(b"<\xff\xff" + b"\x00" * 300)
    o.settimeout(5)
    assert o.recv(10) == b""
    # A half frame just waits.
    h = socket.create_connection(("127.0.0.1", port))
    h.sendall(b"<\x05\x00\x16")
    # A client that never reads.
    stuck = raw_client(port, b"stuck")
    # 1,000 connection attempts.
    for _ in range(1000):
        try:
            c = socket.create_connection(("127.0.0.1", port), timeout=2)
            c.close()
        except OSError:
            pass
    send_channel(sim, "after the storm")
    got = []
    wait_for(lambda: "after the storm" in texts(drain_keep(good, got)), timeout=20)
    good.sendall(frame(b"\x05"))
    assert read_frame(good)[0] == 0x09
    for s in (good, h, stuck):
        s.close()


def test_send_confirmed_goes_to_the_sender_only(hub):
    sim, d, port = hub
    assert pm("--tcp", f"127.0.0.1:{sim.port('sim1')}", "advert", "--flood").returncode == 0
    # The contact added from the advert is what every hub client sees.
    wait_for(lambda: "sim1" in pm("--tcp", f"127.0.0.1:{port}", "contacts").stdout, timeout=30)
    assert pm("--tcp", f"127.0.0.1:{port}", "advert", "--flood").returncode == 0
    wait_for(lambda: "sim0" in pm("--tcp", f"127.0.0.1:{sim.port('sim1')}", "contacts").stdout, timeout=30)
    watcher = raw_client(port, b"watcher")
    r = pm("--tcp", f"127.0.0.1:{port}", "send", "sim1", "hello through the hub", timeout=90)
    assert r.returncode == 0, r.stdout + r.stderr  # the ACK reached the sender
    watcher.settimeout(1)
    frames = []
    try:
        while True:
            f = read_frame(watcher, timeout=1)
            if f is None:
                break
            frames.append(f)
    except (socket.timeout, TimeoutError):
        pass
    assert not any(f[0] == 0x82 for f in frames), frames  # no SEND_CONFIRMED for someone else's send
    watcher.close()


def test_radio_lost_clients_carry_on(hub):
    """With the radio gone, a request gets ERR (bad state; not retried) and the clients stay
    connected: the handshake is still answered from the daemon's last view of the radio."""
    sim, d, port = hub
    a = raw_client(port, b"a")
    b = raw_client(port, b"b")
    sim.stop()
    wait_for(lambda: "link" in open(d.tmp / "daemon.log").read().split("synced", 1)[-1], timeout=20)
    time.sleep(1)
    a.sendall(frame(b"\x05"))
    f = read_frame(a, timeout=15)
    assert f is not None and f[0] == 0x01, f
    b.sendall(frame(bytes([0x16, 3])))
    assert read_frame(b)[0] == 0x0D
    a.close()
    b.close()


def test_openhop_peer_radio_every_client_every_message(tmpdir_short):
    """The same with the openhop-core companion peer as the daemon's radio."""
    m = Mesh()
    port = free_port_base(1)
    d = Daemon(tmpdir_short, m.base, hook=False, extra=("--companion-listen", f"127.0.0.1:{port}"))
    try:
        d.wait_ready(timeout=60)
        clients = [raw_client(port, name) for name in (b"one", b"two", b"two")]
        for c in clients:
            drain(c)
        sender = start_sender(tmpdir_short, m.base + 1, 5, 0.3, "peer")
        sender.wait(60)
        got = [[] for _ in clients]
        for c, acc in zip(clients, got):
            wait_for(lambda: len(texts(drain_keep(c, acc))) >= 5, timeout=30)
        for acc in got:
            assert texts(acc) == [f"peer-{i}" for i in range(5)]
        assert py_fetch_sub(port) == [f"peer-{i}" for i in range(5)]
        for c in clients:
            c.close()
    finally:
        d.stop()
        m.close()


def test_bad_listener_options_are_usage_errors(tmpdir_short):
    for bad in (["--companion-listen", "127.0.0.1:5000,writable"], ["--companion-listen", "localhost"],
                ["--companion-listen", "127.0.0.1:5000,allow=everything"], ["--companion-max-clients", "0"]):
        r = pm("daemon", "--tcp", "127.0.0.1:1", "--state-dir", str(tmpdir_short), "--socket", str(tmpdir_short) + "/x.sock", *bad, timeout=20)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr
