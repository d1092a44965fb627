#!/usr/bin/env python3
"""meshcore-cli on a pseudo-terminal.

A Linux pty has no modem lines: TIOCMBIS, TIOCMBIC and TIOCMGET fail with ENOTTY, and pyserial
(under meshcore_py) sets DTR and RTS on every open, so meshcore-cli gives up on a pty. Here those
three requests answer "no modem lines" instead; every other ioctl is untouched.

    python meshcore_cli_pty.py -s /path/to/pty infos
"""
import errno
import fcntl
import sys
import termios

import serial.serialposix as serialposix

MODEM_REQUESTS = {termios.TIOCMBIS, termios.TIOCMBIC, termios.TIOCMGET}


class _ModemlessFcntl:
    """`fcntl` as pyserial sees it, with the modem-line requests tolerated on a pty."""

    def __getattr__(self, name):
        return getattr(fcntl, name)

    @staticmethod
    def ioctl(fd, request, *args):
        try:
            return fcntl.ioctl(fd, request, *args)
        except OSError as e:
            if e.errno != errno.ENOTTY or request not in MODEM_REQUESTS:
                raise
            arg = args[0] if args else 0
            return bytes(len(arg)) if isinstance(arg, (bytes, bytearray)) else 0


serialposix.fcntl = _ModemlessFcntl()

from meshcore_cli.meshcore_cli import cli  # noqa: E402  (after the patch)

if __name__ == "__main__":
    sys.argv[0] = "meshcore-cli"
    cli()
