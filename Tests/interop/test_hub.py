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

from test_daemon_faults import BIN, Daemon, Mesh, free_ports, start_sender, tmpdir_short, wait_for  # noqa: F401
from test_sim_clients import CLI, PY, Sim, free_port_base

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")


def pm(*args, timeout=60):
    env = dict(os.environ, POCKETMESH_NO_DAEMON="1")
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=timeout)


@pytest.fixture
def hub(tmpdir_short):
    """Listeners: port (default classes), port+1 (read-only), port+2 (allow=admin), port+3 (app=cli-app)."""
    sim = Sim("--repeaters", "1", "--seed", "5")
    port = free_ports(4)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
               extra=("--companion-listen", f"127.0.0.1:{port}", "--companion-listen", f"127.0.0.1:{port + 1},read-only",
                      "--companion-listen", f"127.0.0.1:{port + 2},allow=admin",
                      "--companion-listen", f"127.0.0.1:{port + 3},app=cli-app",
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


def log_text(d):
    return open(d.tmp / "daemon.log").read()


def answer(s, timeout=10.0):
    """The next response frame (pushes skipped)."""
    while True:
        f = read_frame(s, timeout)
        assert f is not None, "connection closed"
        if f[0] < 0x80:
            return f


def hub_client_number(d, app):
    """The hub's number for the connected client of this app (from `status`)."""
    for c in d.call({"id": 1, "op": "status"})["hub_clients"]:
        if c["app"] == app:
            return c["client"]
    raise AssertionError(f"no hub client {app}")


REFUSED = b"\x01\x01"  # ERR (unsupported command): what a refused request gets


def test_permission_classes_on_the_hub(hub):
    """A default listener allows read, message and config: key-equivalent and administrative
    commands get ERR and one log line each; a config command runs and is logged with its client;
    a read-only listener refuses sending; allow=admin opens the admin class."""
    sim, d, port = hub
    rw = raw_client(port, b"perm-rw")
    n = hub_client_number(d, "perm-rw")
    refused = [(b"\x21", "signStart"), (b"\x22" + b"x" * 8, "signData"), (b"\x23", "signFinish"),
               (b"\x25" + struct.pack("<I", 123456), "setDevicePin"), (b"\x41" + b"\x00" * 10, "sendRawPacket"),
               (b"\x17", "exportPrivateKey"), (b"\x13reboot", "reboot")]
    for f, _ in refused:
        rw.sendall(frame(f))
        assert answer(rw) == REFUSED, f
    rw.sendall(frame(b"\x08perm-renamed"))  # SET_ADVERT_NAME: config, allowed
    assert answer(rw) == b"\x00"
    log = log_text(d)
    who = f"permission: hub client {n} (perm-rw): "
    for _, name in refused:
        assert log.count(who + "refused " + name + ":") == 1, (name, log[-3000:])
    assert log.count(who + "setAdvertName (config)") == 1, log[-3000:]
    # Read-only: sending a channel message is refused, reading is not.
    ro = raw_client(port + 1, b"perm-ro")
    ro.sendall(frame(b"\x03\x00\x00" + struct.pack("<I", int(time.time())) + b"not allowed"))
    assert answer(ro) == REFUSED
    ro.sendall(frame(b"\x08newname"))  # SET_ADVERT_NAME
    assert answer(ro) == REFUSED
    ro.sendall(frame(b"\x05"))  # GET_DEVICE_TIME is fine
    assert answer(ro)[0] == 0x09
    assert "refused sendChannelTextMessage" in log_text(d)
    # allow=admin: the admin class runs (and is logged); secret stays refused.
    adm = raw_client(port + 2, b"perm-admin")
    adm.sendall(frame(b"\x25" + struct.pack("<I", 0)))  # SET_DEVICE_PIN 0
    assert answer(adm) == b"\x00"
    adm.sendall(frame(b"\x1d" + b"\x11" * 32))  # LOGOUT
    assert answer(adm) == b"\x00"
    adm.sendall(frame(b"\x17"))
    assert answer(adm) == REFUSED
    a = hub_client_number(d, "perm-admin")
    assert f"permission: hub client {a} (perm-admin): setDevicePin (admin)" in log_text(d)
    for c in (rw, ro, adm):
        c.close()


def test_replies_come_in_the_order_of_the_requests(hub):
    """A client's answers come in the order it sent its requests, as from the firmware: those the
    hub answers itself (DEVICE_QUERY, APP_START, SYNC_NEXT_MESSAGE, refusals) wait behind the
    client's own requests at the radio."""
    sim, d, port = hub
    c = raw_client(port, b"order")
    drain(c)
    # GET_DEVICE_TIME, then SYNC_NEXT_MESSAGE, in one write.
    c.sendall(b"<\x01\x00\x05<\x01\x00\x0a")
    assert answer(c)[0] == 0x09
    assert answer(c)[0] == 0x0A
    # A longer pipeline, repeated: radio, local, refused and radio requests interleaved.
    batch = [(b"\x05", 0x09), (bytes([0x16, 3]), 0x0D), (b"\x14", 0x0C), (b"\x01\x03" + b"\x00" * 6 + b"order", 0x05),
             (b"\x17", 0x01), (b"\x04", 0x02), (b"\x0a", 0x0A), (b"\x05", 0x09)]
    for _ in range(20):
        c.sendall(b"".join(frame(f) for f, _ in batch))
        got = []
        for _, want in batch:
            f = answer(c)
            got.append(f[0])
            if f[0] == 0x02:  # CONTACTS_START, CONTACT..., END_OF_CONTACTS
                while f[0] != 0x04:
                    f = answer(c)
        assert got == [want for _, want in batch]
    c.close()


def start_flood(port):
    """A client sending GET_BATT as fast as the socket takes it (one thread writing, one reading and
    dropping the answers); returns a function that stops it and gives the count written."""
    import threading
    s = socket.create_connection(("127.0.0.1", port))
    stop, counts = threading.Event(), [0]
    batch = frame(b"\x14") * 200

    def write():
        try:
            while not stop.is_set():
                s.sendall(batch)
                counts[0] += 200
        except OSError:
            pass

    def read():
        try:
            while s.recv(65536):
                pass
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
        for t in threads:
            t.join(10)
        s.close()
        return counts[0]
    return end


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def test_a_flooding_client_costs_no_message_and_no_one_else_their_turn(hub):
    """One client (read-only) sends GET_BATT as fast as it can while another node sends 10 channel
    messages: the daemon's own sync goes first, so every message is stored and the link stays up;
    another app's handshake and requests are answered while the flood goes on."""
    sim, d, port = hub
    log_before = len(log_text(d))
    cpu_before = cpu_seconds(d.proc.pid)
    end = start_flood(port + 1)
    written = 0
    try:
        time.sleep(1)
        sent = [f"flood message {i}" for i in range(10)]
        for text in sent:
            send_channel(sim, text)
        other = raw_client(port, b"beside-the-flood")
        other.sendall(frame(b"\x05"))
        assert answer(other)[0] == 0x09
        wait_for(lambda: all(any(m.get("text", "").endswith(x) for m in
                                 d.call({"id": 1, "op": "history", "thread": "Public", "limit": 100})["messages"]) for x in sent),
                 timeout=30)
        got = []
        wait_for(lambda: len(texts(drain_keep(other, got))) >= 10, timeout=20)
        assert texts(got) == sent
        other.close()
    finally:
        written = end()
    cpu = cpu_seconds(d.proc.pid) - cpu_before
    print(f"flood: {written} requests written; daemon CPU {cpu:.2f} s")
    ms = d.call({"id": 1, "op": "history", "thread": "Public", "limit": 100})["messages"]
    for x in sent:
        assert sum(1 for m in ms if m.get("text", "").endswith(x)) == 1, x
    after = log_text(d)[log_before:]
    assert "link: lost" not in after and "did not answer" not in after, after[-3000:]


def test_a_client_that_writes_without_reading_holds_only_itself(hub):
    """100,000 requests written without reading one answer: the hub stops reading that client
    (backpressure), and another app's handshake is answered meanwhile."""
    sim, d, port = hub
    import threading
    s = socket.create_connection(("127.0.0.1", port + 1))
    done = threading.Event()

    def write_all():
        try:
            s.sendall(frame(b"\x14") * 100_000)
        except OSError:
            pass
        done.set()
    cpu_before = cpu_seconds(d.proc.pid)
    t = threading.Thread(target=write_all, daemon=True)
    t.start()
    time.sleep(2)
    other = raw_client(port, b"next-to-a-writer")  # asserts on DEVICE_INFO and SELF_INFO
    other.sendall(frame(b"\x05"))
    assert answer(other)[0] == 0x09
    other.close()
    status = d.call({"id": 1, "op": "status"})
    writer = [c for c in status["hub_clients"] if c["listener"].endswith(str(port + 1))]
    assert writer and writer[0]["waiting"] <= 32, status
    print(f"writer: daemon CPU {cpu_seconds(d.proc.pid) - cpu_before:.2f} s in 2 s")
    s.shutdown(socket.SHUT_RDWR)
    s.close()
    t.join(10)


def test_app_identity_from_the_listener_and_cursor_housekeeping(hub):
    """Every client on a listener with app=NAME is that app, whatever it sends in APP_START
    (meshcore_py-based apps all send "mccli"): it keeps its own cursor beside another mccli."""
    sim, d, port = hub
    a = raw_client(port + 3, b"mccli")   # app=cli-app
    b = raw_client(port, b"mccli")       # the APP_START name
    drain(a)
    drain(b)
    a.close()  # away while messages arrive
    for t in ("for both 1", "for both 2"):
        send_channel(sim, t)
    got_b = []
    wait_for(lambda: len(texts(drain_keep(b, got_b))) >= 2, timeout=20)
    assert texts(got_b) == ["for both 1", "for both 2"]
    b.close()
    a = raw_client(port + 3, b"mccli")
    got_a = []
    wait_for(lambda: len(texts(drain_keep(a, got_a))) >= 2, timeout=20)
    assert texts(got_a) == ["for both 1", "for both 2"]
    apps = {c["app"] for c in d.call({"id": 1, "op": "status"})["hub_clients"]}
    assert "cli-app" in apps
    a.close()
    store = next(p for p in (d.tmp / "state").rglob("cursor-hub-cli-app"))
    # 70 apps with new names, one after the other: at most 64 app cursors stay.
    for i in range(70):
        c = raw_client(port, f"throwaway-{i}".encode())
        c.close()
    wait_for(lambda: "removed" in log_text(d), timeout=10)
    left = list(store.parent.glob("cursor-hub-*"))
    assert len(left) <= 64, len(left)
    assert (store.parent / "cursor-hub-throwaway-69").exists()


def test_status_shows_each_hub_client(hub):
    sim, d, port = hub
    send_channel(sim, "for the status")
    c = raw_client(port, b"status-app")
    got = []
    wait_for(lambda: "for the status" in texts(drain_keep(c, got)), timeout=20)
    me = [x for x in d.call({"id": 1, "op": "status"})["hub_clients"] if x["app"] == "status-app"]
    assert len(me) == 1, me
    me = me[0]
    assert me["listener"] == f"127.0.0.1:{port}" and me["address"].startswith("127.0.0.1:")
    assert me["requests"] >= 4 and me["messages_delivered"] >= 1
    assert me["allows"] == "read,message,config"
    c.close()


def test_unfinished_frames_and_idle_clients_are_closed_and_a_full_hub_evicts(hub):
    sim, d, port = hub
    # A header announcing 300 bytes, then silence: closed after a few seconds.
    h = socket.create_connection(("127.0.0.1", port))
    h.sendall(b"<\x2c\x01\x16")
    h.settimeout(20)
    assert h.recv(10) == b""
    assert wait_for(lambda: "left a frame unfinished" in log_text(d), timeout=5)
    # Six idle clients fill the hub; a seventh gets in, and the one idle the longest goes.
    idle = [raw_client(port, f"idle-{i}".encode()) for i in range(6)]
    newcomer = raw_client(port, b"newcomer")
    idle[0].settimeout(10)
    assert idle[0].recv(10) == b""
    newcomer.sendall(frame(b"\x05"))
    assert answer(newcomer)[0] == 0x09
    idle[1].sendall(frame(b"\x05"))
    assert answer(idle[1])[0] == 0x09
    assert wait_for(lambda: "evicted for a new client" in log_text(d), timeout=5)
    for c in idle + [newcomer]:
        c.close()


def test_idle_timeout_is_a_setting(tmpdir_short):
    sim = Sim("--seed", "5")
    port = free_ports(1)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
               extra=("--companion-listen", f"127.0.0.1:{port}", "--companion-idle-timeout", "2"))
    try:
        d.wait_ready(timeout=60)
        c = raw_client(port, b"sleepy")
        c.settimeout(20)
        assert c.recv(10) == b""
        assert wait_for(lambda: "idle for" in log_text(d), timeout=5)
    finally:
        d.stop()
        sim.stop()


def test_allow_admin_opens_reboot(hub):
    sim, d, port = hub
    adm = raw_client(port + 2, b"rebooter")
    n = hub_client_number(d, "rebooter")
    adm.sendall(frame(b"\x13reboot"))  # no answer: the radio reboots
    wait_for(lambda: f"permission: hub client {n} (rebooter): reboot (admin)" in log_text(d), timeout=10)
    assert f"hub client {n} (rebooter): refused reboot" not in log_text(d)
    wait_for(lambda: log_text(d).count("radio: synced") >= 2, timeout=60)
    adm.close()


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
    # A half frame waits (a few seconds at most).
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
                ["--companion-listen", "127.0.0.1:5000,allow=everything"], ["--companion-max-clients", "0"],
                ["--companion-listen", "127.0.0.1:5000,origin=http://x"], ["--companion-ws", "127.0.0.1:5000,origin=x"],
                ["--companion-listen", "127.0.0.1:5000,app="], ["--companion-idle-timeout", "0"]):
        r = pm("daemon", "--tcp", "127.0.0.1:1", "--state-dir", str(tmpdir_short), "--socket", str(tmpdir_short) + "/x.sock", *bad, timeout=20)
        assert r.returncode == 2, (bad, r.stderr)
        assert r.stderr.count("\n") == 1, r.stderr
