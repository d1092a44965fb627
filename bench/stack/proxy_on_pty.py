#!/usr/bin/env python3
"""Runs meshcore-proxy (its own command line, unchanged) on a pseudo-terminal.

meshcore_py's serial link sets DTR and RTS, and Linux pseudo-terminals answer those modem-control
ioctls with ENOTTY, which pyserial raises: a real USB serial port has the lines, a pty has none.
This wrapper makes pyserial ignore that one error, then starts meshcore-proxy's main().

    proxy_on_pty.py --serial /path/to/pty --host 127.0.0.1 --port 5000 --log-level warning
"""
import sys

import serial.serialposix as serialposix


def _ignoring_enotty(update):
    def wrapped(self):
        try:
            update(self)
        except OSError:
            pass  # no modem lines on a pty
    return wrapped


for _name in ("_update_dtr_state", "_update_rts_state"):
    setattr(serialposix.Serial, _name, _ignoring_enotty(getattr(serialposix.Serial, _name)))

from meshcore_proxy.cli import main  # noqa: E402

sys.argv[0] = "meshcore-proxy"
sys.exit(main())
