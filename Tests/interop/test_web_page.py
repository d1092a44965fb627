"""The web console (`daemon --web`) in a real browser: Debian's Chromium, headless, driven over the
DevTools protocol (harness/cdp.py), against `pocketmesh sim` (sim0 - rpt0 - rpt1 - sim1, and a room).
sim0's daemon serves the console (all classes but secret on one port, read only on another);
sim1's daemon serves one that asks for a password. Everything is on loopback and every wait has a
deadline.

Environment: POCKETMESH_BIN; POCKETMESH_WEB_SCREENSHOTS=DIR saves a screenshot of each tab there
(docs/web/ has them).
"""
import http.server
import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest

from conftest import wait_for
from test_daemon_faults import BIN, Daemon, free_ports
from test_hub import frame as hub_frame
from test_sim_clients import Sim

sys.path.insert(0, str(Path(__file__).resolve().parent / "harness"))
from cdp import Chromium, chromium_path  # noqa: E402

pytestmark = pytest.mark.skipif(not BIN.exists(), reason="pocketmesh binary not built")

# The map asks OpenStreetMap for one tile to find out whether it can show tiles; offline (as here)
# that one request fails, which the browser logs. Nothing else may.
OFFLINE_TILE = "tile.openstreetmap.org"
PASSWORD = "correct horse battery"


class Mesh:
    def __init__(self):
        self.dirs = [tempfile.mkdtemp(prefix="pmweb-") for _ in range(3)]
        self.sim = Sim("--repeaters", "2", "--rooms", "1", "--seed", "11")
        self.web = free_ports(4)  # sim0: all but secret, read only; sim1: with a password; sim0's hub
        pw = Path(self.dirs[1]) / "web.pw"
        pw.write_text(PASSWORD + "\n")
        pw.chmod(0o600)
        self.d0 = Daemon(self.dirs[0], self.sim.port("sim0"), hook=False,
                         extra=("--web", f"127.0.0.1:{self.web},allow=read+message+config+admin",
                                "--web", f"127.0.0.1:{self.web + 1},allow=read",
                                # A hook that fails at once (given up after one run), and a hub, for the daemon tab.
                                "--on-message", "/bin/false", "--hook-attempts", "1",
                                "--companion-listen", f"127.0.0.1:{self.web + 3}"))
        self.d1 = Daemon(self.dirs[1], self.sim.port("sim1"), hook=False,
                         extra=("--web", f"127.0.0.1:{self.web + 2},allow=read+message", "--web-password-file", str(pw)))
        self.browser = None

    def start(self):
        self.d0.wait_ready(timeout=60)
        self.d1.wait_ready(timeout=60)
        # Positions for the map, shared in adverts that each radio hears.
        for d, (lat, lon) in ((self.d0, (45.42, -75.70)), (self.d1, (45.45, -75.65))):
            for req in ({"op": "set", "setting": "coords", "values": [lat, lon]},
                        {"op": "set", "setting": "advert-loc-policy", "values": ["share"]},
                        {"op": "advert", "flood": True}):
                r = d.call(dict(req, id=1), timeout=30)
                assert r["ok"], r
        self.key0 = self.d0.call({"id": 1, "op": "info"})["public_key"]
        self.key1 = self.d1.call({"id": 1, "op": "info"})["public_key"]

        def placed(d, key):
            for c in d.call({"id": 2, "op": "contacts"}, timeout=30).get("contacts", []):
                if c["public_key"] == key and c["latitude"]:
                    return True
            d.call({"id": 3, "op": "advert", "flood": True}, timeout=30)
            return False
        assert wait_for(lambda: placed(self.d0, self.key1), timeout=60), "sim0 never learnt sim1's position"
        names = lambda: {c["name"] for c in self.d0.call({"id": 4, "op": "contacts"}, timeout=30).get("contacts", [])}
        assert wait_for(lambda: {"rpt0", "rpt1", "room0"} <= names(), timeout=60), names()
        assert wait_for(lambda: placed(self.d1, self.key0), timeout=60), "sim1 never learnt sim0's position"
        self.browser = Chromium(self.dirs[2])

    def url(self, port, tab=""):
        return f"http://127.0.0.1:{port}/" + (f"#{tab}" if tab else "")

    def close(self):
        if self.browser:
            self.browser.close()
        for d in (self.d0, self.d1):
            d.stop()
        self.sim.stop()
        for d in self.dirs:
            shutil.rmtree(d, ignore_errors=True)


@pytest.fixture(scope="module")
def mesh():
    if not chromium_path():
        pytest.fail("chromium is not installed (scripts/setup.sh installs it)")
    m = Mesh()
    try:
        m.start()
        yield m
    finally:
        m.close()


@pytest.fixture
def page(mesh):
    p = mesh.browser.page()
    yield p
    p.close()


def open_console(mesh, page, tab="", port=None):
    page.goto(mesh.url(port or mesh.web, tab))
    page.wait_js("document.getElementById('radio-name').textContent === 'sim0'", timeout=30)


def texts(page, selector):
    return page.js(f"[...document.querySelectorAll({json.dumps(selector)})].map(e => e.textContent)")


def test_the_page_loads_without_errors_and_shows_the_radio_and_its_contacts(mesh, page):
    open_console(mesh, page, "contacts")
    assert page.wait_js("document.querySelectorAll('#contact-table tbody tr[data-key]').length >= 3", timeout=20)
    names = " ".join(texts(page, "#contact-table tbody td:nth-child(2) strong"))
    for n in ("sim1", "rpt0", "room0"):
        assert n in names, names
    assert "connected" in page.js("document.getElementById('conn-text').textContent")
    # Every tab opens without an error.
    for tab in ("chats", "contacts", "map", "nodes", "radio", "daemon"):
        page.js(f"location.hash = '#{tab}'")
        page.wait_js(f"!document.getElementById('tab-{tab}').hidden && document.getElementById('tab-{tab}').getAttribute('aria-selected') === 'true'")
        page.pump(0.5)
    page.wait_js("document.querySelector('#d-status td') !== null")
    assert page.errors(ignore=(OFFLINE_TILE,)) == []


def chat_with(page, key):
    sel = f"#contact-table tr[data-key='{key}'] button"
    page.wait_js(f"[...document.querySelectorAll({json.dumps(sel)})].some(b => b.textContent === 'Chat')")
    page.js(f"[...document.querySelectorAll({json.dumps(sel)})].find(b => b.textContent === 'Chat').click()")
    page.wait_js("!document.getElementById('send-form').hidden && document.getElementById('thread-title').textContent === 'sim1'")


def type_and_send(page, text):
    page.js(f"(() => {{ const t = document.getElementById('send-text'); t.value = {json.dumps(text)}; t.dispatchEvent(new Event('input')); }})()")
    page.js("document.getElementById('send-form').requestSubmit()")


def test_a_direct_message_from_the_page_is_received_and_shown_acknowledged(mesh, page):
    open_console(mesh, page, "contacts")
    chat_with(page, mesh.key1)
    text = f"from the browser {time.time():.0f}"
    type_and_send(page, text)
    # The page shows it acknowledged (the daemon's delivery event).
    page.wait_js(f"[...document.querySelectorAll('#msg-list .msg.out')].some(m => m.querySelector('.tx').textContent === {json.dumps(text)}"
                 " && m.querySelector('[data-status]').dataset.status === 'acked')", timeout=60)
    # The other radio has it.
    got = wait_for(lambda: any(m["text"] == text and m["direction"] == "in"
                               for m in mesh.d1.call({"id": 1, "op": "history", "thread": mesh.key0[:12], "limit": 20})["messages"]),
                   timeout=30)
    assert got, "sim1 did not receive the message"
    assert page.errors(ignore=(OFFLINE_TILE,)) == []


def test_a_long_message_goes_in_numbered_parts(mesh, page):
    open_console(mesh, page, "contacts")
    chat_with(page, mesh.key1)
    words = " ".join(f"w{i:03d}" for i in range(50))  # 249 bytes: two parts of at most 160
    page.js(f"(() => {{ const t = document.getElementById('send-text'); t.value = {json.dumps(words)}; t.dispatchEvent(new Event('input')); }})()")
    assert "2 parts" in page.js("document.getElementById('send-count').textContent")
    page.js("document.getElementById('send-form').requestSubmit()")

    def parts():  # in the order of their numbers (they may arrive in either)
        got = sorted(m["text"] for m in mesh.d1.call({"id": 1, "op": "history", "thread": mesh.key0[:12], "limit": 20})["messages"]
                     if m["direction"] == "in" and m["text"].startswith("(") and "w0" in m["text"])
        return got if len(got) >= 2 else None
    got = wait_for(parts, timeout=60)
    assert got and len(got) == 2 and got[0].startswith("(1/2) w000") and got[1].startswith("(2/2) ") and got[1].endswith("w049"), got
    assert all(len(t.encode()) <= 160 for t in got)


def test_a_message_that_arrives_is_shown_and_counted_unread(mesh, page):
    open_console(mesh, page, "contacts")
    page.wait_js("document.querySelectorAll('#contact-table tbody tr[data-key]').length >= 3", timeout=20)
    page.pump(1)
    unread = "(() => { const b = document.querySelector('#unread-all .badge'); return b ? +b.textContent : 0; })()"
    before = page.js(unread)
    text = f"to the browser {time.time():.0f}"
    r = mesh.d1.call({"id": 1, "op": "send", "to": mesh.key0[:12], "text": text}, timeout=30)
    assert r["ok"], r
    # Counted while another tab is shown, then shown (and read) in its conversation.
    page.wait_js(f"{unread} === {before + 1}", timeout=60)
    chat_with(page, mesh.key1)
    page.wait_js(f"[...document.querySelectorAll('#msg-list .msg.in .tx')].some(e => e.textContent === {json.dumps(text)})", timeout=30)
    page.wait_js(f"{unread} === {before}", timeout=10)
    # And live, in the open conversation: added at the end, the items already shown kept as they
    # are (not the whole list made again for each message: a busy channel would cost it per message).
    page.js("document.querySelectorAll('#msg-list li').forEach(li => { li.dataset.seen = '1'; })")
    shown = page.js("document.querySelectorAll('#msg-list li').length")
    text2 = text + " again"
    assert mesh.d1.call({"id": 2, "op": "send", "to": mesh.key0[:12], "text": text2}, timeout=30)["ok"]
    page.wait_js(f"[...document.querySelectorAll('#msg-list .msg.in .tx')].some(e => e.textContent === {json.dumps(text2)})", timeout=60)
    assert page.js("document.querySelectorAll('#msg-list li[data-seen]').length") == shown
    assert page.js("document.querySelector('#msg-list li:last-child .tx').textContent") == text2
    assert page.js(unread) == before
    assert page.errors(ignore=(OFFLINE_TILE,)) == []


def test_text_from_the_mesh_is_shown_as_text_never_as_html(mesh, page):
    open_console(mesh, page, "contacts")
    chat_with(page, mesh.key1)
    text = f"<img src=x onerror=\"window.pwned=1\"><b>bold</b> {time.time():.0f}"
    assert mesh.d1.call({"id": 1, "op": "send", "to": mesh.key0[:12], "text": text}, timeout=30)["ok"]
    page.wait_js(f"[...document.querySelectorAll('#msg-list .msg.in .tx')].some(e => e.textContent === {json.dumps(text)})", timeout=60)
    assert page.js("document.querySelectorAll('#msg-list img, #msg-list b, #conv-list img').length") == 0
    assert page.js("window.pwned === undefined")
    page.js("location.hash = '#chats'")
    page.wait_js(f"[...document.querySelectorAll('#conv-list .pv')].some(e => e.textContent === {json.dumps(text)})", timeout=20)
    assert page.js("document.querySelectorAll('#conv-list img, #conv-list b').length") == 0


def test_a_channel_message_is_sent_and_its_repeats_counted(mesh, page):
    open_console(mesh, page, "chats")
    page.wait_js("[...document.querySelectorAll('#conv-list button')].some(b => b.textContent.startsWith('# Public'))")
    page.js("[...document.querySelectorAll('#conv-list button')].find(b => b.textContent.startsWith('# Public')).click()")
    page.wait_js("document.getElementById('thread-title').textContent === '#Public' && !document.getElementById('send-form').hidden")
    # The page counts the repeats heard within 2 s of sending (as `channel send` does): on a loaded
    # machine rpt0's repeat can come later, so up to three messages go until one shows a repeat.
    statuses = []
    for attempt in range(3):
        text = f"to the channel {time.time():.0f} {attempt}"
        type_and_send(page, text)
        # sim1 gets it (as "sim0: text"), and the page counts the repeats it heard of it (rpt0 repeats the flood).
        assert wait_for(lambda: any(m.get("text") == text for m in mesh.d1.call({"id": 1, "op": "history", "thread": "channel 0", "limit": 20})["messages"]),
                        timeout=60), "sim1 did not receive the channel message"
        status = page.wait_js(f"""(() => {{ const m = [...document.querySelectorAll('#msg-list .msg.out')].find(m => m.querySelector('.tx').textContent === {json.dumps(text)});
            return m && m.querySelector('[data-status]').textContent.includes('heard') && m.querySelector('[data-status]').textContent; }})()""", timeout=30)
        statuses.append(status)
        if "heard 0 " not in status:
            break
    assert all(s.startswith("sent, heard ") for s in statuses) and "heard 0 " not in statuses[-1], statuses
    assert page.errors(ignore=(OFFLINE_TILE,)) == []


def test_the_map_and_the_plots_are_drawn(mesh, page):
    open_console(mesh, page, "map")
    page.wait_js("document.getElementById('map-info').textContent.startsWith('2 with a position')", timeout=20)
    # The canvas has this radio's marker (red) and sim1's (blue), and the scale bar's text.
    found = page.js("""(() => {
        const c = document.getElementById('map'), d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        let red = 0, blue = 0;
        for (let i = 0; i < d.length; i += 4) {
          if (d[i] === 0xc4 && d[i + 1] === 0x29 && d[i + 2] === 0x1c) red++;
          if (d[i] === 0x0b && d[i + 1] === 0x6b && d[i + 2] === 0xcb) blue++;
        }
        return [red, blue];
    })()""")
    assert found[0] > 20 and found[1] > 20, found
    page.js("location.hash = '#radio'")
    page.wait_js("document.querySelectorAll('#plot-sig svg circle, #plot-sig svg polyline').length > 0", timeout=30)
    # From the samples the daemon keeps (samples_signal): the messages of the tests before have some.
    assert "kept by the daemon" in page.js("document.getElementById('plot-sig').textContent")
    page.wait_js("document.querySelectorAll('#plot-bat svg circle, #plot-bat svg polyline').length > 0", timeout=30)
    assert page.errors(ignore=(OFFLINE_TILE,)) == []


def test_a_read_only_listener_offers_no_sending(mesh, page):
    open_console(mesh, page, "contacts", port=mesh.web + 1)
    page.wait_js("document.querySelectorAll('#contact-table tbody tr[data-key]').length >= 3", timeout=20)
    assert page.js("document.getElementById('classes').textContent") == "allows: read"
    # No send box, no chats (history is a message op), no add, favourite or remove.
    shown = "(id => { const e = document.getElementById(id); return e.offsetParent !== null || getComputedStyle(e).display !== 'none'; })"
    for element in ("tab-chats", "send-form", "add-form", "advert-btn", "node-login", "node-cli"):
        assert not page.js(f"{shown}('{element}')"), element + " is offered"
    assert page.js(f"{shown}('tab-contacts')")
    assert not page.js("[...document.querySelectorAll('#contact-table button')].some(b => ['Chat', 'Remove', 'Reset path', '☆', '★'].includes(b.textContent))")
    # And the API itself refuses a send from this page.
    refusal = page.js("""new Promise(done => {
        const ws = new WebSocket(location.origin.replace('http', 'ws') + '/api');
        ws.onopen = () => ws.send(JSON.stringify({id: 1, op: 'send', to: 'sim1', text: 'not allowed'}));
        ws.onmessage = e => { done(JSON.parse(e.data)); ws.close(); };
        setTimeout(() => done('no answer'), 10000);
    })""", timeout=15)
    assert refusal["ok"] is False and refusal["error"]["code"] == "denied", refusal
    # Nothing the page itself asks for is refused: it asks only for what the listener allows.
    for tab in ("map", "radio", "daemon"):
        page.js(f"location.hash = '#{tab}'")
        page.pump(1)
    page.wait_js("document.querySelector('#d-status td') !== null && document.querySelector('#plot-sig svg') !== null", timeout=30)
    assert page.js("document.getElementById('toast').textContent") == ""
    assert page.errors(ignore=(OFFLINE_TILE,)) == []


def test_a_wrong_password_is_refused(mesh, page):
    page.goto(mesh.url(mesh.web + 2))
    page.wait_js("!document.getElementById('login').hidden && document.getElementById('tabs').hidden", timeout=20)
    page.js("document.getElementById('pw').value = 'wrong'; document.getElementById('login-form').requestSubmit()")
    page.wait_js("document.getElementById('login-msg').textContent === 'Wrong password.'", timeout=20)
    assert page.js("fetch('whoami').then(r => r.json()).then(w => w.loggedIn)") is False
    assert page.js("document.getElementById('radio-name').textContent") == ""
    # The API is closed without a session.
    closed = page.js("""new Promise(done => {
        const ws = new WebSocket(location.origin.replace('http', 'ws') + '/api');
        ws.onopen = () => done('open'); ws.onclose = () => done('closed');
        setTimeout(() => done('no answer'), 10000);
    })""", timeout=15)
    assert closed == "closed"
    page.js(f"document.getElementById('pw').value = {json.dumps(PASSWORD)}; document.getElementById('login-form').requestSubmit()")
    page.wait_js("document.getElementById('radio-name').textContent === 'sim1'", timeout=30)


def test_the_daemon_tab_lists_failed_hooks_and_hub_clients_and_drops_a_hook(mesh, page):
    # A message for sim0, whose hook fails and is given up.
    text = f"for the hook {time.time():.0f}"
    assert mesh.d1.call({"id": 1, "op": "send", "to": mesh.key0[:12], "text": text}, timeout=30)["ok"]
    assert wait_for(lambda: any(f.get("message", {}).get("text") == text
                                for f in mesh.d0.call({"id": 2, "op": "hooks_failed"})["failed"]), timeout=60)
    app = socket.create_connection(("127.0.0.1", mesh.web + 3), timeout=10)
    try:
        app.sendall(hub_frame(b"\x01\x03" + b"\x00" * 6 + b"webtest"))  # APP_START
        open_console(mesh, page, "daemon")
        page.wait_js(f"document.getElementById('d-hooks').textContent.includes({json.dumps(text)})", timeout=20)
        page.wait_js("document.getElementById('d-hub').textContent.includes('webtest')", timeout=20)
        page.js(f"""[...document.querySelectorAll('#d-hooks tr')].find(r => r.textContent.includes({json.dumps(text)}))
                    .querySelector('button.bad').click()""")
        page.wait_js(f"!document.getElementById('d-hooks').textContent.includes({json.dumps(text)})", timeout=20)
        assert not any(f.get("message", {}).get("text") == text for f in mesh.d0.call({"id": 3, "op": "hooks_failed"})["failed"])
        assert page.errors(ignore=(OFFLINE_TILE,)) == []
    finally:
        app.close()


class _OtherOrigin(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self):
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, *args):
        pass


def test_a_page_of_another_origin_cannot_use_the_api(mesh, page):
    _OtherOrigin.page = f"""<!doctype html><title>other</title><script>
    const ws = new WebSocket("ws://127.0.0.1:{mesh.web}/api");
    ws.onopen = () => {{ document.title = "open"; ws.send('{{"id":1,"op":"contacts"}}'); }};
    ws.onmessage = e => {{ document.title = "answered " + e.data.slice(0, 40); }};
    ws.onclose = () => {{ if (document.title === "other") document.title = "refused"; }};
    </script>""".encode()
    server = http.server.ThreadingHTTPServer(("127.0.0.1", free_ports(1)), _OtherOrigin)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        page.goto(f"http://127.0.0.1:{server.server_address[1]}/")
        title = page.wait_js("document.title !== 'other' && document.title", timeout=20)
        assert title == "refused", title
    finally:
        server.shutdown()
        server.server_close()


def test_screenshots_of_each_tab(mesh, page):
    out = os.environ.get("POCKETMESH_WEB_SCREENSHOTS") or tempfile.mkdtemp(prefix="pmweb-shots-")
    os.makedirs(out, exist_ok=True)
    app = socket.create_connection(("127.0.0.1", mesh.web + 3), timeout=10)
    try:
        app.sendall(hub_frame(b"\x01\x03" + b"\x00" * 6 + b"meshcore-app"))  # APP_START: a hub client to show
        open_console(mesh, page, "chats")
        page.wait_js("document.querySelectorAll('#msg-list .msg').length > 0", timeout=20)
        page.screenshot(os.path.join(out, "chats.png"))
        for tab, ready in (("contacts", "document.querySelectorAll('#contact-table tr[data-key]').length >= 3"),
                           ("map", "document.getElementById('map-info').textContent.startsWith('2')"),
                           ("radio", "document.querySelector('#plot-sig svg') !== null"),
                           ("daemon", "document.querySelector('#d-status td') !== null")):
            page.js(f"location.hash = '#{tab}'")
            page.wait_js(ready, timeout=30)
            page.pump(0.3)
            page.screenshot(os.path.join(out, f"{tab}.png"))
        page.js("location.hash = '#nodes'")
        page.js(f"document.getElementById('node-sel').value = {json.dumps(next(c['public_key'] for c in mesh.d0.call({'id': 1, 'op': 'contacts'})['contacts'] if c['name'] == 'rpt0'))}")
        page.js("document.getElementById('node-pw').value = 'password'; document.getElementById('node-login').click()")
        page.wait_js("document.querySelector('#node-out td') !== null", timeout=60)
        page.js("document.getElementById('node-status').click()")
        page.wait_js("document.getElementById('node-out').textContent.includes('uptime')", timeout=60)
        page.js("document.getElementById('node-cmd').value = 'ver'; document.getElementById('node-cli').requestSubmit()")
        page.wait_js("document.getElementById('node-log').textContent.includes('v1.')", timeout=60)
        page.js("document.getElementById('node-tel').click()")
        page.wait_js("document.querySelector('#node-telemetry td') !== null", timeout=60)
        # rpt0 hears rpt1's adverts: a graph with one link.
        deadline = time.monotonic() + 90
        while True:
            page.js("document.getElementById('node-graph').replaceChildren(); document.getElementById('node-nb').click()")
            page.wait_js("document.querySelector('#node-graph svg') !== null", timeout=60)
            if page.js("document.querySelectorAll('#node-graph svg line').length") > 0:
                break
            assert time.monotonic() < deadline, "rpt0 never listed a neighbour"
            page.pump(3)
        page.screenshot(os.path.join(out, "nodes.png"))
        assert all(os.path.getsize(os.path.join(out, f"{t}.png")) > 5000 for t in ("chats", "contacts", "map", "radio", "daemon", "nodes"))
        assert page.errors(ignore=(OFFLINE_TILE,)) == []
    finally:
        app.close()
        if not os.environ.get("POCKETMESH_WEB_SCREENSHOTS"):
            shutil.rmtree(out, ignore_errors=True)
