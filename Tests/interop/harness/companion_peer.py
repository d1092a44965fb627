#!/usr/bin/env python3
"""A MeshCore companion peer that nobody on this project wrote, on loopback, for interop tests.

Runs N companion nodes of openhop-core (PyPI: a pure-Python MeshCore node implementation) on
one shared simulated air, and serves each node's companion protocol over TCP with openhop-core's
own frame server (`<`/`>` + u16 LE length + frame), so that pocketmesh, meshcore-cli or
meshcore_py can connect to it as to a WiFi companion radio.

    python companion_peer.py --nodes 2 --base-port 5001
    node sim0 pubkey=<64 hex> tcp=127.0.0.1:5001
    node sim1 pubkey=<64 hex> tcp=127.0.0.1:5002

The air: every packet a node transmits reaches every other node after its LoRa time on air
(SF10, 250 kHz) times `--airtime-scale` (default 0.1, so tests run ten times faster than the
air would carry them), with a fixed SNR and RSSI. Listens on 127.0.0.1
only; stops on SIGTERM or SIGINT.

openhop-core's frame server sends no LOG_RX_DATA (0x88) push, which the firmware writes for every
packet the radio receives; with `--log-rx` each node's heard packets (openhop-core's own
`rx_log_data` event) go to its client as LOG_RX_DATA, through the frame server's own `push_rx_raw`,
as the firmware does (what an observer uploader needs).
"""
import argparse
import asyncio
import logging
import math
import signal

from openhop_core import LocalIdentity
from openhop_core.companion import CompanionFrameServer, CompanionRadio
from openhop_core.companion.constants import DEFAULT_PUBLIC_CHANNEL_SECRET
from openhop_core.hardware.base import LoRaRadio


def lora_airtime_s(length, sf=10, bw_hz=250_000, cr=5, preamble=8):
    """Semtech's time-on-air formula (explicit header, CRC on, low data rate optimisation off)."""
    symbol = (2 ** sf) / bw_hz
    payload_symbols = 8 + max(math.ceil((8 * length - 4 * sf + 28 + 16) / (4 * sf)) * cr, 0)
    return (preamble + 4.25 + payload_symbols) * symbol


class SharedAir:
    """What one node transmits, every other node receives (no collisions, no loss)."""

    def __init__(self, airtime_scale=0.1, snr=9.5, rssi=-60):
        self.ends = []
        self.airtime_scale = airtime_scale
        self.snr, self.rssi = snr, rssi

    async def carry(self, sender, packet):
        await asyncio.sleep(lora_airtime_s(len(packet)) * self.airtime_scale)
        for end in self.ends:
            if end is not sender:
                end.hear(packet, self.rssi, self.snr)


class QuietRadio(LoRaRadio):
    """The parts of the LoRa radio openhop-core drives that a simulated air does not need: packets
    arrive through the callback, and the settings it passes on are accepted."""

    callback = None
    snr, rssi = 9.5, -60

    def hear(self, packet, rssi, snr):
        self.snr, self.rssi = snr, rssi
        if self.callback is not None:
            self.callback(bytes(packet), rssi, snr)

    def begin(self):
        return True

    def set_rx_callback(self, callback):
        self.callback = callback

    async def wait_for_rx(self):
        await asyncio.Future()  # packets arrive through the callback only

    def sleep(self):
        pass

    def get_last_rssi(self):
        return self.rssi

    def get_last_snr(self):
        return self.snr

    def configure_radio(self, *args, **kwargs):
        return True

    def set_tx_power(self, *args, **kwargs):
        return True


class AirRadio(QuietRadio):
    """The LoRa radio openhop-core drives, attached to a `SharedAir`."""

    def __init__(self, air):
        self.air = air
        self.snr, self.rssi = air.snr, air.rssi
        air.ends.append(self)

    async def send(self, data):
        await self.air.carry(self, bytes(data))
        return {"airtime_ms": round(lora_airtime_s(len(data)) * 1000)}


async def serve(node_count, base_port, airtime_scale, log_rx=False):
    air = SharedAir(airtime_scale)
    running = []
    for i in range(node_count):
        node = CompanionRadio(AirRadio(air), LocalIdentity(), node_name=f"sim{i}")
        # A fresh firmware has the Public channel in slot 0.
        node.set_channel(0, "Public", DEFAULT_PUBLIC_CHANNEL_SECRET)
        await node.start()
        key = node.get_public_key()
        server = CompanionFrameServer(bridge=node, companion_hash=f"{key[0]:02x}", port=base_port + i,
                                      bind_address="127.0.0.1", device_model="openhop-peer",
                                      client_idle_timeout_sec=None)
        if log_rx:
            node.on_rx_log_data(server.push_rx_raw)
        await server.start()
        running.append((node, server))
        print(f"node sim{i} pubkey={key.hex()} tcp=127.0.0.1:{base_port + i}", flush=True)

    loop = asyncio.get_running_loop()
    stopped = loop.create_future()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, lambda: stopped.done() or stopped.set_result(None))
    await stopped
    for node, server in running:
        await server.stop()
        await node.stop()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--base-port", type=int, default=5001)
    ap.add_argument("--airtime-scale", type=float, default=0.1, help="time on air multiplier (1 = real LoRa timing)")
    ap.add_argument("--log-rx", action="store_true", help="push LOG_RX_DATA for every packet a node hears, as the firmware does")
    ap.add_argument("--debug", action="store_true", help="openhop-core's debug log on stderr")
    args = ap.parse_args()
    logging.basicConfig(level=logging.DEBUG if args.debug else logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    asyncio.run(serve(args.nodes, args.base_port, args.airtime_scale, args.log_rx))


if __name__ == "__main__":
    main()
