"""The command line while a daemon owns the radio (it goes through the daemon's socket), one-shot
beacon commands and their exit codes, and the systemd notification protocol."""
import json
import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

# The fixtures (a fresh two-node peer, a short temporary folder for socket paths) are shared.
from test_daemon_faults import BIN, Daemon, Mesh, mesh, received_by, start_sender, tmpdir_short, wait_for  # noqa: F401


def cli(tmp, *args, timeout=60):
    env = dict(os.environ, XDG_RUNTIME_DIR=str(tmp))
    env.pop("POCKETMESH_NO_DAEMON", None)
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, env=env, timeout=timeout)


def test_cli_goes_through_the_daemon(mesh, tmpdir_short):
    name0, key0, port0 = mesh.nodes[0]
    name1, _, port1 = mesh.nodes[1]
    tcp = ["--tcp", f"127.0.0.1:{port0}"]
    d = Daemon(tmpdir_short, port0, hook=False, default_socket=True)
    try:
        d.wait_ready()
        r = cli(tmpdir_short, "info", *tcp, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["public_key"] == key0
        # The peer takes one TCP client: had the CLI connected itself, the daemon would have lost its link.
        assert cli(tmpdir_short, "advert", *tcp, "--flood").returncode == 0
        assert start_sender(tmpdir_short, port1, 0, 0, "x", advert=True).wait(30) == 0
        assert wait_for(lambda: name1 in cli(tmpdir_short, "contacts", *tcp).stdout, 20)
        r = cli(tmpdir_short, "send", *tcp, name1, "hello", "through", "the", "daemon")
        assert r.returncode == 0, r.stderr
        assert "acked" in r.stdout
        r = cli(tmpdir_short, "channel", "send", *tcp, "0", "beacon")
        assert r.returncode == 0, r.stderr
        assert cli(tmpdir_short, "send", *tcp, "nobody-by-that-name", "x").returncode == 6
        # listen through the daemon sees messages as they arrive.
        listen = subprocess.Popen([str(BIN), "listen", *tcp, "--for", "6", "--json"], stdout=subprocess.PIPE, text=True,
                                  env=dict(os.environ, XDG_RUNTIME_DIR=str(tmpdir_short)))
        time.sleep(1)
        assert start_sender(tmpdir_short, port1, 3, 0.1, "li").wait(30) == 0
        out, _ = listen.communicate(30)
        texts = [json.loads(l).get("text") for l in out.splitlines() if '"message"' in l]
        assert texts == [f"{name1}: li-{i}" for i in range(3)]
        log = (Path(tmpdir_short) / "daemon.log").read_text()
        assert "link: lost" not in log
        # The daemon recorded what the CLI sent through it.
        h = cli(tmpdir_short, "history", name1, "--state-dir", d.state, "--json")
        assert json.loads(h.stdout)["messages"][-1]["text"] == "hello through the daemon"
        h = cli(tmpdir_short, "history", "Public", "--state-dir", d.state, "--json")
        assert "beacon" in [m["text"] for m in json.loads(h.stdout)["messages"]]
        # Radio gone: one-shot commands fail fast with the link exit code.
        mesh.close()
        assert wait_for(lambda: d.call({"id": 1, "op": "status"})["state"] == "down", 20)
        t0 = time.time()
        r = cli(tmpdir_short, "channel", "send", *tcp, "0", "beacon")
        assert r.returncode == 3, (r.returncode, r.stderr)
        assert time.time() - t0 < 5
        assert "daemon" in r.stderr
    finally:
        d.stop()


def test_systemd_ready_and_watchdog(mesh, tmpdir_short):
    path = str(Path(tmpdir_short) / "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(20)
    d = Daemon(tmpdir_short, mesh.nodes[0][2], hook=False,
               env_extra={"NOTIFY_SOCKET": path, "WATCHDOG_USEC": "400000"})
    try:
        got = []
        deadline = time.time() + 20
        while time.time() < deadline and not (any("READY=1" in g for g in got) and any(g == "WATCHDOG=1" for g in got)
                                               and any(g.startswith("STATUS=connected to tcp:") for g in got)):
            got.append(s.recv(4096).decode())
        # Ready with the API (the radio or not), then the radio's state in STATUS=.
        assert got[0].startswith("READY=1\nSTATUS=serving the API"), got
        assert any(g.startswith("STATUS=connected to tcp:") for g in got), got
        assert "WATCHDOG=1" in got
        d.stop()
        assert any("STOPPING=1" in s.recv(4096).decode() for _ in range(20))
    finally:
        d.stop()
        s.close()


def tunnel_take_one(sock):
    """A raw tunnel client that asks for one queued message, gets it, and goes away (a killed `sync`)."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(10)
        s.connect(sock)
        s.sendall(b'{"id":1,"op":"tunnel"}\n')
        buf = b""
        while b"\n" not in buf:
            buf += s.recv(1)
        assert json.loads(buf)["ok"], buf
        s.sendall(b"<\x01\x00\x0a")  # SYNC_NEXT_MESSAGE
        got = b""
        while True:
            while len(got) < 3:
                got += s.recv(4096)
            n = got[1] | got[2] << 8
            while len(got) < 3 + n:
                got += s.recv(4096)
            frame, got = got[3:3 + n], got[3 + n:]
            if frame[0] in (0x10, 0x11, 0x1B, 0x0A):
                return frame


def test_sync_through_the_daemon_prints_each_message_once(mesh, tmpdir_short):
    name0, _, port0 = mesh.nodes[0]
    name1, _, port1 = mesh.nodes[1]
    tcp = ["--tcp", f"127.0.0.1:{port0}"]
    tcp1 = ["--tcp", f"127.0.0.1:{port1}"]  # no daemon there: the CLI talks to it directly
    d = Daemon(tmpdir_short, port0, hook=False, default_socket=True)
    try:
        d.wait_ready()
        # Introduce the nodes so node 1 can send a direct message to the daemon's radio.
        assert cli(tmpdir_short, "advert", *tcp, "--flood").returncode == 0
        assert start_sender(tmpdir_short, port1, 0, 0, "x", advert=True).wait(30) == 0
        assert wait_for(lambda: name0 in cli(tmpdir_short, "contacts", *tcp1).stdout, 20)
        assert wait_for(lambda: name1 in cli(tmpdir_short, "contacts", *tcp).stdout, 20)

        def stored(prefix):
            return [t for t in d.texts() if t.startswith(prefix)]

        # Messages arrive while no CLI is connected: the daemon drains them into its store.
        assert start_sender(tmpdir_short, port1, 3, 0.1, "s1").wait(30) == 0
        r = cli(tmpdir_short, "send", *tcp1, name0, "direct", "one", "--timeout", "20", timeout=90)
        assert r.returncode == 0, r.stderr
        assert wait_for(lambda: len(stored("s1-")) == 3, 20), d.texts()
        assert wait_for(lambda: "direct one" in d.texts(name1), 20)
        first = cli(tmpdir_short, "sync", *tcp)
        assert first.returncode == 0, first.stderr
        lines = first.stdout.splitlines()
        assert len(lines) == 4, first.stdout
        for t in ["s1-0", "s1-1", "s1-2", "direct one"]:
            assert len([l for l in lines if l.endswith(": " + t)]) == 1, (t, first.stdout)
        assert [l for l in lines if l.endswith("direct one")][0].split("] ", 1)[1].startswith(name1 + ": ")
        # The second sync has nothing new.
        second = cli(tmpdir_short, "sync", *tcp)
        assert second.returncode == 0, second.stderr
        assert second.stdout.strip() == "", second.stdout
        # New messages: only they, in JSON too.
        assert start_sender(tmpdir_short, port1, 2, 0.1, "s2").wait(30) == 0
        assert wait_for(lambda: len(stored("s2-")) == 2, 20), d.texts()
        third = cli(tmpdir_short, "sync", *tcp, "--json")
        assert third.returncode == 0, third.stderr
        got = json.loads(third.stdout)
        assert [m["text"] for m in got] == [f"{name1}: s2-0", f"{name1}: s2-1"], got
        assert all(m["kind"] == "channel" and m["channel"] == 0 for m in got)
        assert json.loads(cli(tmpdir_short, "sync", *tcp, "--json").stdout) == []
        # A sync that goes away before the end (killed) moves nothing: the next one gets it all.
        assert start_sender(tmpdir_short, port1, 2, 0.1, "s3").wait(30) == 0
        assert wait_for(lambda: len(stored("s3-")) == 2, 20), d.texts()
        frame = tunnel_take_one(d.sock)
        assert frame[0] == 0x11 and frame.endswith(b"s3-0"), frame
        again = json.loads(cli(tmpdir_short, "sync", *tcp, "--json").stdout)
        assert [m["text"] for m in again] == [f"{name1}: s3-0", f"{name1}: s3-1"], again
        # The cursor is on disk: a restarted daemon does not hand them out again.
        d.stop()
        d = Daemon(tmpdir_short, port0, hook=False, default_socket=True)
        d.wait_ready()
        assert json.loads(cli(tmpdir_short, "sync", *tcp, "--json").stdout) == []
        last = d.call({"id": 3, "op": "history", "thread": "0"})["messages"][-1]
        assert last["text"] == "s3-1"
        assert d.call({"id": 2, "op": "status"})["sync_cursor"] == last["id"]
        log = (Path(tmpdir_short) / "daemon.log").read_text()
        assert "link: lost" not in log
    finally:
        d.stop()


def has_interpreter(path):
    """Whether an ELF executable names a program interpreter (is dynamically linked); a wrapper
    script (the aarch64 binary under qemu) counts as dynamic."""
    data = Path(path).read_bytes()
    if data[:4] != b"\x7fELF" or data[4] != 2:
        return True
    little = data[5] == 1
    order = "little" if little else "big"
    phoff = int.from_bytes(data[32:40], order)
    phentsize = int.from_bytes(data[54:56], order)
    phnum = int.from_bytes(data[56:58], order)
    return any(int.from_bytes(data[phoff + i * phentsize:phoff + i * phentsize + 4], order) == 3 for i in range(phnum))


def test_daemon_over_a_serial_pty(mesh, tmpdir_short):
    """The daemon's link is a pty (socat) bridged to the peer's TCP port, as a USB radio would be;
    CLI commands for that serial port go through the daemon while it holds the pty."""
    if shutil.which("socat") is None:
        pytest.fail("socat is not installed")
    name0, key0, port0 = mesh.nodes[0]
    name1, _, port1 = mesh.nodes[1]
    tty = os.path.join(tmpdir_short, "ttyMC0")
    bridge = subprocess.Popen(["socat", f"PTY,link={tty},raw,echo=0", f"TCP:127.0.0.1:{port0}"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    d = None
    try:
        assert wait_for(lambda: os.path.exists(tty), 5), "socat did not create the pty"
        serial = ["--serial", tty]
        d = Daemon(tmpdir_short, port0, hook=False, link=serial, name="pty0")
        d.wait_ready()
        assert d.call({"id": 1, "op": "status"})["radio"] == key0
        # info goes through the daemon's socket (the pty has one reader: the daemon).
        r = cli(tmpdir_short, "info", *serial, "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["public_key"] == key0
        # Incoming messages are stored.
        assert start_sender(tmpdir_short, port1, 3, 0.1, "pty", advert=True).wait(30) == 0
        assert wait_for(lambda: [t for t in d.texts() if t.startswith("pty-")] == ["pty-0", "pty-1", "pty-2"], 20), d.texts()
        r = cli(tmpdir_short, "sync", *serial, "--json")
        assert r.returncode == 0, r.stderr
        assert [m["text"] for m in json.loads(r.stdout)] == [f"{name1}: pty-{i}" for i in range(3)]
        # A direct message sent with the CLI through the daemon is acked and lands once.
        assert cli(tmpdir_short, "advert", *serial, "--flood").returncode == 0
        assert wait_for(lambda: name1 in cli(tmpdir_short, "contacts", *serial).stdout, 20)
        r = cli(tmpdir_short, "send", *serial, name1, "over", "the", "pty", "--json", "--timeout", "20", timeout=90)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["status"] == "acked"
        assert received_by(tmpdir_short, port1).count("over the pty") == 1
        # It went through the daemon: the daemon recorded it.
        assert d.texts(name1)[-1] == "over the pty"
        log = (Path(tmpdir_short) / "daemon.log").read_text()
        assert "link: lost" not in log and "serial:" in log
        # A static binary (the release build) loads no shared library for a serial port: glibc's
        # dlopen of libudev there brings a second libc and the loader into the daemon.
        if not has_interpreter(BIN):
            maps = Path(f"/proc/{d.proc.pid}/maps").read_text()
            assert ".so" not in maps, [l for l in maps.splitlines() if ".so" in l]
    finally:
        if d:
            d.stop()
        bridge.terminate()
        try:
            bridge.wait(5)
        except subprocess.TimeoutExpired:
            bridge.kill()
