"""Every failure exits with a code from the README's exit-code table (under Troubleshooting), never 1: representative
failures of each kind (usage, link, not found, storage or system) from the command line, the
store commands, the daemon's start and the simulator, checked against the table itself.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import os
import pathlib
import re
import socket
import subprocess

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")


def table():
    """The codes of the README's exit-code table."""
    text = (REPO / "README.md").read_text()
    section = text.split("### Exit codes", 1)[1].split("\n## ", 1)[0]
    return {int(m) for m in re.findall(r"^\| *(\d+) *\|", section, re.M)}


@pytest.fixture
def env(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    return dict(os.environ, XDG_STATE_HOME=str(tmp_path / "state"), XDG_RUNTIME_DIR=str(run_dir),
                XDG_CONFIG_HOME=str(tmp_path / "config"), POCKETMESH_NO_DAEMON="1", SWIFT_BACKTRACE="enable=no")


def run(env, *args, timeout=30):
    cp = subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=env)
    return cp.returncode, cp.stderr


def test_the_table_has_a_row_for_storage_failures_and_none_for_1():
    codes = table()
    assert {0, 2, 3, 4, 5, 6, 7} <= codes and 1 not in codes
    man = (REPO / "docs" / "pocketmesh.1").read_text()
    assert "7 storage or system failure" in man


def test_representative_failures_exit_with_table_codes(env, tmp_path):
    codes = table()
    # A damaged store: a radio's folder that is a file (this exited 1).
    state = tmp_path / "state" / "pocketmesh"
    state.mkdir(parents=True)
    (state / ("ab" * 32)).write_text("not a folder")
    # A port the simulator cannot listen on (this exited 2, as if the arguments were wrong).
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    port = busy.getsockname()[1]
    bad_topology = tmp_path / "t.json"
    bad_topology.write_text('{"nodes": 5}')
    cases = [
        (2, ["info", "--no-such-option"]),                       # usage
        (2, ["daemon", "--tcp", "127.0.0.1:9", "--drain-interval", "0"]),
        (2, ["sim", "--topology", str(bad_topology), "--for", "1"]),  # a bad file is bad input
        (3, ["--tcp", "127.0.0.1:9", "info"]),                   # link
        (6, ["config", "check"]),                                # no config file
        (7, ["history", "alice"]),                               # the store cannot be read
        (7, ["chats"]),
        (7, ["daemon", "--tcp", "127.0.0.1:9", "--socket", str(tmp_path / "missing" / "d.sock")]),  # socket
        (7, ["sim", "--nodes", "1", "--repeaters", "0", "--tcp-base", str(port), "--for", "1"]),
    ]
    try:
        for want, args in cases:
            code, err = run(env, *args)
            assert code == want, (args, code, err)
            assert code in codes, (args, code)
            assert err.count("\n") == 1 and "See --help" not in err or want == 2, (args, err)
    finally:
        busy.close()
