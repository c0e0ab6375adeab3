#!/usr/bin/env bash
# fhr-plan fmt: every example is formatted; formatting is idempotent, keeps
# comments and meaning (the same explain JSON, positions aside) on every
# example, golden input and fuzz regression that parses; --check and -i.
# usage: fmt_test.sh path/to/fhr-plan   (from the repository root)
source "$(dirname "$0")/setup.sh" "$1"

"$tool" fmt --check examples/*.fhr || fail "an example is not formatted"

# Without positions, explain's JSON says what a file means.
meaning() { "$tool" explain --format json "$1" 2>/dev/null | grep -vE '"(line|column|file)":' || true; }

count=0
for input in examples/*.fhr tests/golden/inputs/*.fhr tests/fmt/*.fhr; do
  set +e; "$tool" fmt "$input" >"$work/once.fhr" 2>/dev/null; code=$?; set -e
  [ $code = 0 ] || continue # files with syntax errors are refused (checked below)
  "$tool" fmt "$work/once.fhr" >"$work/twice.fhr" || fail "$input: formatted text does not parse"
  cmp -s "$work/once.fhr" "$work/twice.fhr" || { diff -u "$work/once.fhr" "$work/twice.fhr"; fail "$input: not idempotent"; }
  [ "$(grep -c '#' "$input" || true)" = "$(grep -c '#' "$work/once.fhr" || true)" ] || fail "$input: comments lost"
  [ "$(meaning "$input")" = "$(meaning "$work/once.fhr")" ] || fail "$input: formatting changed its meaning"
  count=$((count + 1))
done
[ $count -ge 6 ] || fail "only $count files formatted"

# The canonical layout of a messy file (tests/fmt/messy.fhr -> messy.expected).
"$tool" fmt tests/fmt/messy.fhr >"$work/messy.out"
diff -u tests/fmt/messy.expected "$work/messy.out" || fail "messy.fhr formats differently"

# --check names the file and exits 1; -i rewrites it; then --check passes.
cp tests/fmt/messy.fhr "$work/m.fhr"
set +e; "$tool" fmt --check "$work/m.fhr" >"$work/out"; code=$?; set -e
[ $code = 1 ] && grep -q "m.fhr: not formatted" "$work/out" || fail "--check on a messy file: exit $code"
"$tool" fmt -i "$work/m.fhr"
cmp -s "$work/m.fhr" tests/fmt/messy.expected || fail "-i wrote something else"
"$tool" fmt --check "$work/m.fhr" || fail "--check after -i"

# Syntax errors: reported, the file untouched, exit 2; modules are refused.
printf 'plan "a" {\n' >"$work/bad.fhr"
cp "$work/bad.fhr" "$work/bad.orig"
set +e; "$tool" fmt -i "$work/bad.fhr" 2>"$work/err"; code=$?; set -e
[ $code = 2 ] && grep -q "E0010" "$work/err" && cmp -s "$work/bad.fhr" "$work/bad.orig" || fail "fmt -i of a broken file: exit $code"
"$tool" compile examples/inference.fhr -o "$work/m.fhrb"
set +e; "$tool" fmt "$work/m.fhrb" 2>"$work/err"; code=$?; set -e
[ $code = 2 ] && grep -q "E0016" "$work/err" || fail "fmt of a module: exit $code"
# Standard input, and the disassembler's @line directives kept.
"$tool" disasm "$work/m.fhrb" >"$work/d.fhr"
"$tool" fmt - <"$work/d.fhr" >"$work/d2.fhr"
[ "$(grep -c '^@line' "$work/d.fhr")" = "$(grep -c '^@line' "$work/d2.fhr")" ] || fail "@line directives lost"
"$tool" compile "$work/d2.fhr" -o "$work/m2.fhrb"
cmp -s "$work/m.fhrb" "$work/m2.fhrb" || fail "formatted disassembly compiles to other bytes"
echo "fmt_test: ok ($count files)"
