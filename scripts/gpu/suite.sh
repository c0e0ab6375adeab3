#!/usr/bin/env bash
# The GPU suite on a machine with a CUDA device, over binaries built on the
# developer machine (docs/testing.md, "GPU suite"):
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CUDA_ARCHITECTURES=90
#   cmake --build build-release --target fhr_gpu_tests cuda_bench runtime_bench fhr-plan
# then, from the repository root on the GPU machine:
#   bash scripts/gpu/suite.sh build-release OUTDIR
# It runs the GPU tests (plain and under compute-sanitizer memcheck), every
# example on the CUDA backend (two-GPU examples only where two devices exist),
# the CUDA and runtime benchmarks, and a link calibration, and writes a log
# of each to OUTDIR. The exit status is 0 only when every step did what the
# prediction says.
set -uo pipefail
bin=${1:?binaries directory}
out=${2:?output directory}
mkdir -p "$out"
status=0
step() { # name, expected exit status, command...
  local name=$1 expected=$2
  shift 2
  "$@" >"$out/$name.log" 2>&1
  local rc=$?
  echo "$name: exit $rc (expected $expected)"
  [ "$rc" = "$expected" ] || status=1
}
devices=$(nvidia-smi -L 2>/dev/null | wc -l)
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
step gpu-tests 0 "$bin/tests/fhr_gpu_tests"
tail -3 "$out/gpu-tests.log"
if command -v compute-sanitizer >/dev/null; then
  step gpu-memcheck 0 compute-sanitizer --tool memcheck --error-exitcode 9 "$bin/tests/fhr_gpu_tests"
  tail -2 "$out/gpu-memcheck.log"
fi
for example in inference bootstrapping infeasible replicated-weights; do
  expected=0
  [ "$example" = infeasible ] && expected=1
  if [ "$example" = replicated-weights ] && [ "$devices" -lt 2 ]; then
    echo "$example: skipped (needs two devices, this machine has $devices)"
    continue
  fi
  step "run-$example" "$expected" "$bin/tools/fhr-plan" run --backend cuda "examples/$example.fhr"
  tail -2 "$out/run-$example.log"
done
step calibrate 0 "$bin/tools/fhr-plan" calibrate --backend cuda -o "$out/links.json"
tail -3 "$out/calibrate.log"
for example in inference bootstrapping; do
  step "profile-$example" 0 "$bin/tools/fhr-plan" explain --profile "$out/links.json" --format json \
    "examples/$example.fhr"
done
step cuda-bench 0 "$bin/bench/cuda_bench"
step runtime-bench 0 "$bin/bench/runtime_bench" 7
exit $status
