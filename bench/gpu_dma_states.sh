#!/usr/bin/env bash
# The small DMAs' states on the GPU machine (issue #14, the 5 us bound):
# what a warm device pool takes to hand out a block, and what a DMA
# between pinned memory and a device takes after the plans' states (a
# short DMA, a long one, a load, a fill, a host copy). One call, about a
# minute on the H200 machine.
#
#   bench/gpu_dma_states.sh FHR-PLAN POOL_REUSE OUT [PROFILE]
#
# FHR-PLAN and POOL_REUSE are the binaries built here (build-release,
# sm_90, the CUDA runtime static); PROFILE is the link profile the runs
# predict with (default h200, the shipped one). OUT receives
# pool_reuse.md (bench/pool_reuse.cpp: each block's cudaMallocAsync after
# a warm-up), NAME.run.json per plan (`run --backend cuda --warm-up
# --repeat 7 --format json`), NAME.err, and dma-states.md: every DMA of up
# to 16 MiB of those runs beside the state it met (bench/dma_states.py).
# The plans: bench/plans/dma-history.fhr, dma-after-long-copy.fhr,
# between-size-classes.fhr, and dma-after-host-work.fhr with a 16 MiB
# query (dahw16). Exit 2 when a binary or a run fails.
set -uo pipefail

tool=${1:?usage: gpu_dma_states.sh FHR-PLAN POOL_REUSE OUT [PROFILE]}
pool_reuse=${2:?usage: gpu_dma_states.sh FHR-PLAN POOL_REUSE OUT [PROFILE]}
out=${3:?usage: gpu_dma_states.sh FHR-PLAN POOL_REUSE OUT [PROFILE]}
profile=${4:-h200}
here=$(dirname "$0")
mkdir -p "$out"
rm -f "$out"/*.run.json "$out"/*.err
status=0

"$pool_reuse" 9 >"$out/pool_reuse.md" 2>"$out/pool_reuse.err" || { echo "pool_reuse failed"; status=2; }

sed 's/^const query_bytes = 30 MiB/const query_bytes = 16 MiB/' "$here/plans/dma-after-host-work.fhr" \
  >"$out/dahw16.fhr"
documents=()
for plan in "$here/plans/dma-history.fhr" "$here/plans/dma-after-long-copy.fhr" \
  "$here/plans/between-size-classes.fhr" "$out/dahw16.fhr"; do
  name=$(basename "$plan" .fhr)
  timeout 120 "$tool" run --backend cuda --warm-up --repeat 7 --profile "$profile" --format json "$plan" \
    >"$out/$name.run.json" 2>"$out/$name.err" || { echo "$name: run failed"; status=2; }
  documents+=("$out/$name.run.json")
done
python3 "$here/dma_states.py" "${documents[@]}" >"$out/dma-states.md" || status=2
cat "$out/pool_reuse.md" "$out/dma-states.md"
exit "$status"
