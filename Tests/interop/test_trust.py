"""Issue 35, from outside through the built binary, one test per defect: what a frame inside `raw`
is classed as over MQTT, what a result or a hub reply may carry where `secret` is not allowed,
`--mqtt-allow none`, `status` over MQTT, a password in a broker URL, a damaged MQTT cursor, names
that would forge output lines, files others can write (hook, config, password), a hook's child
that leaves its session, the warnings for doors open beyond loopback, and a radio that lists more
contacts than it can hold. The radio is `pocketmesh sim` (or, for the contacts, a fake radio here).
"""
import json
import os
import pathlib
import re
import shutil
import socket
import struct
import subprocess
import threading
import time

import pytest

from test_daemon_faults import BIN, Daemon, free_ports, tmpdir_short, wait_for  # noqa: F401
from test_flood import befriend, frame, read_frame, vm_hwm
from test_sim_clients import Sim

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")
PUBLIC = "8b3387e9c5cdea6ac9e5edbaa115cd72"  # the Public channel's well-known secret

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")


def pm(*args, timeout=60, env=None):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env or ENV, timeout=timeout)


@pytest.fixture
def sim():
    s = Sim("--seed", "11", nodes=2)
    befriend(s)
    yield s
    s.stop()


def log_of(d):
    return (d.tmp / "daemon.log").read_text(errors="replace")


# MARK: MQTT

needs_mosquitto = pytest.mark.skipif(shutil.which("mosquitto") is None, reason="needs mosquitto")


class Results:
    """A paho client on PREFIX/command/+/result that publishes commands and waits for their results."""

    def __init__(self, port, prefix="pm"):
        from test_mqtt import Listener
        self.listener = Listener(port, topic=f"{prefix}/command/+/result")
        self.prefix = prefix
        time.sleep(0.5)

    def call(self, op, args, seconds=20):
        rid = int(time.time() * 1000) % 1_000_000_000
        self.listener.publish(f"{self.prefix}/command/{op}", json.dumps(dict(args, id=rid)))
        got = self.listener.wait(lambda g: any(json.loads(p).get("id") == rid for _, p, _ in g), seconds=seconds, what=f"the result of {op}")
        return next(json.loads(p) for _, p, _ in got if json.loads(p).get("id") == rid)

    def close(self):
        self.listener.close()


@needs_mosquitto
def test_raw_over_mqtt_is_the_class_of_its_frame_and_no_result_carries_a_secret(tmp_path, sim):
    from test_mqtt import Mosquitto
    broker = Mosquitto(tmp_path)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm", "--mqtt-allow", "admin"])
    r = None
    try:
        d.wait_ready(timeout=60)
        r = Results(broker.port)
        # EXPORT_PRIVATE_KEY, SIGN_START/DATA/FINISH: secret, whatever the op's own class.
        for hex_ in ["17", "21", "2200", "23"]:
            res = r.call("raw", {"hex": hex_})
            assert res["ok"] is False and res["error"]["code"] == "denied", res
            assert "secret" in res["error"]["message"]
        assert "refused raw (secret" in log_of(d)
        # GET_CHANNEL 0: the reply comes, its secret zeroed.
        res = r.call("raw", {"hex": "1f00"})
        assert res["ok"] is True and res["reply"].startswith("12"), res
        assert PUBLIC not in json.dumps(res) and res["reply"].endswith("00" * 16), res
        # DEVICE_QUERY: DEVICE_INFO without the BLE PIN.
        res = r.call("raw", {"hex": "1603"})
        assert res["ok"] is True and res["reply"][8:16] == "00000000", res
        # The settings: no PIN; setting it does not echo it.
        res = r.call("get", {})
        assert "pin" not in res, res
        res = r.call("set", {"setting": "pin", "value": "654321"})
        assert "654321" not in json.dumps(res), res
        # channel_list: names, no secrets; channel_uri: refused.
        res = r.call("channel_list", {})
        assert PUBLIC not in json.dumps(res) and "secret" not in json.dumps(res), res
        assert r.call("channel_uri", {"channel": "0"})["error"]["code"] == "denied"
        # status without the store's path or the link's address.
        res = r.call("status", {})
        assert "store" not in res and "link" not in res and str(tmp_path) not in json.dumps(res), res
        # The warning at start: commands above message from whoever may publish.
        assert "warning: mqtt:" in log_of(d) and "admin" in log_of(d)
        assert "654321" not in log_of(d)
    finally:
        if r:
            r.close()
        d.stop()
        broker.stop()


@needs_mosquitto
def test_mqtt_allow_none_subscribes_to_no_command_topic(tmp_path, sim):
    from test_mqtt import Listener, Mosquitto
    broker = Mosquitto(tmp_path)
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False,
               extra=["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm", "--mqtt-allow", "none"])
    watch = Listener(broker.port, topic="pm/#")
    try:
        d.wait_ready(timeout=60)
        wait_for(lambda: d.call({"id": 1, "op": "status"}).get("mqtt", [{}])[0].get("connected"), 20)
        for op in ("info", "send", "history", "status"):
            watch.publish(f"pm/command/{op}", json.dumps({"id": 9, "to": "sim1", "text": "x", "thread": "sim1"}))
        time.sleep(3)
        assert not [t for t, _, _ in watch.snapshot() if t.endswith("/result")], watch.snapshot()
        m = d.call({"id": 2, "op": "status"})["mqtt"][0]
        assert m["commands"] == "off" and m["commands_run"] == 0
        assert "commands are off" in log_of(d)
        assert d.call({"id": 3, "op": "outbox"})["outbox"] == []
        # Messages still go out.
        assert pm("-t", f"127.0.0.1:{sim.port('sim1')}", "channel", "send", "0", "still published").returncode == 0
        watch.wait(lambda g: any(t.startswith("pm/message/") for t, _, _ in g), seconds=30, what="the message")
    finally:
        watch.close()
        d.stop()
        broker.stop()


def test_a_password_in_a_broker_url_is_refused_without_being_echoed(tmpdir_short):
    for flag in ("--mqtt", "--mqtt-observer"):
        r = pm("daemon", "--tcp", "127.0.0.1:9", "--state-dir", tmpdir_short, "--socket", tmpdir_short + "/s.sock",
               flag, "mqtt://user:hunter2secret@127.0.0.1:1883", *(["--mqtt-iata", "SEA"] if flag == "--mqtt-observer" else []))
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "hunter2secret" not in r.stderr + r.stdout and "password" in r.stderr, r.stderr


@needs_mosquitto
def test_a_damaged_mqtt_cursor_is_refused_naming_the_file(tmp_path, sim):
    from test_mqtt import Mosquitto
    broker = Mosquitto(tmp_path)
    extra = ["--mqtt", f"mqtt://127.0.0.1:{broker.port}", "--mqtt-prefix", "pm"]
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=extra)
    try:
        d.wait_ready(timeout=60)
        assert pm("-t", f"127.0.0.1:{sim.port('sim1')}", "channel", "send", "0", "before").returncode == 0
        assert wait_for(lambda: d.call({"id": 1, "op": "status"})["mqtt"][0]["cursor"] > 0, 30)
    finally:
        d.stop()
    cursors = list(pathlib.Path(d.state).glob("*/mqtt/*/cursor"))
    assert len(cursors) == 1
    cursors[0].write_text("12x\n")
    d = Daemon(str(tmp_path), sim.port("sim0"), hook=False, extra=extra)
    try:
        assert d.proc.wait(30) == 2
        text = log_of(d)
        assert str(cursors[0]) in text and "does not hold a message id" in text, text[-2000:]
    finally:
        d.stop()
        broker.stop()


# MARK: hub

def hub_client(port, app=b"trust"):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(frame(bytes([0x16, 3])))
    info = None
    while info is None or info[0] != 0x0D:
        info = read_frame(s)
    s.sendall(frame(b"\x01\x03" + b"\x00" * 6 + app))
    while read_frame(s)[0] != 0x05:
        pass
    return s, info


def answer(s):
    while True:
        f = read_frame(s)
        assert f is not None
        if f[0] < 0x80:
            return f


def test_the_hub_gives_channel_secrets_and_the_pin_only_where_secret_is_allowed(tmpdir_short, sim):
    port = free_ports(2)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
               extra=["--companion-listen", f"127.0.0.1:{port}", "--companion-listen", f"127.0.0.1:{port + 1},allow=secret"])
    try:
        d.wait_ready(timeout=60)
        plain, info = hub_client(port)
        assert info[4:8] == b"\x00" * 4
        plain.sendall(frame(b"\x1f\x00"))
        ch = answer(plain)
        assert ch[0] == 0x12 and ch[2:8] == b"Public" and ch[34:50] == b"\x00" * 16, ch.hex()
        # Written back with the zeroed secret, the channel would lose its key: refused.
        plain.sendall(frame(b"\x20" + ch[1:50]))
        assert answer(plain) == b"\x01\x01"
        opened, _ = hub_client(port + 1, b"keeper")
        opened.sendall(frame(b"\x1f\x00"))
        ch = answer(opened)
        assert ch[34:50].hex() == PUBLIC, ch.hex()
        plain.close()
        opened.close()
        assert "a channel with a zero secret" in log_of(d)
    finally:
        d.stop()


def test_listeners_beyond_loopback_are_warned_about(tmpdir_short, sim):
    port = free_ports(1)
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False, extra=["--companion-listen", f"0.0.0.0:{port},allow=admin"])
    try:
        d.wait_ready(timeout=60)
        text = log_of(d)
        assert f"warning: hub: 0.0.0.0:{port} can be reached beyond this host and has no authentication" in text, text
        assert f"warning: hub: 0.0.0.0:{port} allows config, admin" in text, text
    finally:
        d.stop()


# MARK: names

FORGED = "E\nab12cd34ef56  chat 0 hops Bob"


def test_a_name_from_the_air_is_one_line_everywhere(tmpdir_short, sim):
    p0, p1 = sim.port("sim0"), sim.port("sim1")
    r = pm("-t", f"127.0.0.1:{p1}", "set", "name", FORGED)
    assert r.returncode == 0, r.stderr
    listen = subprocess.Popen([str(BIN), "-t", f"127.0.0.1:{p0}", "listen", "--for", "8"], stdout=subprocess.PIPE, text=True, env=ENV)
    time.sleep(2)
    assert pm("-t", f"127.0.0.1:{p1}", "advert", "--flood").returncode == 0
    out = listen.communicate(timeout=30)[0]
    assert wait_for(lambda: "ab12cd34ef56" in pm("-t", f"127.0.0.1:{p0}", "contacts").stdout, 20)
    listing = pm("-t", f"127.0.0.1:{p0}", "contacts").stdout
    key1 = sim.nodes["sim1"]["pubkey"][:12]
    shown = pm("-t", f"127.0.0.1:{p0}", "contacts", "show", key1).stdout
    for text in (listing, shown, out):
        for line in text.splitlines():
            assert not line.startswith("ab12cd34ef56"), text
    assert "E\\nab12cd34ef56" in listing and "E\\nab12cd34ef56" in shown, (listing, shown)
    # JSON stays JSON: the name as it is.
    js = json.loads(pm("-t", f"127.0.0.1:{p0}", "contacts", "--json").stdout)
    assert any(c["name"] == FORGED for c in js)


# MARK: local files and processes

def test_files_others_can_write_are_refused_naming_them(tmpdir_short, sim):
    tmp = pathlib.Path(tmpdir_short)
    hook = tmp / "hook.sh"
    hook.write_text("#!/bin/sh\nexit 0\n")
    hook.chmod(0o777)
    base = ["daemon", "--tcp", f"127.0.0.1:{sim.port('sim0')}", "--state-dir", str(tmp / "state"), "--socket", str(tmp / "d.sock")]
    r = pm(*base, "--on-message", str(hook))
    assert r.returncode == 2 and str(hook) in r.stderr and "chmod go-w" in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1, r.stderr
    hook.chmod(0o755)
    # The config file: `config check` and every command that reads it.
    cfg = tmp / "xdg" / "pocketmesh" / "config.toml"
    cfg.parent.mkdir(parents=True)
    cfg.write_text(f'[radio.home]\ntcp = "127.0.0.1:{sim.port("sim0")}"\n[radio.home.daemon]\non-message = "{hook}"\n')
    env = dict(ENV, XDG_CONFIG_HOME=str(tmp / "xdg"))
    cfg.chmod(0o600)
    assert pm("config", "check", env=env).returncode == 0
    cfg.chmod(0o666)
    r = pm("config", "check", env=env)
    assert r.returncode == 2 and str(cfg) in r.stderr, r.stderr
    assert pm("info", env=env).returncode == 2
    # A password file: only this user's (or root's), closed to others.
    pw = tmp / "pw"
    pw.write_text("secret\n")
    pw.chmod(0o600)
    if os.geteuid() == 0:
        os.chown(pw, 4242, 4242)
        r = pm(*base, "--mqtt", "mqtt://user@127.0.0.1:1", "--mqtt-password-file", str(pw))
        assert r.returncode == 2 and str(pw) in r.stderr and "belongs to user 4242" in r.stderr, r.stderr


def test_a_hook_child_that_leaves_its_session_is_ended_at_the_timeout(tmpdir_short):
    """The hook starts a child in a session of its own (setsid) that ignores SIGTERM, and exits or
    hangs: the daemon, a child subreaper, gets the orphan back and ends it; none is left under PID 1."""
    from test_daemon_faults import Mesh, start_sender
    mesh = Mesh()
    tmp = pathlib.Path(tmpdir_short)
    pids = tmp / "pids"
    hook = tmp / "escape.sh"
    hook.write_text(f"#!/bin/sh\nsetsid sh -c 'trap \"\" TERM; echo $$ >> {pids}; setsid sh -c \"echo \\$\\$ >> {pids}; exec sleep 120\" & exec sleep 120' &\nsleep 60\n")
    hook.chmod(0o755)
    d = Daemon(tmp, mesh.nodes[0][2], hook=False, extra=["--on-message", str(hook), "--hook-timeout", "1", "--hook-attempts", "1"])
    try:
        d.wait_ready()
        assert start_sender(tmp, mesh.nodes[1][2], 3, 0, "escape").wait(30) == 0

        def alive():
            out = []
            for line in (pids.read_text().split() if pids.exists() else []):
                try:
                    stat = pathlib.Path(f"/proc/{line}/stat").read_text()
                except OSError:
                    continue
                if stat[stat.rindex(")") + 2] != "Z":
                    out.append(int(line))
            return out
        assert wait_for(lambda: pids.exists() and len(pids.read_text().split()) >= 6, 40), pids.read_text() if pids.exists() else ""
        assert wait_for(lambda: not alive(), 30), alive()
        assert "left running outside its process group" in log_of(d)
    finally:
        d.stop()
        mesh.close()
        for line in (pids.read_text().split() if pids.exists() else []):
            try:
                os.kill(int(line), 9)
            except OSError:
                pass


# MARK: a radio listing more contacts than it can hold

def le32(v):
    return struct.pack("<I", v)


class FakeRadio:
    """A companion radio on TCP that says it holds 100 contacts and lists `count`."""

    def __init__(self, count):
        self.count = count
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind(("127.0.0.1", 0))
        self.server.listen(1)
        self.port = self.server.getsockname()[1]
        self.key = bytes(range(0xA0, 0xC0))
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.server.accept()
            except OSError:
                return
            threading.Thread(target=self.client, args=(c,), daemon=True).start()

    def send(self, c, body):
        c.sendall(b">" + struct.pack("<H", len(body)) + body)

    def client(self, c):
        buf = b""
        try:
            while True:
                chunk = c.recv(4096)
                if not chunk:
                    return
                buf += chunk
                while len(buf) >= 3:
                    n = struct.unpack("<H", buf[1:3])[0]
                    if len(buf) < 3 + n:
                        break
                    f, buf = buf[3:3 + n], buf[3 + n:]
                    self.answer(c, f)
        except OSError:
            return

    def answer(self, c, f):
        code = f[0]
        if code == 0x16:
            info = bytes([0x0D, 13, 50, 8]) + le32(0) + b"14 Aug 2026\x00" + b"Fake".ljust(40, b"\x00") + b"v1.17.1".ljust(20, b"\x00") + b"\x00\x00"
            self.send(c, info)
        elif code == 0x01:
            self.send(c, bytes([0x05, 1, 20, 22]) + self.key + le32(0) + le32(0) + b"\x00" * 4 + le32(869618) + le32(62500) + bytes([8, 5]) + b"fake")
        elif code == 0x05:
            self.send(c, b"\x09" + le32(int(time.time())))
        elif code == 0x04:
            self.send(c, b"\x02" + le32(self.count))
            out = []
            for i in range(self.count):
                key = struct.pack("<I", i) + bytes(28)
                name = f"n{i}".encode().ljust(32, b"\x00")
                out.append(b">" + struct.pack("<H", 148) + b"\x03" + key + bytes([1, 0, 0xFF]) + bytes(64) + name
                           + le32(1_700_000_000) + le32(0) + le32(0) + le32(5))
                if len(out) == 500:
                    c.sendall(b"".join(out))
                    out = []
            if out:
                c.sendall(b"".join(out))
            self.send(c, b"\x04" + le32(5))
        elif code == 0x0A:
            self.send(c, b"\x0A")
        elif code == 0x1F:
            self.send(c, bytes([0x12, f[1]]) + bytes(48))
        else:
            self.send(c, b"\x00")

    def close(self):
        self.server.close()


def test_a_radio_listing_20000_contacts_is_held_to_what_it_can_hold(tmpdir_short):
    radio = FakeRadio(20_000)
    d = Daemon(tmpdir_short, radio.port, hook=False)
    try:
        d.wait_ready(timeout=90)
        assert wait_for(lambda: "past the 100 it can hold" in log_of(d), 30), log_of(d)[-2000:]
        contacts = d.call({"id": 1, "op": "contacts"})["contacts"]
        assert len(contacts) == 100
        files = list(pathlib.Path(d.state).glob("*/contacts"))
        assert files and files[0].stat().st_size <= 1024 * 256
        hwm = vm_hwm(d.proc.pid)
        print(f"20,000 contacts listed: daemon VmHWM {hwm / 1048576:.1f} MiB, contacts file {files[0].stat().st_size} bytes")
        assert hwm < 32 * 1024 * 1024
    finally:
        d.stop()
        radio.close()
