# Shared by the shell test scripts (smoke.sh, s3-test.sh): each check prints one line and
# counts into $passed / $failed; the command's output lands in $work/out and $work/err.
passed=0; failed=0
check() { # check "what" expected-exit command...
  local what=$1 want=$2; shift 2
  "$@" > "$work/out" 2> "$work/err"; local got=$?
  if [ "$got" = "$want" ]; then passed=$((passed+1)); echo "ok    $what"
  else failed=$((failed+1)); echo "FAIL  $what (exit $got, wanted $want)"; sed 's/^/      /' "$work/err" | tail -5; fi
}
contains() { # contains "what" pattern file
  if grep -q -- "$2" "$3"; then passed=$((passed+1)); echo "ok    $1"
  else failed=$((failed+1)); echo "FAIL  $1: '$2' not in $3"; sed 's/^/      /' "$3" | head -5; fi
}
