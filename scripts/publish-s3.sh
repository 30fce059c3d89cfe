#!/usr/bin/env bash
# Uploads a site made by `maploader publish` to S3-compatible object storage, in an order
# that is safe behind a CDN: content-addressed blobs and per-version manifests first
# and catalog deltas (immutable: cached for a year), then catalog.json.sig, the timestamp.json
# that pins the catalog, and catalog.json last (no-cache).
# A client polling during the upload sees the old catalog, whose files are all there, or
# the new one, whose files are all there already. Nothing is deleted (see the README on
# pruning old versions).
#   scripts/publish-s3.sh SITE s3://BUCKET/PREFIX [--endpoint-url URL] [--public] [--delete]
# The AWS CLI takes its credentials and region as usual (environment, profile);
# --endpoint-url (or $AWS_ENDPOINT_URL) names any S3-compatible service (MinIO, moto, R2…);
# --public makes the objects public-read, for a bucket served straight over HTTP;
# --delete then removes blobs and manifests that `maploader prune` deleted locally
# (after the new catalog is up, so no client is left pointing at them).
set -euo pipefail
usage() { echo "usage: $0 SITE s3://BUCKET/PREFIX [--endpoint-url URL] [--public] [--delete]" >&2; exit 64; }
[ $# -ge 2 ] || usage
site=${1%/}; target=${2%/}; shift 2
[ -f "$site/catalog.json" ] || { echo "error: $site has no catalog.json: publish the site first (maploader publish)" >&2; exit 64; }
case "$target" in s3://*) ;; *) echo "error: '$target' is not an s3:// URL" >&2; exit 64 ;; esac
aws=(aws)
acl=()
delete=false
while [ $# -gt 0 ]; do
  case "$1" in
    --endpoint-url) aws+=(--endpoint-url "$2"); shift 2 ;;
    --public) acl=(--acl public-read); shift ;;
    --delete) delete=true; shift ;;
    *) usage ;;
  esac
done
[ -n "${AWS_ENDPOINT_URL:-}" ] && aws+=(--endpoint-url "$AWS_ENDPOINT_URL")
immutable="public, max-age=31536000, immutable"
# 1. Immutable content: blobs (named by their SHA-256) and each version's manifest.
for folder in blobs versions deltas; do
  [ -d "$site/$folder" ] || continue
  "${aws[@]}" s3 sync "$site/$folder" "$target/$folder" --only-show-errors --size-only \
    --cache-control "$immutable" "${acl[@]}"
done
# 2. The catalog and its signature are two objects, so a client reading between their
#    uploads would see a torn pair. First a signature file holding the signatures of both
#    the catalog online and the new one (any one valid signature suffices), then the new
#    catalog, then the new signature alone: every pair a client can read verifies.
put() { "${aws[@]}" s3 cp "$1" "$target/$2" --only-show-errors --cache-control "no-cache" \
          --content-type application/json "${acl[@]}"; }
if [ -f "$site/catalog.json.sig" ]; then
  online=$(mktemp); both=$(mktemp)
  trap 'rm -f "$online" "$both"' EXIT
  "${aws[@]}" s3 cp "$target/catalog.json.sig" "$online" --only-show-errors 2>/dev/null || : > "$online"
  python3 - "$site/catalog.json.sig" "$online" "$both" <<'PY'
import json, sys
new = json.load(open(sys.argv[1]))
try:
    old = json.load(open(sys.argv[2]))["signatures"]
except Exception:
    old = []
new["signatures"] += [entry for entry in old if entry not in new["signatures"]]
json.dump(new, open(sys.argv[3], "w"))
PY
  put "$both" catalog.json.sig
  # The timestamp pins the new catalog, which a device that kept the old one reads as a
  # delta (uploaded above). It goes up before the catalog, so it is never behind it if the
  # upload stops here; a device that reads it ahead of the catalog passes it over.
  if [ -f "$site/timestamp.json" ]; then put "$site/timestamp.json" timestamp.json; fi
  put "$site/catalog.json" catalog.json
  put "$site/catalog.json.sig" catalog.json.sig
else
  put "$site/catalog.json" catalog.json
fi
# 3. With --delete: what prune removed locally goes from the bucket too, now that the
#    catalog no longer names it.
if $delete; then
  for folder in blobs versions deltas; do
    [ -d "$site/$folder" ] || continue
    "${aws[@]}" s3 sync "$site/$folder" "$target/$folder" --only-show-errors --size-only --delete \
      --cache-control "$immutable" "${acl[@]}"
  done
fi
echo "uploaded $site to $target (blobs and manifests immutable, catalog last)"
