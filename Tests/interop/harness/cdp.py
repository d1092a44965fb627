"""A small Chrome DevTools Protocol client over a plain socket (RFC 6455 client frames), and Debian's
Chromium started headless with a DevTools port of its own. Every wait has a deadline.

    with Chromium(tmpdir) as browser:
        page = browser.page()
        page.goto("http://127.0.0.1:8080/")
        page.wait_js("document.title.includes('PocketMesh')")
"""
import base64
import json
import os
import shutil
import socket
import struct
import subprocess
import time
import urllib.request
from urllib.parse import urlparse


class CDPError(Exception):
    pass


def chromium_path():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        p = shutil.which(name)
        if p:
            return p
    return None


class WebSocket:
    """A client WebSocket: masked frames out, text frames in (fragments joined), pings answered."""

    def __init__(self, url, timeout=10):
        u = urlparse(url)
        self.sock = socket.create_connection((u.hostname, u.port or 80), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        path = u.path + ("?" + u.query if u.query else "")
        self.sock.sendall((f"GET {path} HTTP/1.1\r\nHost: {u.hostname}:{u.port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise CDPError("DevTools closed the connection during the handshake")
            head += chunk
        head, self.buf = head.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 101"):
            raise CDPError("DevTools refused the WebSocket: " + head.decode(errors="replace").splitlines()[0])

    def send(self, text):
        data = text.encode()
        n = len(data)
        if n < 126:
            head = struct.pack("!BB", 0x81, 0x80 | n)
        elif n < 65536:
            head = struct.pack("!BBH", 0x81, 0x80 | 126, n)
        else:
            head = struct.pack("!BBQ", 0x81, 0x80 | 127, n)
        mask = os.urandom(4)
        masked = bytes(b ^ mask[i & 3] for i, b in enumerate(data))
        self.sock.sendall(head + mask + masked)

    def _need(self, n, deadline):
        while len(self.buf) < n:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            self.sock.settimeout(left)
            chunk = self.sock.recv(1 << 16)
            if not chunk:
                raise CDPError("DevTools closed the connection")
            self.buf += chunk

    def recv(self, deadline):
        """The next text message; TimeoutError at the deadline."""
        message = b""
        while True:
            self._need(2, deadline)
            b0, b1 = self.buf[0], self.buf[1]
            n, off = b1 & 0x7F, 2
            if n == 126:
                self._need(4, deadline)
                n, off = struct.unpack("!H", self.buf[2:4])[0], 4
            elif n == 127:
                self._need(10, deadline)
                n, off = struct.unpack("!Q", self.buf[2:10])[0], 10
            self._need(off + n, deadline)
            payload, self.buf = self.buf[off:off + n], self.buf[off + n:]
            op = b0 & 0x0F
            if op == 8:
                raise CDPError("DevTools closed the WebSocket")
            if op == 9:  # ping: answer, keep reading
                mask = os.urandom(4)
                self.sock.sendall(struct.pack("!BB", 0x8A, 0x80 | len(payload)) + mask + bytes(b ^ mask[i & 3] for i, b in enumerate(payload)))
                continue
            if op in (0, 1, 2):
                message += payload
                if b0 & 0x80:
                    return message.decode()

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class Page:
    """One tab: commands with `send`, events kept in `events` (all of them, in order)."""

    def __init__(self, ws_url):
        self.ws = WebSocket(ws_url)
        self.next_id = 1
        self.events = []

    def send(self, method, params=None, timeout=30):
        msg_id = self.next_id
        self.next_id += 1
        self.ws.send(json.dumps({"id": msg_id, "method": method, "params": params or {}}))
        deadline = time.monotonic() + timeout
        while True:
            try:
                m = json.loads(self.ws.recv(deadline))
            except TimeoutError:
                raise CDPError(f"{method}: no answer in {timeout} s") from None
            if m.get("id") == msg_id:
                if "error" in m:
                    raise CDPError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            if "method" in m:
                self.events.append(m)

    def pump(self, seconds):
        """Reads events for up to `seconds`."""
        deadline = time.monotonic() + seconds
        while True:
            try:
                m = json.loads(self.ws.recv(deadline))
            except TimeoutError:
                return
            if "method" in m:
                self.events.append(m)

    def enable(self):
        for domain in ("Runtime", "Log", "Page"):
            self.send(f"{domain}.enable")

    def goto(self, url, timeout=30):
        self.send("Page.navigate", {"url": url})
        self.wait_js("document.readyState === 'complete'", timeout=timeout)

    def js(self, expression, timeout=30):
        """The value of a JavaScript expression (a promise is awaited); CDPError when it throws."""
        r = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True}, timeout=timeout)
        if "exceptionDetails" in r:
            d = r["exceptionDetails"]
            raise CDPError("JavaScript threw: " + (d.get("exception", {}).get("description") or d.get("text", "")))
        return r.get("result", {}).get("value")

    def wait_js(self, expression, timeout=20, interval=0.2):
        """Evaluates until the expression is truthy; its value, or CDPError at the deadline."""
        deadline = time.monotonic() + timeout
        value = None
        while time.monotonic() < deadline:
            value = self.js(expression)
            if value:
                return value
            self.pump(interval)
        raise CDPError(f"not true within {timeout} s: {expression} (last value {value!r})")

    def screenshot(self, path):
        data = self.send("Page.captureScreenshot", {"format": "png"})["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))

    def errors(self, ignore=()):
        """Console errors, uncaught exceptions and error log entries so far (texts), except those
        containing one of the `ignore` strings."""
        self.pump(0.1)
        out = []
        for e in self.events:
            p, m = e.get("params", {}), e["method"]
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append("exception: " + (d.get("exception", {}).get("description") or d.get("text", "")))
            elif m == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p.get("args", [])))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                en = p["entry"]
                out.append(f"log ({en.get('source')}): {en.get('text')} {en.get('url', '')}")
        return [t for t in out if not any(i in t for i in ignore)]

    def close(self):
        try:
            self.send("Page.close", timeout=5)
        except (CDPError, OSError):
            pass
        self.ws.close()


class Chromium:
    """Headless Chromium with its own profile folder and a DevTools port it picked itself."""

    def __init__(self, profile_dir, width=1024, height=700, timeout=30):
        path = chromium_path()
        if not path:
            raise CDPError("no chromium on PATH (apt-get install chromium)")
        self.profile = str(profile_dir)
        self.width, self.height = width, height
        self.stderr = open(os.path.join(self.profile, "chromium.log"), "wb")
        self.proc = subprocess.Popen(
            [path, "--headless=new", "--no-sandbox", "--remote-debugging-port=0", "--remote-debugging-address=127.0.0.1",
             f"--user-data-dir={self.profile}", "--no-first-run", "--no-default-browser-check", "--disable-gpu",
             "--disable-extensions", "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--disable-dev-shm-usage", "--mute-audio", f"--window-size={width},{height}", "about:blank"],
            stdout=subprocess.DEVNULL, stderr=self.stderr, start_new_session=True)
        port_file = os.path.join(self.profile, "DevToolsActivePort")
        deadline = time.monotonic() + timeout
        self.port = None
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            try:
                with open(port_file) as f:
                    first = f.readline().strip()
                if first.isdigit():
                    self.port = int(first)
                    break
            except OSError:
                pass
            time.sleep(0.1)
        if not self.port:
            self.close()
            raise CDPError("chromium did not open its DevTools port; its log: " + open(os.path.join(self.profile, "chromium.log"), errors="replace").read()[-2000:])
        self.pages = []

    def page(self):
        """A new tab at about:blank, with Runtime, Log and Page events on, at the window's size."""
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}/json/new?about:blank", method="PUT")
        with urllib.request.urlopen(req, timeout=10) as r:
            info = json.loads(r.read())
        p = Page(info["webSocketDebuggerUrl"])
        self.pages.append(p)
        p.enable()
        p.send("Emulation.setDeviceMetricsOverride", {"width": self.width, "height": self.height, "deviceScaleFactor": 1, "mobile": False})
        return p

    def close(self):
        for p in getattr(self, "pages", []):
            p.close()
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, 15)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, 9)
                self.proc.wait(timeout=10)
        self.stderr.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
