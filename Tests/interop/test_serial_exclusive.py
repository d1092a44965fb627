"""Serial ports drop exclusive mode on close (issue 31): the command line opens a port with
TIOCEXCL (and a lock), and the flag belongs to the tty, not to the descriptor. A pty (what
`pocketmesh sim --pty` gives) outlives its users, so a flag left set made every later open by a
non-root user "in use by another program". Root gets past TIOCEXCL, so the commands run as
`nobody` (setpriv); the Swift test SerialLinkTests reads the flag itself.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh). Needs root and setpriv.
"""
import os
import shutil
import subprocess
import tempfile

import pytest

from test_air import BIN
from test_sim_clients import Sim

pytestmark = [
    pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)"),
    pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason="needs root and setpriv"),
]


def as_nobody(home, *args):
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "XDG_STATE_HOME": home + "/state", "XDG_CONFIG_HOME": home + "/config",
           "XDG_RUNTIME_DIR": home + "/run", "POCKETMESH_NO_DAEMON": "1"}
    return subprocess.run(["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", str(BIN), *args],
                          capture_output=True, text=True, timeout=60, env=env)


def test_a_pty_opens_again_for_a_non_root_user():
    home = tempfile.mkdtemp(prefix="pmx-")
    os.chmod(home, 0o777)
    sim = Sim(pty_dir=home, nodes=1)
    try:
        probe = as_nobody(home, "--version")
        if probe.returncode != 0:
            pytest.skip(f"nobody cannot run {BIN}: {probe.stderr.strip()}")
        pty = os.path.realpath(sim.nodes["sim0"]["pty"])
        os.chmod(pty, 0o666)
        for attempt in range(3):
            cp = as_nobody(home, "-s", pty, "info")
            assert cp.returncode == 0 and "name: sim0" in cp.stdout, f"open {attempt + 1}: {cp.stdout}{cp.stderr}"
    finally:
        sim.stop()
        shutil.rmtree(home, ignore_errors=True)
