#!/usr/bin/env python3
"""One companion app for the storm: meshcore_py (MeshCore.create_tcp) connected to HOST:PORT (the
pocketmesh hub or meshcore-proxy), fetching messages as meshcore_py apps do
(start_auto_message_fetching: a GET_MSG round on every MSG_WAITING) and keeping the storm texts
it gets (CHANNEL_MSG_RECV events to a subscriber). Writes {"got": N, "unique": U} to OUT whenever
the count changes (at most twice a second) and at SIGTERM, and prints "ready" once connected.

    client.py HOST PORT OUT
"""
import asyncio
import json
import os
import re
import signal
import sys

from meshcore import EventType, MeshCore

STORM = re.compile(r"storm-(\d+)")


async def main(host, port, out):
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
    asyncio.run(main(*sys.argv[1:4]))
