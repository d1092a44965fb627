"""`pocketmesh daemon` and its state folder, from outside, through the built binary: files another
user planted there (links, files others can write or own), cursors holding ids the store never
issued, a hook added to a store that already has messages, and `hooks drop ID` acting on ID."""
import json
import os
import struct
import subprocess
import zlib
from pathlib import Path

from test_daemon_faults import BIN, Daemon, hook_lines, mesh, start_sender, tmpdir_short, wait_for  # noqa: F401


def first_run(tmp, port, n=0, prefix="old", sender_port=None, **kw):
    """Starts a daemon, lets `n` channel messages arrive, stops it; returns the radio's folder."""
    d = Daemon(tmp, port, **kw)
    try:
        d.wait_ready()
        if n:
            assert start_sender(tmp, sender_port, n, 0.05, prefix).wait(30) == 0
            assert wait_for(lambda: len(d.texts()) >= n, 20)
    finally:
        d.stop()
    radios = [p for p in Path(d.state).iterdir() if len(p.name) == 64]
    assert len(radios) == 1
    return radios[0]


def refused(tmp, port, **kw):
    """Starts a daemon that must refuse to run: returns its log."""
    d = Daemon(tmp, port, **kw)
    try:
        code = d.proc.wait(20)
    finally:
        d.stop()
    log = (Path(tmp) / "daemon.log").read_text()
    assert code == 2, f"exit {code}: {log[-1500:]}"
    return log


def state_file(payload):
    return b"PMST" + struct.pack("<II", len(payload), zlib.crc32(payload)) + payload


def test_files_planted_in_the_state_folder_are_refused_by_name(mesh, tmpdir_short):
    tmp = Path(tmpdir_short)
    port = mesh.nodes[0][2]
    radio = first_run(tmp, port, hook=False)
    victim = tmp / "victim"
    victim.write_text("precious\n")
    mark = 0

    def check(path, words):
        nonlocal mark
        log = refused(tmp, port, hook=False)
        new = log[mark:]
        mark = len(log)
        assert f"{path} " in new and words in new, new[-1500:]
        assert victim.read_text() == "precious\n"

    # A link in place of the channels file (root's daemon would have written its secrets there).
    (radio / "channels").rename(tmp / "channels.saved")
    os.symlink(victim, radio / "channels")
    check(radio / "channels", "is a symbolic link")
    (radio / "channels").unlink()
    (tmp / "channels.saved").rename(radio / "channels")
    # A message log anyone can write (and so read a DM from, or plant records in); found after the
    # first handshake this time (the daemon does not know the link's radio yet).
    subprocess.run(["rm", "-rf", str(radio.parent / "links")], check=True)
    (radio / "messages.log").chmod(0o666)
    check(radio / "messages.log", "can be written by other users (mode 0666)")
    (radio / "messages.log").chmod(0o600)
    # A file another user made (tests run as root: give it to nobody).
    if os.geteuid() == 0:
        (radio / "hooks").mkdir(mode=0o700, exist_ok=True)
        (radio / "hooks" / "cursor").write_text("0\n")
        os.chown(radio / "hooks" / "cursor", 65534, 65534)
        check(radio / "hooks" / "cursor", "belongs to user 65534")
        (radio / "hooks" / "cursor").unlink()
    # Put right, the daemon runs again.
    d = Daemon(tmp, port, hook=False)
    try:
        d.wait_ready()
    finally:
        d.stop()
    # The command line without a daemon (chats, history) does not follow a link either.
    os.symlink(victim, radio / "outbox.link")
    (radio / "messages.log").rename(tmp / "messages.saved")
    os.symlink(victim, radio / "messages.log")
    r = subprocess.run([str(BIN), "chats", "--state-dir", str(radio.parent)], capture_output=True, text=True, timeout=30)
    assert r.returncode != 0 and "symbolic link" in r.stderr and "precious" not in r.stdout, (r.returncode, r.stdout, r.stderr)


def test_cursors_past_the_stores_ids_are_errors_naming_the_file(mesh, tmpdir_short):
    tmp = Path(tmpdir_short)
    port = mesh.nodes[0][2]
    radio = first_run(tmp, port, hook=True, n=2, sender_port=mesh.nodes[1][2])
    big = 18446744073709551615
    cases = [
        (radio / "hooks" / "cursor", f"{big}\n".encode(), True),
        (radio / "hooks" / str(big), b"done\n", True),
        (radio / "mqtt" / "127.0.0.1-1883-meshcore" / "cursor", f"{big}\n".encode(), False),
        (radio / "cursor-sync", state_file(struct.pack("<Q", big)), False),
        (radio / "cursor-hub-someapp", state_file(struct.pack("<Q", big)), False),
        (radio / "ids", state_file(struct.pack("<Q", big)), False),
    ]
    mark = 0
    for path, body, hook in cases:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        saved = path.read_bytes() if path.exists() else None
        path.write_bytes(body)
        log = refused(tmp, port, hook=hook)
        new = log[mark:]
        mark = len(log)
        assert str(path) in new and str(big) in new, new[-1500:]
        if saved is None:
            path.unlink()
        else:
            path.write_bytes(saved)
    d = Daemon(tmp, port, hook=True)
    try:
        d.wait_ready()
    finally:
        d.stop()


def test_a_hook_added_to_a_store_with_messages_starts_at_the_newest(mesh, tmpdir_short):
    tmp = Path(tmpdir_short)
    port0, port1 = mesh.nodes[0][2], mesh.nodes[1][2]
    radio = first_run(tmp, port0, hook=False, n=3, sender_port=port1)
    d = Daemon(tmp, port0, hook=True)
    try:
        d.wait_ready()
        log = (tmp / "daemon.log").read_text()
        assert "it starts after message 3, the newest" in log and "--hooks-from-start" in log, log[-1500:]
        assert start_sender(tmp, port1, 1, 0, "new").wait(30) == 0
        assert wait_for(lambda: len(hook_lines(tmp)) >= 1, 20)
        assert wait_for(lambda: d.call({"id": 1, "op": "status"}).get("hook_cursor") == 4, 10)
    finally:
        d.stop()
    assert [l.split("|", 1)[1] for l in hook_lines(tmp)] == ["new-0"]
    # Its cursor lost: the same again; with --hooks-from-start it gets every stored message.
    (radio / "hooks" / "cursor").unlink()
    (tmp / "hook.txt").unlink()
    d = Daemon(tmp, port0, hook=True, extra=["--hooks-from-start"])
    try:
        d.wait_ready()
        assert wait_for(lambda: len(hook_lines(tmp)) >= 4, 20)
    finally:
        d.stop()
    assert sorted(l.split("|", 1)[1] for l in hook_lines(tmp)) == ["new-0", "old-0", "old-1", "old-2"]
    assert "every stored message is handed to it (--hooks-from-start)" in (tmp / "daemon.log").read_text()


def test_hooks_drop_and_retry_act_on_the_message_named(mesh, tmpdir_short):
    tmp = Path(tmpdir_short)
    failing = tmp / "fail.sh"
    failing.write_text("#!/bin/sh\nexit 3\n")
    failing.chmod(0o755)
    port0, port1 = mesh.nodes[0][2], mesh.nodes[1][2]
    d = Daemon(tmp, port0, hook=False, extra=["--on-message", str(failing), "--hook-attempts", "1"])
    try:
        d.wait_ready()
        assert start_sender(tmp, port1, 3, 0.05, "f").wait(30) == 0
        assert wait_for(lambda: len(d.call({"id": 1, "op": "hooks_failed"})["failed"]) == 3, 30)
        ids = [f["id"] for f in d.call({"id": 1, "op": "hooks_failed"})["failed"]]
        assert ids == [1, 2, 3], ids
        r = subprocess.run([str(BIN), "hooks", "drop", "2", "--socket", d.sock, "--json"], capture_output=True, text=True, timeout=30)
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == {"message": 2, "dropped": True}
        assert [f["id"] for f in d.call({"id": 2, "op": "hooks_failed"})["failed"]] == [1, 3]
        # Over the API: the request's own id is not the message's.
        r = d.call({"id": 1, "op": "hooks_drop", "message": 3})
        assert r == {"id": 1, "ok": True, "message": 3, "dropped": True}, r
        assert [f["id"] for f in d.call({"id": 3, "op": "hooks_failed"})["failed"]] == [1]
        assert d.call({"id": 4, "op": "hooks_retry", "id": 1})["error"]["code"] == "usage"
    finally:
        d.stop()
