"""The daemon runs the command line's operations itself, in its own process, on its one thread,
interleaved: no worker process per op, no tunnel back into its own socket. Against `pocketmesh sim`
(sim0 - rpt0 - sim1), with API clients on the daemon's socket."""
import subprocess
import threading
from pathlib import Path

import pytest

from test_daemon_faults import BIN, Daemon, tmpdir_short, wait_for  # noqa: F401
from test_sim_clients import Sim


@pytest.fixture
def daemon(tmpdir_short):
    sim = Sim("--repeaters", "1", "--seed", "11")
    d = Daemon(tmpdir_short, sim.port("sim0"), hook=False)
    try:
        d.wait_ready()
        yield sim, d
    finally:
        d.stop()
        sim.stop()


def proc_stat(pid):
    """/proc/PID/stat fields after the command name (field 3 is index 0)."""
    text = Path(f"/proc/{pid}/stat").read_text()
    return text[text.rindex(")") + 2:].split()


def children_faults(pid):
    # cminflt (field 11) and cmajflt (field 13): page faults of the children the process waited for.
    f = proc_stat(pid)
    return int(f[11 - 3]) + int(f[13 - 3])


def threads(pid):
    return int(proc_stat(pid)[20 - 3])


def test_ops_start_no_process_and_the_daemon_keeps_one_thread(daemon):
    sim, d = daemon
    pid = d.proc.pid
    before = children_faults(pid)
    for i in range(30):
        r = d.call({"id": i, "op": "battery"})
        assert r["ok"] is True and r["millivolts"] > 0, r
        r = d.call({"id": 100 + i, "op": "get", "setting": "name"})
        assert r["ok"] is True and r["name"], r
    r = d.call({"id": 500, "op": "time_get"})
    assert r["ok"] is True and r["epoch"] > 0, r
    # A worker process per op would have been waited for: its page faults count here.
    assert children_faults(pid) == before
    assert threads(pid) == 1
    # The old worker entry point is gone.
    gone = subprocess.run([str(BIN), "daemon", "op-exec", "--api-socket", d.sock], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=30)
    assert gone.returncode == 2


def test_a_long_op_does_not_hold_up_the_others(daemon):
    """A discovery listens for answers for 3 s; battery and status ops asked meanwhile are answered
    before it ends, and its own answer still comes (ordering, not timing)."""
    sim, d = daemon
    done = []
    lock = threading.Lock()

    def run(name, req):
        r = d.call(req, timeout=30)
        with lock:
            done.append((name, r))

    long = threading.Thread(target=run, args=("discover", {"id": 1, "op": "discover", "for": 3}))
    long.start()
    # The discovery is under way (status counts it) before the short ops go in.
    assert wait_for(lambda: d.call({"id": 2, "op": "status"}).get("operations") == 1, 30)
    shorts = []
    for i in range(8):
        t = threading.Thread(target=run, args=(f"battery{i}", {"id": 10 + i, "op": "battery"}))
        t.start()
        shorts.append(t)
    for t in shorts:
        t.join(30)
    long.join(30)
    names = [n for n, _ in done]
    assert len(done) == 9, done
    assert names[-1] == "discover", names
    for n, r in done:
        assert r["ok"] is True or r["error"]["code"] == "not_found", (n, r)
    assert threads(d.proc.pid) == 1


def test_a_lost_link_ends_waiting_ops_with_a_link_error(daemon):
    """An op waiting on the radio when the link goes gets the link error at once; the daemon
    reconnects and the next op works."""
    sim, d = daemon
    result = {}

    def run():
        result["r"] = d.call({"id": 1, "op": "discover", "for": 20}, timeout=60)

    t = threading.Thread(target=run)
    t.start()
    # Once the discovery is running (status counts it), SIGHUP makes the daemon reconnect to the radio.
    assert wait_for(lambda: d.call({"id": 2, "op": "status"}).get("operations") == 1, 30)
    d.proc.send_signal(1)
    t.join(60)
    r = result["r"]
    assert r["ok"] is False and r["error"]["code"] == "link", r
    d.wait_ready()
    r = d.call({"id": 3, "op": "battery"})
    assert r["ok"] is True, r
