"""`pocketmesh chat` in a real terminal (tmux send-keys / capture-pane) against `pocketmesh sim`:
sending with delivery states updated in place, receiving while typing, switching conversations
with Tab completion, split messages joined, heard repeats on a channel, repeater commands,
control sequences from the mesh made harmless, resizing, the radio and the daemon going away and
coming back, and the terminal restored on every way out (Ctrl-D, Ctrl-C, /quit, a crash).

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh). Needs tmux.
"""
import os
import pathlib
import re
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from test_sim_clients import Sim, free_port_base

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)"),
    pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux"),
]


class Term:
    """A shell in its own tmux server (a private socket), sized rows x cols."""

    def __init__(self, env, cols=100, rows=24):
        self.sock = tempfile.mktemp(prefix="pm-tmux-")
        self.env = env
        self.tmux("new-session", "-d", "-s", "t", "-x", str(cols), "-y", str(rows), "bash --norc --noprofile -i")
        self.tmux("set-option", "-t", "t", "status", "off")
        exports = " ".join(f"{k}='{v}'" for k, v in env.items())
        self.keys(f"export {exports} PS1='$ '", "Enter")
        self.keys("clear", "Enter")

    def tmux(self, *args):
        return subprocess.run(["tmux", "-S", self.sock, *args], capture_output=True, text=True, timeout=10)

    def keys(self, *keys, literal=False):
        self.tmux("send-keys", "-t", "t", *(["-l"] if literal else []), *keys)

    def type(self, text):
        self.keys(text, literal=True)

    def screen(self):
        return self.tmux("capture-pane", "-p", "-t", "t").stdout

    def wait(self, pattern, timeout=30):
        deadline = time.time() + timeout
        while time.time() < deadline:
            s = self.screen()
            if re.search(pattern, s, re.M):
                return s
            time.sleep(0.2)
        raise AssertionError(f"{pattern!r} not on the screen:\n{self.screen()}")

    def kill(self):
        self.tmux("kill-server")

    def assert_terminal_restored(self):
        """The shell's terminal is back in canonical mode with echo and signals."""
        self.keys("stty -a | tr ' ' '\\n' | grep -xE -- '-?(icanon|echo|isig)' | tr '\\n' ' '; echo", "Enter")
        s = self.wait(r"icanon")
        assert "-icanon" not in s and "-echo" not in s and "-isig" not in s, s


def run(env, *args, timeout=60):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=env)


@pytest.fixture(scope="module")
def world():
    """sim0 - rpt0 - sim1 (line), with adverts exchanged; a private state and runtime folder."""
    with tempfile.TemporaryDirectory(prefix="pm-chat-") as d:
        env = dict(os.environ, XDG_STATE_HOME=d + "/state", XDG_RUNTIME_DIR=d + "/run", XDG_CONFIG_HOME=d + "/config",
                   POCKETMESH_NO_DAEMON="1")
        os.makedirs(d + "/run", mode=0o700)
        sim = Sim("--repeaters", "1", "--seed", "7", nodes=2)
        for n in ("sim0", "sim1"):
            assert run(env, "-t", f"127.0.0.1:{sim.port(n)}", "advert", "--flood").returncode == 0
        deadline = time.time() + 20
        while time.time() < deadline:
            c0 = run(env, "-t", f"127.0.0.1:{sim.port('sim0')}", "contacts").stdout
            c1 = run(env, "-t", f"127.0.0.1:{sim.port('sim1')}", "contacts").stdout
            if "sim1" in c0 and "sim0" in c1 and "rpt0" in c0:
                break
            time.sleep(0.5)
        yield sim, env, d
        sim.stop()


def chat_env(env, **more):
    e = {k: env[k] for k in ("XDG_STATE_HOME", "XDG_RUNTIME_DIR", "XDG_CONFIG_HOME")}
    e.update(more)
    return e


def test_refuses_without_a_terminal(world):
    sim, env, _ = world
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port('sim0')}", "chat"], stdin=subprocess.DEVNULL,
                        capture_output=True, text=True, timeout=30, env=env)
    assert cp.returncode == 2
    assert "terminal" in cp.stderr and len(cp.stderr.strip().splitlines()) == 1


def test_unknown_conversation_is_not_found(world):
    sim, env, _ = world
    t = Term(chat_env(env, POCKETMESH_NO_DAEMON="1"))
    try:
        t.keys(f"{BIN} -t 127.0.0.1:{sim.port('sim0')} chat nobody-here; echo rc=$?", "Enter")
        s = t.wait(r"rc=\d+")
        assert "rc=6" in s and "nobody-here" in s
    finally:
        t.kill()


def test_direct_chat(world):
    sim, env, _ = world
    t = Term(chat_env(env, POCKETMESH_NO_DAEMON="1"))
    sim1 = ["-t", f"127.0.0.1:{sim.port('sim1')}"]
    try:
        t.keys(f"{BIN} -t 127.0.0.1:{sim.port('sim0')} chat sim1; echo rc=$?", "Enter")
        t.wait(r"sim1 \(contact\)")
        # Sending: the state is updated in place, on the message's own row.
        t.type("hello from the chat")
        t.keys("Enter")
        s = t.wait(r"me: hello from the chat  \[acked after \d+\.\d s\]")
        assert s.count("hello from the chat") == 1
        # Receiving while typing: the message appears above, the typed text stays.
        t.type("half typed")
        cp = run(env, *sim1, "send", "sim0", "an answer\x1b]0;pwned\x07 \x1b[2J")
        assert cp.returncode == 0, cp.stderr
        s = t.wait(r"sim1: an answer")
        assert re.search(r"sim1> half typed\s*$", s, re.M)
        assert "\\x1b]0;pwned\\x07" in s  # the escape is shown, not run
        # A newline in a message is shown as \n on the message's own row: it cannot start a row
        # that seems to be another sender's message.
        cp = run(env, *sim1, "send", "sim0", "see you\n12:00 rpt0: send me your key")
        assert cp.returncode == 0, cp.stderr
        s = t.wait(r"sim1: see you\\n12:00 rpt0: send me your key")
        assert not re.search(r"^12:00 rpt0:", s, re.M), s
        assert re.search(r"sim1> half typed\s*$", s, re.M)
        # Editing keys: Ctrl-A, Ctrl-E, Ctrl-W, left.
        t.keys("C-a")
        t.type("[")
        t.keys("C-e")
        t.type("]")
        s = t.wait(r"sim1> \[half typed\]")
        t.keys("C-w")
        t.wait(r"sim1> \[half\s*$")
        t.keys("C-u")
        # A split message from sim1 on the channel shows joined, with one unread in the title.
        long = " ".join(f"w{i}" for i in range(90))
        cp = run(env, *sim1, "channel", "send", "0", long, "--split")
        assert cp.returncode == 0, cp.stderr
        t.wait(r"unread: Public 1\b")
        time.sleep(4)  # the other parts arrive: still one unread message
        assert re.search(r"unread: Public 1\b", t.screen().splitlines()[0])
        # Tab completes the name; the conversation opens with the parts joined in order.
        t.type("/to Pub")
        t.keys("Tab")
        t.wait(r"sim1> /to Public")
        t.keys("Enter")
        t.wait(r"Public \(channel\)")
        s = t.wait(r"w89")
        flat = " ".join(s.split())
        assert "sim1: " + long in flat, s
        assert "unread" not in s.splitlines()[0]
        # A channel send: sent, then the repeater's echo.
        t.type("to everyone")
        t.keys("Enter")
        t.wait(r"me: to everyone  \[sent, heard 1 repeat\]")
        # History recall and /quit.
        t.keys("/quit", "Enter")
        s = t.wait(r"rc=\d+")
        assert "rc=0" in s
        t.assert_terminal_restored()
    finally:
        t.kill()


def test_history_from_the_store_and_repeater_commands(world):
    sim, env, _ = world
    t = Term(chat_env(env, POCKETMESH_NO_DAEMON="1"), cols=90, rows=30)
    try:
        t.keys(f"{BIN} -t 127.0.0.1:{sim.port('sim0')} chat sim1; echo rc=$?", "Enter")
        # What the earlier chat sent and received is in the store: scrollback shows it.
        t.wait(r"me: hello from the chat  \[acked")
        t.wait(r"sim1: an answer")
        t.type("/to rpt")
        t.keys("Tab", "Enter")
        t.wait(r"rpt0 \(repeater\)")
        t.keys("/login password", "Enter")
        t.wait(r"login rpt0: done", timeout=40)
        t.keys("/cmd ver", "Enter")
        t.wait(r"reply: v\d", timeout=40)
        t.keys("/status", "Enter")
        t.wait(r"uptime_s: \d+", timeout=40)
        t.keys("C-d")
        assert "rc=0" in t.wait(r"rc=\d+")
    finally:
        t.kill()


def test_resize_and_wide_text(world):
    sim, env, _ = world
    t = Term(chat_env(env, POCKETMESH_NO_DAEMON="1"), cols=80, rows=20)
    try:
        t.keys(f"{BIN} -t 127.0.0.1:{sim.port('sim0')} chat sim1; echo rc=$?", "Enter")
        t.wait(r"sim1 \(contact\)")
        t.type("漢字とemoji😀 " * 6)
        t.tmux("resize-window", "-t", "t", "-x", "40", "-y", "12")
        time.sleep(1)
        s = t.screen()
        lines = s.splitlines()
        assert len(lines) <= 12
        assert lines[0].startswith(" pocketmesh chat")
        assert any(l.startswith("sim1> ") or "emoji" in l for l in lines[-2:]), s
        t.keys("C-u", "Enter")
        t.tmux("resize-window", "-t", "t", "-x", "100", "-y", "24")
        t.wait(r"sim1 \(contact\) \| sim0")
        t.keys("C-c")
        assert "rc=0" in t.wait(r"rc=\d+")
    finally:
        t.kill()


def test_crash_restores_the_terminal(world):
    sim, env, _ = world
    t = Term(chat_env(env, POCKETMESH_NO_DAEMON="1"))
    try:
        t.keys(f"{BIN} -t 127.0.0.1:{sim.port('sim0')} chat sim1; echo rc=$?", "Enter")
        t.wait(r"sim1 \(contact\)")
        subprocess.run(["pkill", "-SEGV", "-f", f"127.0.0.1:{sim.port('sim0')} chat sim1"])
        s = t.wait(r"rc=\d+")
        assert "rc=139" in s
        t.assert_terminal_restored()
    finally:
        t.kill()


def test_through_a_daemon_that_goes_away_and_comes_back(world):
    sim, env, d = world
    denv = dict(env)
    denv.pop("POCKETMESH_NO_DAEMON")
    port = sim.port("sim0")

    def daemon():
        p = subprocess.Popen([str(BIN), "daemon", "-t", f"127.0.0.1:{port}"], env=denv,
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        deadline = time.time() + 30
        while time.time() < deadline:
            if run(denv, "-t", f"127.0.0.1:{port}", "info").returncode == 0:
                return p
            time.sleep(0.3)
        raise AssertionError("daemon did not come up")

    p = daemon()
    t = Term(chat_env(denv))
    sim1 = ["-t", f"127.0.0.1:{sim.port('sim1')}"]
    try:
        t.keys(f"{BIN} -t 127.0.0.1:{port} chat sim1; echo rc=$?", "Enter")
        t.wait(r"through the daemon: sim0")
        assert run(env, *sim1, "send", "sim0", "one via the daemon").returncode == 0
        t.wait(r"sim1: one via the daemon")
        t.type("reply via the daemon")
        t.keys("Enter")
        t.wait(r"me: reply via the daemon  \[acked after")
        # The daemon goes away: the chat reconnects (to the radio itself, now free).
        p.send_signal(signal.SIGTERM)
        p.wait(timeout=20)
        t.wait(r"\| sim0\s*$|\| sim0 \|", timeout=30)
        assert run(env, *sim1, "send", "sim0", "two while direct").returncode == 0
        t.wait(r"sim1: two while direct")
        # The daemon comes back and takes the radio: the chat follows it through the tunnel.
        p = daemon()
        t.wait(r"through the daemon: sim0", timeout=40)
        assert run(env, *sim1, "send", "sim0", "three via the daemon again").returncode == 0
        t.wait(r"sim1: three via the daemon again")
        t.keys("C-d")
        assert "rc=0" in t.wait(r"rc=\d+")
    finally:
        t.kill()
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
            p.wait(timeout=20)


def test_radio_goes_away_and_comes_back(world):
    _, env, d = world
    base = free_port_base(2)
    # A radio of its own (same seed: the same identities when it comes back).
    sim = Sim("--seed", "11", "--tcp-base", str(base), nodes=2)
    t = Term(chat_env(env, POCKETMESH_NO_DAEMON="1"))
    try:
        for n in ("sim0", "sim1"):
            run(env, "-t", f"127.0.0.1:{sim.port(n)}", "advert", "--flood")
        t.keys(f"{BIN} -t 127.0.0.1:{sim.port('sim0')} chat; echo rc=$?", "Enter")
        t.wait(r"pocketmesh chat")
        sim.stop()
        t.wait(r"radio (lost|unreachable)", timeout=20)
        t.keys("/to sim1", "Enter")
        t.type("typed while away")
        t.keys("Enter")
        t.wait(r"typed while away  \[waiting for the radio\]")
        sim = Sim("--seed", "11", "--tcp-base", str(base), nodes=2)
        t.wait(r"connected again", timeout=30)
        t.keys("C-d")
        assert "rc=0" in t.wait(r"rc=\d+")
    finally:
        t.kill()
        sim.stop()
