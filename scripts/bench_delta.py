#!/usr/bin/env python3
"""Delta benchmark (run through scripts/bench-delta.sh).

For each pair of consecutive releases it installs the older one with `maploader`, updates
with `maploader update --delta` against `maploader serve`, and prints:
  - bytes the update downloaded, measured in the server's request log (patch blobs, and
    with the catalog and manifest included);
  - on the same old/new file pairs: `zstd -19 --long=31 --patch-from`, `xdelta3 -e -9 -S none`
    and `bsdiff` patch sizes (a file new at its path counts as `zstd -19` of it for all three);
  - the full archives' size for the changed groups;
  - wall time and peak memory of `update --delta` against `zstd -d --patch-from` on the pairs.
"""
import argparse, gzip, json, os, re, shutil, socket, subprocess, sys, tarfile, tempfile, time, zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE = os.path.join(ROOT, ".build-bench")
TZF_VERSIONS = ["6.2.0", "6.4.0", "6.5.0"]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def timed(cmd, **kw):
    """(wall seconds, peak RSS bytes, stdout) of a command, via /usr/bin/time."""
    with tempfile.NamedTemporaryFile("r") as out:
        start = time.monotonic()
        proc = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", out.name] + cmd, capture_output=True, text=True, **kw)
        wall = time.monotonic() - start
        if proc.returncode != 0:
            sys.exit(f"failed: {' '.join(cmd)}\n{proc.stderr}")
        return wall, int(out.read().split()[-1]) * 1024, proc.stdout


def human(n):
    for unit in ["B", "kB", "MB", "GB"]:
        if abs(n) < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000


def files_under(folder):
    out = {}
    for base, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(base, name)
            out[os.path.relpath(path, folder)] = path
    return out


def same(a, b):
    if os.path.getsize(a) != os.path.getsize(b):
        return False
    with open(a, "rb") as x, open(b, "rb") as y:
        while True:
            p, q = x.read(1 << 20), y.read(1 << 20)
            if p != q:
                return False
            if not p:
                return True


def sample_dataset(scale):
    out = os.path.join(CACHE, f"sample-x{scale}")
    if not os.path.exists(os.path.join(out, "v3")):
        sh([sys.executable, os.path.join(ROOT, "scripts/gen-sample.py"), "--out", out, "--scale", str(scale)])
    return f"sample world x{scale}", [os.path.join(out, v) for v in ("v1", "v2", "v3")]


def timezone_dataset():
    """timezonefinder's binary timezone polygons (from timezone-boundary-builder, OSM data)."""
    out = os.path.join(CACHE, "tzf")
    tree = {"groups": [{"id": "base", "title": "Timezone polygons", "required": True, "default": True}],
            "root": {"id": "world", "title": "World", "children": [
                {"id": "timezones", "title": "Time zones", "bbox": [-180, -90, 180, 90]}]}}
    releases = []
    for version in TZF_VERSIONS:
        release = os.path.join(out, version)
        data = os.path.join(release, "data/timezones/base")
        if not os.path.exists(os.path.join(release, "tree.json")):
            download = os.path.join(CACHE, "pypi", version)
            if not os.path.exists(download) or not os.listdir(download):
                print(f"   fetching timezonefinder {version} from PyPI", flush=True)
                sh([sys.executable, "-m", "pip", "download", "--no-deps", "--no-binary", ":all:", "-q",
                    f"timezonefinder=={version}", "-d", download])
            archive = os.path.join(download, os.listdir(download)[0])
            os.makedirs(data, exist_ok=True)
            with tarfile.open(archive) as tar:
                for member in tar.getmembers():
                    parts = member.name.split("/")
                    if member.isfile() and len(parts) == 3 and parts[1] == "timezonefinder" and parts[2].endswith((".bin", ".json")):
                        with tar.extractfile(member) as src, open(os.path.join(data, parts[2]), "wb") as dst:
                            shutil.copyfileobj(src, dst)
            with open(os.path.join(release, "tree.json"), "w") as f:
                json.dump(tree, f)
        releases.append(release)
    return "timezonefinder " + " → ".join(TZF_VERSIONS), releases


def gzipped_dataset(name, releases):
    """The same releases with every data file shipped as .gz (Python's gzip, zlib level 6,
    as GeoJSON and CSV exports are): byte-level tools see changed deflate streams, a
    see-through delta sees the content."""
    out = os.path.join(CACHE, "gz-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"))
    result = []
    for release in releases:
        target = os.path.join(out, os.path.basename(release))
        if not os.path.exists(os.path.join(target, "tree.json")):
            for folder, _, files in os.walk(release):
                for file in files:
                    source = os.path.join(folder, file)
                    relative = os.path.relpath(source, release)
                    os.makedirs(os.path.dirname(os.path.join(target, relative)), exist_ok=True)
                    if relative == "tree.json" or not relative.startswith("data" + os.sep):
                        shutil.copyfile(source, os.path.join(target, relative))
                        continue
                    with open(source, "rb") as src:
                        data = gzip.compress(src.read(), compresslevel=6, mtime=0)
                    with open(os.path.join(target, relative + ".gz"), "wb") as dst:
                        dst.write(data)
        result.append(target)
    return name + " (.gz)", result


def peers(old_release, new_release, work, use_bsdiff):
    """Sizes of per-file patches by the peer tools, and zstd's decode time and memory."""
    sizes = {"zstd": 0, "xdelta3": 0, "bsdiff": 0}
    decode_wall, decode_rss, pairs = 0.0, 0, 0
    empty = os.path.join(work, "empty")
    old_files = files_under(os.path.join(old_release, "data"))
    for rel, new in sorted(files_under(os.path.join(new_release, "data")).items()):
        old = old_files.get(rel, empty)
        if old != empty and same(old, new):
            continue
        pairs += 1
        patch = os.path.join(work, "p")
        if old == empty:
            # A file new at this path: a per-file tool can only compress it.
            sh(["zstd", "-q", "-f", "-19", new, "-o", patch])
            for tool in sizes:
                sizes[tool] += os.path.getsize(patch)
            continue
        for tool in ("zstd", "xdelta3", "bsdiff"):
            if tool == "bsdiff" and not use_bsdiff:
                continue
            if os.path.exists(patch):
                os.remove(patch)
            if tool == "zstd":
                sh(["zstd", "-q", "-f", "-19", "--long=31", f"--patch-from={old}", new, "-o", patch])
            elif tool == "xdelta3":
                sh(["xdelta3", "-e", "-9", "-S", "none", "-f", "-s", old, new, patch])
            else:
                sh(["bsdiff", old, new, patch])
            sizes[tool] += os.path.getsize(patch)
            if tool == "zstd":
                wall, rss, _ = timed(["zstd", "-q", "-f", "-d", "--long=31", f"--patch-from={old}", patch, "-o", os.path.join(work, "out")])
                decode_wall += wall
                decode_rss = max(decode_rss, rss)
    if not use_bsdiff:
        sizes["bsdiff"] = None
    return sizes, decode_wall, decode_rss, pairs


class Server:
    def __init__(self, binary, site, log):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.log = log
        self.proc = subprocess.Popen([binary, "serve", site, "--port", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=open(log, "w"))
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.1)

    def mark(self):
        return os.path.getsize(self.log)

    def bytes_since(self, mark):
        blobs = total = 0
        time.sleep(0.2)
        with open(self.log) as f:
            f.seek(mark)
            for line in f:
                m = re.match(r"^GET (\S+) \d+ (\d+)B", line)
                if m:
                    total += int(m.group(2))
                    if m.group(1).startswith("/blobs/"):
                        blobs += int(m.group(2))
        return blobs, total

    def stop(self):
        self.proc.terminate()
        self.proc.wait()


def bench(name, releases, binary, use_bsdiff, rows):
    print(f"== {name}", flush=True)
    work = tempfile.mkdtemp(prefix="maploader-bench-")
    site, data = os.path.join(work, "site"), os.path.join(work, "data")
    key = os.path.join(work, "publisher.key")
    public = sh([binary, "keygen", key]).strip()
    env = dict(os.environ, MAPLOADER_DATA_DIR=data, MAPLOADER_TRUST_KEY=public)
    sh([binary, "publish", releases[0], "--site", site, "--version", "r1", "--key", key])
    server = Server(binary, site, os.path.join(work, "serve.log"))
    env["MAPLOADER_SERVER"] = f"http://127.0.0.1:{server.port}"
    try:
        groups = json.loads(sh([binary, "groups", "--json"], env=env))
        for g in groups:
            if not g["selected"]:
                sh([binary, "groups", "select", g["group"]["id"]], env=env)
        sh([binary, "install", "world"], env=env)
        for index in range(1, len(releases)):
            label = f"r{index + 1}"
            publish_start = time.monotonic()
            sh([binary, "publish", releases[index], "--site", site, "--version", label, "--key", key])
            publish_wall = time.monotonic() - publish_start
            mark = server.mark()
            # The publisher runs on another machine in real life: flush its writes here so the
            # client's commit (which flushes the file system) is not charged for them.
            subprocess.run(["sync"], check=True)
            wall, rss, out = timed([binary, "update", "--delta", "--json"], env=env)
            report = json.loads(out)
            blobs, total = server.bytes_since(mark)
            sh([binary, "verify"], env=env)
            changed = [s for s in report["steps"] if s["action"] != "keep"]
            full = sum(s["fullBytes"] for s in changed)
            fallbacks = [s for s in changed if s["method"] == "full"]
            sizes, zwall, zrss, pairs = peers(releases[index - 1], releases[index], work, use_bsdiff)
            best = min(v for v in sizes.values() if v is not None)
            rows.append({
                "pair": f"{name.split(' ')[0]}{' .gz' if name.endswith('(.gz)') else ''} {os.path.basename(releases[index - 1])}→{os.path.basename(releases[index])}",
                "maploader": blobs, "withMetadata": total, "zstd": sizes["zstd"], "xdelta3": sizes["xdelta3"],
                "bsdiff": sizes["bsdiff"], "full": full, "vsBest": blobs / best if best else 0,
                "applyWall": wall, "zstdWall": zwall, "timeRatio": wall / zwall if zwall else 0,
                "rss": rss, "zstdRss": zrss, "pairs": pairs, "groups": len(changed), "fallbacks": len(fallbacks),
                "publishWall": publish_wall})
            r = rows[-1]
            print(f"   {r['pair']}: update --delta {human(blobs)} ({human(total)} with metadata), zstd {human(sizes['zstd'])}, "
                  f"xdelta3 {human(sizes['xdelta3'])}, bsdiff {human(sizes['bsdiff']) if sizes['bsdiff'] is not None else '-'}, "
                  f"full {human(full)}; apply {wall:.2f}s vs zstd -d {zwall:.2f}s, RSS {human(rss)} vs {human(zrss)}; "
                  f"{len(changed)} groups changed, {len(fallbacks)} by full archive; publish {publish_wall:.1f}s", flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sample world only, debug build")
    parser.add_argument("--no-bsdiff", action="store_true", help="skip bsdiff (slow on large files)")
    parser.add_argument("--scale", type=int, default=1, help="sample world scale")
    args = parser.parse_args()
    config = "debug" if args.quick else "release"
    print(f"==> building maploader ({config})", flush=True)
    subprocess.run(["swift", "build", "-c", config, "--product", "maploader", "-q"], cwd=ROOT, check=True)
    binary = os.path.join(sh(["swift", "build", "-c", config, "--show-bin-path"], cwd=ROOT).strip(), "maploader")
    os.makedirs(CACHE, exist_ok=True)
    rows = []
    datasets = [sample_dataset(args.scale)] + ([] if args.quick else [timezone_dataset()])
    datasets += [gzipped_dataset(*dataset) for dataset in list(datasets)]
    for name, releases in datasets:
        bench(name, releases, binary, not args.no_bsdiff, rows)
    print()
    header = ["pair", "update --delta", "+metadata", "zstd -19", "xdelta3 -9", "bsdiff", "full", "vs best",
              "apply s", "zstd -d s", "time ×", "RSS", "zstd RSS"]
    table = [header] + [[r["pair"], human(r["maploader"]), human(r["withMetadata"]), human(r["zstd"]), human(r["xdelta3"]),
                         human(r["bsdiff"]) if r["bsdiff"] is not None else "-", human(r["full"]), f"{r['vsBest']:.2f}",
                         f"{r['applyWall']:.2f}", f"{r['zstdWall']:.2f}", f"{r['timeRatio']:.2f}", human(r["rss"]),
                         human(r["zstdRss"])] for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
    met = sum(1 for r in rows if r["vsBest"] <= 1.0)
    fast = sum(1 for r in rows if r["timeRatio"] <= 1.5)
    print(f"\nbytes target (≤ best peer): {met} of {len(rows)} pairs; time target (≤ 1.5× zstd -d): {fast} of {len(rows)} pairs")


if __name__ == "__main__":
    main()
