#!/usr/bin/env bash
# Builds MapLoader the way an app build gets its C libraries (issue 42): zstd from the zstd
# repository's own Swift package (the trait PackagedZstd) rather than the system's libzstd
# found with pkg-config. The default build and the test command do not use this.
#
#   scripts/app-build.sh ZSTD_REPO           builds the library (the MapLoader target and below)
#   scripts/app-build.sh ZSTD_REPO --test    also builds the tests and runs the codec tests
#
# ZSTD_REPO is a local copy of https://github.com/facebook/zstd (a git directory, bare or
# not; no network is used). SwiftPM is pointed at it with a mirror kept in a temporary
# configuration folder, so the project's own configuration is left alone; the build goes
# to .build-app.
set -euo pipefail
cd "$(dirname "$0")/.."
repo="${1:-}"
if [ -z "$repo" ] || [ ! -d "$repo" ]; then
  echo "usage: scripts/app-build.sh ZSTD_REPO [--test]   (ZSTD_REPO: a local copy of https://github.com/facebook/zstd)" >&2
  exit 64
fi
config=$(mktemp -d)
# The root Package.resolved is the default build's: kept as it was (the app build pins zstd).
[ -f Package.resolved ] && cp Package.resolved "$config/Package.resolved.kept"
trap 'if [ -f "$config/Package.resolved.kept" ]; then cp "$config/Package.resolved.kept" Package.resolved; else rm -f Package.resolved; fi; rm -rf "$config"' EXIT
swift package --config-path "$config" config set-mirror --original https://github.com/facebook/zstd --mirror "$repo"
app=(--config-path "$config" --scratch-path .build-app --disable-default-traits --traits PackagedZstd)
echo "==> swift build ${app[*]} --target MapLoader"
swift build "${app[@]}" --target MapLoader
if [ "${2:-}" = "--test" ]; then
  echo "==> swift build ${app[*]} --build-tests; the codec tests"
  swift build "${app[@]}" --build-tests
  swift test "${app[@]}" --skip-build --filter MapCodecTests
fi
