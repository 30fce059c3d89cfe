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


def sampled(cmd, accept=(0,), **kw):
    """(wall seconds, peak RSS, peak anonymous RSS, stdout) of a command, sampling its
    /proc status every 20 ms. Anonymous RSS leaves out mapped files (the old files a patch
    reads, a new file decoded into its mapping): what an apply holds beyond them."""
    start = time.monotonic()
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        proc = subprocess.Popen(cmd, stdout=out, stderr=err, text=True, **kw)
        rss = anon = 0
        while proc.poll() is None:
            try:
                with open(f"/proc/{proc.pid}/status") as status:
                    fields = dict(line.split(":", 1) for line in status if ":" in line)
                rss = max(rss, int(fields["VmRSS"].split()[0]) * 1024)
                anon = max(anon, int(fields["RssAnon"].split()[0]) * 1024)
            except (OSError, KeyError, ValueError):
                pass
            time.sleep(0.02)
        err.seek(0)
        stderr = err.read()
        wall = time.monotonic() - start
        if proc.returncode not in accept:
            sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{stderr[-3000:]}")
        out.seek(0)
        return wall, rss, anon, out.read()


def free_port():
    """A loopback port nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
