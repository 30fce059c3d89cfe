#!/usr/bin/env bash
# Delta benchmark: bytes `maploader update --delta` downloads (measured at the server)
# against zstd --patch-from, xdelta3, bsdiff and HDiffPatch on the same file pairs, and apply time and
# peak memory against `zstd -d --patch-from`. Data: the sample world (v1→v2→v3) and real
# geodata releases (timezonefinder's timezone polygons, fetched from PyPI on first run).
#   scripts/bench-delta.sh [--quick]    (--quick: sample world only, debug build)
#   scripts/bench-delta.sh --large [--size-mb N]   one file over 2 GiB (segmented patches)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --bench
command -v /usr/bin/time >/dev/null || { apt-get install -y -qq time >/dev/null; }
# HDiffPatch, a peer column (PyPI binds hdiffz; no Debian package).
python3 -c "import hdiffpatch" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check hdiffpatch 2>&1 | grep -v "^WARNING: Running pip as" || true
if [ "${1:-}" = "--large" ]; then
  shift
  swift build -c release --product maploader -q
  exec python3 scripts/bench_large.py "$@"
fi
exec python3 scripts/bench_delta.py "$@"
