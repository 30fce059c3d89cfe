#!/usr/bin/env bash
# Transport benchmark (issue 41): installs one package of incompressible files through each
# of MapLoader's HTTP transports (libcurl, Foundation's URLSession) from `maploader serve`
# on 127.0.0.1, beside `curl | tar --zstd -x` of the same files as one .tar.zst from the
# same server, and prints wall time and peak resident memory of each, best of --runs.
# Figures, not a test: nothing here fails on a time.
#   scripts/bench-transport.sh [--megabytes 256] [--runs 3] [--binary PATH]
set -euo pipefail
cd "$(dirname "$0")/.."
megabytes=256
runs=3
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --megabytes) megabytes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --binary) binary=$2; shift 2 ;;
    *) echo "usage: scripts/bench-transport.sh [--megabytes N] [--runs N] [--binary PATH]" >&2; exit 64 ;;
  esac
done
if [ -z "$binary" ]; then
  swift build -c release --product maploader 2>&1 | tail -n 1
  binary="$(swift build -c release --show-bin-path)/maploader"
fi
work=$(mktemp -d /tmp/maploader-bench-transport.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT

# One package, "big", with a required group of eight files of random bytes.
mkdir -p "$work/release/data/big/base"
cat > "$work/release/tree.json" <<'EOF'
{"groups": [{"id": "base", "title": "Base map", "required": true, "default": true}],
 "root": {"id": "world", "title": "World", "children": [{"id": "big", "title": "Big"}]}}
EOF
for n in 1 2 3 4 5 6 7 8; do
  head -c $((megabytes * 1048576 / 8)) /dev/urandom > "$work/release/data/big/base/part-$n.bin"
done
"$binary" publish "$work/release" --site "$work/site" --version v1 > /dev/null 2>&1
tar --zstd -cf "$work/site/big.tar.zst" -C "$work/release/data/big" base
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
"$binary" serve "$work/site" --host 127.0.0.1 --port "$port" --quiet > /dev/null 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/catalog.json" > /dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port"

# Best wall time and its peak RSS over the runs of a command (run from a fresh folder each time).
measure() {
  local best="" best_rss=""
  for _ in $(seq "$runs"); do
    rm -rf "$work/out" && mkdir -p "$work/out"
    /usr/bin/time -f "%e %M" -o "$work/time" "$@" > /dev/null 2> "$work/err" || { cat "$work/err" >&2; exit 1; }
    read -r seconds rss < "$work/time"
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(0 if $seconds < $best else 1)"; then best=$seconds; best_rss=$rss; fi
  done
  echo "$best $best_rss"
}

echo "install of one ${megabytes} MiB package (8 files of random bytes) from maploader serve on 127.0.0.1, best of $runs:"
printf "  %-34s %9s %9s %12s\n" "client" "seconds" "MB/s" "peak RSS"
row() {
  local name=$1 seconds=$2 rss=$3
  printf "  %-34s %9s %9s %9s MB\n" "$name" "$seconds" "$(python3 -c "print(round($megabytes * 1.048576 / max($seconds, 0.001), 1))")" "$((rss / 1024))"
}
export MAPLOADER_ALLOW_UNSIGNED=1
for transport in curl foundation; do
  read -r seconds rss < <(measure "$binary" install big --server "$url" --data-dir "$work/out/data" --transport "$transport")
  row "maploader --transport $transport" "$seconds" "$rss"
done
read -r seconds rss < <(measure sh -c "curl -sf '$url/big.tar.zst' | tar --zstd -x -C '$work/out'")
row "curl | tar --zstd -x" "$seconds" "$rss"
echo "(maploader also verifies every file's SHA-256 and commits a generation with fsync.)"
