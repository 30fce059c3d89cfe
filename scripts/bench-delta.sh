#!/usr/bin/env bash
# Delta benchmark: bytes `maploader update --delta` downloads (measured at the server)
# against zstd --patch-from, xdelta3 and bsdiff on the same file pairs, and apply time and
# peak memory against `zstd -d --patch-from`. Data: the sample world (v1→v2→v3) and real
# geodata releases (timezonefinder's timezone polygons, fetched from PyPI on first run).
#   scripts/bench-delta.sh [--quick]    (--quick: sample world only, debug build)
#   scripts/bench-delta.sh --large [--size-mb N]   one file over 2 GiB (segmented patches)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --bench
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }
if [ "${1:-}" = "--large" ]; then
  shift
  swift build -c release --product maploader -q
  exec python3 scripts/bench_large.py "$@"
fi
exec python3 scripts/bench_delta.py "$@"
