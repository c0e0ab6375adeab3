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

# The golden inputs with every size divided by 1024 (running them moves real bytes).
for input in solve-keys solve-ciphertexts; do
  python3 - "tests/golden/inputs/$input.json" "$work/$input.json" <<'SCALE'
import json, sys
w = json.load(open(sys.argv[1]))
for b in w["budgets"]: b["bytes"] //= 1024
for v in w["values"]:
    v["bytes"] //= 1024
    if "storage_bytes" in v: v["storage_bytes"] //= 1024
for s in w["steps"]:
    for ws in s.get("workspace", []): ws["bytes"] //= 1024
json.dump(w, open(sys.argv[2], "w"))
SCALE
done

for input in solve-keys solve-ciphertexts; do
  for policy in planner lru; do
    "$tool" solve --policy "$policy" -o "$work/$input-$policy.fhr" "$work/$input.json" >"$work/out" 2>"$work/err" ||
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
# The workload language and the JSON say the same thing: solve-keys.fhr
# (as keys.fhr, the JSON's workload name) gives the JSON's program and report.
cp tests/golden/inputs/solve-keys.fhr "$work/keys.fhr"
"$tool" solve tests/golden/inputs/solve-keys.json >"$work/json.fhr" 2>"$work/json.report" || fail "solve of the JSON"
"$tool" solve "$work/keys.fhr" >"$work/text.fhr" 2>"$work/text.report" || fail "solve of the .fhr workload"
cmp -s "$work/json.fhr" "$work/text.fhr" || fail "the .fhr workload gives another program than its JSON"
diff <(tail -n +2 "$work/json.report") <(tail -n +2 "$work/text.report") >/dev/null ||
  fail "the .fhr workload gives another report than its JSON"
# Standard input: a workload text that does not start with '{' is .fhr.
"$tool" solve - <"$work/keys.fhr" >"$work/stdin.fhr" 2>/dev/null || fail "solve of a .fhr workload on stdin"
diff "$work/text.fhr" <(sed "s/'stdin'/'keys'/; s/\"stdin\"/\"keys\"/" "$work/stdin.fhr") >/dev/null ||
  fail "a .fhr workload on stdin gives another program"
# A .fhr workload whose file name is not UTF-8 is named by it: the JSON
# report replaces the bad byte (U+FFFD) instead of aborting in the dump.
cp tests/golden/inputs/solve-keys.fhr "$work/keys-$(printf '\377').fhr"
"$tool" solve --format json -o "$work/odd.fhr" "$work/keys-$(printf '\377').fhr" >"$work/odd.json" 2>"$work/err" ||
  fail "solve --format json of a workload whose file name is not UTF-8: exit $?"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]))["workload"] == "keys-\ufffd"' "$work/odd.json" ||
  fail "the report of a workload whose file name is not UTF-8"

echo "solve: ok"
