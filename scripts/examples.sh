#!/usr/bin/env bash
# Runs every example a user is shown, as written: each ```sh block of README.md (in order,
# as one shell session), the quick start of `maploader --help`, and the example lines of
# every subcommand's --help. Runs in a temporary folder holding release-v1/ and
# release-v2/ of the sample world, with `maploader` on PATH. Prints "N passed, N failed".
set -uo pipefail
cd "$(dirname "$0")/.."
# The examples serve on port 8080 as written: two runs on one machine (two CI jobs) take
# turns here instead of taking the port from each other.
exec 9> /tmp/maploader-examples.lock
flock 9
root=$(pwd)
bin_dir="$(swift build --show-bin-path)"
[ -x "$bin_dir/maploader" ] || swift build --product maploader
export PATH="$bin_dir:$PATH"
work=$(mktemp -d /tmp/maploader-examples.XXXXXX)
# Each script runs in a session of its own, so what it leaves running (the servers its
# examples start in the background) is stopped by signalling that session's process group:
# never a process this script did not start.
session=""
trap '[ -n "$session" ] && kill -- -"$session" 2>/dev/null; rm -rf "$work"' EXIT
python3 scripts/gen-sample.py --out "$work/releases" > /dev/null
for env in MAPLOADER_SERVER MAPLOADER_DATA_DIR MAPLOADER_TRUST_KEY MAPLOADER_ALLOW_UNSIGNED; do unset "$env"; done
passed=0; failed=0
fresh() { # fresh <name>: a folder with the two releases
  local dir="$work/$1"; mkdir -p "$dir"
  cp -r "$work/releases/v1" "$dir/release-v1"; cp -r "$work/releases/v2" "$dir/release-v2"
  echo "$dir"
}
run_script() { # run_script <what> <folder> <script file>
  local what=$1 dir=$2 script=$3
  (cd "$dir" && HOME="$dir/home" exec setsid bash -e "$script") > "$dir.log" 2>&1 &
  session=$!
  if wait "$session"; then
    passed=$((passed+1)); echo "ok    $what"
  else
    failed=$((failed+1)); echo "FAIL  $what"; sed 's/^/      /' "$dir.log" | tail -15
  fi
  kill -- -"$session" 2>/dev/null; session=""; sleep 0.2
}

# 1. README.md: all ```sh blocks in order.
dir=$(fresh readme)
awk '/^```sh$/ {on=1; next} /^```/ {on=0} on' README.md > "$work/readme.sh"
run_script "README.md examples ($(grep -c '^maploader\|^export' "$work/readme.sh") commands)" "$dir" "$work/readme.sh"

# 2. The quick start of maploader --help.
dir=$(fresh quickstart)
maploader --help | awk '/^Quick start/ {on=1; next} on && /^$/ {exit} on' | sed 's/^  *//' > "$work/quickstart.sh"
run_script "maploader --help quick start ($(wc -l < "$work/quickstart.sh") lines)" "$dir" "$work/quickstart.sh"

# 3. Every subcommand's examples, against a site and an installed package.
dir=$(fresh commands)
cat > "$work/commands-setup.sh" <<'SETUP'
maploader keygen publisher.key > publisher.pub
maploader publish ./release-v1 --site ./site --version v1 --key publisher.key > /dev/null 2>&1
SETUP
(cd "$dir" && bash -e "$work/commands-setup.sh") > /dev/null 2>&1
commands=()
for command in $(maploader --help | awk '/^SUBCOMMANDS:/ {on=1; next} on && /^  [a-z]/ {print $1}'); do
  commands+=("$command")  # then its own subcommands (shard plan, config set, …)
  for sub in $(maploader help "$command" | awk '/^SUBCOMMANDS:/ {on=1; next} on && /^  [a-z]/ {print $1}'); do
    commands+=("$command $sub")
  done
done
for command in "${commands[@]}"; do
  examples=$(maploader help $command 2>/dev/null | awk '/^ *Examples?:/ {on=1; next} on && /^ *maploader / {sub(/^ */, ""); print} on && /^$/ {on=0}')
  [ -n "$examples" ] || continue
  while IFS= read -r example; do
    script="$work/example-$passed-$failed.sh"
    case "$command" in
      serve) # a server runs until stopped: it must still be serving after a second
        printf '%s &\nserver=$!\nsleep 1\nkill -0 $server\nkill $server\n' "$example" > "$script" ;;
      *)
        printf 'maploader serve ./site --port 8080 --quiet & sleep 1\n' > "$script"
        printf 'export MAPLOADER_SERVER=http://127.0.0.1:8080 MAPLOADER_TRUST_KEY=$(cat publisher.pub) MAPLOADER_DATA_DIR=./maps\n' >> "$script"
        printf 'maploader install de-berlin > /dev/null 2>&1\n%s\nkill %%1\n' "$example" >> "$script" ;;
    esac
    run_script "maploader $command: $example" "$dir" "$script"
  done <<< "$examples"
done

# 4. The Kubernetes Job's worker command (scripts/k8s/publish-job.yaml), once per index as
#    the Job's pods would run it, with the pods' mounts (/data, /scratch) mapped to a folder.
dir=$(fresh k8s)
job=scripts/k8s/publish-job.yaml
worker=$(awk '/^ *args:/ {getline; sub(/^ *- /, ""); print; exit}' "$job" | sed 's|/data|./data|g; s|/scratch|./scratch|g')
workers=$(awk '/^ *completions:/ {print $2; exit}' "$job")
cat > "$work/k8s.sh" <<K8S
mkdir -p data scratch && mv release-v2 data/release
maploader publish ./release-v1 --site data/site --version v1 > /dev/null 2>&1
maploader shard plan data/release --site data/site --version 2026.12 --output data/plan.json
for index in \$(seq 0 $((workers - 1))); do JOB_COMPLETION_INDEX=\$index WORKERS=$workers sh -c '$worker'; done
maploader shard assemble data/plan.json
K8S
run_script "$job: the worker command for each of $workers indexes" "$dir" "$work/k8s.sh"

echo "examples: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
