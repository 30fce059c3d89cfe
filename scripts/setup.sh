#!/usr/bin/env bash
# Installs the system packages MapLoader builds and tests with, if any is missing.
# Debian/Ubuntu: libarchive, zlib, zstd, libdivsufsort and libcurl headers; the zstd, xdelta3 and bsdiff tools
# for benchmarks; curl and python3 for scripts; GNU parallel for the README's sharded publish;
# netpbm (libpng's pnmtopng), to write PNGs as real encoders do, and xfsprogs and
# btrfs-progs (copy-on-write file systems on loop devices), and exfatprogs and exfat-fuse (an
# exFAT card without links, mounted through FUSE on a loop device), for the tests.
set -euo pipefail
packages=(libarchive-dev zlib1g-dev libzstd-dev liblzma-dev libdivsufsort-dev libcurl4-openssl-dev pkg-config zstd curl python3 parallel netpbm xfsprogs btrfs-progs exfatprogs exfat-fuse)
[ "${1:-}" = "--bench" ] && packages+=(time)
[ "${1:-}" = "--bench" ] && packages+=(xdelta3 bsdiff tilemaker osmium-tool sqlite3)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "==> installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}" >/dev/null
fi
# Python packages the tests write real files with: Pillow (PNG) and pmtiles (the reference
# PMTiles writer).
python3 -c "import PIL, pmtiles" 2>/dev/null || python3 -m pip install -q --disable-pip-version-check pillow pmtiles 2>&1 | grep -v "^WARNING: Running pip as" || true
