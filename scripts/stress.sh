#!/usr/bin/env bash
# Stress test of one data directory: concurrent maploader processes with random SIGKILLs
# while the site moves v1 -> v2 -> v3 (see scripts/stress.py --help).
#   scripts/stress.sh                 # 60 s, 4 workers
#   scripts/stress.sh --seconds 600   # longer
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .build/debug/maploader ] || swift build --product maploader
exec python3 scripts/stress.py "$@"
