#!/usr/bin/env python3
"""Catalog benchmark: a generated tree of COUNTRIES x REGIONS leaves (10,000 by default),
published with the release build and served by nginx on loopback (maploader serve when
nginx is missing). Prints a table of figures with the targets of issue 11 beside them:

  publish of the first version, and of a second where one leaf changed;
  list, list --json, info, locate, check-update (median of --runs runs);
  install of 200 leaves; peak RSS of list;
  metadata bytes a client downloads per update with 1, 10 and 200 leaves installed, when
  every country changed (the worst case for split manifests), next to the whole manifest.

Usage: scripts/bench.sh [--countries 100] [--regions 100] [--runs 5] [--jobs N]
"""

import argparse
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BINARY = os.path.join(ROOT, ".build", "release", "maploader")
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
from benchlib import free_port, human, timed as timed_run  # noqa: E402


def timed(cmd, **kw):
    """(wall seconds, peak RSS bytes) of a command (exit 3, an update available, is fine)."""
    wall, rss, _ = timed_run(cmd, accept=(0, 3), **kw)
    return wall, rss


def run(cmd, **kw):
    proc = subprocess.run(cmd, capture_output=True, text=True, **kw)
    if proc.returncode not in (0, 3):  # 3: check-update found an update
        sys.exit(f"failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}")
    return proc








class Server:
    """nginx (or maploader serve) on loopback, logging 'GET <path> <status> <bytes>B'."""

    def __init__(self, site, work):
        self.port = free_port()
        self.log = os.path.join(work, "access.log")
        open(self.log, "w").close()
        self.nginx = shutil.which("nginx") is not None
        if self.nginx:
            conf = os.path.join(work, "nginx.conf")
            with open(conf, "w") as f:
                f.write(f"""daemon off; worker_processes 1; pid {work}/nginx.pid; error_log {work}/error.log;
events {{ worker_connections 256; }}
http {{ log_format plain 'GET $uri $status $body_bytes_sent' 'B'; access_log {self.log} plain;
  client_body_temp_path {work}/tmp; proxy_temp_path {work}/tmp; fastcgi_temp_path {work}/tmp;
  uwsgi_temp_path {work}/tmp; scgi_temp_path {work}/tmp;
  server {{ listen 127.0.0.1:{self.port}; root {site}; sendfile on; }} }}
""")
            self.proc = subprocess.Popen(["nginx", "-c", conf], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        else:
            self.proc = subprocess.Popen([BINARY, "serve", site, "--port", str(self.port)],
                                         stdout=subprocess.DEVNULL, stderr=open(self.log, "w"))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        self.url = f"http://127.0.0.1:{self.port}"

    def mark(self):
        return os.path.getsize(self.log)

    def requests_since(self, mark):
        time.sleep(0.3)  # nginx writes its log line after the response
        with open(self.log) as f:
            f.seek(mark)
            return [(m.group(1), int(m.group(2))) for m in
                    (re.match(r"^GET (\S+) \d+ (\d+)B", line) for line in f) if m]

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--countries", type=int, default=100)
    parser.add_argument("--regions", type=int, default=100)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--jobs", type=int, default=os.cpu_count())
    args = parser.parse_args()
    leaves = args.countries * args.regions
    work = tempfile.mkdtemp(prefix="maploader-bench-catalog-")
    os.makedirs(os.path.join(work, "tmp"))
    os.chmod(work, 0o755)  # nginx workers run as another user
    gen = [sys.executable, os.path.join(ROOT, "scripts", "gen-catalog.py"),
           "--countries", str(args.countries), "--regions", str(args.regions)]
    site = os.path.join(work, "site")
    env = dict(os.environ, SOURCE_DATE_EPOCH="1790000000")
    rows = []

    def row(what, value, shown, target=None, ok=None):
        rows.append((what, shown, target or "", "" if ok is None else ("yes" if ok else "NO")))
        print(f"  {what}: {shown}", file=sys.stderr)

    for version, changed in (("v1", 0), ("v2", 1), ("v3", args.countries)):
        run(gen + ["--out", os.path.join(work, version), "--changed", str(changed)])
    publish = [BINARY, "publish", "--site", site, "--valid-days", "0", "--jobs", str(args.jobs), "--json"]
    wall, rss = timed(publish[:2] + [os.path.join(work, "v1")] + publish[2:] + ["--version", "v1"], env=env)
    row(f"publish first version ({leaves:,} leaves)", wall, f"{wall:.1f} s (peak RSS {human(rss)})", "< 120 s", wall < 120)

    server = Server(site, work)
    try:
        client = lambda data: ["--server", server.url, "--data-dir", data, "--allow-unsigned"]
        # Clients at v1 with 1, 10 and 200 leaves (200: two whole countries).
        # (1 leaf; 10 leaves in as many countries; 200 leaves as whole countries.)
        n = args.countries
        sets = {1: ["c000-r000"], 10: [f"c{i % n:03d}-r{i // n:03d}" for i in range(10)],
                200: [f"c{c:03d}" for c in range(min(n, -(-200 // args.regions)))]}
        for count, ids in sets.items():
            data = os.path.join(work, f"data-{count}")
            if count == 200:
                wall, _ = timed([BINARY, "install", *ids] + client(data))
                row("install of 200 leaves", wall, f"{wall:.2f} s", "< 5 s", wall < 5)
            else:
                run([BINARY, "install", *ids] + client(data))
        data = os.path.join(work, "data-200")

        def median(cmd):
            times = [timed(cmd)[0] for _ in range(args.runs)]
            return statistics.median(times)

        # A leaf in the middle of the tree, and a point inside it (gen-catalog.py's grid).
        c, r = args.countries // 2, args.regions // 2
        lon = -180 + (c % 20) * 18 + (r % 10) * 1.8 + 0.9
        lat = -80 + (c // 20) * 30 + (r // 10) * 1.5 + 0.75
        targets = [("list", ["list"], 0.3), ("list --json", ["list", "--json"], None),
                   ("info", ["info", f"c{c:03d}-r{r:03d}"], 0.1), ("locate", ["locate", f"{lat:.3f},{lon:.3f}"], 0.1),
                   ("check-update", ["check-update"], 0.5)]
        for what, cmd, target in targets:
            t = median([BINARY] + cmd + client(data))
            row(f"{what} (median of {args.runs})", t, f"{t:.3f} s",
                f"< {target} s" if target else None, None if target is None else t < target)
        _, rss = timed([BINARY, "list"] + client(data))
        row("list peak RSS", rss, human(rss), "< 100 MB", rss < 100e6)

        # A second version where one leaf changed.
        wall, rss = timed(publish[:2] + [os.path.join(work, "v2")] + publish[2:] + ["--version", "v2"], env=env)
        row("publish, one leaf changed", wall, f"{wall:.1f} s (peak RSS {human(rss)})", "< 30 s", wall < 30)
        # A third where a leaf of every country changed: each part of the manifest is new.
        run(publish[:2] + [os.path.join(work, "v3")] + publish[2:] + ["--version", "v3"], env=env)
        catalog = json.load(open(os.path.join(site, "catalog.json")))
        entry = next(e for e in catalog["versions"] if e["version"] == "v3")
        for count in sets:
            data = os.path.join(work, f"data-{count}")
            mark = server.mark()
            run([BINARY, "update", "--if-available"] + client(data))
            requests = server.requests_since(mark)
            meta = sum(b for path, b in requests if not path.startswith("/blobs/") or path_is_part(site, path))
            row(f"metadata per update, {count} {'leaves' if count > 1 else 'leaf'} installed", meta,
                f"{human(meta)} (index {human(entry['size'])})", "grows with installed")
        row("whole manifest as one file (for scale)", 0, human(whole_manifest_size(site, "v3")))
    finally:
        server.stop()

    print()
    print(f"| measure ({leaves:,} leaves) | result | target | met |")
    print("|---|---|---|---|")
    for what, shown, target, ok in rows:
        print(f"| {what} | {shown} | {target} | {ok} |")
    shutil.rmtree(work, ignore_errors=True)


def path_is_part(site, path):
    """Whether a /blobs/ path is a manifest part (zstd JSON of a subtree), not an archive."""
    return path in PARTS.setdefault(site, manifest_parts(site))


PARTS = {}


def manifest_parts(site):
    parts = set()
    catalog = json.load(open(os.path.join(site, "catalog.json")))
    for entry in catalog["versions"]:
        index = json.loads(subprocess.run(["zstd", "-dc", os.path.join(site, entry["manifest"])],
                                          capture_output=True, check=True).stdout)
        stack = [index["root"]]
        while stack:
            node = stack.pop()
            if "part" in node:
                sha = node["part"]["sha256"]
                parts.add(f"/blobs/sha256/{sha[:2]}/{sha}")
            stack.extend(node.get("children", []))
    return parts


def whole_manifest_size(site, version):
    """Bytes of the version's manifest as one zstd file (index and parts merged)."""
    catalog = json.load(open(os.path.join(site, "catalog.json")))
    entry = next(e for e in catalog["versions"] if e["version"] == version)
    index = json.loads(subprocess.run(["zstd", "-dc", os.path.join(site, entry["manifest"])],
                                      capture_output=True, check=True).stdout)

    def resolve(node):
        if "part" in node:
            sha = node["part"]["sha256"]
            return json.loads(subprocess.run(["zstd", "-dc", os.path.join(site, "blobs", "sha256", sha[:2], sha)],
                                             capture_output=True, check=True).stdout)
        if "children" in node:
            node["children"] = [resolve(c) for c in node["children"]]
        return node

    index["root"] = resolve(index["root"])
    raw = json.dumps(index, separators=(",", ":"), sort_keys=True).encode()
    return len(subprocess.run(["zstd", "-19", "-c"], input=raw, capture_output=True, check=True).stdout)


if __name__ == "__main__":
    main()
