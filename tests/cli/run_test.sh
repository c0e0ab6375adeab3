#!/usr/bin/env bash
# `fhr-plan run` executes examples on a fresh manager and agrees with the
# prediction; its exit codes and errors for what cannot run.
# usage: run_test.sh path/to/fhr-plan   (from the repository root)
set -euo pipefail
tool=$1
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*"; cat "$work/out" "$work/err" 2>/dev/null; exit 1; }
run() { set +e; "$tool" run "$@" >"$work/out" 2>"$work/err"; code=$?; set -e; }

# Examples that fit in memory run on simulated devices as predicted.
for example in inference replicated-weights; do
  run --backend sim "examples/$example.fhr"
  [ "$code" = 0 ] || fail "$example: exit $code, expected 0"
  grep -q "result: completed as predicted; [1-9][0-9]* content checks passed" "$work/out" ||
    fail "$example: no agreement line"
  ! grep -q DIFFERS "$work/out" || fail "$example: differences"
done

# A module runs exactly as its source (lines come from the source map).
"$tool" compile examples/inference.fhr -o "$work/inference.fhrb"
run --backend sim "$work/inference.fhrb"
[ "$code" = 0 ] || fail "module: exit $code"
grep -Eq '^ +27  enter 1 +ensure rotkey from pageable to cuda:0' "$work/out" || fail "module: line 27 not named"

# One program or plan by name; an unknown name is bad input.
run --backend sim --program matvec examples/replicated-weights.fhr
[ "$code" = 0 ] || fail "--program matvec: exit $code"
[ "$(grep -c 'on the simulated device backend' "$work/out")" = 1 ] || fail "--program ran more than one"
run --backend sim --plan nope examples/inference.fhr
[ "$code" = 2 ] || fail "unknown plan: exit $code, expected 2"
grep -q 'no plan "nope" to run' "$work/err" || fail "unknown plan: message"

# CUDA locations on the host backend: bad input with a hint.
run examples/inference.fhr
[ "$code" = 2 ] || fail "host backend with cuda:0: exit $code, expected 2"
grep -q "cuda:0 is not available in this process (--backend sim stands in for CUDA devices)" "$work/err" ||
  fail "host backend: message"

# A run that would need more host memory than the machine has is refused
# before anything is allocated (the prediction runs first, on the model).
cat >"$work/huge.fhr" <<'FHR'
value keys 1 TiB replicable source pageable
plan "load" { enter { ensure keys at pinned } }
FHR
run --backend sim "$work/huge.fhr"
[ "$code" = 2 ] || fail "huge: exit $code, expected 2"
grep -q "predicted peaks add up to 2 TiB" "$work/err" || fail "huge: message"

# A predicted failure: the run stops where the simulator said, exit 1.
cat >"$work/stops.fhr" <<'FHR'
budget pinned 1 MiB
value a 768 KiB replicable at pageable
value b 768 KiB replicable at pageable
program "too-big" {
  ensure a at pinned
  ensure b at pinned
}
FHR
run "$work/stops.fhr"
[ "$code" = 1 ] || fail "predicted failure: exit $code, expected 1"
grep -q "stopped at line 6: Transition exceeds budget at pinned" "$work/out" || fail "predicted failure: line"
grep -q "result: stopped as predicted" "$work/out" || fail "predicted failure: agreement"
echo "run: all checks passed"
