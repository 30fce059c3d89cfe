#!/usr/bin/env bash
# S3 test: a site in real S3-compatible object storage on loopback (moto's server mode),
# uploaded with scripts/publish-s3.sh and installed and updated by the real CLI straight
# from the bucket's HTTP endpoint. Checks the objects' cache headers, that a client
# polling during an upload never sees a catalog naming missing files, Range resume from
# the bucket, and update --delta. Prints "s3: N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
command -v moto_server > /dev/null && command -v aws > /dev/null || pip install -q "moto[server]" awscli 2>&1 | grep -v WARNING
bin="$(swift build --show-bin-path)/maploader"
work=$(mktemp -d /tmp/maploader-s3.XXXXXX)
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
export AWS_ACCESS_KEY_ID=test AWS_SECRET_ACCESS_KEY=test AWS_DEFAULT_REGION=us-east-1
endpoint="http://127.0.0.1:$port"
moto_server -H 127.0.0.1 -p "$port" > "$work/moto.log" 2>&1 &
moto=$!
trap 'kill $moto $poller 2>/dev/null; [ -n "${KEEP:-}" ] || rm -rf "$work"' EXIT
poller=
for _ in $(seq 100); do curl -s -o /dev/null "$endpoint" && break; sleep 0.1; done
source scripts/lib/checks.sh

python3 scripts/gen-sample.py --out "$work/releases" > /dev/null
"$bin" keygen "$work/publisher.key" > "$work/publisher.pub"
export MAPLOADER_TRUST_KEY=$(cat "$work/publisher.pub") MAPLOADER_SERVER="$endpoint/maps/world" MAPLOADER_DATA_DIR="$work/data"
check "create the bucket" 0 aws --endpoint-url "$endpoint" s3 mb s3://maps
check "publish v1 locally" 0 "$bin" publish "$work/releases/v1" --site "$work/site" --version v1 --key "$work/publisher.key"
check "upload v1 (publish-s3.sh)" 0 scripts/publish-s3.sh "$work/site" s3://maps/world --endpoint-url "$endpoint" --public
check "blobs are immutable" 0 sh -c "aws --endpoint-url $endpoint s3api head-object --bucket maps --key \"\$(aws --endpoint-url $endpoint s3api list-objects-v2 --bucket maps --prefix world/blobs/ --query 'Contents[0].Key' --output text)\" > '$work/head.json'"
contains "blob Cache-Control" '"CacheControl": "public, max-age=31536000, immutable"' "$work/head.json"
check "catalog is no-cache" 0 sh -c "aws --endpoint-url $endpoint s3api head-object --bucket maps --key world/catalog.json > '$work/head.json'"
contains "catalog Cache-Control" '"CacheControl": "no-cache"' "$work/head.json"
check "timestamp is no-cache" 0 sh -c "aws --endpoint-url $endpoint s3api head-object --bucket maps --key world/timestamp.json > '$work/head.json'"
contains "timestamp Cache-Control" '"CacheControl": "no-cache"' "$work/head.json"
check "the bucket answers Range with 206" 0 sh -c "curl -s -o /dev/null -w '%{http_code}' -r 0-9 $endpoint/maps/world/catalog.json | grep -qx 206"
check "install de-berlin germany from the bucket" 0 "$bin" install de-berlin germany
check "installed files are byte-identical" 0 diff -r "$work/releases/v1/data/de-berlin/base" "$work/data/current/de-berlin/base"

# A client polls while v2 is uploaded: every catalog it sees must name files that exist.
check "publish v2 locally" 0 "$bin" publish "$work/releases/v2" --site "$work/site" --version v2 --key "$work/publisher.key"
( while [ ! -e "$work/stop" ]; do
    "$bin" check-update --json --data-dir "$work/poller" > /dev/null 2>> "$work/poll.err"; code=$?
    [ $code -eq 0 ] || [ $code -eq 3 ] || echo "poll exit $code" >> "$work/poll.bad"
  done ) &
poller=$!
check "upload v2 while a client polls" 0 scripts/publish-s3.sh "$work/site" s3://maps/world --endpoint-url "$endpoint" --public
sleep 1; touch "$work/stop"; wait $poller 2>/dev/null; poller=
check "the polling client never saw a catalog naming missing files" 1 test -s "$work/poll.bad"
check "check-update sees v2 (exit 3)" 3 "$bin" check-update
check "update --delta from the bucket" 0 "$bin" update --delta --json
contains "patches were used" '"method" : "delta"' "$work/out"
check "updated files match v2" 0 diff -r "$work/releases/v2/data/de-berlin/base" "$work/data/current/de-berlin/base"
check "verify" 0 "$bin" verify
check "a fresh install of the whole world from the bucket" 0 "$bin" install world --data-dir "$work/fresh"

# Pruning: v1 leaves the catalog and its files leave the bucket; v2 clients still update.
check "prune --keep 1 --delete" 0 "$bin" prune "$work/site" --keep 1 --delete --grace-hours 0 --key "$work/publisher.key"
check "upload the pruned site with --delete" 0 scripts/publish-s3.sh "$work/site" s3://maps/world --endpoint-url "$endpoint" --public --delete
check "the bucket holds no more objects than the pruned site" 0 sh -c "test \$(aws --endpoint-url $endpoint s3 ls s3://maps/world/ --recursive | grep -c -e /blobs/ -e /versions/) -eq \$(find '$work/site/blobs' '$work/site/versions' -type f | wc -l)"
check "a fresh install after pruning" 0 "$bin" install world --data-dir "$work/fresh-after-prune"

# Sharded publishing through the bucket: a plan, two workers that each read the site from
# the bucket into a folder of their own and upload what their tasks wrote, then assembly
# from the bucket. The result must be byte-identical to one machine's publish of v3.
export SOURCE_DATE_EPOCH=$(date +%s)   # one publication time for both publishes
s3() { aws --endpoint-url "$endpoint" s3 "$@" --only-show-errors; }
cp -r "$work/site" "$work/reference"
check "one machine publishes v3 (reference)" 0 "$bin" publish "$work/releases/v3" --site "$work/reference" --version v3 --key "$work/publisher.key"
check "plan v3 against the site" 0 "$bin" shard plan "$work/releases/v3" --site "$work/site" --version v3 -o "$work/plan.json"
for worker in 0 1; do
  check "worker $worker reads the site from the bucket" 0 s3 sync s3://maps/world "$work/worker$worker"
  check "worker $worker runs its tasks (own scratch)" 0 "$bin" shard run "$work/plan.json" --worker $worker --of 2 --site "$work/worker$worker" --scratch "$work/scratch$worker"
  check "worker $worker uploads its blobs and results" 0 sh -c "aws --endpoint-url $endpoint s3 sync '$work/worker$worker/blobs' s3://maps/world/blobs --only-show-errors && aws --endpoint-url $endpoint s3 sync '$work/worker$worker/.publish' s3://maps/world/.publish --only-show-errors"
done
check "assembly reads the bucket" 0 s3 sync s3://maps/world "$work/assembly"
check "assemble v3" 0 "$bin" shard assemble "$work/plan.json" --site "$work/assembly" --key "$work/publisher.key"
# (object stores keep no empty folders: files and their bytes are compared)
check "the sharded site is byte-identical to one machine's" 0 sh -c "test \"\$(cd '$work/reference' && find . -type f ! -name .prune.json -exec sha256sum {} + | sort -k 2)\" = \"\$(cd '$work/assembly' && find . -type f -exec sha256sum {} + | sort -k 2)\""
check "upload v3 (publish-s3.sh)" 0 scripts/publish-s3.sh "$work/assembly" s3://maps/world --endpoint-url "$endpoint" --public
check "remove the staging objects" 0 s3 rm s3://maps/world/.publish --recursive
check "update to v3 from the bucket" 0 "$bin" update --delta
check "updated files match v3" 0 diff -r "$work/releases/v3/data/de-berlin/base" "$work/data/current/de-berlin/base"

echo "s3: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
