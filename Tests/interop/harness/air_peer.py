#!/usr/bin/env python3
"""An openhop-core node (PyPI: a MeshCore node implementation nobody on this project wrote) on
`pocketmesh sim`'s air: it attaches to the simulator's air socket as one of the topology's
`external` nodes, and serves its companion protocol over TCP (openhop-core's own frame server),
so that pocketmesh, meshcore-cli or meshcore_py can drive it like a WiFi companion radio.

    python air_peer.py --air 127.0.0.1:7000 --name ext0 --port 5101
    node ext0 pubkey=<64 hex> tcp=127.0.0.1:5101

The air socket's frames (both ways): u16 LE length, then a kind byte and its body:
0x01 hello (the node's name), 0x02 a packet this node transmits, 0x03 a packet it hears
(SNR x 4 as i8, RSSI as i8, the packet), 0x04 an error from the simulator (then it closes).
Loopback only; stops on SIGTERM or SIGINT, or when the simulator goes away.
"""
import argparse
import asyncio
import logging
import signal
import struct
import sys

from openhop_core import LocalIdentity
from openhop_core.companion import CompanionFrameServer, CompanionRadio
from openhop_core.companion.constants import DEFAULT_PUBLIC_CHANNEL_SECRET

from companion_peer import QuietRadio  # the same directory


def frame(kind, body=b""):
    payload = bytes([kind]) + body
    return struct.pack("<H", len(payload)) + payload


class SimAirRadio(QuietRadio):
    """The LoRa radio openhop-core drives, carried by the simulator's air socket."""

    def __init__(self, writer):
        self.writer = writer
        self.snr, self.rssi = 0.0, -120

    async def send(self, data):
        self.writer.write(frame(0x02, bytes(data)))
        await self.writer.drain()
        return {"airtime_ms": 0}


async def read_air(reader, radio, done):
    try:
        while True:
            head = await reader.readexactly(2)
            body = await reader.readexactly(struct.unpack("<H", head)[0])
            if body[0] == 0x03 and len(body) > 3:
                snr = struct.unpack("b", body[1:2])[0] / 4
                rssi = struct.unpack("b", body[2:3])[0]
                radio.hear(body[3:], rssi, snr)
            elif body[0] == 0x04:
                print(f"air_peer: the simulator refused: {body[1:].decode(errors='replace')}", file=sys.stderr, flush=True)
                break
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    if not done.done():
        done.set_result(None)


async def serve(air, name, port, repeat=False):
    host, air_port = air.rsplit(":", 1)
    reader, writer = await asyncio.open_connection(host, int(air_port))
    writer.write(frame(0x01, name.encode()))
    await writer.drain()
    radio = SimAirRadio(writer)
    node = CompanionRadio(radio, LocalIdentity(), node_name=name)
    node.set_channel(0, "Public", DEFAULT_PUBLIC_CHANNEL_SECRET)  # a fresh firmware has it in slot 0
    await node.start()
    if repeat:
        node.set_client_repeat(1)  # relay floods and direct packets, as a repeater does
    key = node.get_public_key()
    server = CompanionFrameServer(bridge=node, companion_hash=f"{key[0]:02x}", port=port, bind_address="127.0.0.1",
                                  device_model="openhop-on-sim", client_idle_timeout_sec=None)
    await server.start()
    print(f"node {name} pubkey={key.hex()} tcp=127.0.0.1:{port}", flush=True)
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: done.done() or done.set_result(None))
    task = asyncio.create_task(read_air(reader, radio, done))
    await done
    task.cancel()
    await server.stop()
    await node.stop()
    writer.close()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--air", required=True, help="the simulator's air socket, 127.0.0.1:PORT")
    ap.add_argument("--name", required=True, help="the topology's external node to be")
    ap.add_argument("--port", type=int, required=True, help="TCP port of this node's companion protocol")
    ap.add_argument("--repeat", action="store_true", help="relay packets (openhop-core's client repeat)")
    ap.add_argument("--debug", action="store_true")
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(serve(args.air, args.name, args.port, args.repeat))


if __name__ == "__main__":
    main()
