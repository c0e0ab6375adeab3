#!/usr/bin/env bash
# `fhr-plan solve` end to end: the programs it prints for both policies run
# on a real manager (simulated devices, synthetic payloads with content
# checks) exactly as explain predicts, within the budgets; the JSON report
# agrees with the text one.
# usage: solve_test.sh path/to/fhr-plan   (from the repository root)
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }

for input in solve-keys solve-ciphertexts; do
  for policy in planner lru; do
    "$tool" solve --policy "$policy" -o "$work/$input-$policy.fhr" "tests/golden/inputs/$input.json" >"$work/out" 2>"$work/err" ||
      fail "$input --policy $policy: solve failed"
    "$tool" check "$work/$input-$policy.fhr" >"$work/out" 2>"$work/err" || fail "$input --policy $policy: check refuses it"
    "$tool" run --backend sim "$work/$input-$policy.fhr" >"$work/out" 2>"$work/err" ||
      fail "$input --policy $policy: run exit $?"
    grep -q "result: completed as predicted; [1-9][0-9]* content checks passed" "$work/out" ||
      fail "$input --policy $policy: no agreement line"
    ! grep -q DIFFERS "$work/out" || fail "$input --policy $policy: differences"
  done
done

# The JSON report carries the same bytes as the text one.
"$tool" solve --format json -o "$work/keys.fhr" tests/golden/inputs/solve-keys.json >"$work/report.json"
text_bytes=$("$tool" solve -o "$work/keys.fhr" tests/golden/inputs/solve-keys.json | sed -n 's/^bytes moved: .* (\([0-9]*\) B).*/\1/p')
json_bytes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["result"]["bytes_moved"])' "$work/report.json")
[ -n "$text_bytes" ] && [ "$text_bytes" = "$json_bytes" ] || fail "text says $text_bytes bytes, JSON $json_bytes"
echo "solve: ok"
