#!/usr/bin/env bash
# Builds the example app (Tests/ExampleApp: a package that uses MapLoader's public API
# only) and runs it against `maploader serve` on 127.0.0.1: list and install with
# progress, pause and resume, an error alert, an update, then with the server stopped,
# what is installed. Prints the app's output; exits non-zero when the app does.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(swift build --show-bin-path)/maploader"
work=$(mktemp -d /tmp/maploader-example.XXXXXX)
server=""
trap '[ -n "$server" ] && kill "$server" 2>/dev/null; rm -rf "$work"' EXIT
echo "==> building the example app (its own package, MapLoader by path)"
# A failed build must stop here: running the app built before would test old code. An
# incremental build can trip over files added to the package since; one clean build then.
build_app() { swift build --package-path Tests/ExampleApp --scratch-path .build-example -q > "$work/build.log" 2>&1; }
if ! build_app; then
  echo "   the incremental build failed; building again from clean"
  rm -rf .build-example
  build_app || { cat "$work/build.log"; exit 1; }
fi
grep -v "^warning: 'swift-" "$work/build.log" || true
app="$(swift build --package-path Tests/ExampleApp --scratch-path .build-example --show-bin-path)/ExampleApp"
python3 scripts/gen-sample.py --out "$work/releases" > /dev/null
"$bin" keygen "$work/publisher.key" > "$work/key"
key=$(cat "$work/key")
"$bin" publish "$work/releases/v1" --site "$work/site" --version v1 --key "$work/publisher.key" > /dev/null 2>&1
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
# Slow enough that pausing has something to pause.
"$bin" serve "$work/site" --host 127.0.0.1 --port "$port" --throttle 400000 > "$work/serve.log" 2>&1 &
server=$!
for _ in $(seq 100); do curl -sf "http://127.0.0.1:$port/catalog.json" > /dev/null && break; sleep 0.1; done
url="http://127.0.0.1:$port"
echo "==> example app: online"
"$app" online "$url" "$work/data" "$key"
echo "==> example app: the observable model installs (paused and resumed)"
"$app" model "$url" "$work/data-model" "$key"
"$bin" publish "$work/releases/v2" --site "$work/site" --version v2 --key "$work/publisher.key" > /dev/null 2>&1
echo "==> example app: update"
"$app" update "$url" "$work/data" "$key"
echo "==> example app: the observable model updates"
"$app" model "$url" "$work/data-model" "$key"
kill "$server"; wait "$server" 2>/dev/null || true; server=""
echo "==> example app: offline (server stopped)"
"$app" offline "$url" "$work/data" "$key"
