"""Long messages: `send --split` and `channel send --split` against `pocketmesh sim`: every part
fits one message (the channel's with the sender's name in front), is numbered, cut at spaces,
arrives, and the parts joined give the text back; a text that fits is sent as it is.

Environment: POCKETMESH_BIN (default .build/debug/pocketmesh).
"""
import json
import os
import pathlib
import re
import subprocess
import time

import pytest

from test_sim_clients import Sim

REPO = pathlib.Path(__file__).resolve().parents[2]
BIN = pathlib.Path(os.environ.get("POCKETMESH_BIN", REPO / ".build" / "debug" / "pocketmesh"))

pytestmark = pytest.mark.skipif(not BIN.exists(), reason=f"needs {BIN} (swift build)")

ENV = dict(os.environ, POCKETMESH_NO_DAEMON="1")
TEXT = " ".join(f"word{i}" for i in range(1, 90)) + " ünïcödé 😀 end"


@pytest.fixture(scope="module")
def sim():
    s = Sim(nodes=2)
    for n in ("sim0", "sim1"):
        at(s, n, "advert", "--flood")
    deadline = time.time() + 20
    while time.time() < deadline:
        if "sim1" in at(s, "sim0", "contacts")[1] and "sim0" in at(s, "sim1", "contacts")[1]:
            break
        time.sleep(0.5)
    yield s
    s.stop()


def at(sim, node, *args, timeout=120):
    cp = subprocess.run([str(BIN), "-t", f"127.0.0.1:{sim.port(node)}", "--timeout", "10", *args],
                        capture_output=True, text=True, timeout=timeout, env=ENV)
    return cp.returncode, cp.stdout, cp.stderr


def received(sim, node, want, key):
    got, deadline = [], time.time() + 30
    while len(got) < want and time.time() < deadline:
        code, out, err = at(sim, node, "--json", "sync")
        assert code == 0, err
        got += [m for m in json.loads(out) if key(m)]
        time.sleep(0.3)
    return got


def unnumbered(parts):
    body = []
    for i, p in enumerate(parts):
        m = re.match(r"\((\d+)/(\d+)\) (.*)$", p, re.S)
        assert m and int(m[1]) == i + 1 and int(m[2]) == len(parts), p
        body.append(m[3])
    return " ".join(body)


def test_direct_message_in_parts(sim):
    code, out, err = at(sim, "sim0", "--json", "send", "--split", "sim1", TEXT)
    assert code == 0, err
    results = json.loads(out)
    assert len(results) >= 3 and all(r["status"] == "acked" for r in results)
    assert [r["part"] for r in results] == list(range(1, len(results) + 1))
    msgs = received(sim, "sim1", len(results), lambda m: m.get("kind") == "direct")
    texts = [m["text"] for m in msgs]
    assert all(len(t.encode()) <= 160 for t in texts)
    assert unnumbered(texts) == TEXT


def test_channel_message_in_parts(sim):
    code, out, err = at(sim, "sim0", "--json", "channel", "send", "--split", "0", TEXT)
    assert code == 0, err
    n = len(json.loads(out))
    msgs = received(sim, "sim1", n, lambda m: m.get("kind") == "channel" or "channel" in m)
    texts = [m["text"] for m in msgs][-n:]
    # On air (and as received) each part is "sim0: (i/n) …", within 160 bytes.
    assert all(len(t.encode()) <= 160 for t in texts), texts
    assert unnumbered([t.split(": ", 1)[1] for t in texts]) == TEXT


def test_a_text_that_fits_is_sent_as_it_is(sim):
    code, out, err = at(sim, "sim0", "--json", "send", "--split", "sim1", "short one")
    assert code == 0, err
    assert [r["part"] for r in json.loads(out)] == [1]
    msgs = received(sim, "sim1", 1, lambda m: m.get("kind") == "direct")
    assert [m["text"] for m in msgs][-1] == "short one"


def test_progress_on_a_terminal_only(sim):
    import secrets
    for i in range(60):
        code, out, err = at(sim, "sim1", "contacts", "add", secrets.token_hex(32), f"many{i}")
        assert code == 0, err
    import pty
    # stderr on a terminal: the listing's progress, rewritten in place and cleared at the end.
    master, slave = pty.openpty()
    p = subprocess.Popen([str(BIN), "-t", f"127.0.0.1:{sim.port('sim1')}", "contacts"], stdout=subprocess.PIPE,
                         stderr=slave, env=ENV)
    os.close(slave)
    out, _ = p.communicate(timeout=60)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert p.returncode == 0
    assert b"\r\x1b[Kcontacts " in seen and seen.endswith(b"\r\x1b[K"), seen[-200:]
    assert b"many59" in out and b"contacts " not in out  # the listing itself is untouched
    # In a pipe, and with --json: nothing but the result.
    code, out, err = at(sim, "sim1", "contacts")
    assert code == 0 and err == ""
