#!/usr/bin/env bash
# Golden CLI tests. A case file holds everything about one run:
#
#   args: explain examples/inference.fhr      (arguments to fhr-plan)
#   stdin: tests/golden/inputs/garbage.bin    (optional: file fed to stdin)
#   exit: 0                                   (expected exit code)
#   --- stdout
#   ...expected standard output...
#   --- stderr
#   ...expected standard error...
#
# Check one case:        run.sh path/to/fhr-plan CASE.golden
# Regenerate all cases:  run.sh --update path/to/fhr-plan [CASE.golden...]
# Run from the repository root; paths in cases are relative to it.
set -euo pipefail
export NO_COLOR=1 LC_ALL=C

update=0
if [ "${1:-}" = "--update" ]; then update=1; shift; fi
tool=$1; shift
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(tests/golden/cases/*.golden)

field() { sed -n "s/^$1: //p" "$2" | head -n 1; }
section() { awk -v want="--- $1" '/^--- /{on=($0==want); next} on' "$2"; }

status=0
for case in "${cases[@]}"; do
  args=$(field args "$case")
  stdin=$(field stdin "$case")
  [ -n "$stdin" ] || stdin=/dev/null
  out=$(mktemp) err=$(mktemp)
  set +e
  # shellcheck disable=SC2086  # args are split on purpose
  "$tool" $args <"$stdin" >"$out" 2>"$err"
  code=$?
  set -e
  # SARIF names the working directory (originalUriBaseIds): the same case
  # must pass in any checkout.
  sed -i "s|file://$PWD/|file://@ROOT@/|g" "$out" "$err"
  if [ $update = 1 ]; then
    { echo "args: $args"
      [ "$stdin" = /dev/null ] || echo "stdin: $stdin"
      echo "exit: $code"
      echo "--- stdout"; cat "$out"
      echo "--- stderr"; cat "$err"; } >"$case.new"
    mv "$case.new" "$case"
    echo "updated $case (exit $code)"
  else
    expected_code=$(field exit "$case")
    if [ "$code" != "$expected_code" ]; then
      echo "FAIL $case: exit code $code, expected $expected_code"; status=1
    fi
    if ! diff -u <(section stdout "$case") "$out"; then echo "FAIL $case: stdout differs"; status=1; fi
    if ! diff -u <(section stderr "$case") "$err"; then echo "FAIL $case: stderr differs"; status=1; fi
  fi
  rm -f "$out" "$err"
done
exit $status
