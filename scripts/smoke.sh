#!/usr/bin/env bash
# Smoke test: drives the real `maploader` CLI against `maploader serve` on 127.0.0.1
# with the sample world: publish, list, install, groups, locate, bad input, check-update,
# update --delta, verify, uninstall. Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
bin="$(swift build --show-bin-path)/maploader"
work=$(mktemp -d /tmp/maploader-smoke.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
source scripts/lib/checks.sh

python3 scripts/gen-sample.py --out "$work/releases" > /dev/null
check "keygen" 0 "$bin" keygen "$work/publisher.key"
key=$(cat "$work/out")
check "keygen never overwrites (usage error)" 64 "$bin" keygen "$work/publisher.key"
check "publish v1 (signed)" 0 "$bin" publish "$work/releases/v1" --site "$work/site" --version v1 --key "$work/publisher.key"
"$bin" serve "$work/site" --host 127.0.0.1 --port "$port" > "$work/serve.log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; rm -rf "$work"' EXIT
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/catalog.json" > /dev/null && break; sleep 0.1; done
export MAPLOADER_SERVER="http://127.0.0.1:$port" MAPLOADER_DATA_DIR="$work/data"
check "no trusted key exits 7" 7 "$bin" list --data-dir "$work/untrusting"
contains "the refusal says what to do" "--trust-key" "$work/err"
check "a wrong key exits 7" 7 "$bin" list --data-dir "$work/untrusting" --trust-key "$(head -c 32 /dev/urandom | base64)"
export MAPLOADER_TRUST_KEY="$key"

check "serve answers Range with 206" 0 sh -c "curl -s -o /dev/null -w '%{http_code}' -r 0-9 http://127.0.0.1:$port/catalog.json | grep -qx 206"
check "list --json" 0 "$bin" list --json
contains "list shows de-berlin notInstalled" '"notInstalled"' "$work/out"
check "install de-berlin" 0 "$bin" install de-berlin
check "installed files are byte-identical" 0 diff -r "$work/releases/v1/data/de-berlin/base" "$work/data/current/de-berlin/base"
check "list --installed" 0 "$bin" list --installed
contains "de-berlin is installed" "de-berlin .*installed" "$work/out"
check "locate Berlin" 0 "$bin" locate 52.52 13.40 --json
contains "locate finds de-berlin" '"id" : "de-berlin"' "$work/out"
check "info de-berlin" 0 "$bin" info de-berlin
check "install unknown package exits 4" 4 "$bin" install atlantis
contains "unknown package error names it" "unknown package 'atlantis'" "$work/err"
check "deselect required group exits 4" 4 "$bin" groups deselect base
check "select transit" 0 "$bin" groups select transit
check "groups --json" 0 "$bin" groups show --json
check "install germany (inner node)" 0 "$bin" install germany
check "verify" 0 "$bin" verify
check "check-update when current exits 0" 0 "$bin" check-update
check "publish v2" 0 "$bin" publish "$work/releases/v2" --site "$work/site" --version v2 --key "$work/publisher.key"
check "check-update exits 3" 3 "$bin" check-update
check "update --delta" 0 "$bin" update --delta --json
check "updated files match v2" 0 diff -r "$work/releases/v2/data/de-berlin/base" "$work/data/current/de-berlin/base"
check "verify after update" 0 "$bin" verify
echo corrupted >> "$work/data/current/de-berlin/base/meta.json"
check "verify finds a changed file (exit 6)" 6 "$bin" verify
check "uninstall germany" 0 "$bin" uninstall germany
check "uninstalled folder is gone" 1 test -e "$work/data/current/de-berlin"
# What owners use every day (issue 12), against the same server.
own="$work/own"
check "install --dry-run changes nothing" 0 "$bin" install --dry-run europe --data-dir "$own"
contains "the dry run shows bytes on disk" "ON DISK" "$work/out"
check "nothing was installed by the dry run" 1 test -e "$own/current"
check "install de-berlin netherlands" 0 "$bin" install de-berlin netherlands --data-dir "$own" --limit-rate 2MB
check "du --json" 0 "$bin" du --json --data-dir "$own"
contains "du lists netherlands" '"id" : "netherlands"' "$work/out"
check "tag de-berlin" 0 "$bin" tag de-berlin trip=2026-summer --data-dir "$own"
check "info shows the tag" 0 "$bin" info de-berlin --data-dir "$own"
contains "the tag is there" "trip=2026-summer" "$work/out"
check "coverage --geojson --svg" 0 "$bin" coverage --geojson "$work/maps.geojson" --svg "$work/maps.svg" --data-dir "$own"
check "the GeoJSON parses, one feature per leaf" 0 python3 -c "import json,sys; d=json.load(open('$work/maps.geojson')); sys.exit(0 if d['type']=='FeatureCollection' and len(d['features'])>10 else 1)"
check "the SVG is well-formed XML" 0 python3 -c "import xml.dom.minidom as m; m.parse('$work/maps.svg')"
check "update --if-available --quiet says nothing when current" 0 sh -c "test -z \"\$('$bin' update --if-available --quiet --data-dir '$own')\""
check "config set quota 10kB" 0 "$bin" config set quota 10kB --data-dir "$own"
check "an install past the quota exits 8" 8 "$bin" install switzerland --data-dir "$own"
contains "the refusal names the quota" "quota of 10.0 kB" "$work/err"
check "config unset quota" 0 "$bin" config unset quota --data-dir "$own"
check "export de-berlin" 0 "$bin" export de-berlin --to "$work/usb" --data-dir "$own"
check "install from the export, no server" 0 "$bin" install de-berlin --server "$work/usb" --data-dir "$work/other-device"
check "exported files are byte-identical" 0 diff -r "$own/current/de-berlin" "$work/other-device/current/de-berlin"
check "gc" 0 "$bin" gc --data-dir "$own"
contains "gc says what it freed" "freed" "$work/out"
check "uninstall --all" 0 "$bin" uninstall --all --data-dir "$own"
check "nothing is left installed" 0 sh -c "'$bin' du --data-dir '$own' | grep -q 'nothing installed'"
port2=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$bin" serve "$work/site" --port "$port2" --drop-after 20000 --drop-count 4 --error-rate 0.2 --seed 3 > "$work/faulty.log" 2>&1 &
faulty=$!
for _ in $(seq 100); do curl -sf -o /dev/null "http://127.0.0.1:$port2/catalog.json" && break; sleep 0.1; done
check "install through drops and 503s" 0 "$bin" install de-bavaria us-california --server "http://127.0.0.1:$port2" --data-dir "$work/faulty-data"
contains "the faulty server dropped connections" "dropped" "$work/faulty.log"
contains "the faulty server injected errors" "injected-error" "$work/faulty.log"
check "files are intact after faults" 0 diff -r "$work/releases/v2/data/us-california/base" "$work/faulty-data/current/us-california/base"
kill $faulty 2>/dev/null
check "no server exits 5" 5 env MAPLOADER_SERVER=http://127.0.0.1:9 "$bin" check-update
check "installed maps list offline" 0 env MAPLOADER_SERVER=http://127.0.0.1:9 "$bin" list --installed --data-dir "$work/faulty-data"
contains "the offline listing says so" "offline: showing what is installed" "$work/out"
cp "$work/site/catalog.json" "$work/catalog.v2"
echo ' ' >> "$work/site/catalog.json"
check "a tampered catalog exits 7" 7 "$bin" list --data-dir "$work/tamper-data"
cp "$work/catalog.v2" "$work/site/catalog.json"
cp "$work/site/timestamp.json" "$work/timestamp.v2"
sed -i '1s/"serial":/"serial": /' "$work/site/timestamp.json"
check "a tampered timestamp is passed over (the catalog's signature decides)" 0 "$bin" list --data-dir "$work/tamper-data"
echo ' ' >> "$work/site/catalog.json"
check "a tampered catalog beside a tampered timestamp exits 7" 7 "$bin" list
cp "$work/catalog.v2" "$work/site/catalog.json"
cp "$work/timestamp.v2" "$work/site/timestamp.json"

echo "smoke: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
