"""`pocketmesh daemon` against a third-party companion peer (openhop-core, from PyPI) on loopback:
power cuts (SIGKILL at random moments, torn log tails), link faults (peer gone and back, garbage on
the link), write errors (a file size limit), the local API and hooks.

Environment:
  POCKETMESH_BIN     the binary under test (default <repo>/.build/debug/pocketmesh)
  POCKETMESH_VENV    a venv with openhop-core and meshcore (default <repo>/.venv-interop)
  POCKETMESH_POWERCUT_KILLS  how many SIGKILLs the power-cut test deals (default 12)
  POCKETMESH_SEED    the power-cut test's random seed (when to kill, whether to tear the tail)
"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

import conftest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))
VENV = Path(os.environ.get("POCKETMESH_VENV", REPO / ".venv-interop"))


def venv_python():
    p = VENV / "bin" / "python"
    return str(p) if p.exists() else sys.executable


def free_ports(n):
    return conftest.free_ports(n)


class Mesh:
    """Two openhop-core companion nodes sharing an in-memory air, on 127.0.0.1:base and base+1.
    `log_rx`: each node pushes LOG_RX_DATA for every packet it hears (companion_peer.py --log-rx)."""

    def __init__(self, log_rx=False):
        self.base = free_ports(2)
        self.proc, nodes = conftest.start_companion_peer(self.base, ["--log-rx"] if log_rx else [])
        self.nodes = [(n.name, n.pubkey, n.port) for n in nodes]

    def close(self):
        conftest.stop_session(self.proc)


SENDER = r"""
import asyncio, sys
from meshcore import MeshCore
async def main(port, n, gap, prefix, advert):
    mc = await MeshCore.create_tcp("127.0.0.1", port)
    if advert:
        await mc.commands.send_advert(flood=True)
        await asyncio.sleep(1)
    for i in range(n):
        await mc.commands.send_chan_msg(0, f"{prefix}-{i}")
        await asyncio.sleep(gap)
    await mc.disconnect()
asyncio.run(main(int(sys.argv[1]), int(sys.argv[2]), float(sys.argv[3]), sys.argv[4], sys.argv[5] == "1"))
"""


def start_sender(tmp, port, n, gap, prefix, advert=False):
    script = Path(tmp) / "sender.py"
    script.write_text(SENDER)
    return subprocess.Popen([venv_python(), str(script), str(port), str(n), str(gap), prefix, "1" if advert else "0"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


class Daemon:
    def __init__(self, tmp, port, hook=True, extra=(), prlimit=None, default_socket=False, env_extra=None, link=None,
                 name=None):
        """`link`: the daemon's link options (default --tcp 127.0.0.1:PORT). With `default_socket` or
        a `name`, the socket is in XDG_RUNTIME_DIR (= tmp) where the command line finds it."""
        self.tmp = Path(tmp)
        if name:
            self.sock = str(self.tmp / "pocketmesh" / f"{name}.sock")
        elif default_socket:
            self.sock = str(self.tmp / "pocketmesh" / f"tcp-127.0.0.1-{port}.sock")
        else:
            self.sock = str(self.tmp / "d.sock")
        self.state = str(self.tmp / "state")
        self.log = open(self.tmp / "daemon.log", "a")
        link = link or ["--tcp", f"127.0.0.1:{port}"]
        cmd = [str(BIN), "daemon", *link, "--state-dir", self.state, "--drain-interval", "2", *extra]
        if name:
            cmd += ["--name", name]
        elif not default_socket:
            cmd += ["--socket", self.sock]
        if hook:
            script = self.tmp / "hook.sh"
            if not script.exists():
                script.write_text('#!/bin/sh\nread -r json\nprintf "%s|%s\\n" "$POCKETMESH_ID" "$POCKETMESH_TEXT" >> "$HOOK_OUT"\n')
                script.chmod(0o755)
            cmd += ["--on-message", str(script)]
        if prlimit:
            cmd = ["prlimit", *prlimit, "--", *cmd]
        env = dict(os.environ, HOOK_OUT=str(self.tmp / "hook.txt"), XDG_RUNTIME_DIR=str(self.tmp))
        env.pop("NOTIFY_SOCKET", None)
        env.update(env_extra or {})
        if prlimit:
            # The size limit would also stop the daemon's own log file: log through a pipe.
            self.proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env)
            out = self.log

            def copy():
                for line in self.proc.stdout:
                    out.write(line.decode(errors="replace"))
                    out.flush()
            threading.Thread(target=copy, daemon=True).start()
        else:
            self.proc = subprocess.Popen(cmd, stdout=self.log, stderr=self.log, env=env)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        self.log.close()

    def call(self, req, timeout=10):
        deadline = time.time() + timeout
        while True:
            try:
                with socket.socket(socket.AF_UNIX) as s:
                    s.settimeout(timeout)
                    s.connect(self.sock)
                    s.sendall((json.dumps(req) + "\n").encode())
                    buf = b""
                    while b"\n" not in buf:
                        chunk = s.recv(65536)
                        if not chunk:
                            break
                        buf += chunk
                    return json.loads(buf.split(b"\n")[0])
            except (FileNotFoundError, ConnectionRefusedError):
                if time.time() > deadline:
                    raise
                time.sleep(0.05)

    def wait_ready(self, timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.call({"id": 1, "op": "status"}, timeout=2).get("state") == "ready":
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.1)
        raise AssertionError("daemon not ready: " + (self.tmp / "daemon.log").read_text()[-2000:])

    def messages(self, thread="0"):
        r = self.call({"id": 2, "op": "history", "thread": thread, "limit": 10000})
        assert r["ok"], r
        return r["messages"]

    def texts(self, thread="0"):
        return [m["text"] for m in self.messages(thread)]


def log_files(state):
    return [p for p in Path(state).glob("*/messages*.log")]


def tear_tail(state, rng):
    """Appends a partial record (random bytes) to the message log, as an interrupted write leaves it."""
    for p in log_files(state):
        if p.name == "messages.log":
            with open(p, "ab") as f:
                f.write(bytes(rng.randrange(256) for _ in range(rng.randrange(1, 40))))


def wait_for(pred, timeout, step=0.2):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if pred():
            return True
        time.sleep(step)
    return pred()


def hook_lines(tmp):
    p = Path(tmp) / "hook.txt"
    return p.read_text().splitlines() if p.exists() else []


@pytest.fixture
def mesh():
    m = Mesh()
    yield m
    m.close()


@pytest.fixture
def tmpdir_short():
    # Unix socket paths must stay under 108 bytes.
    d = tempfile.mkdtemp(prefix="pmd-")
    yield d
    subprocess.run(["rm", "-rf", d])


def test_power_cuts_lose_nothing_and_hooks_run_once(mesh, tmpdir_short):
    rng = random.Random(int(os.environ.get("POCKETMESH_SEED", "4242")))
    kills = int(os.environ.get("POCKETMESH_POWERCUT_KILLS", "12"))
    n = 240
    d = Daemon(tmpdir_short, mesh.nodes[0][2])
    try:
        _power_cuts(d, mesh, tmpdir_short, rng, kills, n)
    finally:
        DAEMONS[-1].stop()


DAEMONS = []


def _power_cuts(d, mesh, tmpdir_short, rng, kills, n):
    DAEMONS.append(d)
    d.wait_ready()
    sender = start_sender(tmpdir_short, mesh.nodes[1][2], n, 0.02, "pc")
    for _ in range(kills):
        time.sleep(rng.uniform(0.05, 0.7))
        d.kill()
        if rng.random() < 0.6:
            tear_tail(d.state, rng)
        d = Daemon(tmpdir_short, mesh.nodes[0][2])
        DAEMONS.append(d)
        time.sleep(rng.uniform(0.0, 0.3))
    assert sender.wait(120) == 0, sender.stderr.read()
    d.wait_ready(30)
    d.call({"id": 3, "op": "sync"})
    # The radio may still hold many of the messages (each restart drains it anew, a loaded machine
    # drains slowly, and `sync` only starts a drain): counting what is stored before the radio is
    # empty would count too few, and the hook would then have seen "more" than was stored. The
    # radio hands its queue over in order, so once a last message sent now (no power cut can take
    # it) is stored, every message before it has been stored or lost in flight.
    assert start_sender(tmpdir_short, mesh.nodes[1][2], 1, 0, "last").wait(60) == 0
    assert wait_for(lambda: "last-0" in d.texts(), 120), "the last message was not stored"
    stored = d.messages()
    texts = [m["text"] for m in stored]
    expected = {f"pc-{i}" for i in range(n)} | {"last-0"}
    assert len(texts) == len(set(texts)), "a message was stored twice"
    assert set(texts) <= expected
    missing = expected - set(texts)
    print(f"power cuts: {kills} kills, {len(texts) - 1} of {n} stored once, {len(missing)} lost in flight")
    # A power cut can lose at most the one frame in flight.
    assert len(missing) <= kills, f"{len(missing)} messages lost with {kills} kills: {sorted(missing)[:20]}"

    # Every stored message is delivered to the hook once the hook's cursor (every id up to it
    # delivered, a run's line written before its hook exited) reaches the newest stored id.
    newest = max(m["id"] for m in stored)
    assert wait_for(lambda: d.call({"id": 5, "op": "status"}).get("hook_cursor", 0) >= newest, 120), \
        (newest, d.call({"id": 6, "op": "status"}))
    lines = hook_lines(tmpdir_short)
    ids = [l.split("|", 1)[0] for l in lines]
    assert len(ids) == len(set(ids)), "the hook saw a message twice"
    by_id = {str(m["id"]): m["text"] for m in stored}
    wrong = [l for l in lines if by_id.get(l.split("|", 1)[0]) != l.split("|", 1)[1]]
    assert not wrong, f"hook runs with an id the store does not give that text: {wrong[:10]}"
    hooked = [l.split("|", 1)[1] for l in lines]
    assert sorted(hooked) == sorted(texts), "the hook did not see each stored message exactly once"
    log = (Path(tmpdir_short) / "daemon.log").read_text()
    assert "torn tail" in log or kills == 0


class Proxy:
    """A loopback TCP forwarder to `target` that can be taken down (connections cut, new ones refused)."""

    def __init__(self, target):
        self.target = target
        self.listen = socket.socket()
        self.listen.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listen.bind(("127.0.0.1", 0))
        self.listen.listen(4)
        self.port = self.listen.getsockname()[1]
        self.is_up = True
        self.conns = []
        self.lock = threading.Lock()
        threading.Thread(target=self._serve, daemon=True).start()

    @staticmethod
    def _shut(*socks):
        for s in socks:
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _pipe(self, a, b):
        try:
            while True:
                data = a.recv(4096)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        self._shut(a, b)

    def _serve(self):
        while True:
            try:
                c, _ = self.listen.accept()
            except OSError:
                return
            with self.lock:
                if not self.is_up:
                    c.close()
                    continue
                u = socket.create_connection(("127.0.0.1", self.target))
                self.conns.append((c, u))
            threading.Thread(target=self._pipe, args=(c, u), daemon=True).start()
            threading.Thread(target=self._pipe, args=(u, c), daemon=True).start()

    def down(self):
        with self.lock:
            self.is_up = False
            for c, u in self.conns:
                for s in (c, u):
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                        s.close()
                    except OSError:
                        pass
            self.conns.clear()

    def up(self):
        with self.lock:
            self.is_up = True

    def garbage(self):
        """Sends random bytes without a '>' (so between frames) to the daemon side of each connection."""
        with self.lock:
            for c, _ in self.conns:
                c.sendall(bytes(b for b in os.urandom(300) if b != 0x3E))

    def close(self):
        self.down()
        self.listen.close()


def test_link_faults_peer_gone_and_back_and_garbage(mesh, tmpdir_short):
    """A proxy between the daemon and the peer drops the link, refuses it for a while, and sends garbage."""
    proxy = Proxy(mesh.nodes[0][2])
    port = proxy.port

    def cut(up_again_after):
        proxy.down()
        time.sleep(up_again_after)
        proxy.up()

    d = Daemon(tmpdir_short, port, hook=False)
    try:
        d.wait_ready()
        # The daemon must skip it and keep the link.
        proxy.garbage()
        time.sleep(0.5)
        assert d.call({"id": 1, "op": "ping"})["ok"]
        # Messages sent while the radio link is down wait in the radio's queue.
        proxy.down()
        sender = start_sender(tmpdir_short, mesh.nodes[1][2], 20, 0.05, "lf")
        time.sleep(1.5)
        assert d.call({"id": 2, "op": "status"})["state"] == "down"
        proxy.up()
        assert sender.wait(60) == 0
        d.wait_ready(30)
        assert wait_for(lambda: len(d.texts()) >= 20, 20), d.texts()
        # Cut during a burst (a reboot mid-sync looks the same from here): reconnect and keep going.
        sender = start_sender(tmpdir_short, mesh.nodes[1][2], 30, 0.03, "lg")
        time.sleep(0.4)
        cut(1.0)
        assert sender.wait(60) == 0
        d.wait_ready(30)
        d.call({"id": 3, "op": "sync"})
        wait_for(lambda: len([t for t in d.texts() if t.startswith("lg-")]) >= 29, 20)
        texts = d.texts()
        assert len(texts) == len(set(texts))
        assert {f"lf-{i}" for i in range(20)} <= set(texts)
        assert len([t for t in texts if t.startswith("lg-")]) >= 29  # at most the frame in flight at the cut
        log = (Path(tmpdir_short) / "daemon.log").read_text()
        assert "link: lost" in log and "reconnecting in" in log
    finally:
        d.stop()
        proxy.close()


def test_api_protocol_subscription_and_send(mesh, tmpdir_short):
    d = Daemon(tmpdir_short, mesh.nodes[0][2], hook=False)
    try:
        d.wait_ready()
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(10)
            s.connect(d.sock)
            f = s.makefile("rwb")

            def ask(line):
                f.write(line.encode() + b"\n")
                f.flush()
                return json.loads(f.readline())

            assert ask("garbage")["error"]["code"] == "usage"
            assert ask('{"id":2,"op":"nope"}')["error"]["exit"] == 2
            assert ask('{"id":3,"op":"send","to":"nobody-here","text":"x"}')["error"]["exit"] == 6
            assert ask('{"id":4,"op":"history","thread":"nobody"}')["error"]["code"] == "not_found"
            assert ask("{" * 100)["ok"] is False
            assert ask('{"id":5,"op":"ping"}')["ok"] is True
            assert ask('{"id":6,"op":"subscribe"}')["subscribed"] is True
            sender = start_sender(tmpdir_short, mesh.nodes[1][2], 3, 0.1, "ev", advert=True)
            seen = []
            deadline = time.time() + 30
            while len(seen) < 3 and time.time() < deadline:
                ev = json.loads(f.readline())
                if ev.get("event") == "message":
                    seen.append(ev["message"]["text"])
            assert seen == ["ev-0", "ev-1", "ev-2"]
            assert sender.wait(30) == 0
        # The peer's advert made it a contact: a direct message goes through the outbox and is acked.
        assert wait_for(lambda: any(c["name"] == mesh.nodes[1][0] for c in d.call({"id": 7, "op": "contacts"})["contacts"]), 20)
        assert d.call({"id": 10, "op": "advert", "flood": True})["ok"]  # so the peer knows our key
        time.sleep(1)
        r = d.call({"id": 8, "op": "send", "to": mesh.nodes[1][0], "text": "hello from the daemon", "wait": True}, timeout=60)
        assert r["ok"], r
        assert r["message"]["status"] == "acked"
        h = d.call({"id": 9, "op": "history", "thread": mesh.nodes[1][0]})
        assert h["messages"][-1]["text"] == "hello from the daemon"
        # chats and history also work from the store directly, read-only, while the daemon runs.
        out = subprocess.run([str(BIN), "history", "Public", "--state-dir", d.state, "--json"], capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert [m["text"] for m in json.loads(out.stdout)["messages"]][-3:] == ["ev-0", "ev-1", "ev-2"]
        out = subprocess.run([str(BIN), "chats", "--state-dir", d.state, "--json"], capture_output=True, text=True)
        assert out.returncode == 0 and len(json.loads(out.stdout)) == 2
        out = subprocess.run([str(BIN), "history", "nobody", "--state-dir", d.state], capture_output=True, text=True)
        assert out.returncode == 6
    finally:
        d.stop()


def test_write_errors_keep_the_daemon_running_and_lose_nothing(mesh, tmpdir_short):
    # First run: store a few messages normally.
    d = Daemon(tmpdir_short, mesh.nodes[0][2], hook=False)
    d.wait_ready()
    assert start_sender(tmpdir_short, mesh.nodes[1][2], 5, 0.05, "ok").wait(30) == 0
    assert wait_for(lambda: len(d.texts()) == 5, 20)
    d.stop()
    size = sum(p.stat().st_size for p in log_files(d.state))
    # Second run under a file size limit just above the log: appends fail (EFBIG), as on a full disk.
    d = Daemon(tmpdir_short, mesh.nodes[0][2], hook=False, prlimit=[f"--fsize={size + 64}"])
    try:
        d.wait_ready()
        assert start_sender(tmpdir_short, mesh.nodes[1][2], 10, 0.05, "full").wait(30) == 0
        log = Path(tmpdir_short) / "daemon.log"
        assert wait_for(lambda: "cannot store a received message" in log.read_text(), 20), log.read_text()[-2000:]
        assert "waits in the store's inbox (on disk)" in log.read_text()
        assert d.call({"id": 1, "op": "ping"})["ok"]
        status = d.call({"id": 2, "op": "status"})
        assert status["held"] == 1 and status["held_in_memory"] == 0, status
        assert d.proc.poll() is None
    finally:
        d.stop()  # SIGTERM while the log still cannot be written
    # Third run with room again: everything the radio still had, and the old messages, are there.
    d = Daemon(tmpdir_short, mesh.nodes[0][2], hook=False)
    try:
        d.wait_ready()
        d.call({"id": 3, "op": "sync"})
        texts = set()
        wait_for(lambda: len(set(d.texts())) >= 5 + 10, 20)
        texts = d.texts()
        assert len(texts) == len(set(texts))
        assert {f"ok-{i}" for i in range(5)} <= set(texts)
        # Nothing is lost: the one message taken off the radio waited in the store's inbox, the
        # rest stayed on the radio.
        assert {f"full-{i}" for i in range(10)} <= set(texts), sorted(texts)
    finally:
        d.stop()


def received_by(tmp, port):
    """Drains the queue of the companion node on `port` (no daemon there) and returns the texts."""
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp))
    r = subprocess.run([str(BIN), "sync", "--tcp", f"127.0.0.1:{port}", "--json"], capture_output=True, text=True,
                       env=env, timeout=60)
    assert r.returncode == 0, r.stderr
    return [m["text"] for m in json.loads(r.stdout)]


def introduce(d, tmp, name1, port1):
    """The daemon's radio learns node 1 as a contact and node 1 learns its key; node 1's queue is emptied."""
    assert d.call({"id": 1, "op": "advert", "flood": True})["ok"]
    assert start_sender(tmp, port1, 0, 0, "x", advert=True).wait(30) == 0
    assert wait_for(lambda: any(c["name"] == name1 for c in d.call({"id": 2, "op": "contacts"})["contacts"]), 20)
    received_by(tmp, port1)


def test_outbox_survives_restarts_and_is_delivered_once(mesh, tmpdir_short):
    """A message queued while the radio is unreachable survives SIGKILLs of the daemon and is
    delivered once when the radio is back; its delivery state is on disk and it is not sent again."""
    name1, _, port1 = mesh.nodes[1]
    proxy = Proxy(mesh.nodes[0][2])
    d = Daemon(tmpdir_short, proxy.port, hook=False)
    try:
        d.wait_ready()
        introduce(d, tmpdir_short, name1, port1)

        proxy.down()
        assert wait_for(lambda: d.call({"id": 3, "op": "status"})["state"] == "down", 20)
        r = d.call({"id": 4, "op": "send", "to": name1, "text": "queued while the radio is away"})
        assert r["ok"], r
        mid = r["message"]["id"]
        assert r["message"]["status"] == "pending"
        # SIGKILL twice while the radio cannot take it; each new daemon has the item from disk.
        for _ in range(2):
            d.kill()
            d = Daemon(tmpdir_short, proxy.port, hook=False)
            outbox = d.call({"id": 5, "op": "outbox"})
            assert outbox["ok"], outbox
            assert [(i["id"], i["text"], i["attempts"]) for i in outbox["outbox"]] == [(mid, "queued while the radio is away", 0)]
        proxy.up()
        d.wait_ready(40)

        def delivered():
            m = [m for m in d.call({"id": 6, "op": "history", "thread": name1})["messages"] if m["id"] == mid]
            return m and m[0]["status"] in ("acked", "failed") and m[0]
        wait_for(delivered, 60)
        m = delivered()
        assert m and m["status"] == "acked", (m, (Path(tmpdir_short) / "daemon.log").read_text()[-3000:])
        assert m["attempts"] >= 1
        assert d.call({"id": 7, "op": "outbox"})["outbox"] == []
        got = received_by(tmpdir_short, port1)
        assert got.count("queued while the radio is away") == 1, got

        # Restarted again (SIGKILL): the delivery state was on disk, nothing is sent again.
        d.kill()
        d = Daemon(tmpdir_short, proxy.port, hook=False)
        d.wait_ready(40)
        assert d.call({"id": 8, "op": "outbox"})["outbox"] == []
        again = [m for m in d.call({"id": 9, "op": "history", "thread": name1})["messages"] if m["id"] == mid]
        assert again[0]["status"] == "acked" and again[0]["attempts"] == m["attempts"]
        time.sleep(3)
        assert "queued while the radio is away" not in received_by(tmpdir_short, port1)
        log = (Path(tmpdir_short) / "daemon.log").read_text()
        assert log.count(f"outbox: message {mid} acknowledged") == 1
    finally:
        d.stop()
        proxy.close()


class AckHoldingProxy(Proxy):
    """A Proxy that reads the companion frames both ways: it counts SEND_TXT_MSG (0x02) from the
    daemon and, while `hold_acks` is set, keeps SEND_CONFIRMED pushes (0x82) from the radio back.
    `release_acks()` hands them to the connection open then, as a radio pushes SEND_CONFIRMED to
    whichever app is connected when the ACK comes in."""

    def __init__(self, target):
        self.sends = 0
        self.hold_acks = False
        self.held = []
        super().__init__(target)

    def _pipe(self, a, b):
        with self.lock:
            from_app = any(a is c for c, _ in self.conns)
        buf = b""
        try:
            while True:
                data = a.recv(4096)
                if not data:
                    break
                buf += data
                out = b""
                while len(buf) >= 3 and len(buf) >= 3 + int.from_bytes(buf[1:3], "little"):
                    n = 3 + int.from_bytes(buf[1:3], "little")
                    frame, buf = buf[:n], buf[n:]
                    code = frame[3] if n > 3 else None
                    if from_app and code == 0x02:
                        self.sends += 1
                    if not from_app and code == 0x82 and self.hold_acks:
                        self.held.append(frame)
                        continue
                    out += frame
                if out:
                    b.sendall(out)
        except OSError:
            pass
        self._shut(a, b)

    def release_acks(self):
        with self.lock:
            c, _ = self.conns[-1]
            for f in self.held:
                c.sendall(f)
            self.held = []
            self.hold_acks = False


def test_an_ack_for_a_message_sent_before_a_sigkill_is_taken_and_nothing_is_resent(mesh, tmpdir_short):
    """The daemon is SIGKILLed after the radio took a message (SENT) and before its ACK came back.
    The restarted daemon does not send it again while the saved ACK deadline runs; the radio's
    SEND_CONFIRMED, pushed to the new connection, marks it acked with the radio's round trip."""
    name1, _, port1 = mesh.nodes[1]
    proxy = AckHoldingProxy(mesh.nodes[0][2])
    d = Daemon(tmpdir_short, proxy.port, hook=False)
    try:
        d.wait_ready()
        introduce(d, tmpdir_short, name1, port1)

        proxy.hold_acks = True
        text = "sent once across a SIGKILL"
        r = d.call({"id": 3, "op": "send", "to": name1, "text": text})
        assert r["ok"], r
        mid = r["message"]["id"]
        # The radio took it (SENT is on disk with its ACK code and deadline) and the ACK came back.
        assert wait_for(lambda: proxy.held and [i["attempts"] for i in d.call({"id": 4, "op": "outbox"})["outbox"]] == [1], 20), \
            (proxy.held, d.call({"id": 5, "op": "outbox"}))
        item = d.call({"id": 6, "op": "outbox"})["outbox"][0]
        assert item["next_attempt_at"] > time.time()
        sends = proxy.sends
        assert sends == 1
        rtt = int.from_bytes(proxy.held[0][8:12], "little")
        d.kill()

        d = Daemon(tmpdir_short, proxy.port, hook=False)
        d.wait_ready(40)
        assert "awaiting its ACK" in (Path(tmpdir_short) / "daemon.log").read_text()
        assert [(i["id"], i["attempts"]) for i in d.call({"id": 7, "op": "outbox"})["outbox"]] == [(mid, 1)]
        assert proxy.sends == sends, "the restarted daemon sent the message again before the ACK deadline"
        proxy.release_acks()

        def acked():
            m = [m for m in d.call({"id": 8, "op": "history", "thread": name1})["messages"] if m["id"] == mid]
            return m and m[0]["status"] == "acked" and m[0]
        assert wait_for(acked, 20), (Path(tmpdir_short) / "daemon.log").read_text()[-3000:]
        m = acked()
        assert m["attempts"] == 1 and m["round_trip_ms"] == rtt
        assert d.call({"id": 9, "op": "outbox"})["outbox"] == []
        # Past the deadline too: nothing more goes out, and node 1 has the message once.
        time.sleep(max(0.0, item["next_attempt_at"] - time.time()) + 2)
        assert proxy.sends == sends
        assert received_by(tmpdir_short, port1).count(text) == 1
        assert (Path(tmpdir_short) / "daemon.log").read_text().count(f"outbox: message {mid} acknowledged") == 1
    finally:
        d.stop()
        proxy.close()
