#!/usr/bin/env bash
# Staged pageable transfers on the GPU machine: the two staging buffers in
# turn (the default) against the ring of slots (CudaBackendOptions::
# staging_slot_bytes, here through FHR_STAGING_SLOT_MIB), one build, the
# settings interleaved so that the host's slow and fast stretches fall on
# all of them (docs/benchmarks.md, thirtieth wave).
#
#   bench/gpu_staging_ring.sh FHR-PLAN OUT [SLOT-MIB ...]     (default 4 1 8)
#
# A slot is a power of two of MiB up to the staging chunk (32 MiB, or
# FHR_STAGING_CHUNK_MIB), as the backend takes it.
# From the repository root. For ROUNDS rounds (default 2), each setting
# runs bench/plans/staged-both-ways.fhr (every size of 4-240 MiB moved into
# cuda:0 and back, twice) with `run --backend cuda --warm-up --repeat 3`;
# then bench/plans/between-sampled-sizes.fhr once per setting. OUT
# receives the documents (runs/), both-ways.txt and sweep.txt
# (bench/compare_runs.py: each setting's step times beside the turn's, and
# per link and size class the median share and the total), and
# timeline.txt. Exit 2 when a run fails (its exit is in timeline.txt).
set -uo pipefail

tool=${1:?usage: gpu_staging_ring.sh FHR-PLAN OUT [SLOT-MIB ...]}
out=${2:?usage: gpu_staging_ring.sh FHR-PLAN OUT [SLOT-MIB ...]}
shift 2
slots=("$@")
[ ${#slots[@]} -gt 0 ] || slots=(4 1 8)
rounds=${ROUNDS:-2}
[[ "$rounds" =~ ^[1-9][0-9]{0,2}$ ]] || { echo "ROUNDS must be a whole number from 1 to 999, not $rounds"; exit 2; }
# A slot as the backend takes it: a power of two of MiB up to the chunk
# (resolved() would round any other, and the table would name a slot that
# did not run).
chunk=${FHR_STAGING_CHUNK_MIB:-32}
for slot in "${slots[@]}"; do
  if ! [[ "$slot" =~ ^[1-9][0-9]{0,3}$ ]] || (((slot & (slot - 1)) != 0 || slot > chunk)); then
    echo "a slot is a power of two of MiB from 1 to the chunk ($chunk), not $slot"
    exit 2
  fi
done
here=$(dirname "$0")
mkdir -p "$out/runs"
: >"$out/timeline.txt"
status=0
started=$SECONDS

# run SETTING PLAN DOCUMENT: one run of PLAN under SETTING (turn, or ringN).
run() {
  local setting=$1 plan=$2 document=$3
  echo "[$((SECONDS - started)) s] $setting $(basename "$plan")" >>"$out/timeline.txt"
  local environment=(env -u FHR_STAGING_SLOT_MIB)
  [ "$setting" = turn ] || environment=(env "FHR_STAGING_SLOT_MIB=${setting#ring}")
  "${environment[@]}" "$tool" run --backend cuda --warm-up --repeat 3 --format json "$plan" \
    >"$document" 2>>"$out/runs/errors.txt" || {
    echo "  exit $? ($setting, $document)" >>"$out/timeline.txt"
    status=2
  }
}

settings=(turn)
for slot in "${slots[@]}"; do settings+=("ring$slot"); done
for round in $(seq 1 "$rounds"); do
  for setting in "${settings[@]}"; do
    run "$setting" bench/plans/staged-both-ways.fhr "$out/runs/both-ways.$setting.r$round.json"
  done
done
for setting in "${settings[@]}"; do
  run "$setting" bench/plans/between-sampled-sizes.fhr "$out/runs/sweep.$setting.json"
done

# NAME=DOCUMENT,DOCUMENT,... per setting, the turn first.
sets() {
  local kind=$1 setting files
  for setting in "${settings[@]}"; do
    files=("$out/runs/$kind.$setting".*json)
    [ -e "${files[0]}" ] && (IFS=,; printf '%s=%s ' "$setting" "${files[*]}")
  done
}
# shellcheck disable=SC2046 # one argument per setting
python3 "$here/compare_runs.py" $(sets both-ways) >"$out/both-ways.txt" 2>&1 || status=2
# shellcheck disable=SC2046
python3 "$here/compare_runs.py" $(sets sweep) >"$out/sweep.txt" 2>&1 || status=2
echo "[$((SECONDS - started)) s] done" >>"$out/timeline.txt"
tail -n 6 "$out/both-ways.txt" "$out/sweep.txt"
exit "$status"
