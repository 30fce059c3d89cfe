#!/usr/bin/env python3
"""Generate a large release folder for MapLoader: a world of COUNTRIES x REGIONS leaves.

Usage:  python3 scripts/gen-catalog.py --out DIR [--countries 100] [--regions 100]
                                       [--changed K] [--continents 5]

Writes the release folder DIR (tree.json + data/<leaf>/base/<leaf>.txt): a root `world`,
CONTINENTS continents, COUNTRIES countries spread over them, and REGIONS regions (leaves)
per country, each with a bounding box and one tiny file in the required group `base`.
The default is the 10,000-leaf catalog of issue 11 (100 countries x 100 regions).

--changed K changes the file of K leaves (spread evenly over the tree) as a second
release would: generate v1 with --changed 0 and v2 with --changed 1 to time a publish of a
new version where one leaf changed. Output is deterministic. Standard library only.
"""

import argparse
import json
import os
import shutil


def leaf_ids(countries, regions):
    return [f"c{c:03d}-r{r:03d}" for c in range(countries) for r in range(regions)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", required=True)
    parser.add_argument("--countries", type=int, default=100)
    parser.add_argument("--regions", type=int, default=100)
    parser.add_argument("--continents", type=int, default=5)
    parser.add_argument("--changed", type=int, default=0, help="leaves whose file differs from the base release")
    args = parser.parse_args()

    if os.path.exists(args.out):
        shutil.rmtree(args.out)
    data = os.path.join(args.out, "data")
    leaves = leaf_ids(args.countries, args.regions)
    step = max(1, len(leaves) // args.changed) if args.changed else 0
    changed = set(leaves[i * step] for i in range(args.changed)) if args.changed else set()

    continents = []
    for k in range(args.continents):
        continents.append({"id": f"continent-{k}", "title": f"Continent {k}", "children": []})
    for c in range(args.countries):
        # Countries tile the globe in a grid; regions tile their country.
        lon0, lat0 = -180 + (c % 20) * 18, -80 + (c // 20) * 30
        regions = []
        for r in range(args.regions):
            leaf = f"c{c:03d}-r{r:03d}"
            x, y = lon0 + (r % 10) * 1.8, lat0 + (r // 10) * 1.5
            regions.append({"id": leaf, "title": f"Region {r} of country {c}",
                            "bbox": [round(x, 3), round(y, 3), round(x + 1.8, 3), round(y + 1.5, 3)]})
            folder = os.path.join(data, leaf, "base")
            os.makedirs(folder)
            body = f"region {leaf}\npopulation {(c * 7919 + r * 104729) % 1000000}\n"
            if leaf in changed:
                body += "edited in the next release\n"
            with open(os.path.join(folder, f"{leaf}.txt"), "w") as f:
                f.write(body)
        country = {"id": f"c{c:03d}", "title": f"Country {c}",
                   "bbox": [lon0, lat0, lon0 + 18, lat0 + 15], "children": regions}
        continents[c % args.continents]["children"].append(country)
    tree = {"groups": [{"id": "base", "title": "Base map", "required": True, "default": True}],
            "root": {"id": "world", "title": "World", "children": [k for k in continents if k["children"]]}}
    with open(os.path.join(args.out, "tree.json"), "w") as f:
        json.dump(tree, f, separators=(",", ":"))
    print(f"{args.out}: {len(leaves)} leaves in {args.countries} countries, {len(changed)} changed")


if __name__ == "__main__":
    main()
