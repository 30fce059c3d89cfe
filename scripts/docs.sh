#!/usr/bin/env bash
# Builds the MapLoader library's documentation (the DocC catalog in
# Sources/MapLoader/MapLoader.docc plus the library's public symbols) into .build/docs,
# with the docc of the Swift toolchain; fails on any documentation warning.
#   scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
# The symbol graphs of the built modules, extracted from the default build.
# (`swift package dump-symbol-graph` resolves the dependencies of every trait, the zstd
# package of PackagedZstd among them, which the default build never fetches.)
swift build > /dev/null
bin=$(swift build --show-bin-path)
extracted=.build/docs-extracted
rm -rf "$extracted" && mkdir -p "$extracted"
triple=$(swiftc -print-target-info | python3 -c 'import json, sys; print(json.load(sys.stdin)["target"]["triple"])')
modulemaps=()
for folder in Sources/C*/; do [ -f "$folder/module.modulemap" ] && modulemaps+=(-I "$folder"); done
for map in "$bin"/*.build/module.modulemap $(find .build/checkouts -path '*/include/module.modulemap'); do
  modulemaps+=(-Xcc "-fmodule-map-file=$map")
done
for module in MapLoader $(sed -n 's/^@_exported import [a-z]* \([A-Za-z]*\)\..*/\1/p' Sources/MapLoader/Exports.swift | sort -u); do
  swift symbolgraph-extract -module-name "$module" -target "$triple" -I "$bin/Modules" "${modulemaps[@]}" \
    -minimum-access-level public -output-dir "$extracted"
done
graphs=.build/docs-symbol-graphs
rm -rf "$graphs" .build/docs && mkdir -p "$graphs"
# MapLoader's own symbols plus the types it re-exports symbol by symbol
# (`@_exported import struct MapModel.TrustPolicy` in Sources/MapLoader/Exports.swift):
# an app sees those as part of MapLoader, members and extensions included, and nothing
# else of the lower modules. Dependencies outside the package are not ours to document.
python3 - "$extracted" "$graphs" <<'PY'
import json, re, sys
from collections import defaultdict
source, target = sys.argv[1], sys.argv[2]
exports = defaultdict(set)
for module, name in re.findall(r"^@_exported import (?:struct|enum|class|protocol|actor) (\w+)\.(\w+)",
                               open("Sources/MapLoader/Exports.swift").read(), re.M):
    exports[module].add(name)
graph = json.load(open(f"{source}/MapLoader.symbols.json"))
for module, names in sorted(exports.items()):
    other = json.load(open(f"{source}/{module}.symbols.json"))
    kept = [s for s in other["symbols"] if s["pathComponents"][0] in names]
    ids = {s["identifier"]["precise"] for s in kept}
    graph["symbols"] += kept
    graph["relationships"] += [r for r in other["relationships"] if r["source"] in ids]
print(f"documentation: MapLoader with {sum(map(len, exports.values()))} types re-exported from "
      + ", ".join(f"{m} ({len(n)})" for m, n in sorted(exports.items())))
json.dump(graph, open(f"{target}/MapLoader.symbols.json", "w"))
PY
docc convert Sources/MapLoader/MapLoader.docc --additional-symbol-graph-dir "$graphs" \
  --fallback-display-name MapLoader --fallback-bundle-identifier org.maploader.MapLoader \
  --output-path .build/docs --warnings-as-errors 2>&1 | tee .build/docs.log
# Every public symbol has a doc comment (synthesized Hashable members aside).
python3 - "$graphs/MapLoader.symbols.json" <<'PY'
import json, sys
graph = json.load(open(sys.argv[1]))
public = [s for s in graph["symbols"] if s["accessLevel"] == "public"]
missing = [".".join(s["pathComponents"]) for s in public
           if not s.get("docComment") and s["names"]["title"] not in ("hashValue", "hash(into:)")]
print(f"documentation: {len(public) - len(missing)} of {len(public)} public symbols documented")
for name in missing: print("  undocumented:", name)
sys.exit(1 if missing else 0)
PY
echo "documentation: .build/docs ($(find .build/docs -name '*.json' -path '*documentation*' | wc -l) pages)"
