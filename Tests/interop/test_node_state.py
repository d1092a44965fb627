"""`pocketmesh node` keeps what the firmware keeps, and its state folder is trusted only as the
daemon's is (issue 31, item 5): `region save` and the ACL survive a restart; a folder others can
write is refused; a planted `prefs.new` link does not redirect the write of the prefs (admin
password included), a planted `identity` link is refused rather than adopted; passwords from
files (`--password-file`, `--guest-password-file`), never on the command line; status and
telemetry report the host's own measurements (a made-up sysfs tree, POCKETMESH_SYSFS) or
nothing, never the simulator's 4.15 V and 21.5 °C; `--lon -0.12` is a value.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import stat
import subprocess
import time

import pytest

from test_air import BIN, ENV, free_port
from test_sim_clients import Sim

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def run(*args, env=None, timeout=60):
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=env or ENV)


def pm(port, *args):
    return run("-t", f"127.0.0.1:{port}", "--timeout", "15", *args)


def js(port, *args, tries=3):
    """A request to a node over the air; a timeout is tried again (the first direct request after
    a flood login may be answered by flood, later than the companion waits: as a user would)."""
    for attempt in range(tries):
        cp = pm(port, "--json", *args)
        if cp.returncode != 4:
            break
    assert cp.returncode == 0, cp.stderr
    return json.loads(cp.stdout)


class Node:
    def __init__(self, state, air, *extra, env=None):
        self.state = state
        self.proc = subprocess.Popen([str(BIN), "node", "--radio", f"air:127.0.0.1:{air}/lin", "--state-dir", str(state),
                                      "--for", "300", *extra],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env or ENV)
        self.line = self.proc.stdout.readline()
        assert self.line.startswith("repeater "), self.line + self.proc.stderr.read()
        self.name = self.line.split()[1]

    def cli(self, *words):
        cp = run("node", "cli", "--state-dir", str(self.state), *words)
        assert cp.returncode == 0, cp.stderr
        return cp.stdout.strip()

    def stop(self):
        self.proc.terminate()
        assert self.proc.wait(timeout=10) == 0


@pytest.fixture
def air(tmp_path):
    topo = tmp_path / "t.json"
    topo.write_text(json.dumps({
        "nodes": [{"name": "sim0", "role": "companion"}, {"name": "lin", "role": "external"},
                  {"name": "sim1", "role": "companion"}],
        "links": [{"a": "sim0", "b": "lin", "snr": 8}, {"a": "lin", "b": "sim1", "snr": 7}],
    }))
    port = free_port()
    sim = Sim("--topology", str(topo), "--air-port", str(port), nodes=2)
    try:
        yield sim, port
    finally:
        sim.stop()


def learn(sim, name):
    """sim0 hears the node's advert."""
    a = sim.port("sim0")
    deadline = time.time() + 30
    while time.time() < deadline:
        if name in {c["name"] for c in js(a, "contacts")}:
            return
        assert pm(a, "advert", "--flood").returncode == 0
        time.sleep(1)
    raise AssertionError(f"sim0 never heard {name}")


def test_regions_and_the_acl_survive_a_restart(air, tmp_path):
    sim, port = air
    st = tmp_path / "st"
    pwf = tmp_path / "admin.pw"
    pwf.write_text("s3cret\n")
    pwf.chmod(0o600)
    node = Node(st, port, "--name", "Keeper", "--password-file", str(pwf))
    try:
        learn(sim, "Keeper")
        a = sim.port("sim0")
        cp = pm(a, "--json", "login", "Keeper", "-p", "s3cret")  # the password came from the file
        assert cp.returncode == 0 and json.loads(cp.stdout)["admin"] is True, cp.stdout + cp.stderr
        sim1 = sim.nodes["sim1"]["pubkey"]
        assert node.cli("setperm", sim1, "1") == "OK"
        assert node.cli("region", "put", "north") == "OK - (flood allowed)"
        assert node.cli("region", "put", "hills", "north") == "OK - (flood allowed)"
        assert node.cli("region", "save") == "OK"
        tree = node.cli("region")
        assert "north" in tree and "hills" in tree, tree
        # Not on the command line, where any user reads it.
        assert b"s3cret" not in open(f"/proc/{node.proc.pid}/cmdline", "rb").read()
    finally:
        node.stop()
    for f in ("regions", "acl", "prefs"):
        assert stat.S_IMODE(os.stat(st / f).st_mode) == 0o600, f
    acl = (st / "acl").read_text()
    assert sim1 in acl and sim.nodes["sim0"]["pubkey"] in acl, acl
    again = Node(st, port)
    try:
        assert again.cli("region") == tree
        # sim0 is still an admin of it: the ACL request is answered without a new login.
        entries = js(a, "acl", "Keeper")
        text = json.dumps(entries)
        assert sim1[:12] in text and sim.nodes["sim0"]["pubkey"][:12] in text, entries
    finally:
        again.stop()


def test_a_state_folder_others_can_write_is_refused(tmp_path):
    st = tmp_path / "open"
    st.mkdir()
    st.chmod(0o777)
    cp = run("node", "--radio", f"air:127.0.0.1:{free_port()}/x", "--state-dir", str(st))
    assert cp.returncode == 2, cp.stderr
    assert cp.stderr.count("\n") == 1 and "refusing the state folder" in cp.stderr and "0777" in cp.stderr, cp.stderr
    assert list(st.iterdir()) == []


def test_planted_links_neither_redirect_a_write_nor_give_a_key(air, tmp_path):
    sim, port = air
    st = tmp_path / "st"
    st.mkdir(mode=0o700)
    victim = tmp_path / "victim"
    victim.write_text("untouched\n")
    victim.chmod(0o644)
    (st / "prefs.new").symlink_to(victim)
    node = Node(st, port, "--password", "s3cret")
    try:
        assert node.cli("set", "owner.info", "here") == "OK"
        time.sleep(0.5)
    finally:
        node.stop()
    assert victim.read_text() == "untouched\n" and stat.S_IMODE(victim.stat().st_mode) == 0o644
    prefs = st / "prefs"
    assert not prefs.is_symlink() and "password s3cret" in prefs.read_text()
    assert stat.S_IMODE(prefs.stat().st_mode) == 0o600
    assert not (st / "prefs.new").exists() and not (st / "prefs.new").is_symlink()
    # An identity link (someone else's key) is refused, not adopted.
    theirs = tmp_path / "theirs"
    theirs.write_text("ab" * 64 + "\n")
    (st / "identity").unlink()
    (st / "identity").symlink_to(theirs)
    cp = run("node", "--radio", f"air:127.0.0.1:{port}/lin", "--state-dir", str(st), "--for", "5")
    assert cp.returncode == 2, cp.stdout + cp.stderr
    assert cp.stderr.count("\n") == 1 and "symbolic link" in cp.stderr and "identity" in cp.stderr, cp.stderr


def test_password_files_are_checked(tmp_path):
    pw = tmp_path / "pw"
    pw.write_text("s3cret\n")
    pw.chmod(0o644)
    base = ["node", "--radio", f"air:127.0.0.1:{free_port()}/x", "--state-dir", str(tmp_path / "st")]
    cp = run(*base, "--password-file", str(pw))
    assert cp.returncode == 2 and cp.stderr.count("\n") == 1 and "--password-file" in cp.stderr and "chmod 600" in cp.stderr, cp.stderr
    pw.chmod(0o600)
    cp = run(*base, "--password-file", str(pw), "--password", "x")
    assert cp.returncode == 2 and "not both" in cp.stderr, cp.stderr
    cp = run(*base, "--guest-password-file", str(tmp_path / "missing"))
    assert cp.returncode == 2 and cp.stderr.count("\n") == 1 and "--guest-password-file" in cp.stderr, cp.stderr


def sysfs(root, volts_uv=None, temp_mc=None):
    if volts_uv is not None:
        d = root / "class" / "power_supply" / "BAT0"
        d.mkdir(parents=True)
        (d / "type").write_text("Battery\n")
        (d / "voltage_now").write_text(f"{volts_uv}\n")
    if temp_mc is not None:
        d = root / "class" / "thermal" / "thermal_zone0"
        d.mkdir(parents=True)
        (d / "temp").write_text(f"{temp_mc}\n")
    root.mkdir(exist_ok=True)
    return root


def test_status_and_telemetry_report_the_hosts_values_or_nothing(air, tmp_path):
    sim, port = air
    a = sim.port("sim0")
    measured = sysfs(tmp_path / "sys", volts_uv=3987000, temp_mc=48300)
    node = Node(tmp_path / "st", port, "--name", "Meter", "--password", "s3cret", "--lon", "-0.12",
                env=dict(ENV, POCKETMESH_SYSFS=str(measured)))
    try:
        assert abs(float(node.cli("get", "lon")[2:]) + 0.12) < 1e-6  # a separate negative value (shown as a float32)
        learn(sim, "Meter")
        assert pm(a, "login", "Meter", "-p", "s3cret").returncode == 0
        st = js(a, "status", "Meter")
        assert st["stats"]["battery_mv"] == 3987, st
        t = js(a, "telemetry", "Meter")
        texts = [r["text"] for r in t["records"]]
        assert "voltage (channel 1): 3.99 V" in texts and "temperature (channel 1): 48.3 °C" in texts, texts
        # Read again each time: a new value shows.
        (measured / "class" / "power_supply" / "BAT0" / "voltage_now").write_text("3700000\n")
        assert js(a, "status", "Meter")["stats"]["battery_mv"] == 3700
    finally:
        node.stop()
    # A host without sensors reports none: 0 mV, no voltage or temperature records.
    bare = sysfs(tmp_path / "bare")
    node = Node(tmp_path / "st", port, env=dict(ENV, POCKETMESH_SYSFS=str(bare)))
    try:
        assert pm(a, "login", "Meter", "-p", "s3cret").returncode == 0
        assert js(a, "status", "Meter")["stats"]["battery_mv"] == 0
        t = js(a, "telemetry", "Meter")
        assert not [r for r in t["records"] if r["type"] in ("voltage", "temperature")], t
        assert "4.15" not in json.dumps(t) and "21.5" not in json.dumps(t)
    finally:
        node.stop()
