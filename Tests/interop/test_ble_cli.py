"""The BLE link and `scan` on the command line, on a machine without usable Bluetooth.

Runs the built binary (POCKETMESH_BIN, default .build/debug/pocketmesh). Where the kernel has no
Bluetooth (socket(AF_BLUETOOTH) fails with EAFNOSUPPORT, as in most CI containers) the message is
checked word for word; elsewhere only the exit code (3: link failure) is.
"""
import errno
import json
import os
import socket
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))


def kernel_has_bluetooth():
    try:
        s = socket.socket(socket.AF_BLUETOOTH, socket.SOCK_SEQPACKET, socket.BTPROTO_L2CAP)
    except (OSError, AttributeError) as e:
        return not (isinstance(e, AttributeError) or e.errno in (errno.EAFNOSUPPORT, errno.EPROTONOSUPPORT))
    s.close()
    return True


NO_BLUETOOTH = not kernel_has_bluetooth()


def run(*args, timeout=40):
    env = dict(os.environ, POCKETMESH_NO_DAEMON="1")
    return subprocess.run([str(BIN), *args], capture_output=True, text=True, timeout=timeout, env=env)


def one_sentence(stderr):
    lines = [l for l in stderr.splitlines() if l.strip()]
    assert len(lines) == 1, stderr
    line = lines[0]
    assert line.startswith("pocketmesh: ") and line.endswith("."), line
    return line


@pytest.mark.parametrize("args", [
    ["--ble", "00:11:22:33:44:55", "info"],
    ["info", "--ble", "00:11:22:33:44:55"],
    ["--ble", "00:11:22:33:44:55/random", "--json", "contacts"],
    ["--ble", "00:11:22:33:44:55", "--ble-min-mtu", "176", "info"],
])
def test_ble_without_bluetooth_exits_3(args):
    r = run(*args)
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    assert r.stdout == ""
    line = one_sentence(r.stderr)
    if NO_BLUETOOTH:
        assert "Bluetooth is not available" in line
        assert "no Bluetooth support" in line
        assert "--serial" in line and "--tcp" in line


@pytest.mark.parametrize("args", [
    ["--ble", "00:11:22:33:44", "info"],              # five bytes
    ["--ble", "00:11:22:33:44:GG", "info"],           # not hex
    ["--ble", "00:11:22:33:44:55/static", "info"],    # unknown address type
    ["--ble", "00:11:22:33:44:55", "--ble-min-mtu", "10", "info"],
    ["--ble", "00:11:22:33:44:55", "--serial", "/dev/null", "info"],
])
def test_ble_usage_errors_exit_2(args):
    r = run(*args)
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert r.stderr.strip()


def test_scan_ble_without_bluetooth_exits_3():
    if not NO_BLUETOOTH:
        pytest.skip("this kernel has Bluetooth")
    r = run("scan", "--ble", "--for", "0.2")
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    line = one_sentence(r.stderr)
    assert "Bluetooth scanning is not available" in line


def test_scan_ble_json_without_bluetooth():
    if not NO_BLUETOOTH:
        pytest.skip("this kernel has Bluetooth")
    r = run("scan", "--ble", "--json", "--for", "0.2")
    assert r.returncode == 3, (r.returncode, r.stdout, r.stderr)
    doc = json.loads(r.stdout)
    assert isinstance(doc["serial"], list)
    assert doc["ble"] == []
    assert "Bluetooth" in doc["ble_error"]


def test_scan_json_shape():
    r = run("scan", "--json")
    doc = json.loads(r.stdout)
    assert set(doc) == {"serial"}
    if doc["serial"]:
        assert r.returncode == 0
        for c in doc["serial"]:
            assert set(c) >= {"path", "by_id", "usb_id", "manufacturer", "product", "bridge", "known_bridge", "use"}
    else:
        # Nothing plugged in: exit 6 (not found) with one sentence saying what to do.
        assert r.returncode == 6, (r.returncode, r.stderr)
        assert "no radio found" in one_sentence(r.stderr)
