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
# OUT receives links.json and calibrate.txt, per example and round
# NAME.ROUND.run.json and NAME.ROUND.warm.run.json (fhr-run/1; ROUND r1,
# r2, ...), NAME.trace.json (Perfetto, the first cold run), NAME.err,
# exits.txt (each run's exit beside explain's, or why the example was
# skipped: it declares more devices than the machine has), and the tables
# prediction.txt (cold) and prediction-warm.txt. REPEAT=N runs each example
# N times per setting and round (`run --repeat N`: the steps' measured
# times are medians over the runs). ROUNDS=R (default 1) runs every example
# in R rounds, one after another, so that each example's runs spread over
# the whole session rather than one moment of it; prediction_error.py pools
# the rounds (their predictions are the same).
#
# TOUCH_HOST=1 (the default) first writes most of the machine's free host
# memory once (bench/touch_host_memory.py, about 8 s on the H200 machine):
# on a virtual machine whose memory the host backs lazily, as the H200's,
# host copies and page faults in memory never touched ran 10-40% slower and
# unsteadily until then (docs/benchmarks.md, twentieth wave: 94 of 127
# steps outside the target untouched, 6 touched). TOUCH_HOST=0 skips it.
#
# Host copies still drift a little within a minute (docs/benchmarks.md,
# sixteenth to twentieth waves), and one calibration is a snapshot of one
# stretch. CALIBRATE says how the profile is taken:
#   once    (the default) one calibration before the runs: links.json.
#   each    one right before every example (NAME.links.json,
#           NAME.calibrate.txt), its runs against that profile.
#   spread  SPREAD=K (default 3) calibrations links-K.json, each followed by
#           one round of every example against it (NAME.cK.run.json, tabled
#           in prediction-single.txt and prediction-single-warm.txt: one
#           calibration against the runs of the minute after it), then
#           `calibrate --merge` of them all into links.json (merge.txt: how
#           far they disagreed) and the ROUNDS rounds against that.
#   none    no calibration: the runs against PROFILE (default h200, the
#           shipped merge), copied to links.json.
# Exit: prediction_error.py's for the warm runs (1 when a step misses its
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
case "$mode" in once | each | spread | none) ;; *) echo "CALIBRATE must be once, each, spread or none, not $mode"; exit 2 ;; esac
repeat=${REPEAT:-1}
rounds=${ROUNDS:-1}
spread=${SPREAD:-3}
case "$rounds" in '' | *[!0-9]* | 0) echo "ROUNDS must be a whole number from 1, not $rounds"; exit 2 ;; esac
case "$spread" in '' | *[!0-9]* | 0 | 1) echo "SPREAD must be a whole number from 2, not $spread"; exit 2 ;; esac
touch_host=${TOUCH_HOST:-1}
case "$touch_host" in 0 | 1) ;; *) echo "TOUCH_HOST must be 0 or 1, not $touch_host"; exit 2 ;; esac
if [ "$touch_host" = 1 ]; then
  python3 "$(dirname "$0")/touch_host_memory.py" --rounds 1 >"$out/touch.txt" 2>&1 || {
    echo "touching host memory failed"; cat "$out/touch.txt"; exit 2; }
  cat "$out/touch.txt"
fi
status=0
# The documents of this session only: what an earlier one left in OUT
# would be tabled (and pooled) with them.
rm -f "$out"/*.run.json "$out"/*.trace.json "$out"/*.err
: >"$out/exits.txt"
# Run documents: each calibration's round (CALIBRATE=spread), and the rounds.
single_cold=() single_warm=() cold=() warm_runs=()
# One line per GPU (`nvidia-smi -L` also lists MIG instances).
devices=$(nvidia-smi --query-gpu=index --format=csv,noheader 2>/dev/null | wc -l)

# run_round ROUND PROFILE: every example once cold and once with --warm-up
# (REPEAT runs each) against PROFILE (CALIBRATE=each: its own, taken now).
run_round() {
  local round=$1 profile=$2 example name needed predicted ran warm
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
    if [ "$mode" = each ]; then
      profile=$out/$name.links.json
      calibrate "$profile" "$out/$name.calibrate.txt"
    fi
    # The first round's cold run writes the trace.
    local trace=(--format json)
    [ -e "$out/$name.trace.json" ] || trace+=(--trace "$out/$name.trace.json")
    "$tool" run --backend cuda --profile "$profile" "${trace[@]}" --repeat "$repeat" \
      "$example" >"$out/$name.$round.run.json" 2>>"$out/$name.err"
    ran=$?
    "$tool" run --backend cuda --profile "$profile" --format json --warm-up --repeat "$repeat" \
      "$example" >"$out/$name.$round.warm.run.json" 2>>"$out/$name.err"
    warm=$?
    case "$round" in
    c*) single_cold+=("$out/$name.$round.run.json") single_warm+=("$out/$name.$round.warm.run.json") ;;
    *) cold+=("$out/$name.$round.run.json") warm_runs+=("$out/$name.$round.warm.run.json") ;;
    esac
    echo "$name ($round): run exit $ran, with --warm-up $warm, explain exit $predicted" | tee -a "$out/exits.txt"
    [ "$ran" = "$predicted" ] && [ "$warm" = "$predicted" ] || status=2
  done
}

if [ "$mode" = spread ]; then
  profiles=()
  for k in $(seq 1 "$spread"); do
    calibrate "$out/links-$k.json" "$out/calibrate-$k.txt"
    profiles+=("$out/links-$k.json")
    run_round "c$k" "$out/links-$k.json"
  done
  "$tool" calibrate --merge "$(IFS=,; echo "${profiles[*]}")" -o "$out/links.json" >"$out/merge.txt" || {
    echo "calibrate --merge failed"; exit 2; }
  tail -n 1 "$out/merge.txt"
  python3 bench/prediction_error.py "${single_cold[@]}" >"$out/prediction-single.txt"
  python3 bench/prediction_error.py "${single_warm[@]}" >"$out/prediction-single-warm.txt"
  echo "== one calibration each, cold pools"
  tail -n 3 "$out/prediction-single.txt"
  echo "== one calibration each, with --warm-up"
  tail -n 3 "$out/prediction-single-warm.txt"
elif [ "$mode" = none ]; then
  given=${PROFILE:-h200}
  [ "$given" = h200 ] && given=runtime/model/profiles/h200.json
  cp "$given" "$out/links.json" || { echo "no profile $given"; exit 2; }
elif [ "$mode" = once ]; then
  calibrate "$out/links.json" "$out/calibrate.txt"
  tail -n 30 "$out/calibrate.txt"
fi
for r in $(seq 1 "$rounds"); do
  run_round "r$r" "$out/links.json"
done

if [ ${#cold[@]} -eq 0 ]; then
  echo "no example ran on this machine ($devices GPUs)"; exit 2
fi
echo "== cold pools"
python3 bench/prediction_error.py "${cold[@]}" | tee "$out/prediction.txt"
echo "== with --warm-up"
python3 bench/prediction_error.py "${warm_runs[@]}" | tee "$out/prediction-warm.txt"
table=${PIPESTATUS[0]}
[ "$status" != 0 ] && exit "$status"
exit "$table"
