#!/usr/bin/env python3
"""One companion app for the storm: meshcore_py (MeshCore.create_tcp) connected to HOST:PORT (the
pocketmesh hub or meshcore-proxy), fetching messages as meshcore_py apps do
(start_auto_message_fetching: a GET_MSG round on every MSG_WAITING) and keeping the storm texts
it gets (CHANNEL_MSG_RECV events to a subscriber). Writes {"got": N, "unique": U} to OUT whenever
the count changes (at most twice a second) and at SIGTERM, and prints "ready" once connected.

    client.py HOST PORT OUT [nopause]

With `nopause` the client fetches with its own loop (GET_MSG until NO_MORE_MSGS on each
MSG_WAITING) instead of meshcore_py's auto-fetch, which waits 0.1 s after every message.
"""
import asyncio
import json
import os
import re
import signal
import sys

from meshcore import EventType, MeshCore

STORM = re.compile(r"storm-(\d+)")


async def fetch_without_pause(mc):
    state = {"running": False, "again": False}

    async def loop():
        state["running"] = True
        try:
            while True:
                state["again"] = False
                while True:
                    r = await mc.commands.get_msg()
                    if r.type in (EventType.NO_MORE_MSGS, EventType.ERROR):
                        break
                if not state["again"]:  # no MSG_WAITING came while this round ran
                    break
        finally:
            state["running"] = False

    def on_waiting(event):
        if state["running"]:
            state["again"] = True
        else:
            asyncio.get_running_loop().create_task(loop())

    mc.subscribe(EventType.MESSAGES_WAITING, on_waiting)
    await loop()


async def main(host, port, out, mode="auto"):
    mc = await MeshCore.create_tcp(host, int(port))
    if mc is None:
        sys.exit(f"client: no connection to {host}:{port}")
    got, unique = [0], set()

    def on_message(event):
        m = STORM.search(event.payload.get("text", ""))
        if m:
            got[0] += 1
            unique.add(m.group(1))

    mc.subscribe(EventType.CHANNEL_MSG_RECV, on_message)
    if mode == "nopause":
        await fetch_without_pause(mc)
    else:
        await mc.start_auto_message_fetching()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    print("ready", flush=True)

    def write():
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            json.dump({"got": got[0], "unique": len(unique)}, f)
        os.replace(tmp, out)

    written = -1
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 0.5)
        except asyncio.TimeoutError:
            pass
        if got[0] != written:
            written = got[0]
            write()
    write()
    os._exit(0)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
