#!/usr/bin/env bash
# EXPLAIN ANALYZE on the GPU machine (issue #14): calibrate this machine's
# links, run every example on the CUDA backend with that profile, and print
# predicted against measured step times (bench/prediction_error.py).
#
# Here (no GPU), build the tool once; host code only, the CUDA runtime
# linked statically, so the binary travels alone:
#   bench/gpu_prediction.sh --build            # -> build-gpu/tools/fhr-plan
# On the GPU machine, from the repository root:
#   bench/gpu_prediction.sh build-gpu/tools/fhr-plan "$OUT"
# Every example runs twice: from cold pools (each step's allocations in its
# prediction) and with --warm-up (the pools reserved before the run, as a
# deployed evaluator warms them; the prediction's pools warm). Content is
# checked at the end of each run (run's default on the CUDA backend: a
# check between steps would slow the next one, docs/run.md).
# OUT receives links.json and calibrate.txt (CALIBRATE=once), per example
# NAME.run.json and NAME.warm.run.json (fhr-run/1), NAME.trace.json (Perfetto, the cold run),
# NAME.err, exits.txt (each run's exit beside explain's, or why the example
# was skipped: it declares more devices than the machine has), and the
# tables prediction.txt (cold) and prediction-warm.txt. REPEAT=N in the
# environment runs each example N times per setting (`run --repeat N`: the
# steps' measured times are medians over the runs). CALIBRATE=each
# calibrates again right before every example (NAME.links.json,
# NAME.calibrate.txt) and runs it against that profile: the machine's host
# copies drift by 10-20% over minutes (docs/benchmarks.md, fifteenth and
# sixteenth waves), and a profile taken seconds before the runs describes
# the state they meet; CALIBRATE=once (the default) takes one links.json
# for all. Exit:
# prediction_error.py's for the warm runs (1 when a step misses its
# target), 2 when a run's exit differs from explain's.
set -uo pipefail

if [ "${1:-}" = "--build" ]; then
  set -e
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF -DFHR_WITH_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90
  cmake --build build-gpu -j2 --target fhr-plan
  strip build-gpu/tools/fhr-plan
  ! ldd build-gpu/tools/fhr-plan | grep -q libcudart || { echo "cudart is not static"; exit 1; }
  echo "built build-gpu/tools/fhr-plan"
  exit 0
fi

tool=${1:?usage: gpu_prediction.sh FHR-PLAN OUT | --build}
out=${2:-${OUT:?usage: gpu_prediction.sh FHR-PLAN OUT}}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv >"$out/gpu.txt" 2>&1 || true

# calibrate PROFILE LOG: this machine's links now.
calibrate() {
  local started=$SECONDS
  "$tool" calibrate --backend cuda -o "$1" >"$2" 2>&1 || {
    echo "calibrate failed"; cat "$2"; exit 2; }
  echo "calibrated in $((SECONDS - started)) s: $1"
}
mode=${CALIBRATE:-once}
case "$mode" in once | each) ;; *) echo "CALIBRATE must be once or each, not $mode"; exit 2 ;; esac
if [ "$mode" = once ]; then
  calibrate "$out/links.json" "$out/calibrate.txt"
  tail -n 30 "$out/calibrate.txt"
fi

repeat=${REPEAT:-1}
status=0
: >"$out/exits.txt"
# One line per GPU (`nvidia-smi -L` also lists MIG instances).
devices=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)
runs=()
warm_runs=()
for example in examples/*.fhr; do
  name=$(basename "$example" .fhr)
  # `devices N`: an example for more GPUs than this machine has cannot run here.
  needed=$(sed -n 's/^devices \([0-9]*\).*/\1/p' "$example" | head -n 1)
  needed=${needed:-1}
  if [ "$needed" -gt "$devices" ]; then
    echo "$name: skipped (needs $needed devices, this machine has $devices)" | tee -a "$out/exits.txt"
    continue
  fi
  "$tool" explain "$example" >/dev/null 2>&1
  predicted=$?
  profile=$out/links.json
  if [ "$mode" = each ]; then
    profile=$out/$name.links.json
    calibrate "$profile" "$out/$name.calibrate.txt"
  fi
  "$tool" run --backend cuda --profile "$profile" --format json --repeat "$repeat" \
    --trace "$out/$name.trace.json" "$example" >"$out/$name.run.json" 2>"$out/$name.err"
  ran=$?
  "$tool" run --backend cuda --profile "$profile" --format json --warm-up --repeat "$repeat" \
    "$example" >"$out/$name.warm.run.json" 2>>"$out/$name.err"
  warm=$?
  echo "$name: run exit $ran, with --warm-up $warm, explain exit $predicted" | tee -a "$out/exits.txt"
  [ "$ran" = "$predicted" ] && [ "$warm" = "$predicted" ] || status=2
  runs+=("$out/$name.run.json")
  warm_runs+=("$out/$name.warm.run.json")
done

if [ ${#runs[@]} -eq 0 ]; then
  echo "no example ran on this machine ($devices GPUs)"; exit 2
fi
echo "== cold pools"
python3 bench/prediction_error.py "${runs[@]}" | tee "$out/prediction.txt"
echo "== with --warm-up"
python3 bench/prediction_error.py "${warm_runs[@]}" | tee "$out/prediction-warm.txt"
table=${PIPESTATUS[0]}
[ "$status" != 0 ] && exit "$status"
exit "$table"
