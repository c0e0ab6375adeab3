#!/usr/bin/env bash
# Diagnostics as a CI user meets them: the fuzz shapes print at most the
# error limit in every format, invalid input is visible in every
# machine-readable format, warnings follow -W, and explain-code prints the
# docs entry of every code.
# usage: diagnostics_test.sh path/to/fhr-plan   (from the repository root)
source "$(dirname "$0")/setup.sh" "$1"
run() { set +e; "$tool" "$@" >"$work/out" 2>"$work/err"; code=$?; set -e; }

# The fuzz shapes: at most the error limit (and E0504), exit 2, in every format.
for input in tests/fuzz-regressions/loop-error-per-iteration.fhr tests/fuzz-regressions/loop-duplicate-plan.fhr \
             tests/fuzz-regressions/many-errors.fhr; do
  for limit in 20 5; do
    run check --error-limit=$limit "$input"
    [ $code = 2 ] || fail "$input: exit $code"
    errors=$(grep -c ': error: ' "$work/err" || true)
    [ "$errors" -ge 1 ] && [ "$errors" -le $((limit + 1)) ] || fail "$input: $errors errors with --error-limit=$limit"
    run check --format sarif --error-limit=$limit "$input"
    results=$(python3 -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["runs"][0]["results"]))' "$work/out")
    [ "$results" = "$errors" ] || fail "$input: $results SARIF results, $errors errors on stderr"
    run check --format github --error-limit=$limit "$input"
    [ "$(grep -c '^::error ' "$work/out")" = "$errors" ] || fail "$input: github annotations"
  done
done
run check tests/fuzz-regressions/loop-duplicate-plan.fhr
[ "$(grep -c ': error: ' "$work/err")" = 1 ] || fail "for i in 0..1000 { plan \"p\" { } } is not one error"
run check --error-limit=0 tests/fuzz-regressions/many-errors.fhr
[ "$(grep -c ': error: \[E0002\]' "$work/err")" = 2000 ] || fail "--error-limit=0 does not show every error"

# A syntax error in every machine-readable format.
printf 'budget pinned 1 Gib\n' >"$work/bad.fhr"
run check --format github "$work/bad.fhr"
[ $code = 2 ] && grep -q '^::error file=.*bad.fhr,line=1,col=17,endColumn=20,title=\[E0009\]' "$work/out" ||
  fail "github: $(cat "$work/out")"
run explain --format json "$work/bad.fhr"
python3 - "$work/out" <<'PY' || fail "explain json of a syntax error"
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["schema"] == "fhr-explain/2" and doc["valid"] is False and doc["feasible"] is False, doc
(d,) = doc["diagnostics"]
assert d["code"] == "E0009" and d["severity"] == "error" and d["position"] == {"line": 1, "column": 17}, d
assert d["end"] == {"line": 1, "column": 20} and d["hint"] == "did you mean 'GiB'?", d
PY
run explain --format json --budget cuda=1 examples/inference.fhr
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["valid"] is False and d["diagnostics"][0]["code"]=="E0501" and d["diagnostics"][0]["file"] is None, d' "$work/out" ||
  fail "explain json of a bad --budget"

# Warnings: exit 0; -Werror: exit 2; -Wno-FLAG: silent; --budget at an undeclared device: exit 2.
printf 'budget pinned 40\n' >"$work/warn.fhr"
run check "$work/warn.fhr"; [ $code = 0 ] && grep -q 'warning: \[W0001\]' "$work/err" || fail "warning: exit $code"
run check -Werror "$work/warn.fhr"; [ $code = 2 ] && grep -q 'error: \[W0001\].*\[-Werror=bare-size\]' "$work/err" || fail "-Werror: exit $code"
run check -Wno-bare-size "$work/warn.fhr"; [ $code = 0 ] && [ ! -s "$work/err" ] || fail "-Wno-bare-size: exit $code"
run check --budget cuda:7=10GiB examples/inference.fhr; [ $code = 2 ] && grep -q 'E0502' "$work/err" || fail "E0502: exit $code"
run run --backend sim --budget cuda:7=10GiB examples/inference.fhr; [ $code = 2 ] || fail "run accepts --budget cuda:7: exit $code"

# explain-code prints each code's section of docs/diagnostics.md, exactly.
for code_name in $(grep -oE '^## [EW][0-9]{4}' docs/diagnostics.md | cut -c4-); do
  run explain-code "$code_name"
  [ $code = 0 ] || fail "explain-code $code_name: exit $code"
  awk -v want="## $code_name:" 'index($0, want) == 1 {on=1} on && /^<a id=/ {exit} on' docs/diagnostics.md |
    sed -e :a -e '/^\n*$/{$d;N;ba' -e '}' >"$work/want"
  diff -u "$work/want" "$work/out" >/dev/null || fail "explain-code $code_name differs from docs/diagnostics.md"
done
run --explain e0101; [ $code = 0 ] && head -1 "$work/out" | grep -q '^## E0101: unknown name$' || fail "--explain"
echo "diagnostics_test: ok"
