#!/usr/bin/env bash
# Builds the MapLoader library's documentation (the DocC catalog in
# Sources/MapLoader/MapLoader.docc plus the library's public symbols) into .build/docs,
# with the docc of the Swift toolchain; fails on any documentation warning.
#   scripts/docs.sh
set -euo pipefail
cd "$(dirname "$0")/.."
swift package dump-symbol-graph --minimum-access-level public > /dev/null
graphs=.build/docs-symbol-graphs
rm -rf "$graphs" .build/docs && mkdir -p "$graphs"
# Only MapLoader's own symbols (its dependencies' graphs are not ours to document).
cp "$(swift build --show-bin-path)/../symbolgraph"/MapLoader.symbols.json "$graphs/"
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
