"""What the benchmark scripts share: human sizes, timed runs with peak memory, free ports."""

import os
import socket
import subprocess
import sys
import tempfile
import time


def human(n):
    """Bytes in decimal units: 976 B, 7.6 kB, 4.3 MB."""
    for unit in ["B", "kB", "MB", "GB"]:
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def timed(cmd, accept=(0,), **kw):
    """(wall seconds, peak RSS bytes, stdout) of a command, via /usr/bin/time; exits on
    a status not in `accept`."""
    with tempfile.NamedTemporaryFile("r") as out:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name] + cmd, capture_output=True, text=True, **kw)
        wall = time.monotonic() - start
        if proc.returncode not in accept:
            sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-3000:]}")
        return wall, int(out.read().split()[-1]) * 1024, proc.stdout


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
