#!/usr/bin/env bash
# Disk benchmark: the extra space a delta update of one large map file changed in ten
# places takes, measured on an XFS image (statvfs before and after, a reader holding the
# old version as at the update's worst moment), with reflink (clone and patch) and without
# (a whole second file, as before clones), against what `--dry-run` predicts.
# Needs root (loop mounts) and xfsprogs.
#   scripts/bench-disk.sh [MB ...]     (default: 24 96 500)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
[ "$(id -u)" = 0 ] || { echo "bench-disk: needs root to mount XFS images on loop devices"; exit 2; }
sizes=("$@"); [ ${#sizes[@]} -eq 0 ] && sizes=(24 96 500)
swift build --build-tests -q
printf '%-8s %-8s %14s %14s %9s %8s\n' "file" "reflink" "predicted" "took" "of file" "error"
for mb in "${sizes[@]}"; do
  for reflink in 0 1; do
    line=$(MAPLOADER_CLONE_MB=$mb MAPLOADER_CLONE_REFLINK=$reflink swift test --skip-build --disable-xctest \
      --filter CloneTests 2>&1 | grep '^clone:' || true)
    [ -n "$line" ] || { echo "bench-disk: the XFS test did not run (root, loop devices, mkfs.xfs?)"; exit 1; }
    predicted=$(sed -E 's/.*predicted ([0-9]+) B.*/\1/' <<<"$line")
    took=$(sed -E 's/.*took ([0-9]+) B.*/\1/' <<<"$line")
    python3 - "$mb" "$reflink" "$predicted" "$took" <<'PY'
import sys
mb, reflink, predicted, took = sys.argv[1], sys.argv[2] == "1", int(sys.argv[3]), int(sys.argv[4])
size = int(mb) << 20
print(f"{mb + ' MB':<8} {'on' if reflink else 'off':<8} {predicted / 1e6:11.2f} MB {took / 1e6:11.2f} MB {took * 100 / size:8.2f}% {(predicted - took) * 100 / took:+7.1f}%")
PY
  done
done
