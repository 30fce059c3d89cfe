#!/usr/bin/env python3
"""Generate the sample world's release folders (v1, v2, v3) for MapLoader.

Usage:  python3 scripts/gen-sample.py --out DIR [--scale N]

Writes DIR/v1, DIR/v2 and DIR/v3. Each is a release folder:

    DIR/vK/tree.json                       the package tree (Manifests/sample-world/tree.json;
                                           v3 adds the leaf jp-osaka)
    DIR/vK/data/<leaf-id>/<group>/...      the files of one leaf's data group

The data imitates offline map data (MVT-like vector tiles, a fixed-record road table,
POI CSV with a spatial index, GTFS-like transit text, SRTM-like .hgt elevation tiles)
and changes between versions the way real data does: a few records edited, inserted or
deleted in the middle of big files, files added, deleted, renamed and moved, and some
groups or whole leaves left byte-for-byte unchanged. See Manifests/README.md.

The output is fully deterministic: every random choice comes from a random.Random
seeded from SHA-256 of (leaf, group, version, purpose); only integer arithmetic and
correctly rounded float operations are used for content, and files are written in
sorted order. --scale multiplies the amount of data (records, tiles, samples).
Standard library only.
"""

import argparse
import hashlib
import json
import math
import os
import random
import shutil
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TREE_PATH = os.path.join(ROOT, "Manifests", "sample-world", "tree.json")
VERSIONS = (1, 2, 3)

# --------------------------------------------------------------------------------------
# Leaf profiles: size factor, language for names, which groups exist from which version,
# and which changes each version makes. Leaves in tree.json that are missing here get
# DEFAULT_PROFILE, so the generator keeps working if the tree grows.
# --------------------------------------------------------------------------------------

DEFAULT_PROFILE = {"size": 1.0, "lang": "en", "groups": {"base": 1, "poi": 1}}

PROFILES = {
    "de-berlin":           {"size": 1.0, "lang": "de", "groups": {"base": 1, "poi": 1, "transit": 1},
                            "tz": "Europe/Berlin"},
    "de-brandenburg":      {"size": 0.7, "lang": "de", "groups": {"base": 1}},
    "de-bavaria":          {"size": 1.4, "lang": "de", "groups": {"base": 1, "poi": 1, "terrain": 1},
                            "relief": (300, 1700)},
    "de-hamburg":          {"size": 0.7, "lang": "de", "groups": {"base": 1, "poi": 1}},
    "fr-ile-de-france":    {"size": 1.3, "lang": "fr", "groups": {"base": 1, "poi": 1, "transit": 1},
                            "tz": "Europe/Paris"},
    "fr-brittany":         {"size": 0.7, "lang": "fr", "groups": {"base": 1, "poi": 1}},
    "netherlands":         {"size": 1.2, "lang": "nl", "groups": {"base": 1, "poi": 1}},
    "switzerland":         {"size": 1.0, "lang": "de", "groups": {"base": 1, "poi": 1, "terrain": 1},
                            "relief": (400, 3800)},
    "us-california":       {"size": 1.6, "lang": "en", "groups": {"base": 1, "poi": 1, "transit": 3},
                            "tz": "America/Los_Angeles"},
    "us-new-york":         {"size": 1.3, "lang": "en", "groups": {"base": 1, "poi": 1, "transit": 1},
                            "tz": "America/New_York"},
    "us-washington":       {"size": 0.9, "lang": "en", "groups": {"base": 1, "poi": 1, "terrain": 1},
                            "relief": (0, 3600)},
    "ca-british-columbia": {"size": 0.8, "lang": "en", "groups": {"base": 1, "terrain": 1},
                            "relief": (0, 3400)},
    "ca-ontario":          {"size": 1.1, "lang": "en", "groups": {"base": 1, "poi": 1}},
    "jp-tokyo":            {"size": 1.3, "lang": "ja", "groups": {"base": 1, "poi": 1, "transit": 1},
                            "tz": "Asia/Tokyo"},
    "jp-hokkaido":         {"size": 0.7, "lang": "ja", "groups": {"base": 1}},
    # New in v3.
    "jp-osaka":            {"size": 1.0, "lang": "ja", "groups": {"base": 3, "poi": 3, "transit": 3},
                            "tz": "Asia/Tokyo"},
}

AGENCIES = {
    "de-berlin": [("BVG", "Berliner Verkehrsbetriebe", "https://www.bvg.de"),
                  ("SBB", "S-Bahn Berlin", "https://sbahn.berlin")],
    "fr-ile-de-france": [("RATP", "RATP", "https://www.ratp.fr"),
                         ("TN", "SNCF Transilien", "https://www.transilien.com")],
    "us-california": [("LAM", "LA Metro", "https://www.metro.net"),
                      ("CT", "Caltrain", "https://www.caltrain.com")],
    "us-new-york": [("MTA", "MTA New York City Transit", "https://new.mta.info")],
    "jp-tokyo": [("TM", "Tokyo Metro", "https://www.tokyometro.jp"),
                 ("TOEI", "Toei Transportation", "https://www.kotsu.metro.tokyo.jp")],
    "jp-osaka": [("OM", "Osaka Metro", "https://subway.osakametro.co.jp")],
}

# Leaves whose data does not change at all from v2 to v3 (their archives are reused).
UNCHANGED_IN_V3 = {"de-hamburg", "fr-brittany", "us-washington", "ca-ontario", "jp-hokkaido"}
# Leaves whose poi group is left unchanged in a version although the leaf's base changes.
POI_UNCHANGED = {2: {"switzerland", "ca-ontario"}, 3: {"netherlands", "us-new-york"}}
# Leaves whose terrain changes in v3 (terrain never changes in v2).
TERRAIN_CHANGED_V3 = {"switzerland", "de-bavaria"}
# Leaves whose roads.bin moves to network/roads.bin in v3 (moved and edited).
ROADS_MOVED_V3 = {"de-berlin", "us-california"}

# The leaf v3 adds to the tree (under asia/japan).
V3_NEW_LEAF = {
    "parent": "japan",
    "node": {
        "id": "jp-osaka", "title": "Osaka",
        "bbox": [135.09, 34.271, 135.746, 35.051],
        "boundary": {"type": "Polygon", "coordinates": [[
            [135.09, 34.32], [135.45, 34.58], [135.4, 34.7], [135.4, 35.05], [135.52, 35.05],
            [135.72, 34.83], [135.74, 34.7], [135.68, 34.5], [135.6, 34.28], [135.35, 34.3],
            [135.09, 34.32]]]},
        "metadata": {"iso": "JP-27", "population": 8837685, "area_km2": 1905},
    },
}

# --------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------

def rng_for(*parts):
    """A random.Random seeded from SHA-256 of the parts: same sequence everywhere."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:16], "big"))


def micro(deg):
    """Degrees (float from JSON) to integer microdegrees."""
    return int(round(deg * 1_000_000))


def fmt_micro(v):
    """Integer microdegrees as a fixed 6-decimal string, without float formatting."""
    sign = "-" if v < 0 else ""
    v = abs(v)
    return "%s%d.%06d" % (sign, v // 1_000_000, v % 1_000_000)


def dump_json(obj, indent=0):
    """JSON with coordinate arrays and small objects on one line (used for tree.json)."""
    def is_num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool)

    def inline(v):
        if isinstance(v, list):
            return (all(is_num(x) for x in v)
                    or (len(v) > 0 and all(isinstance(x, list) and all(is_num(y) for y in x) for x in v)))
        if isinstance(v, dict):
            return (not any(isinstance(x, (dict, list)) for x in v.values())
                    and len(json.dumps(v, ensure_ascii=False)) <= 110)
        return True

    if inline(obj):
        return json.dumps(obj, ensure_ascii=False, separators=(", ", ": "))
    pad = "  " * (indent + 1)
    if isinstance(obj, list):
        inner = ",\n".join(pad + dump_json(x, indent + 1) for x in obj)
        return "[\n" + inner + "\n" + "  " * indent + "]"
    inner = ",\n".join(pad + json.dumps(k, ensure_ascii=False) + ": " + dump_json(v, indent + 1)
                       for k, v in obj.items())
    return "{\n" + inner + "\n" + "  " * indent + "}"


def json_bytes(obj):
    return (json.dumps(obj, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode("utf-8")


class Area:
    """A leaf's bbox and boundary in integer microdegrees, for sampling points inside it."""

    def __init__(self, node):
        b = node.get("bbox") or [-10.0, -10.0, 10.0, 10.0]
        self.min_lon, self.min_lat, self.max_lon, self.max_lat = (micro(x) for x in b)
        self.bbox = list(b)
        boundary = node.get("boundary")
        if boundary is None:
            self.polygons = []
        elif boundary["type"] == "Polygon":
            self.polygons = [boundary["coordinates"]]
        else:
            self.polygons = boundary["coordinates"]
        self.polygons = [[[(micro(p[0]), micro(p[1])) for p in ring] for ring in poly]
                         for poly in self.polygons]

    def contains(self, lon, lat):
        if not self.polygons:
            return self.min_lon <= lon <= self.max_lon and self.min_lat <= lat <= self.max_lat
        for poly in self.polygons:
            inside = False
            for ring in poly:
                if _ring_contains(ring, lon, lat):
                    inside = not inside
            if inside:
                return True
        return False

    def sample(self, rng):
        for _ in range(200):
            lon = rng.randrange(self.min_lon, self.max_lon + 1)
            lat = rng.randrange(self.min_lat, self.max_lat + 1)
            if self.contains(lon, lat):
                return lon, lat
        return (self.min_lon + self.max_lon) // 2, (self.min_lat + self.max_lat) // 2

    def clamp(self, lon, lat):
        return (min(max(lon, self.min_lon), self.max_lon), min(max(lat, self.min_lat), self.max_lat))

    @property
    def span(self):
        return max(1, min(self.max_lon - self.min_lon, self.max_lat - self.min_lat))


def _ring_contains(ring, x, y):
    # Integer-exact even-odd test (cross-multiplied, no division).
    inside = False
    j = len(ring) - 1
    for i in range(len(ring)):
        xi, yi = ring[i]
        xj, yj = ring[j]
        if (yi > y) != (yj > y):
            # x < (xj - xi) * (y - yi) / (yj - yi) + xi
            lhs = (x - xi) * (yj - yi)
            rhs = (xj - xi) * (y - yi)
            if (yj - yi) > 0:
                if lhs < rhs:
                    inside = not inside
            elif lhs > rhs:
                inside = not inside
        j = i
    return inside


# --------------------------------------------------------------------------------------
# Names
# --------------------------------------------------------------------------------------

PLACE_PARTS = {
    "de": (["Alt", "Neu", "Hohen", "Nieder", "Ober", "Linden", "Rosen", "Eichen", "Birken", "Wald",
            "Stein", "Kirch", "Mühl", "Schön", "Falken", "Grün"],
           ["dorf", "hausen", "feld", "heim", "berg", "bach", "au", "stedt", "ow", "itz", "walde",
            "brück", "hof", "see"]),
    "fr": (["Saint-", "Mont", "Beau", "Ville", "Plou", "Ker", "Pont-", "Châte", "Roche", "Bel",
            "Fontaine", "Val"],
           ["ville", "court", "mont", "lan", "gastel", "neuf", "fort", "val", "bourg", "ac", "ières",
            "aux"]),
    "nl": (["Oost", "West", "Noord", "Zuid", "Nieuw", "Oud", "Ber", "Heer", "Zand", "Wijk", "Hoog",
            "Laag"],
           ["erdam", "wijk", "hoven", "dorp", "veen", "dam", "broek", "horst", "hem", "zijl", "meer",
            "kerk"]),
    "en": (["Spring", "Green", "Maple", "Oak", "Cedar", "River", "Lake", "Fair", "Pine", "Mill",
            "North", "West", "Elm", "Clear"],
           ["field", "ville", "ton", "wood", "dale", "port", " Falls", " Heights", "burg", "view",
            "brook", " Creek"]),
    "ja": (["北", "南", "東", "西", "中", "新", "上", "下", "大", "小", "高", "桜", "松", "青"],
           ["町", "村", "川", "山", "田", "原", "沢", "橋", "台", "野", "浜", "丘"]),
}

CATEGORIES = ["restaurant", "cafe", "pharmacy", "supermarket", "fuel", "hotel", "museum", "school",
              "hospital", "bank", "bakery", "bar", "cinema", "library", "post_office", "park"]
CATEGORY_WEIGHTS = [14, 10, 5, 7, 5, 5, 2, 5, 2, 4, 6, 8, 2, 2, 3, 6]

CATEGORY_WORDS = {
    "de": ["Restaurant", "Café", "Apotheke", "Markt", "Tankstelle", "Hotel", "Museum", "Schule",
           "Klinikum", "Bank", "Bäckerei", "Kneipe", "Kino", "Bibliothek", "Postfiliale", "Park"],
    "fr": ["Restaurant", "Café", "Pharmacie", "Supermarché", "Station-service", "Hôtel", "Musée",
           "École", "Hôpital", "Banque", "Boulangerie", "Bar", "Cinéma", "Bibliothèque", "La Poste",
           "Parc"],
    "nl": ["Restaurant", "Café", "Apotheek", "Supermarkt", "Tankstation", "Hotel", "Museum", "School",
           "Ziekenhuis", "Bank", "Bakkerij", "Kroeg", "Bioscoop", "Bibliotheek", "Postkantoor", "Park"],
    "en": ["Grill", "Coffee", "Pharmacy", "Market", "Gas", "Hotel", "Museum", "School", "Hospital",
           "Bank", "Bakery", "Bar", "Cinema", "Library", "Post Office", "Park"],
    "ja": ["食堂", "カフェ", "薬局", "スーパー", "ガソリンスタンド", "ホテル", "博物館", "学校", "病院",
           "銀行", "パン屋", "居酒屋", "映画館", "図書館", "郵便局", "公園"],
}


def place_name(rng, lang):
    a, b = PLACE_PARTS[lang]
    return rng.choice(a) + rng.choice(b)


def poi_name(rng, lang, category):
    word = CATEGORY_WORDS[lang][CATEGORIES.index(category)]
    place = place_name(rng, lang)
    if lang == "ja":
        return place + word
    if lang == "en":
        return place + " " + word
    if lang == "fr":
        return word + " " + ("du " if rng.random() < 0.3 else "") + place
    return word + " " + place


# --------------------------------------------------------------------------------------
# MVT-like vector tiles (real Mapbox Vector Tile protobuf encoding, uncompressed)
# --------------------------------------------------------------------------------------

EXTENT = 4096


def put_varint(out, n):
    while n > 0x7F:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)


def zigzag(n):
    return (n << 1) if n >= 0 else ((-n) << 1) - 1


def put_bytes_field(out, key, payload):
    out.append(key)
    put_varint(out, len(payload))
    out += payload


def _put_zigzag(out, n):
    n = (n << 1) if n >= 0 else ((-n) << 1) - 1
    if n < 0x80:
        out.append(n)
    elif n < 0x4000:
        out.append((n & 0x7F) | 0x80)
        out.append(n >> 7)
    else:
        put_varint(out, n)


def encode_geometry(ftype, pts):
    out = bytearray()
    x = y = 0
    if ftype == 1:  # points: one MoveTo with all points
        put_varint(out, 1 | (len(pts) << 3))
        for px, py in pts:
            _put_zigzag(out, px - x)
            _put_zigzag(out, py - y)
            x, y = px, py
        return out
    px, py = pts[0]
    put_varint(out, 1 | (1 << 3))
    _put_zigzag(out, px)
    _put_zigzag(out, py)
    x, y = px, py
    put_varint(out, 2 | ((len(pts) - 1) << 3))
    for px, py in pts[1:]:
        _put_zigzag(out, px - x)
        _put_zigzag(out, py - y)
        x, y = px, py
    if ftype == 3:
        put_varint(out, 7 | (1 << 3))  # ClosePath
    return out


class Tile:
    """One vector tile: layers of features (id, type, tags, points). Immutable; cached bytes."""

    __slots__ = ("layers", "_bytes")

    def __init__(self, layers):
        self.layers = layers  # list of (name, [ (id, type, ((k, v), ...), [(x, y), ...]) ])
        self._bytes = None

    def render(self):
        if self._bytes is not None:
            return self._bytes
        out = bytearray()
        for name, feats in self.layers:
            lay = bytearray(b"\x78\x02")  # version = 2
            put_bytes_field(lay, 0x0A, name.encode("utf-8"))
            keys, kidx, vals, vidx = [], {}, [], {}
            for fid, ftype, tags, pts in feats:
                tagints = bytearray()
                for k, v in tags:
                    if k not in kidx:
                        kidx[k] = len(keys)
                        keys.append(k)
                    vk = (type(v).__name__, v)
                    if vk not in vidx:
                        vidx[vk] = len(vals)
                        vals.append(v)
                    put_varint(tagints, kidx[k])
                    put_varint(tagints, vidx[vk])
                f = bytearray(b"\x08")
                put_varint(f, fid)
                if tagints:
                    put_bytes_field(f, 0x12, tagints)
                f.append(0x18)
                put_varint(f, ftype)
                put_bytes_field(f, 0x22, encode_geometry(ftype, pts))
                put_bytes_field(lay, 0x12, f)
            for k in keys:
                put_bytes_field(lay, 0x1A, k.encode("utf-8"))
            for v in vals:
                val = bytearray()
                if isinstance(v, int):
                    val.append(0x28)
                    put_varint(val, v)
                else:
                    put_bytes_field(val, 0x0A, v.encode("utf-8"))
                put_bytes_field(lay, 0x22, val)
            lay.append(0x28)
            put_varint(lay, EXTENT)
            put_bytes_field(out, 0x1A, lay)
        self._bytes = bytes(out)
        return self._bytes


ROAD_CLASSES = ["motorway", "trunk", "primary", "secondary", "tertiary", "residential", "service",
                "track", "path"]
LANDUSE = ["park", "forest", "residential", "industrial", "farmland", "meadow", "cemetery"]
WATER = ["lake", "river", "reservoir"]


def _walk(rng, n, step):
    r = rng.random
    span = 2 * step + 1
    x, y = int(r() * EXTENT), int(r() * EXTENT)
    pts = [(x, y)]
    dx, dy = int(r() * span) - step, int(r() * span) - step
    for _ in range(n - 1):
        dx = (dx * 3 + int(r() * span) - step) // 4
        dy = (dy * 3 + int(r() * span) - step) // 4
        x = min(max(x + dx, -64), EXTENT + 64)
        y = min(max(y + dy, -64), EXTENT + 64)
        pts.append((x, y))
    return pts


def _blob(rng, n, radius):
    cx, cy = rng.randrange(0, EXTENT), rng.randrange(0, EXTENT)
    pts = []
    # A star-shaped ring: walk around the centre using a fixed 16-direction table.
    dirs = [(16, 0), (15, 6), (11, 11), (6, 15), (0, 16), (-6, 15), (-11, 11), (-15, 6),
            (-16, 0), (-15, -6), (-11, -11), (-6, -15), (0, -16), (6, -15), (11, -11), (15, -6)]
    rand = rng.random
    for i in range(n):
        ddx, ddy = dirs[(i * 16) // n]
        r = radius * (60 + int(rand() * 41)) // 100
        pts.append((min(max(cx + ddx * r // 16, -64), EXTENT + 64),
                    min(max(cy + ddy * r // 16, -64), EXTENT + 64)))
    return pts


def make_feature(rng, layer, fid, lang, street_names):
    if layer == "roads":
        cls = ROAD_CLASSES[min(len(ROAD_CLASSES) - 1, int(rng.random() ** 0.6 * len(ROAD_CLASSES)))]
        tags = [("class", cls)]
        if cls not in ("track", "path", "service"):
            tags.append(("name", rng.choice(street_names)))
        if rng.random() < 0.2:
            tags.append(("oneway", 1))
        return (fid, 2, tuple(tags), _walk(rng, rng.randrange(2, 14), 220))
    if layer == "buildings":
        x, y = rng.randrange(0, EXTENT - 80), rng.randrange(0, EXTENT - 80)
        w, h = rng.randrange(8, 60), rng.randrange(8, 60)
        pts = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
        tags = (("height", rng.randrange(3, 40)),) if rng.random() < 0.6 else ()
        return (fid, 3, tags, pts)
    if layer == "landuse":
        return (fid, 3, (("class", rng.choice(LANDUSE)),), _blob(rng, rng.randrange(6, 24), rng.randrange(80, 700)))
    if layer == "water":
        tags = (("class", rng.choice(WATER)),)
        return (fid, 3, tags, _blob(rng, rng.randrange(12, 48), rng.randrange(150, 1200)))
    # labels
    n = rng.randrange(1, 4)
    pts = [(rng.randrange(0, EXTENT), rng.randrange(0, EXTENT)) for _ in range(n)]
    return (fid, 1, (("name", place_name(rng, lang)), ("rank", rng.randrange(1, 10))), pts)


LAYERS = ["water", "landuse", "roads", "buildings", "labels"]
LAYER_WEIGHTS = [3, 10, 40, 40, 7]


def feature_size(feat):
    # Approximate encoded size, used only to stop adding features near the target size.
    return 10 + 4 * len(feat[2]) + 4 * len(feat[3])


def make_tile(rng, lang, street_names):
    u = rng.random()
    target = 1024 + int(29 * 1024 * u ** 6)  # 1–30 KB, most tiles small
    by_layer = {name: [] for name in LAYERS}
    size, fid = 0, 1
    while size < target:
        layer = rng.choices(LAYERS, LAYER_WEIGHTS)[0]
        feat = make_feature(rng, layer, fid, lang, street_names)
        by_layer[layer].append(feat)
        size += feature_size(feat)
        fid += 1
    return Tile([(name, by_layer[name]) for name in LAYERS if by_layer[name]])


def edit_tile(rng, tile, lang, street_names):
    """A few features moved/retagged, one inserted, maybe one deleted."""
    layers = [(name, list(feats)) for name, feats in tile.layers]
    max_id = max(f[0] for _, feats in layers for f in feats)
    for _ in range(rng.randrange(1, 4)):
        name, feats = rng.choice(layers)
        i = rng.randrange(len(feats))
        fid, ftype, tags, pts = feats[i]
        if rng.random() < 0.5 and ftype != 1:
            k = rng.randrange(len(pts))
            x, y = pts[k]
            pts = pts[:k] + [(x + rng.randrange(-12, 13), y + rng.randrange(-12, 13))] + pts[k + 1:]
        elif tags:
            k = rng.randrange(len(tags))
            key, value = tags[k]
            if isinstance(value, int):
                value = rng.randrange(1, 40)
            elif key == "name":
                value = rng.choice(street_names)
            else:
                value = rng.choice({"roads": ROAD_CLASSES, "water": WATER}.get(name, LANDUSE))
            tags = tags[:k] + ((key, value),) + tags[k + 1:]
        feats[i] = (fid, ftype, tags, pts)
    name, feats = rng.choice(layers)
    max_id += 1
    feats.insert(rng.randrange(len(feats) + 1), make_feature(rng, name, max_id, lang, street_names))
    if rng.random() < 0.5:
        name, feats = rng.choice(layers)
        if len(feats) > 1:
            del feats[rng.randrange(len(feats))]
    return Tile(layers)


def lon_to_x(lon, z):
    return int((lon + 180.0) / 360.0 * (1 << z))


def lat_to_y(lat, z):
    r = math.radians(lat)
    return int((1.0 - math.asinh(math.tan(r)) / math.pi) / 2.0 * (1 << z))


def tile_plan(bbox, count):
    """(z, x, y) tiles covering bbox: whole coarse levels, then the tiles of the next level
    nearest the centre, so the pyramid has `count` tiles; returns (tiles, reserve) where
    reserve holds the next candidates (for tiles added in later versions)."""
    min_lon, min_lat, max_lon, max_lat = bbox
    def level(z):
        x0, x1 = lon_to_x(min_lon, z), lon_to_x(max_lon, z)
        y0, y1 = lat_to_y(max_lat, z), lat_to_y(min_lat, z)
        return x0, x1, y0, y1
    z = 0
    while True:
        x0, x1, y0, y1 = level(z + 1)
        if (x1 - x0 + 1) * (y1 - y0 + 1) > 2:
            break
        z += 1
    tiles = []
    while True:
        x0, x1, y0, y1 = level(z)
        cells = [(z, x, y) for x in range(x0, x1 + 1) for y in range(y0, y1 + 1)]
        if len(tiles) + len(cells) <= count:
            tiles += cells
            z += 1
            continue
        cx2, cy2 = x0 + x1, y0 + y1
        cells.sort(key=lambda t: ((2 * t[1] - cx2) ** 2 + (2 * t[2] - cy2) ** 2, t[1], t[2]))
        need = count - len(tiles)
        tiles += cells[:need]
        return tiles, cells[need:]


# --------------------------------------------------------------------------------------
# Group models. Each is immutable in spirit: evolve() returns a new object and unchanged
# groups are the same object in the next version, so they render to identical bytes.
# --------------------------------------------------------------------------------------

ROAD = struct.Struct("<IIIiiiiIBBBBI")  # 40-byte records


class BaseGroup:
    def __init__(self):
        self.files = {}     # path -> bytes (small files) or Tile
        self.roads = []     # sorted list of road records (tuples for ROAD)
        self.roads_path = "roads.bin"
        self.places = []    # [name, kind, lon, lat, population]
        self.places_path = "places.txt"
        self.reserve = []   # tile candidates not yet published
        self.revision = 1

    @classmethod
    def create(cls, leaf, node, prof, scale, version):
        g = cls()
        g.leaf, g.title, g.lang, g.area = leaf, node["title"], prof["lang"], Area(node)
        f = prof["size"]
        rng = rng_for(leaf, "base", version, "create")
        g.street_names = sorted({place_name(rng, g.lang) + ("straße" if g.lang == "de" else "")
                                 for _ in range(60)})
        # Tiles
        count = max(6, int(round(22 * f * scale)))
        tiles, g.reserve = tile_plan(g.area.bbox, count)
        for (z, x, y) in tiles:
            trng = rng_for(leaf, "base", version, "tile", z, x, y)
            g.files["tiles/%d/%d/%d.mvt" % (z, x, y)] = make_tile(trng, g.lang, g.street_names)
        # Roads: chains of segments wandering inside the area
        n = max(50, int(round(2700 * f * scale)))
        step = max(200, g.area.span // 400)
        rid, node_id = 1000, 1
        lon, lat = g.area.sample(rng)
        while len(g.roads) < n:
            if rng.random() < 0.08:
                lon, lat = g.area.sample(rng)
                node_id += 1
            nlon, nlat = g.area.clamp(lon + rng.randrange(-step, step + 1), lat + rng.randrange(-step, step + 1))
            g.roads.append(g.road(rng, rid, node_id, node_id + 1, lon, lat, nlon, nlat))
            node_id += 1
            lon, lat = nlon, nlat
            rid += rng.randrange(2, 12)
        g.next_node = node_id + 10
        # Places (labels)
        for i in range(max(20, int(round(250 * f * scale)))):
            plon, plat = g.area.sample(rng)
            pop = 200 + int(2_000_000 * rng.random() ** 8)
            kind = "city" if pop > 100_000 else "town" if pop > 10_000 else "village"
            g.places.append([place_name(rng, g.lang), kind, plon, plat, pop])
        g.places.sort(key=lambda p: (-p[4], p[0], p[2], p[3]))
        g.files["styles/default.json"] = json_bytes(style(leaf, node["title"], "default"))
        return g

    @staticmethod
    def road(rng, rid, n1, n2, lon1, lat1, lon2, lat2):
        length = (abs(lon2 - lon1) * 7 // 10 + abs(lat2 - lat1)) * 111 // 1000
        cls = min(8, int(rng.random() ** 0.7 * 9))
        speed = [130, 100, 80, 70, 50, 30, 20, 10, 5][cls]
        lanes = 4 if cls < 2 else 2 if cls < 5 else 1
        flags = (1 if rng.random() < 0.15 else 0) | (2 if rng.random() < 0.05 else 0)
        return (rid, n1, n2, lon1, lat1, lon2, lat2, length, cls, speed, lanes, flags,
                rng.randrange(0, 5000) if cls < 6 else 0)

    def copy(self):
        g = BaseGroup.__new__(BaseGroup)
        g.__dict__.update(self.__dict__)
        g.files = dict(self.files)
        g.roads = list(self.roads)
        g.places = [list(p) for p in self.places]
        g.reserve = list(self.reserve)
        return g

    def evolve(self, version):
        g = self.copy()
        g.revision += 1
        rng = rng_for(self.leaf, "base", version, "evolve")
        v3 = version == 3
        # roads: edits, deletes and inserts in the middle of the table
        g.roads = edit_roads(rng, g, g.roads, edit=0.012 if v3 else 0.02,
                             delete=0.005 if v3 else 0.01, insert=0.004 if v3 else 0.01,
                             cluster=0.015 if v3 else 0.0)
        if v3 and self.leaf in ROADS_MOVED_V3:
            g.roads_path = "network/roads.bin"
        # tiles: ~6-8% edited, 1-3 deleted, 2-5 added
        tile_paths = sorted(p for p in g.files if p.startswith("tiles/"))
        n_edit = max(1, len(tile_paths) * (6 if v3 else 8) // 100)
        for p in rng.sample(tile_paths, n_edit):
            g.files[p] = edit_tile(rng, g.files[p], g.lang, g.street_names)
        deepest = max(int(p.split("/")[1]) for p in tile_paths)
        candidates = [p for p in tile_paths if int(p.split("/")[1]) == deepest]
        for p in rng.sample(candidates, min(len(candidates) - 1, rng.randrange(1, 4))):
            del g.files[p]
        n_add = min(len(g.reserve), rng.randrange(2, 6))
        for (z, x, y) in g.reserve[:n_add]:
            trng = rng_for(self.leaf, "base", version, "tile", z, x, y)
            g.files["tiles/%d/%d/%d.mvt" % (z, x, y)] = make_tile(trng, g.lang, g.street_names)
        g.reserve = g.reserve[n_add:]
        if version == 2:
            # renamed (same bytes) and moved to another directory (same bytes)
            g.files["styles/day.json"] = g.files.pop("styles/default.json")
            g.places_path = "labels/places.txt"
        else:
            # a new style file; a few place labels renamed / re-ranked
            g.files["styles/night.json"] = json_bytes(style(self.leaf, self.title, "night"))
            for i in rng.sample(range(len(g.places)), max(1, len(g.places) // 50)):
                g.places[i][0] = place_name(rng, g.lang)
                g.places[i][4] += rng.randrange(-500, 1500)
        return g

    def render(self):
        out = {}
        for p, v in self.files.items():
            out[p] = v.render() if isinstance(v, Tile) else v
        out[self.roads_path] = (b"RDS1" + struct.pack("<IHHI", len(self.roads), ROAD.size, 1, 0)
                                + b"".join(ROAD.pack(*r) for r in self.roads))
        lines = ["name\tkind\tlat\tlon\tpopulation\n"]
        lines += ["%s\t%s\t%s\t%s\t%d\n" % (n, k, fmt_micro(la), fmt_micro(lo), pop)
                  for n, k, lo, la, pop in self.places]
        out[self.places_path] = "".join(lines).encode("utf-8")
        zooms = sorted({int(p.split("/")[1]) for p in self.files if p.startswith("tiles/")})
        out["meta.json"] = json_bytes({
            "leaf": self.leaf, "title": self.title, "revision": self.revision,
            "bbox": self.area.bbox, "format": "sample-mvt-1", "tile_extent": EXTENT,
            "zoom": [zooms[0], zooms[-1]],
            "tiles": sum(1 for p in self.files if p.startswith("tiles/")),
            "roads": {"path": self.roads_path, "records": len(self.roads), "record_size": ROAD.size},
            "labels": {"path": self.places_path, "count": len(self.places)},
        })
        return out


def edit_roads(rng, g, roads, edit, delete, insert, cluster):
    n = len(roads)
    for i in rng.sample(range(n), max(1, int(n * edit))):
        r = list(roads[i])
        what = rng.randrange(4)
        if what == 0:
            r[9] = max(5, r[9] + rng.choice([-20, -10, 10, 20]))       # max speed
        elif what == 1:
            r[8] = min(8, max(0, r[8] + rng.choice([-1, 1])))          # class
        elif what == 2:
            r[5] += rng.randrange(-300, 301)                           # geometry tweak
            r[6] += rng.randrange(-300, 301)
            r[7] = (abs(r[5] - r[3]) * 7 // 10 + abs(r[6] - r[4])) * 111 // 1000
        else:
            r[11] ^= 1                                                 # oneway flag
        roads[i] = tuple(r)
    drop = set(rng.sample(range(n), int(n * delete)))
    roads = [r for i, r in enumerate(roads) if i not in drop]
    # scattered inserts plus (optionally) one cluster of inserts in consecutive gaps
    positions = set(rng.sample(range(len(roads) - 1), int(n * insert)))
    if cluster:
        k = int(n * cluster)
        start = rng.randrange(0, max(1, len(roads) - 1 - k))
        positions.update(range(start, start + k))
    out = []
    for i, r in enumerate(roads):
        out.append(r)
        if i in positions and i + 1 < len(roads):
            gap = roads[i + 1][0] - r[0]
            if gap >= 2:
                rid = r[0] + 1 + rng.randrange(gap - 1)
                lon2, lat2 = g.area.clamp(r[5] + rng.randrange(-400, 401), r[6] + rng.randrange(-400, 401))
                out.append(BaseGroup.road(rng, rid, r[2], g.next_node, r[5], r[6], lon2, lat2))
                g.next_node += 1
    return out


def style(leaf, title, variant):
    night = variant == "night"
    colors = {"background": "#0b1d2a" if night else "#f2efe9", "water": "#1b3b5a" if night else "#aad3df",
              "park": "#1f3d2b" if night else "#c8facc", "building": "#2a2f36" if night else "#d9d0c9",
              "motorway": "#b0603a" if night else "#e892a2", "primary": "#a08040" if night else "#fcd6a4",
              "minor": "#5a6270" if night else "#ffffff", "label": "#e0e0e0" if night else "#333333"}
    layers = [{"id": "background", "type": "background", "paint": {"background-color": colors["background"]}},
              {"id": "water", "type": "fill", "source-layer": "water", "paint": {"fill-color": colors["water"]}},
              {"id": "landuse-park", "type": "fill", "source-layer": "landuse",
               "filter": ["==", "class", "park"], "paint": {"fill-color": colors["park"]}},
              {"id": "buildings", "type": "fill", "source-layer": "buildings", "minzoom": 13,
               "paint": {"fill-color": colors["building"]}}]
    for cls, width in [("motorway", 4), ("trunk", 3.5), ("primary", 3), ("secondary", 2.5),
                       ("tertiary", 2), ("residential", 1.5), ("service", 1)]:
        layers.append({"id": "road-" + cls, "type": "line", "source-layer": "roads",
                       "filter": ["==", "class", cls],
                       "paint": {"line-color": colors["motorway" if cls in ("motorway", "trunk") else
                                                      "primary" if cls in ("primary", "secondary") else "minor"],
                                 "line-width": width}})
    layers.append({"id": "labels", "type": "symbol", "source-layer": "labels",
                   "layout": {"text-field": "{name}", "text-size": 12},
                   "paint": {"text-color": colors["label"]}})
    return {"version": 8, "name": "%s (%s)" % (title, variant), "id": "%s-%s" % (leaf, variant),
            "sources": {"sample": {"type": "vector", "tiles": ["tiles/{z}/{x}/{y}.mvt"]}},
            "layers": layers}


class PoiGroup:
    @classmethod
    def create(cls, leaf, node, prof, scale, version):
        g = cls()
        g.leaf, g.lang, g.area, g.revision = leaf, prof["lang"], Area(node), 1
        g.categories_path = "categories.json"
        rng = rng_for(leaf, "poi", version, "create")
        n = max(40, int(round(800 * prof["size"] * scale)))
        g.rows, pid = [], 100
        for _ in range(n):
            g.rows.append(g.new_row(rng, pid))
            pid += rng.randrange(2, 9)
        return g

    def new_row(self, rng, pid):
        cat = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
        lon, lat = self.area.sample(rng)
        return (pid, poi_name(rng, self.lang, cat), lat, lon, cat)

    def evolve(self, version):
        g = PoiGroup.__new__(PoiGroup)
        g.__dict__.update(self.__dict__)
        g.revision += 1
        rng = rng_for(self.leaf, "poi", version, "evolve")
        rows = list(self.rows)
        n = len(rows)
        for i in rng.sample(range(n), max(1, n * 3 // 100)):
            pid, name, lat, lon, cat = rows[i]
            what = rng.randrange(3)
            if what == 0:
                name = poi_name(rng, self.lang, cat)
            elif what == 1:
                lat, lon = lat + rng.randrange(-80, 81), lon + rng.randrange(-80, 81)
            else:
                cat = rng.choices(CATEGORIES, CATEGORY_WEIGHTS)[0]
            rows[i] = (pid, name, lat, lon, cat)
        drop = set(rng.sample(range(n), n // 100))
        rows = [r for i, r in enumerate(rows) if i not in drop]
        ins = set(rng.sample(range(len(rows) - 1), max(1, n * 3 // 200)))
        out = []
        for i, r in enumerate(rows):
            out.append(r)
            if i in ins and i + 1 < len(rows) and rows[i + 1][0] - r[0] >= 2:
                out.append(g.new_row(rng, r[0] + 1 + rng.randrange(rows[i + 1][0] - r[0] - 1)))
        g.rows = out
        if version == 3:
            g.categories_path = "meta/categories.json"   # moved, same bytes
        return g

    def render(self):
        text = ["id,name,lat,lon,category\n"]
        text += ["%d,%s,%s,%s,%s\n" % (pid, name, fmt_micro(lat), fmt_micro(lon), cat)
                 for pid, name, lat, lon, cat in self.rows]
        a = self.area
        grid = 64
        wl, hl = max(1, a.max_lon - a.min_lon), max(1, a.max_lat - a.min_lat)
        cells = sorted((min(grid - 1, max(0, (lat - a.min_lat) * grid // hl)) * grid
                        + min(grid - 1, max(0, (lon - a.min_lon) * grid // wl)), pid)
                       for pid, _, lat, lon, _ in self.rows)
        index = (b"PIDX" + struct.pack("<IHHiiii", len(cells), grid, 1, a.min_lon, a.min_lat, a.max_lon, a.max_lat)
                 + b"".join(struct.pack("<HI", c, pid) for c, pid in cells))
        cats = {"categories": [{"id": c, "title": CATEGORY_WORDS[self.lang][i], "icon": c.replace("_", "-") + "-15"}
                               for i, c in enumerate(CATEGORIES)]}
        return {"poi.csv": "".join(text).encode("utf-8"), "index.bin": index,
                self.categories_path: json_bytes(cats)}


class TransitGroup:
    ROUTE_COLORS = ["E3000F", "0072BC", "00A651", "F7941D", "8E44AD", "FFD100", "6D6E71", "00AEEF"]

    @classmethod
    def create(cls, leaf, node, prof, scale, version):
        g = cls()
        g.leaf, g.lang, g.area, g.tz = leaf, prof["lang"], Area(node), prof.get("tz", "UTC")
        g.agencies = AGENCIES.get(leaf, [("AG", node["title"] + " Transit", "https://transit.example")])
        g.calendar_dates = None
        rng = rng_for(leaf, "transit", version, "create")
        g.stops, g.routes, g.next_stop = [], [], 1
        for i in range(max(3, int(round(14 * prof["size"] * scale)))):
            g.routes.append(g.new_route(rng, "R%03d" % ((i + 1) * 10), i))
        g.routes.sort(key=lambda r: r["id"])
        return g

    def new_stop(self, rng, lon, lat):
        sid = "S%05d" % self.next_stop
        self.next_stop += 1
        lon, lat = self.area.clamp(lon, lat)
        self.stops.append([sid, place_name(rng, self.lang), lat, lon])
        return sid

    def new_route(self, rng, rid, i):
        kind = rng.choice([1, 1, 2, 3, 3, 3, 0])
        step = max(300, self.area.span // 60)
        lon, lat = self.area.sample(rng)
        stops, hops = [], []
        for _ in range(rng.randrange(8, 26)):
            stops.append(self.new_stop(rng, lon, lat))
            hops.append(rng.randrange(1, 5))
            lon += rng.randrange(-step, step + 1)
            lat += rng.randrange(-step, step + 1)
        short = {1: "U", 2: "S", 3: "", 0: "T"}[kind] + str(rng.randrange(1, 99))
        trips = []
        first = rng.randrange(300, 420)
        headway = rng.choice([5, 10, 10, 15, 20, 30])
        for k in range(rng.randrange(6, 15)):
            trips.append(("%s_%02d" % (rid, k), "WD" if k % 4 else "WE", k % 2, first + k * headway))
        return {"id": rid, "agency": self.agencies[i % len(self.agencies)][0], "short": short,
                "long": "%s – %s" % (self.stops[-len(stops)][1], self.stops[-1][1]), "type": kind,
                "color": self.ROUTE_COLORS[i % len(self.ROUTE_COLORS)], "stops": stops, "hops": hops,
                "trips": trips}

    def evolve(self, version):
        g = TransitGroup.__new__(TransitGroup)
        g.__dict__.update(self.__dict__)
        g.stops = [list(s) for s in self.stops]
        g.routes = [dict(r) for r in self.routes]
        rng = rng_for(self.leaf, "transit", version, "evolve")
        for i in rng.sample(range(len(g.stops)), max(2, len(g.stops) // 40)):   # renamed stops
            g.stops[i][1] = place_name(rng, g.lang)
        for i in rng.sample(range(len(g.stops)), max(2, len(g.stops) // 40)):   # moved stops
            g.stops[i][2] += rng.randrange(-150, 151)
            g.stops[i][3] += rng.randrange(-150, 151)
        r = rng.choice(g.routes)                                                 # retimed route
        r["trips"] = [(t, s, d, start + 2) for t, s, d, start in r["trips"]]
        if version == 2:
            i = rng.randrange(len(g.routes) - 1)                                 # new route in the middle
            rid = "R%03d" % (int(g.routes[i]["id"][1:]) + 5)
            g.routes.append(g.new_route(rng, rid, len(g.routes)))
            g.routes.sort(key=lambda r: r["id"])
            g.calendar_dates = [("WD", "2025%02d%02d" % (m, d), 2) for m, d in
                                [(1, 1), (4, 18), (4, 21), (5, 1), (5, 29), (12, 25), (12, 26)]]
        else:
            dead = g.routes.pop(rng.randrange(1, len(g.routes) - 1))             # route removed
            used = {s for r in g.routes for s in r["stops"]}
            g.stops = [s for s in g.stops if s[0] in used or s[0] not in dead["stops"]]
            g.calendar_dates = None                                              # file deleted
        return g

    def render(self):
        out = {}
        out["agency.txt"] = ("agency_id,agency_name,agency_url,agency_timezone\n" + "".join(
            "%s,%s,%s,%s\n" % (a, n, u, self.tz) for a, n, u in self.agencies)).encode("utf-8")
        out["calendar.txt"] = (b"service_id,monday,tuesday,wednesday,thursday,friday,saturday,sunday,"
                               b"start_date,end_date\nWD,1,1,1,1,1,0,0,20250101,20261231\n"
                               b"WE,0,0,0,0,0,1,1,20250101,20261231\n")
        if self.calendar_dates:
            out["calendar_dates.txt"] = ("service_id,date,exception_type\n" + "".join(
                "%s,%s,%d\n" % c for c in self.calendar_dates)).encode("utf-8")
        out["stops.txt"] = ("stop_id,stop_name,stop_lat,stop_lon\n" + "".join(
            "%s,%s,%s,%s\n" % (s, n, fmt_micro(la), fmt_micro(lo)) for s, n, la, lo in self.stops)).encode("utf-8")
        out["routes.txt"] = ("route_id,agency_id,route_short_name,route_long_name,route_type,route_color\n" + "".join(
            "%s,%s,%s,%s,%d,%s\n" % (r["id"], r["agency"], r["short"], r["long"], r["type"], r["color"])
            for r in self.routes)).encode("utf-8")
        trips, times = ["route_id,service_id,trip_id,direction_id\n"], \
            ["trip_id,arrival_time,departure_time,stop_id,stop_sequence\n"]
        for r in self.routes:
            for tid, service, direction, start in r["trips"]:
                trips.append("%s,%s,%s,%d\n" % (r["id"], service, tid, direction))
                seq = list(zip(r["stops"], r["hops"]))
                if direction:
                    seq.reverse()
                t = start
                for k, (sid, hop) in enumerate(seq):
                    hhmm = "%02d:%02d:00" % (t // 60, t % 60)
                    times.append("%s,%s,%s,%s,%d\n" % (tid, hhmm, hhmm, sid, k + 1))
                    t += hop
        out["trips.txt"] = "".join(trips).encode("utf-8")
        out["stop_times.txt"] = "".join(times).encode("utf-8")
        return out


MASK64 = (1 << 64) - 1


def lattice(seed, ix, iy):
    h = (seed ^ (ix * 0x9E3779B97F4A7C15) ^ (iy * 0xC2B2AE3D27D4EB4F)) & MASK64
    h ^= h >> 31
    h = (h * 0xBF58476D1CE4E5B9) & MASK64
    h ^= h >> 27
    h = (h * 0x94D049BB133111EB) & MASK64
    h ^= h >> 31
    return h & 0xFFFF


class DemTile:
    """An SRTM-like .hgt tile: res x res big-endian int16 heights, rows north to south.
    Heights are integer value noise over global sample coordinates, so tiles join up."""

    __slots__ = ("rows", "_bytes")

    def __init__(self, rows):
        self.rows = rows
        self._bytes = None

    @classmethod
    def create(cls, seed, lat0, lon0, res, relief):
        base, amp = relief
        n = res - 1
        gx0, gy0 = lon0 * n, (lat0 + 1) * n          # global sample coords of the NW corner
        total = [[0] * res for _ in range(res)]
        for cell, weight in ((96, 700), (24, 220), (6, 80)):
            ix0, ix1 = (gx0) // cell, (gx0 + n) // cell + 1
            iy0, iy1 = (gy0 - n) // cell, gy0 // cell + 1
            # interpolate every lattice row along x once, then between rows along y
            lrows = {}
            for iy in range(iy0, iy1 + 1):
                vals = [lattice(seed ^ cell, ix, iy) for ix in range(ix0, ix1 + 1)]
                row = []
                for j in range(res):
                    gx = gx0 + j
                    k, fx = gx // cell - ix0, gx % cell
                    row.append(vals[k] * (cell - fx) + vals[k + 1] * fx)
                lrows[iy] = row
            for i in range(res):
                gy = gy0 - i
                iy, fy = gy // cell, gy % cell
                r0, r1 = lrows[iy], lrows[iy + 1]
                acc = total[i]
                total[i] = [a + ((v0 * (cell - fy) + v1 * fy) // cell) * weight // cell
                            for a, v0, v1 in zip(acc, r0, r1)]
        # total is in [0, 65535 * 1000]; shape it and scale to metres
        rows = []
        for row in total:
            out = []
            for t in row:
                u = t // 1000                           # 0..65535
                h = base + amp * u * u // (65535 * 65535)  # squared: broad valleys, sharp peaks
                out.append(max(-20, min(h, 8800)))
            rows.append(out)
        return cls(rows)

    def carve(self, rng):
        """A local change (quarry / landslide): a bowl lowered in one small area."""
        res = len(self.rows)
        r = max(3, res // 12)
        ci, cj = rng.randrange(r, res - r), rng.randrange(r, res - r)
        depth = rng.randrange(15, 60)
        rows = [list(row) for row in self.rows]
        for i in range(ci - r, ci + r + 1):
            for j in range(cj - r, cj + r + 1):
                d2 = (i - ci) ** 2 + (j - cj) ** 2
                if d2 < r * r:
                    rows[i][j] -= depth * (r * r - d2) // (r * r)
        return DemTile(rows)

    def render(self):
        if self._bytes is None:
            res = len(self.rows)
            self._bytes = b"".join(struct.pack(">%dh" % res, *row) for row in self.rows)
        return self._bytes


def hgt_name(lat, lon):
    return "%s%02d%s%03d.hgt" % ("N" if lat >= 0 else "S", abs(lat), "E" if lon >= 0 else "W", abs(lon))


class TerrainGroup:
    MAX_TILES = 6

    @classmethod
    def create(cls, leaf, node, prof, scale, version):
        g = cls()
        g.leaf = leaf
        g.relief = prof.get("relief", (100, 1500))
        g.res = 1 + math.isqrt(int(round(100 * 100 * scale)))
        g.seed = int.from_bytes(hashlib.sha256(("terrain\x1f" + leaf).encode()).digest()[:8], "big")
        min_lon, min_lat, max_lon, max_lat = node["bbox"]
        lo0, lo1 = math.floor(min_lon), math.floor(max_lon)
        la0, la1 = math.floor(min_lat), math.floor(max_lat)
        clon, clat = lo0 + lo1, la0 + la1
        cells = [(la, lo) for la in range(la0, la1 + 1) for lo in range(lo0, lo1 + 1)]
        cells.sort(key=lambda c: ((2 * c[1] - clon) ** 2 + (2 * c[0] - clat) ** 2, c[0], c[1]))
        g.tiles = {}
        for lat, lon in cells[:cls.MAX_TILES]:
            g.tiles["dem/" + hgt_name(lat, lon)] = DemTile.create(g.seed, lat, lon, g.res, g.relief)
        g.reserve = cells[cls.MAX_TILES:]
        return g

    def evolve(self, version):
        g = TerrainGroup.__new__(TerrainGroup)
        g.__dict__.update(self.__dict__)
        g.tiles = dict(self.tiles)
        rng = rng_for(self.leaf, "terrain", version, "evolve")
        p = rng.choice(sorted(g.tiles))
        g.tiles[p] = g.tiles[p].carve(rng)
        if g.reserve:
            lat, lon = g.reserve[0]
            g.tiles["dem/" + hgt_name(lat, lon)] = DemTile.create(g.seed, lat, lon, g.res, g.relief)
            g.reserve = g.reserve[1:]
        return g

    def render(self):
        return {p: t.render() for p, t in self.tiles.items()}


GROUP_CLASSES = {"base": BaseGroup, "poi": PoiGroup, "transit": TransitGroup, "terrain": TerrainGroup}

# --------------------------------------------------------------------------------------
# Versions
# --------------------------------------------------------------------------------------

def leaves_of(node):
    if "children" not in node:
        return [node]
    return [leaf for child in node["children"] for leaf in leaves_of(child)]


def tree_for(version, tree):
    if version < 3:
        return tree
    tree = json.loads(json.dumps(tree))
    def add(node):
        if node.get("id") == V3_NEW_LEAF["parent"]:
            if not any(c["id"] == V3_NEW_LEAF["node"]["id"] for c in node["children"]):
                node["children"].append(json.loads(json.dumps(V3_NEW_LEAF["node"])))
            return True
        return any(add(c) for c in node.get("children", []))
    if not add(tree["root"]):
        raise SystemExit("gen-sample: parent %r of the v3 leaf not in the tree" % V3_NEW_LEAF["parent"])
    return tree


def changes(leaf, group, version):
    """Whether (leaf, group) changes when going to `version`."""
    if version == 3 and leaf in UNCHANGED_IN_V3:
        return False
    if group == "terrain":
        return version == 3 and leaf in TERRAIN_CHANGED_V3
    if group == "poi" and leaf in POI_UNCHANGED.get(version, ()):
        return False
    return True


def build(scale):
    """Yields (version, tree, {path: bytes}, state) for v1, v2, v3 in turn."""
    with open(TREE_PATH, "rb") as f:
        tree_bytes = f.read()
    tree = json.loads(tree_bytes)
    groups = [g["id"] for g in tree["groups"]]
    state = {}       # (leaf, group) -> model
    for version in VERSIONS:
        vtree = tree_for(version, tree)
        files = {"tree.json": tree_bytes if vtree is tree else (dump_json(vtree) + "\n").encode("utf-8")}
        new_state = {}
        for node in leaves_of(vtree["root"]):
            leaf = node["id"]
            prof = PROFILES.get(leaf, DEFAULT_PROFILE)
            for group in groups:
                since = prof["groups"].get(group)
                if since is None or since > version:
                    continue
                model = state.get((leaf, group))
                if model is None:
                    model = GROUP_CLASSES[group].create(leaf, node, prof, scale, version)
                elif changes(leaf, group, version):
                    model = model.evolve(version)
                new_state[(leaf, group)] = model
                for path, data in model.render().items():
                    files["data/%s/%s/%s" % (leaf, group, path)] = data
        state = new_state
        yield version, vtree, files, new_state


def write_release(root, version, files):
    vdir = os.path.join(root, "v%d" % version)
    if os.path.exists(vdir):
        if not os.path.isfile(os.path.join(vdir, "tree.json")):
            raise SystemExit("gen-sample: %s exists and is not a release folder; not touching it" % vdir)
        shutil.rmtree(vdir)
    for path in sorted(files):
        full = os.path.join(vdir, *path.split("/"))
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(files[path])


def main(argv=None):
    ap = argparse.ArgumentParser(description="Generate the sample world's releases v1..v3.")
    ap.add_argument("--out", required=True, help="output directory (gets v1/, v2/, v3/)")
    ap.add_argument("--scale", type=float, default=1.0, help="multiply data sizes (default 1)")
    args = ap.parse_args(argv)
    if not args.scale > 0:
        ap.error("--scale must be positive")
    os.makedirs(args.out, exist_ok=True)
    for version, vtree, files, st in build(args.scale):
        write_release(args.out, version, files)
        total = sum(len(b) for b in files.values())
        coverage = " ".join("%s=%d" % (g["id"], sum(1 for (_, gg) in st if gg == g["id"]))
                            for g in vtree["groups"])
        print("v%d: %d files, %d bytes (%.2f MB), %d leaves [%s]" % (
            version, len(files), total, total / 1e6, len(leaves_of(vtree["root"])), coverage))


if __name__ == "__main__":
    main()
