"""`pocketmesh daemon` unattended, as a system service (issue 31, items 6 and 7), on loopback:

- the API answers at once while the TCP radio's connect hangs (a listener that drops SYNs: its
  accept queue full, never drained);
- a command sent before the first handshake waits for it (`pocketmesh daemon & pocketmesh info`),
  through a proxy that holds the radio's connection back;
- READY=1 reaches a NOTIFY_SOCKET with no radio at all, STATUS= says why;
- the idle daemon's loop wakes only for work (its wake-up counter in `status`, not wall-clock
  timing);
- `--api-group`: the service in /run/pocketmesh run as a throwaway user, a member of the group as
  `nobody` (setpriv) reads and messages through it, is refused config in one sentence, and a
  non-member gets exit 3 and never takes the TCP radio from the service (root only: it creates a
  group with groupadd and /run/pocketmesh, and removes both).

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time

import pytest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def base_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("NOTIFY_SOCKET", "WATCHDOG_USEC", "POCKETMESH_NO_DAEMON")}
    env.update(extra)
    return env


class Daemon:
    def __init__(self, tmp, link, extra=(), env=None, prefix=(), name=None, socket_path=None):
        self.tmp = pathlib.Path(tmp)
        self.sock = socket_path or (str(self.tmp / "pocketmesh" / f"{name}.sock") if name else str(self.tmp / "d.sock"))
        self.logpath = self.tmp / f"daemon-{time.time_ns()}.log"
        cmd = [*prefix, str(BIN), "daemon", *link, "--state-dir", str(self.tmp / "state"), *extra]
        cmd += ["--name", name] if name else ["--socket", self.sock]
        self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=open(self.logpath, "w"),
                                     env=env or base_env(XDG_RUNTIME_DIR=str(self.tmp)))

    def log(self):
        return self.logpath.read_text()

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
                time.sleep(0.02)

    def wait_state(self, state="ready", timeout=20):
        deadline = time.time() + timeout
        while time.time() < deadline:
            try:
                if self.call({"id": 1, "op": "status"}, timeout=2).get("state") == state:
                    return
            except (OSError, ValueError):
                pass
            time.sleep(0.05)
        raise AssertionError(f"daemon not {state}: " + self.log()[-2000:])

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


class SYNDropper:
    """A loopback port whose accept queue is full and never drained: every further SYN is dropped,
    so a connect to it hangs (a radio gone behind a router)."""

    def __init__(self):
        self.listener = socket.socket()
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(0)
        self.port = self.listener.getsockname()[1]
        self.fillers = []
        for _ in range(3):
            c = socket.socket()
            c.setblocking(False)
            try:
                c.connect(("127.0.0.1", self.port))
            except BlockingIOError:
                pass
            self.fillers.append(c)
        time.sleep(0.1)
        probe = socket.socket()
        probe.settimeout(0.5)
        try:
            probe.connect(("127.0.0.1", self.port))
            raise AssertionError("the listener completed a handshake")
        except (TimeoutError, socket.timeout):
            pass
        finally:
            probe.close()

    def close(self):
        for c in self.fillers:
            c.close()
        self.listener.close()


class SlowProxy:
    """Relays one loopback TCP port to another, but connects to the target only `delay` s after
    it accepted: the daemon's connect succeeds at once and its handshake waits."""

    def __init__(self, target_port, delay):
        self.target, self.delay = target_port, delay
        self.listener = socket.socket()
        self.listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.listener.bind(("127.0.0.1", 0))
        self.listener.listen(4)
        self.port = self.listener.getsockname()[1]
        self.accepted = 0
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                a, _ = self.listener.accept()
            except OSError:
                return
            self.accepted += 1
            threading.Thread(target=self.relay, args=(a,), daemon=True).start()

    def relay(self, a):
        time.sleep(self.delay)
        try:
            b = socket.create_connection(("127.0.0.1", self.target))
        except OSError:
            a.close()
            return

        def pipe(src, dst):
            try:
                while True:
                    data = src.recv(65536)
                    if not data:
                        break
                    dst.sendall(data)
            except OSError:
                pass
            for s in (src, dst):
                try:
                    s.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

        threading.Thread(target=pipe, args=(a, b), daemon=True).start()
        pipe(b, a)

    def close(self):
        self.listener.close()


@pytest.fixture(scope="module")
def sim():
    s = Sim(nodes=2)
    yield s
    s.stop()


def test_api_answers_while_the_tcp_connect_hangs(tmp_path):
    syn = SYNDropper()
    d = Daemon(tmp_path, ["--tcp", f"127.0.0.1:{syn.port}"])
    try:
        latencies = []
        for _ in range(10):
            t0 = time.monotonic()
            r = d.call({"id": 1, "op": "ping"})
            latencies.append(time.monotonic() - t0)
            assert r["ok"] and r["state"] == "connecting", r
            time.sleep(0.1)
        # The connect (5 s timeout) is still pending: every ping was answered meanwhile.
        assert "cannot connect" not in d.log(), d.log()
        assert max(latencies) < 1.0, latencies
        s = d.call({"id": 2, "op": "status"})
        assert s["state"] == "connecting" and s["radio_connected"] is False, s
    finally:
        d.stop()
        syn.close()


def test_a_command_before_the_first_handshake_waits_for_it(sim, tmp_path):
    proxy = SlowProxy(sim.port("sim0"), delay=1.5)
    d = Daemon(tmp_path, ["--tcp", f"127.0.0.1:{proxy.port}"], name="r")
    try:
        registry = tmp_path / "pocketmesh" / "r.json"
        deadline = time.time() + 10
        while not registry.exists() and time.time() < deadline:
            time.sleep(0.01)
        assert registry.exists(), d.log()
        # `pocketmesh daemon & pocketmesh info`: through the daemon (found in its registry), while
        # its connection waits for the radio.
        cp = subprocess.run([str(BIN), "--tcp", f"127.0.0.1:{proxy.port}", "--json", "--timeout", "10", "info"],
                            capture_output=True, text=True, timeout=60, env=base_env(XDG_RUNTIME_DIR=str(tmp_path)))
        assert cp.returncode == 0, cp.stderr + d.log()[-1500:]
        assert len(json.loads(cp.stdout)["public_key"]) == 64
        assert proxy.accepted == 1, "the command opened the radio itself"
        assert "radio: handshake done" in d.log()
    finally:
        d.stop()
        proxy.close()


def test_an_api_op_before_the_first_handshake_waits_for_it(sim, tmp_path):
    proxy = SlowProxy(sim.port("sim1"), delay=1.0)
    d = Daemon(tmp_path, ["--tcp", f"127.0.0.1:{proxy.port}"])
    try:
        r = d.call({"id": 5, "op": "info"}, timeout=20)
        assert r.get("ok") and len(r["public_key"]) == 64, r
        s = d.call({"id": 6, "op": "status"})
        assert s["state"] in ("syncing", "ready"), s
    finally:
        d.stop()
        proxy.close()


def test_a_hub_client_during_the_first_handshake_waits_for_it(sim, tmp_path):
    """An app on the companion hub that connects while the daemon is still reaching its radio
    gets DEVICE_INFO and SELF_INFO once the radio answered, not ERR."""
    proxy = SlowProxy(sim.port("sim1"), delay=1.5)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        hub_port = probe.getsockname()[1]
    d = Daemon(tmp_path, ["--tcp", f"127.0.0.1:{proxy.port}"], extra=["--companion-listen", f"127.0.0.1:{hub_port}"])
    try:
        deadline = time.time() + 10
        app = None
        while app is None and time.time() < deadline:
            try:
                app = socket.create_connection(("127.0.0.1", hub_port), timeout=10)
            except ConnectionRefusedError:
                time.sleep(0.02)
        assert app, d.log()
        assert d.call({"id": 1, "op": "status"})["state"] in ("connecting", "handshaking")
        start = b"\x01\x03" + bytes(6) + b"test"  # APP_START: version, reserved, app name
        app.sendall(b"<\x02\x00\x16\x03" + b"<" + len(start).to_bytes(2, "little") + start)  # DEVICE_QUERY, APP_START
        frames, buf = [], b""
        while len(frames) < 2:
            chunk = app.recv(4096)
            assert chunk, "the hub closed the connection"
            buf += chunk
            while len(buf) >= 3 and len(buf) >= 3 + (buf[1] | buf[2] << 8):
                n = buf[1] | buf[2] << 8
                frames.append(buf[3:3 + n])
                buf = buf[3 + n:]
        assert [f[0] for f in frames] == [0x0D, 0x05], frames  # DEVICE_INFO, SELF_INFO
        app.close()
    finally:
        d.stop()
        proxy.close()


def test_the_radios_host_name_is_resolved_without_blocking(sim, tmp_path):
    """A TCP radio given by name: /etc/hosts-style names at once, others over DNS (the resolv.conf
    servers, UDP) while the API answers; an unknown name is one sentence."""
    from test_mqtt import FakeDNS
    dns = FakeDNS({"radio.pocketmesh.test": "127.0.0.1"})
    dns.silent = {"radio.pocketmesh.test"}
    (tmp_path / "resolv.conf").write_text("nameserver 127.0.0.1\noptions timeout:2 attempts:1\n")
    (tmp_path / "hosts").write_text("127.0.0.1 hosts-radio.test\n")
    env = base_env(XDG_RUNTIME_DIR=str(tmp_path), POCKETMESH_RESOLV_CONF=str(tmp_path / "resolv.conf"),
                   POCKETMESH_HOSTS=str(tmp_path / "hosts"), POCKETMESH_DNS_PORT=str(dns.port))
    port = sim.port("sim1")
    d = Daemon(tmp_path, ["--tcp", f"radio.pocketmesh.test:{port}"], env=env)
    try:
        deadline = time.time() + 5
        while time.time() < deadline and not dns.queries:
            time.sleep(0.05)
        assert dns.queries, d.log()
        t0 = time.monotonic()
        r = d.call({"id": 1, "op": "ping"})
        assert r["state"] == "connecting" and time.monotonic() - t0 < 1.0, r
        dns.silent = set()
        d.wait_state("ready", timeout=30)
        assert "cannot resolve radio.pocketmesh.test: no answer from 127.0.0.1 within 2 s" in d.log(), d.log()
    finally:
        d.stop()
    for host, expect in ((f"hosts-radio.test:{port}", None), (f"nothere.pocketmesh.test:{port}", "no such host (NXDOMAIN")):
        d = Daemon(tmp_path, ["--tcp", host], env=env)
        try:
            if expect is None:
                d.wait_state("ready")
                assert not any(n == "hosts-radio.test" for n, _ in dns.queries)
            else:
                deadline = time.time() + 10
                while time.time() < deadline and expect not in d.log():
                    time.sleep(0.1)
                assert "link: cannot connect to tcp:nothere.pocketmesh.test:%d: cannot resolve nothere.pocketmesh.test: %s from 127.0.0.1)." % (port, expect) in d.log(), d.log()
        finally:
            d.stop()
    dns.stop()


def test_ready_comes_without_a_radio(tmp_path):
    path = str(tmp_path / "notify")
    n = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    n.bind(path)
    n.settimeout(5)
    env = base_env(XDG_RUNTIME_DIR=str(tmp_path), NOTIFY_SOCKET=path, WATCHDOG_USEC="1000000")
    d = Daemon(tmp_path, ["--serial", str(tmp_path / "ttyUSB-unplugged")], env=env)
    try:
        got = []
        deadline = time.time() + 5
        while time.time() < deadline and not (any(m.startswith("READY=1") for m in got)
                                               and any("not connected" in m for m in got)
                                               and "WATCHDOG=1" in got):
            try:
                got.append(n.recv(4096).decode())
            except (TimeoutError, socket.timeout):
                break
        ready = [m for m in got if m.startswith("READY=1")]
        assert ready and "STATUS=serving the API" in ready[0], got
        assert any(m.startswith("STATUS=") and "not connected" in m and "does not exist" in m for m in got), got
        assert "WATCHDOG=1" in got, got
        assert d.call({"id": 1, "op": "ping"})["ok"]
    finally:
        d.stop()
        n.close()


def test_the_idle_daemon_wakes_only_for_work(sim, tmp_path):
    # A drain interval longer than the window: the keepalive is the only periodic work.
    d = Daemon(tmp_path, ["--tcp", f"127.0.0.1:{sim.port('sim0')}"], extra=["--drain-interval", "120"])
    try:
        d.wait_state("ready")
        time.sleep(1.0)
        w0 = d.call({"id": 1, "op": "status"})["loop_wakeups"]
        time.sleep(5.0)
        w1 = d.call({"id": 2, "op": "status"})["loop_wakeups"]
        # Each status call costs the loop about three wake-ups (accept, the request, the hang-up);
        # a tick each second would add five more over the window.
        assert w1 - w0 <= 4, (w0, w1)
    finally:
        d.stop()


# --- the system service with --api-group -------------------------------------------------------

SERVICE_UID = 64123
NOBODY = 65534


def as_user(uid, gid, groups=None):
    g = ["--groups", ",".join(str(x) for x in groups)] if groups else ["--clear-groups"]
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", *g, "--"]


@pytest.fixture
def service_group():
    if os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("groupadd"):
        pytest.skip("needs root, setpriv and groupadd (a throwaway group and /run/pocketmesh)")
    if os.path.exists("/run/pocketmesh"):
        pytest.skip("/run/pocketmesh exists (a real service): not touched")
    name = f"pmtest{os.getpid() % 100000}"
    subprocess.run(["groupadd", "--system", name], check=True, capture_output=True)
    try:
        gid = int(subprocess.run(["getent", "group", name], capture_output=True, text=True, check=True).stdout.split(":")[2])
        # What systemd makes of RuntimeDirectory=pocketmesh, RuntimeDirectoryMode=0750, User=, Group=.
        os.mkdir("/run/pocketmesh", 0o750)
        os.chown("/run/pocketmesh", SERVICE_UID, gid)
        os.chmod("/run/pocketmesh", 0o750)
        yield name, gid
    finally:
        shutil.rmtree("/run/pocketmesh", ignore_errors=True)
        subprocess.run(["groupdel", name], capture_output=True)


def test_api_group_lets_its_members_in_and_keeps_others_off_the_radio(sim, service_group):
    name, gid = service_group
    state = pathlib.Path(tempfile.mkdtemp(prefix="pm-svc-", dir="/tmp"))
    os.chown(state, SERVICE_UID, gid)
    os.chmod(state, 0o700)
    home = pathlib.Path(tempfile.mkdtemp(prefix="pm-nobody-", dir="/tmp"))
    os.chown(home, NOBODY, NOBODY)
    port = sim.port("sim1")
    svc_env = base_env(HOME=str(state))
    # (the test process's own folders are root's: the other users get none, as a login would)
    for variable in ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        svc_env.pop(variable, None)
    d = Daemon(state, ["--tcp", f"127.0.0.1:{port}"], extra=["--api-group", name], env=svc_env,
               prefix=as_user(SERVICE_UID, gid), socket_path="/run/pocketmesh/radio.sock")
    user_env = base_env(HOME=str(home), XDG_STATE_HOME=str(home / "state"))
    for variable in ("XDG_RUNTIME_DIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME"):
        user_env.pop(variable, None)

    def run(groups, *args):
        cp = subprocess.run([*as_user(NOBODY, NOBODY, groups), str(BIN), *args], capture_output=True, text=True,
                            timeout=60, env=user_env)
        return cp.returncode, cp.stdout, cp.stderr

    try:
        d.wait_state("ready")
        st = os.stat("/run/pocketmesh/radio.sock")
        assert oct(st.st_mode & 0o777) == "0o660" and st.st_gid == gid
        assert oct(os.stat("/run/pocketmesh/radio.json").st_mode & 0o777) == "0o640"
        d.call({"id": 1, "op": "channel_send", "channel": "0", "text": "hello group"})

        # A member: reads and messages through the service (its TCP link stays the only one).
        code, out, err = run([gid], "--tcp", f"127.0.0.1:{port}", "--json", "info")
        assert code == 0 and len(json.loads(out)["public_key"]) == 64, err + d.log()[-1500:]
        code, out, err = run([gid], "--json", "chats")
        assert code == 0 and isinstance(json.loads(out), list), err
        code, out, err = run([gid], "--json", "history", "0")
        assert code == 0 and any(m["text"] == "hello group" for m in json.loads(out)["messages"]), (out, err)
        # ... and is refused a config operation, in one sentence.
        code, out, err = run([gid], "--tcp", f"127.0.0.1:{port}", "contacts", "remove", "nobody")
        assert code == 5 and "config operation" in err and err.count("\n") == 1, err

        # Not a member: one sentence, exit 3, and the radio is never opened under the service.
        code, out, err = run(None, "--tcp", f"127.0.0.1:{port}", "info")
        assert code == 3 and "/run/pocketmesh" in err and err.count("\n") == 1, err
        code, out, err = run(None, "chats")
        assert code == 3 and "/run/pocketmesh" in err and err.count("\n") == 1, err
        s = d.call({"id": 2, "op": "status"})
        assert s["state"] == "ready" and s["connections"] == 1, (s, d.log()[-1500:])
        assert "link: lost" not in d.log()

        # A second service not shared with the group (its socket and entry the user's own): a
        # member cannot see which radio it owns, so its TCP radio is not opened under it either.
        other_state = pathlib.Path(tempfile.mkdtemp(prefix="pm-svc2-", dir="/tmp"))
        os.chown(other_state, SERVICE_UID, gid)
        os.chmod(other_state, 0o700)
        other = Daemon(other_state, ["--tcp", f"127.0.0.1:{sim.port('sim0')}"], env=svc_env,
                       prefix=as_user(SERVICE_UID, gid), socket_path="/run/pocketmesh/other.sock")
        try:
            other.wait_state("ready")
            assert oct(os.stat("/run/pocketmesh/other.json").st_mode & 0o777) == "0o600"
            code, out, err = run([gid], "--tcp", f"127.0.0.1:{sim.port('sim0')}", "info")
            assert code == 3 and "other.json" in err and err.count("\n") == 1, err
            assert other.call({"id": 3, "op": "status"})["connections"] == 1
        finally:
            other.stop()
            shutil.rmtree(other_state, ignore_errors=True)
    finally:
        d.stop()
        shutil.rmtree(state, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
