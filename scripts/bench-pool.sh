#!/usr/bin/env bash
# Benchmark: a task sleeping 10 ms in a loop measures how late it wakes while a large
# package installs (hashing, extraction and fsync run on MapLoader's own threads, so the
# cooperative pool should stay free). Prints figures; asserts nothing.
#   scripts/bench-pool.sh [megabytes]    (default 256)
set -euo pipefail
cd "$(dirname "$0")/.."
swift build -c release --product maploader-pool-bench -q
"$(swift build -c release --show-bin-path)/maploader-pool-bench" "${1:-256}"
