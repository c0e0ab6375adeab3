#!/usr/bin/env bash
# The plans the benchmarks and GPU experiments run (bench/plans,
# bench/fhelium): every one stays feasible and formatted as the tool
# changes, so that the commands in docs/benchmarks.md still run them.
# usage: bench_plans_test.sh path/to/fhr-plan   (from the repository root)
source "$(dirname "$0")/setup.sh" "$1"

count=0
for plan in bench/plans/*.fhr bench/fhelium/*.fhr; do
  "$tool" check "$plan" >"$work/check.txt" 2>&1 || { cat "$work/check.txt"; fail "$plan: check failed"; }
  count=$((count + 1))
done
[ "$count" -ge 6 ] || fail "only $count bench plans found"
"$tool" fmt --check bench/plans/*.fhr bench/fhelium/*.fhr || fail "a bench plan is not formatted"
echo "bench plans: $count feasible and formatted"
