#!/usr/bin/env bash
# Runs each libFuzzer target for a bounded time: scripts/fuzz.sh [seconds-per-target] [target...]
# Targets: catalog manifest archive patch patchManifest gzip codecs tiles. Crashes land in Tests/Fuzz/<target>/ (the
# regression tests replay that folder); the corpus grows in .build-fuzz/corpus/<target>.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
seconds=${1:-60}; shift || true
targets=("$@"); [ ${#targets[@]} -eq 0 ] && targets=(catalog manifest archive patch patchManifest gzip codecs tiles)
echo "==> building the fuzz executable (-sanitize=fuzzer, own scratch path)"
swift build --scratch-path .build-fuzz --product maploader-fuzz \
  -Xswiftc -sanitize=fuzzer,address -Xswiftc -parse-as-library -Xswiftc -DFUZZING 2>&1 | grep -vE "Cannot export local symbol" | tail -n 3
bin=.build-fuzz/debug/maploader-fuzz
for target in "${targets[@]}"; do
  corpus=.build-fuzz/corpus/$target; crashes=Tests/Fuzz/$target
  mkdir -p "$corpus" "$crashes"
  cp -n Tests/Fuzz/seeds/$target/* "$corpus"/ 2>/dev/null || true
  echo "==> fuzzing $target for ${seconds}s"
  # The patch manifest's decoder may allocate what a small group's limits allow, no more.
  malloc=2048; [ "$target" = patchManifest ] && malloc=64
  FUZZ_TARGET=$target "$bin" "$corpus" -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=2048 -malloc_limit_mb=$malloc \
    -artifact_prefix="$crashes/" -print_final_stats=1 2>&1 | grep -E "stat::number_of_executed_units|stat::average_exec|stat::new_units_added|ERROR|SUMMARY|^Done" || true
done
