#!/usr/bin/env bash
# Catalog benchmark (issue 11): publishes a generated 10,000-leaf tree with the release
# build, serves it with nginx on loopback, and prints publish, list, info, locate,
# check-update and install figures and metadata bytes per update, with targets beside them.
#   scripts/bench.sh [--countries 100] [--regions 100] [--runs 5] [--jobs N]
# Figures, not a test: nothing here fails on a missed target.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --bench
command -v nginx >/dev/null || { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq nginx >/dev/null 2>&1 || echo "nginx unavailable: serving with maploader serve" >&2; }
swift build -c release --product maploader 2>&1 | tail -n 1
exec python3 scripts/bench_catalog.py "$@"
