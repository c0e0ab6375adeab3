#!/usr/bin/env bash
# `fhr-plan compile` writes a module whole or not at all, deterministically,
# and its disassembly compiles back to the same bytes.
# usage: compile_test.sh path/to/fhr-plan   (from the repository root)
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

# A file with errors: exit 2 and no module.
set +e; "$tool" compile tests/golden/inputs/errors.fhr -o "$work/bad.fhrb" 2>/dev/null; code=$?; set -e
[ "$code" = 2 ] || fail "errors.fhr: exit $code, expected 2"
[ ! -e "$work/bad.fhrb" ] || fail "a module was written for a file with errors"

# A good file: exit 0, deterministic bytes.
"$tool" compile examples/bootstrapping.fhr -o "$work/a.fhrb"
"$tool" compile examples/bootstrapping.fhr -o "$work/b.fhrb"
cmp -s "$work/a.fhrb" "$work/b.fhrb" || fail "two compiles differ"

# A failed compile leaves an existing module untouched.
cp "$work/a.fhrb" "$work/keep.fhrb"
set +e; "$tool" compile tests/golden/inputs/errors.fhr -o "$work/keep.fhrb" 2>/dev/null; set -e
cmp -s "$work/a.fhrb" "$work/keep.fhrb" || fail "a failed compile changed the existing module"

# An unwritable destination: exit 2, no temporary left behind.
set +e; "$tool" compile examples/inference.fhr -o "$work/missing-dir/x.fhrb" 2>/dev/null; code=$?; set -e
[ "$code" = 2 ] || fail "unwritable output: exit $code, expected 2"
[ -z "$(ls "$work" | grep -v '\.fhrb$')" ] || fail "temporary files left: $(ls "$work")"

# compile -> disasm -> compile gives the same bytes; stdin works too.
"$tool" disasm "$work/a.fhrb" > "$work/a.fhr"
"$tool" compile "$work/a.fhr" -o "$work/c.fhrb"
cmp -s "$work/a.fhrb" "$work/c.fhrb" || fail "disassembly does not compile to the same bytes"
"$tool" disasm - < "$work/a.fhrb" | "$tool" compile - -o "$work/d.fhrb"
cmp -s "$work/a.fhrb" "$work/d.fhrb" || fail "round trip through stdin differs"
echo "compile_test: ok"
