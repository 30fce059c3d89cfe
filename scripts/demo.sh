#!/usr/bin/env bash
# The main job on a built-in default: generate the sample world's releases, publish v1,
# serve the site on 127.0.0.1, install a package, list the tree; then publish v2 and
# update the installed package with patches.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
echo "==> building maploader"
swift build --product maploader -q
bin="$(swift build --show-bin-path)/maploader"
work="${DEMO_DIR:-$(mktemp -d /tmp/maploader-demo.XXXXXX)}"
port="${DEMO_PORT:-0}"   # 0: any free port
echo "==> generating the sample releases into $work/releases"
python3 scripts/gen-sample.py --out "$work/releases"
echo "==> making a publisher key and publishing v1 (signed)"
rm -f "$work/publisher.key"
key=$("$bin" keygen "$work/publisher.key")
"$bin" publish "$work/releases/v1" --site "$work/site" --version v1 --key "$work/publisher.key"
"$bin" serve "$work/site" --port "$port" --json > "$work/serve.json" 2> "$work/serve.log" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q '"url"' "$work/serve.json" 2>/dev/null && break; kill -0 $server 2>/dev/null || break; sleep 0.1; done
if ! kill -0 $server 2>/dev/null; then
  echo "demo: maploader serve did not start:" >&2; cat "$work/serve.log" >&2; exit 1
fi
port=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["port"])' "$work/serve.json")
echo "==> serving $work/site at http://127.0.0.1:$port/"
export MAPLOADER_SERVER="http://127.0.0.1:$port" MAPLOADER_DATA_DIR="$work/data" MAPLOADER_TRUST_KEY="$key"
echo "==> maploader install de-berlin"
"$bin" install de-berlin
"$bin" list
echo "==> maploader locate 52.52 13.40"
"$bin" locate 52.52 13.40
echo "==> publishing v2 and updating with patches"
"$bin" publish "$work/releases/v2" --site "$work/site" --version v2 --key "$work/publisher.key"
"$bin" check-update || [ $? -eq 3 ]
"$bin" update --delta
"$bin" verify
echo "==> installed files: $work/data/current/de-berlin/"
ls "$work/data/current/de-berlin"
