#!/usr/bin/env bash
# The Python package's GPU run (issues #11 and #13 part 5), on the GPU
# machine from the project root, with the folder .third_party carried
# (prepared here by `scripts/gpu-python.sh prepare`). Stages:
#   prepare   (here) copy FHElium, triton-csprng and the header-only
#             dependencies (nlohmann/json, xxHash, dlpack) into .third_party,
#             and compile the solved bootstrap program there
#             (.third_party/bootstrap-solved.fhrb, with this tree's fhr-plan:
#             the GPU machine's runtime-only build has no compiler)
#   build     build FHElium's native operators and fhr's runtime-only tree
#             with the CUDA backend and `_fhr` for that machine's Python
#             and pybind11
#   test      pytest tests/python (the GPU and FHElium cases run there;
#             FHR_PLAN, or else carried/fhr-plan, compiles .fhr text)
#   bench     bench/python_bench.py beside FHElium's manager
#   bootstrap tests/integration/fhelium_bootstrap.py: plain, trace (writes
#             $OUT/bootstrap-trace.json), then REPEATS (1) rounds of
#             unconstrained, lru (the §18 controller) and solved (the
#             compiled program, PLAN), interleaved; round k's three modes
#             share the seed k (the same keys and input) and run the
#             bootstrap RUNS (3) times in their process
#   solved    the solved mode alone, PLAN=path/to/plan.fhrb (default: the
#             one prepare compiled)
# Results (JSON lines) go to $OUT (or ./gpu-out).
set -euo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-$PWD/gpu-out}
mkdir -p "$out"
third=$PWD/.third_party
fhelium=/tmp/fhelium
plan=${PLAN:-$third/bootstrap-solved.fhrb}
export FHR_FHELIUM_PATH=$fhelium
export PYTHONPATH=$PWD/build-gpu/python:$fhelium:$third/triton-csprng

prepare() {
  mkdir -p "$third/include" "$third/cmake"
  # FHR_THIRD_PARTY: the folder holding fhelium-0.10.0 and triton-csprng
  # (outside the repository: FHElium is never copied into the project).
  local from=${FHR_THIRD_PARTY:?set FHR_THIRD_PARTY to the folder with fhelium-0.10.0 and triton-csprng}
  cp -r "$from/fhelium-0.10.0" "$from/triton-csprng" "$third/"
  cp -r /usr/include/nlohmann /usr/include/xxhash.h /usr/include/dlpack "$third/include/"
  cp -r /usr/share/cmake/nlohmann_json "$third/cmake/"
  local tool=${FHR_PLAN:-build/tools/fhr-plan}
  "$tool" compile bench/fhelium/bootstrap-solved.fhr -o "$third/bootstrap-solved.fhrb"
  grep -qx '/.third_party/' .git/info/exclude 2>/dev/null || echo '/.third_party/' >>"$(git rev-parse --git-path info/exclude)"
}

build() {
  # FHElium's native operators (about 100 s), once per machine.
  if [ ! -d "$fhelium/fhelium" ] || [ ! -d /tmp/fhelium-build ]; then
    rm -rf "$fhelium" && cp -r "$third/fhelium-0.10.0" "$fhelium"
    local torch_prefix
    torch_prefix=$(python3 -c "import torch; print(torch.utils.cmake_prefix_path)")
    (cd "$fhelium" && CUDAARCHS=90 cmake -S . -B /tmp/fhelium-build -G Ninja -DCMAKE_PREFIX_PATH="$torch_prefix" \
      -DCMAKE_BUILD_TYPE=Release -DFHELIUM_BUILD_CUDA=ON >/dev/null &&
      cmake --build /tmp/fhelium-build -j16 >/dev/null && cmake --install /tmp/fhelium-build --prefix "$fhelium/fhelium" >/dev/null)
  fi
  # nlohmann/json's CMake package is the machine's own when it has one; the
  # copied headers stand in for the header-only libraries it may lack.
  local prefix=()
  [ -e /usr/share/cmake/nlohmann_json ] || [ -e /usr/lib/cmake/nlohmann_json ] ||
    [ -e /usr/lib/x86_64-linux-gnu/cmake/nlohmann_json ] || prefix=(-DCMAKE_PREFIX_PATH="$third/cmake")
  cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DFHR_RUNTIME_ONLY=ON -DFHR_WITH_CUDA=ON \
    -DFHR_WERROR=OFF -DFHR_PYTHON=ON -DPython_EXECUTABLE="$(command -v python3)" -Dpybind11_DIR="$(python3 -m pybind11 --cmakedir)" \
    "${prefix[@]}" -DCMAKE_INCLUDE_PATH="$third/include" -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
  cmake --build build-gpu -j16 --target _fhr
}

run_tests() {
  # The runtime-only build has no compiler: the cases that compile .fhr
  # text use fhr-plan, the one built here and carried (docs/testing.md).
  if [ -z "${FHR_PLAN:-}" ] && [ -x carried/fhr-plan ]; then
    export FHR_PLAN=$PWD/carried/fhr-plan LD_LIBRARY_PATH=$PWD/carried/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  fi
  [ -n "${FHR_PLAN:-}" ] || echo "FHR_PLAN is not set and carried/fhr-plan is absent: the cases that compile .fhr text will skip" >&2
  python3 -m pytest -q -p no:cacheprovider -rs tests/python 2>&1 | tee "$out/pytest.txt"
}

bench() {
  python3 bench/python_bench.py --repeats 7 2>&1 | tee "$out/python_bench.txt"
}

bootstrap() {
  for mode in plain trace; do
    python3 tests/integration/fhelium_bootstrap.py --mode "$mode" --trace-out "$out/bootstrap-trace.json" |
      tee -a "$out/bootstrap.jsonl"
  done
  local round
  for round in $(seq "${REPEATS:-1}"); do
    local same=(--seed "$round" --repeats "${RUNS:-3}")
    python3 tests/integration/fhelium_bootstrap.py --mode unconstrained "${same[@]}" | tee -a "$out/bootstrap.jsonl"
    python3 tests/integration/fhelium_bootstrap.py --mode lru "${same[@]}" | tee -a "$out/bootstrap.jsonl"
    solved "${same[@]}"
  done
}

solved() {
  python3 tests/integration/fhelium_bootstrap.py --mode solved --plan "$plan" "$@" | tee -a "$out/bootstrap.jsonl"
}

for stage in "$@"; do
  case "$stage" in
  prepare) prepare ;;
  build) build ;;
  test) run_tests ;;
  bench) bench ;;
  bootstrap) bootstrap ;;
  solved) solved ;;
  *) echo "unknown stage '$stage' (prepare build test bench bootstrap solved)" >&2; exit 2 ;;
  esac
done
