#!/usr/bin/env python3
"""Large-file delta benchmark: one map file over 2 GiB, made by tiling real map-like data
(the sample world's files) with a tile number stamped into each tile, and a second version
with edits in 24 places (bytes overwritten, inserted and deleted). Publishes both with the
release build (archives at --level 1 to keep the run short; the patch at the default
level 19, segmented), installs v1 from `maploader serve`, and measures `update --delta`:
bytes downloaded, wall time, peak RSS and peak anonymous RSS (RSS minus the mapped old
file's pages, sampled from /proc), against `xdelta3 -9` on the same pair. zstd
--patch-from and bsdiff cannot take the pair (2 GiB window; 17x memory).

Usage: scripts/bench-delta.sh --large [--size-mb 2200]
"""

import argparse
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
from benchlib import free_port, human, sampled as peak  # noqa: E402




def base_block():
    out = tempfile.mkdtemp(prefix="maploader-large-src-")
    subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "gen-sample.py"), "--out", out],
                   check=True, capture_output=True)
    chunks = []
    for folder, _, files in sorted(os.walk(os.path.join(out, "v1", "data"))):
        for name in sorted(files):
            with open(os.path.join(folder, name), "rb") as f:
                chunks.append(f.read())
    shutil.rmtree(out)
    return b"".join(chunks)


def write_pair(old, new, size):
    block = base_block()
    tiles = size // (len(block) + 16) + 1
    edits = {tiles * k // 24: k for k in range(24)}
    with open(old, "wb") as o, open(new, "wb") as n:
        for tile in range(tiles):
            data = b"tile %010d\n" % tile + block
            o.write(data)
            if tile in edits:
                k = edits[tile]
                data = bytearray(data)
                at = 1000 + 97 * k
                if k % 3 == 0:
                    data[at:at + 100] = b"E" * 100                       # overwritten
                elif k % 3 == 1:
                    data[at:at] = b"inserted record %d\n" % k * 100      # inserted
                else:
                    del data[at:at + 500]                                # deleted
                data = bytes(data)
            n.write(data)
    return tiles


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--size-mb", type=int, default=2200)
    parser.add_argument("--patch-level", type=int, default=19, help="publish --patch-level (the time budget)")
    args = parser.parse_args()
    binary = os.path.join(ROOT, ".build", "release", "maploader")
    work = tempfile.mkdtemp(prefix="maploader-large-")
    try:
        tree = ('{"groups":[{"id":"base","title":"Base","required":true,"default":true}],'
                '"root":{"id":"world","title":"World","children":[{"id":"planet","title":"Planet"}]}}')
        for v in ("v1", "v2"):
            os.makedirs(os.path.join(work, v, "data", "planet", "base"))
            with open(os.path.join(work, v, "tree.json"), "w") as f:
                f.write(tree)
        old = os.path.join(work, "v1", "data", "planet", "base", "planet.bin")
        new = os.path.join(work, "v2", "data", "planet", "base", "planet.bin")
        tiles = write_pair(old, new, args.size_mb << 20)
        size = os.path.getsize(new)
        print(f"  pair: {human(os.path.getsize(old))} → {human(size)} ({tiles} tiles, 24 edits)", flush=True)
        site = os.path.join(work, "site")
        publish = [binary, "publish", "--site", site, "--level", "1", "--valid-days", "0", "--json",
                   "--patch-level", str(args.patch_level)]
        peak(publish[:2] + [os.path.join(work, "v1")] + publish[2:] + ["--version", "v1"])
        wall, rss, anon, _ = peak(publish[:2] + [os.path.join(work, "v2")] + publish[2:] + ["--version", "v2"])
        print(f"  publish v2 (archive at level 1, segmented patch at {args.patch_level}): {wall:.0f} s, peak RSS {human(rss)}, "
              f"anonymous {human(anon)}", flush=True)

        port = free_port()
        log = os.path.join(work, "serve.log")
        server = subprocess.Popen([binary, "serve", site, "--port", str(port)], stdout=subprocess.DEVNULL,
                                  stderr=open(log, "w"))
        time.sleep(1)
        client = ["--server", f"http://127.0.0.1:{port}", "--data-dir", os.path.join(work, "data"), "--allow-unsigned"]
        try:
            # Install v1 (the catalog's current is v2: install from a site holding only v1).
            v1site = os.path.join(work, "site-v1")
            subprocess.run([binary, "publish", os.path.join(work, "v1"), "--site", v1site, "--level", "1",
                            "--valid-days", "0", "--version", "v1"], check=True, capture_output=True)
            subprocess.run([binary, "install", "planet", "--server", v1site, "--data-dir", os.path.join(work, "data"),
                            "--allow-unsigned"], check=True, capture_output=True)
            shutil.rmtree(v1site)
            mark = os.path.getsize(log)
            wall, rss, anon, _ = peak([binary, "update", "--delta"] + client)
            time.sleep(0.3)
            with open(log) as f:
                f.seek(mark)
                sent = sum(int(m.group(1)) for m in (re.match(r"^GET \S+ \d+ (\d+)B", l) for l in f) if m)
        finally:
            server.terminate()
            server.wait()
        same = subprocess.run(["cmp", new, os.path.join(work, "data", "current", "planet", "base", "planet.bin")]).returncode == 0
        print(f"  update --delta: {human(sent)} downloaded, {wall:.1f} s, peak RSS {human(rss)}, "
              f"anonymous {human(anon)} (target ≤ 64 MB besides the mapping), result identical: {same}", flush=True)

        patch = os.path.join(work, "x.vcdiff")
        if shutil.which("xdelta3"):
            xwall, xrss, _, _ = peak(["xdelta3", "-e", "-9", "-f", "-s", old, new, patch])
            dwall, drss, _, _ = peak(["xdelta3", "-d", "-f", "-s", old, patch, os.path.join(work, "x.out")])
            print(f"  xdelta3 -9: {human(os.path.getsize(patch))}, encode {xwall:.0f} s, "
                  f"decode {dwall:.1f} s (peak RSS {human(drss)})", flush=True)
        if size >= 2 << 30:
            print("  zstd --patch-from: not possible (window limit 2 GiB); bsdiff: not tried (needs ~17× the file in memory)")
        elif shutil.which("zstd"):
            zwall, zrss, _, _ = peak(["zstd", "-19", "--long=31", "-f", "-q", f"--patch-from={old}", new, "-o", patch + ".zst"])
            print(f"  zstd -19 --long=31 --patch-from: {human(os.path.getsize(patch + '.zst'))}, encode {zwall:.0f} s "
                  f"(peak RSS {human(zrss)})", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
