"""The hub and contacts listings: ~150 contacts on the daemon's radio (`pocketmesh sim`), listed
by raw clients and meshcore_py through the hub.

- answered from the daemon's copy of the radio's table while it is current, byte for byte as the
  radio answers (with and without `since`);
- streamed frame by frame when the listing goes to the radio (the copy not current);
- 8 clients listing at once are not served one after another at the radio;
- a client alone on the hub gets the radio at full speed past its burst."""
import asyncio
import os
import struct
import subprocess
import threading
import time

import pytest

from test_daemon_faults import BIN, Daemon, free_ports, tmpdir_short, wait_for  # noqa: F401
from test_hub import answer, frame, raw_client, read_frame
from test_sim_clients import PY, Sim

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")

COUNT = 150
LASTMOD0 = 1_767_000_000


def contact_frame(i, code=0x09):
    """ADD_UPDATE_CONTACT (with lastmod) for contact i: distinct keys, names, paths and lastmods."""
    key = bytes([0xC0, i & 0xFF, i >> 8]) + bytes([(i * 7 + j) & 0xFF for j in range(29)])
    path_len, path = (2, b"\x11\x22") if i % 3 == 0 else (0xFF, b"")
    name = f"contact {i}".encode()
    return (bytes([code]) + key + bytes([2 if i % 5 == 0 else 1, 0, path_len]) + path.ljust(64, b"\x00")
            + name.ljust(32, b"\x00") + struct.pack("<IiiI", 1_700_000_000 + i, i * 1000, -i * 77, LASTMOD0 + i % 50))


def listing(s, since=None, timeout=10):
    """GET_CONTACTS: the answer's frames (pushes skipped), and when the first and last came."""
    t0 = time.perf_counter()
    s.sendall(frame(b"\x04" + (struct.pack("<I", since) if since is not None else b"")))
    frames, first = [], None
    while True:
        f = read_frame(s, timeout=timeout)
        assert f is not None
        if f[0] >= 0x80:
            continue
        if first is None:
            first = time.perf_counter() - t0
        frames.append(f)
        if f[0] in (0x01, 0x04):
            return frames, first, time.perf_counter() - t0


SINCES = (None, 0, LASTMOD0 + 10, LASTMOD0 + 48, LASTMOD0 + 49, LASTMOD0 + 60)


@pytest.fixture
def populated(tmpdir_short):
    """sim0 with COUNT contacts (its own answers to GET_CONTACTS recorded first), then a daemon with
    a hub on it."""
    sim = Sim("--seed", "9", "--max-contacts", "300", nodes=1)
    d = None
    try:
        s = raw_client(sim.port("sim0"), b"seed")
        s.sendall(b"".join(frame(contact_frame(i)) for i in range(COUNT)))
        for _ in range(COUNT):
            f = read_frame(s)
            while f[0] >= 0x80:
                f = read_frame(s)
            assert f[0] == 0x00, f
        radio = {since: listing(s, since) for since in SINCES}
        s.close()
        port = free_ports(1)
        d = Daemon(tmpdir_short, sim.port("sim0"), hook=False,
                   extra=("--companion-listen", f"127.0.0.1:{port}", "--companion-max-clients", "12"))
        d.wait_ready(timeout=60)
        yield sim, d, port, radio
    finally:
        if d:
            d.stop()
        sim.stop()


def copy_state(d):
    return d.call({"id": 1, "op": "status"})["hub_contacts"]


def test_listing_from_the_copy_is_the_radios_answer_and_a_change_goes_to_the_radio(populated):
    sim, d, port, radio = populated
    want = radio[None][0]
    assert len(want) == COUNT + 2 and want[0] == b"\x02" + struct.pack("<I", COUNT)
    wait_for(lambda: copy_state(d) == {"current": True, "contacts": COUNT}, timeout=20)
    c = raw_client(port, b"lister")
    for since in SINCES:
        got, _, _ = listing(c, since)
        assert got == radio[since][0], f"since {since}"
    assert copy_state(d)["current"]
    # A contact added through the hub: the copy is dropped; the next listing goes to the radio,
    # comes frame by frame, and teaches the copy again.
    c.sendall(frame(contact_frame(COUNT)))
    assert answer(c)[0] == 0x00
    assert not copy_state(d)["current"]
    got, _, _ = listing(c)
    assert len(got) == COUNT + 3 and got[0] == b"\x02" + struct.pack("<I", COUNT + 1)
    assert got[1:-2] == want[1:-1] and got[-2][1:] == contact_frame(COUNT)[1:]
    wait_for(lambda: copy_state(d) == {"current": True, "contacts": COUNT + 1}, timeout=10)
    again, _, _ = listing(c)
    assert again == got
    c.close()


def test_a_listing_at_the_radio_streams_frame_by_frame(populated):
    """The radio (the simulator: one record a millisecond) takes over 150 ms to list 151
    contacts; through the hub the first records come long before the end (before: all at once)."""
    sim, d, port, radio = populated
    c = raw_client(port, b"streamer")
    gaps = []
    for attempt in range(5):
        # A contact added: the copy is dropped, the listing goes to the radio.
        c.sendall(frame(contact_frame(COUNT + attempt)))
        assert answer(c)[0] == 0x00
        assert not copy_state(d)["current"]
        got, first, last = listing(c)
        assert len(got) == COUNT + 3 + attempt
        gaps.append(last - first)
        if last - first >= 0.02:
            break
    print(f"first frame to END_OF_CONTACTS at the radio: {[round(g * 1000, 1) for g in gaps]} ms")
    assert max(gaps) >= 0.02, gaps
    c.close()


def test_eight_clients_listing_at_once_do_not_wait_on_each_other(populated):
    sim, d, port, radio = populated
    want = radio[None][0]
    wait_for(lambda: copy_state(d)["current"], timeout=20)
    clients = [raw_client(port, f"many{i}".encode()) for i in range(8)]
    results = [None] * 8

    def run(i):
        results[i] = listing(clients[i])
    t0 = time.perf_counter()
    threads = [threading.Thread(target=run, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    elapsed = time.perf_counter() - t0
    for r in results:
        assert r is not None and r[0] == want
    direct = radio[None][2]
    print(f"8 listings at once: {elapsed * 1000:.1f} ms (one listing at the radio: {direct * 1000:.1f} ms)")
    # One after another at the radio, they took at least 8 radio listings.
    assert elapsed < 4 * direct, (elapsed, direct)
    for c in clients:
        c.close()


async def py_listers(port, n):
    from meshcore import EventType, MeshCore
    mcs = [await MeshCore.create_tcp("127.0.0.1", port) for _ in range(n)]
    try:
        rs = await asyncio.gather(*(mc.commands.get_contacts(timeout=10) for mc in mcs))
        assert all(r.type == EventType.CONTACTS for r in rs), [r.type for r in rs]
        return [sorted(r.payload.keys()) for r in rs]
    finally:
        for mc in mcs:
            await mc.disconnect()


def test_meshcore_py_clients_list_contacts_at_once(populated):
    sim, d, port, radio = populated
    wait_for(lambda: copy_state(d)["current"], timeout=20)
    code = (f"import asyncio, json, test_hub_contacts as t; "
            f"print(json.dumps(asyncio.run(t.py_listers({port}, 8))))")
    r = subprocess.run([str(PY), "-c", code], capture_output=True, text=True, timeout=120, cwd=os.path.dirname(__file__))
    assert r.returncode == 0, r.stderr[-3000:]
    import json
    keys = json.loads(r.stdout.strip().splitlines()[-1])
    assert len(keys) == 8 and all(len(k) == COUNT and k == keys[0] for k in keys)


def test_a_lone_batching_client_gets_the_radio_at_full_speed(populated):
    """200 GET_DEVICE_TIME in one write, past the per-client burst (64): with no other client
    waiting, none waits for the 20 a second share (which alone would take 6.8 s)."""
    sim, d, port, radio = populated
    c = raw_client(port, b"batcher")
    n = 200
    t0 = time.perf_counter()
    c.sendall(frame(b"\x05") * n)
    got = 0
    while got < n:
        f = read_frame(c, timeout=10)
        assert f is not None
        if f[0] == 0x09:
            got += 1
        else:
            assert f[0] >= 0x80, f
    elapsed = time.perf_counter() - t0
    print(f"{n} requests alone: {elapsed * 1000:.1f} ms")
    assert elapsed < 3.0
    c.close()
