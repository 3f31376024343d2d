"""Reading what a program writes on a pseudo-terminal (tests/cli, tests/chart)."""

import os
import select
import time


def read_pty(fd, until=None, limit=30.0):
    """The bytes read from fd until `until` is among them, the other side
    closes, or `limit` seconds pass."""
    out, end = b"", time.time() + limit
    while time.time() < end and (until is None or until not in out):
        r, _, _ = select.select([fd], [], [], 0.05)
        if not r:
            continue
        try:
            data = os.read(fd, 65536)
        except OSError:
            break
        if not data:
            break
        out += data
    return out
