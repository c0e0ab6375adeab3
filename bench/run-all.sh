#!/usr/bin/env bash
# Every table of docs/benchmarks.md in one go (issue #15), from prebuilt
# binaries: on the GPU machine all of them, elsewhere the host-only ones.
#
#   bench/run-all.sh BUILD_DIR [OUT_DIR] [--host-only]
#
# BUILD_DIR holds the binaries, either as a build tree (bench/, tools/) or
# flat in one folder: generate_plan, explain_bench, bytecode_bench,
# runtime_bench, fhr-plan, and cuda_bench and cuda_phases for the GPU tables. Build them
# (on the developer machine; the CUDA backend is host code, the CUDA
# runtime linked statically) with:
#
#   cmake -S . -B build-release -G Ninja -DCMAKE_BUILD_TYPE=Release -DBUILD_TESTING=OFF
#   cmake --build build-release --target generate_plan explain_bench bytecode_bench runtime_bench cuda_bench \
#     cuda_phases fhr-plan
#
# Each step has its own time limit, so the whole stays under 10 minutes;
# a step that fails or runs out says so in its output and the rest go on.
# OUT_DIR (default bench-results) gets one .md file per section, ready to
# paste, and all.md with everything; the exit status is 1 if any step failed.
set -u
if [ $# -lt 1 ]; then
  echo "usage: $0 BUILD_DIR [OUT_DIR] [--host-only]" >&2
  exit 2
fi
build=$(cd "$1" && pwd)
out=${2:-bench-results}
host_only=0
for arg in "$@"; do [ "$arg" = "--host-only" ] && host_only=1; done
[ "${out}" = "--host-only" ] && out=bench-results
mkdir -p "$out"
out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
failed=0

binary() { # the path of a binary in a build tree or a flat folder
  for candidate in "$build/bench/$1" "$build/tools/$1" "$build/$1"; do
    [ -x "$candidate" ] && { echo "$candidate"; return 0; }
  done
  return 1
}

# step NAME LIMIT_S COMMAND...: runs COMMAND with a time limit, its output
# (stdout and stderr) into OUT/NAME.md, and says how it went.
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  timeout "$limit" "$@" > "$out/$name.md" 2>&1
  local rc=$?
  [ $rc -eq 124 ] && echo "(stopped after ${limit} s)" >> "$out/$name.md"
  [ $rc -ne 0 ] && failed=1
  printf '%-28s rc=%d  %3d s\n' "$name" "$rc" $((SECONDS - start))
}

machine() {
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ //'), $(nproc) cores"
  echo "memory: $(free -g | awk '/Mem:/ {print $2}') GiB"
  command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  echo "commit: $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)"
}
machine > "$out/machine.md"

core=$(($(nproc) > 1 ? 1 : 0)) # one core, not the first (interrupts)
big="$out/big.fhr"
if gen=$(binary generate_plan); then
  "$gen" 1000000 10000 > "$big"
else
  echo "no generate_plan in $build: the explain, bytecode and command-line tables are skipped"
  failed=1
fi

# Host tables: explain, bytecode, the command line, the runtime overheads.
if [ -f "$big" ] && explain=$(binary explain_bench); then
  step explain 60 bash -c "for i in 1 2; do taskset -c $core '$explain' '$big' 3; done"
fi
if [ -f "$big" ] && bytecode=$(binary bytecode_bench); then
  step bytecode 50 bash -c "for i in 1 2 3 4 5; do taskset -c $core '$bytecode' '$big' 20; done"
fi
if [ -f "$big" ] && plan=$(binary fhr-plan); then
  step command-line 30 bash -c "taskset -c $core /usr/bin/time -f '%e s, %M KiB' '$plan' check '$big';
    taskset -c $core /usr/bin/time -f '%e s, %M KiB' '$plan' explain '$big' > /dev/null"
fi
if runtime=$(binary runtime_bench); then
  # Two invocations: a target holds only if it holds in both.
  step runtime-1 45 taskset -c $core "$runtime" 7
  step runtime-2 45 taskset -c $core "$runtime" 7
  step runtime-instructions 50 bash -c "command -v valgrind > /dev/null || { echo 'valgrind not installed'; exit 0; }
    echo '| per operation | instructions |'; echo '|---|---|'
    for op in noop lease lease100 device100 pinned reap; do
      a=\$(valgrind --tool=callgrind --callgrind-out-file=/dev/null '$runtime' ops \$op 0 2>&1 | sed -n 's/.*Collected : //p')
      b=\$(valgrind --tool=callgrind --callgrind-out-file=/dev/null '$runtime' ops \$op 2000 2>&1 | sed -n 's/.*Collected : //p')
      echo \"| \$op | \$(( (b - a) / 2000 )) |\"
    done"
fi
rm -f "$big"

# GPU tables: the CUDA backend beside raw CUDA (its two-run rows twice), where a
# small ensure's time goes, the spread of staged copies, and the link profile
# with the predicted-against-measured tables.
if [ $host_only -eq 0 ]; then
  if cuda=$(binary cuda_bench); then
    step cuda-1 95 "$cuda" 7
    step cuda-2 60 "$cuda" 7 small leases # the rows whose targets want two runs
  else
    echo "no cuda_bench in $build: GPU tables skipped" | tee "$out/cuda-1.md"
    failed=1
  fi
  if phases=$(binary cuda_phases); then
    step cuda-phases 20 "$phases" 5
  else
    echo "no cuda_phases in $build: its table skipped" | tee "$out/cuda-phases.md"
    failed=1
  fi
  if [ -n "${cuda:-}" ]; then
    step cuda-staged 35 "$cuda" 5 staged
  fi
  if plan=$(binary fhr-plan); then
    # calibrate, every example from cold pools and with --warm-up, the tables
    step link-profile 100 bash -c "cd '$root' && bash bench/gpu_prediction.sh '$plan' '$out/prediction'"
  fi
fi

{
  for f in machine explain bytecode command-line runtime-1 runtime-2 runtime-instructions cuda-1 cuda-2 cuda-phases \
    cuda-staged link-profile; do
    [ -f "$out/$f.md" ] || continue
    printf '\n## %s\n\n' "$f"
    cat "$out/$f.md"
  done
} > "$out/all.md"
echo "tables: $out/all.md"
exit $failed
