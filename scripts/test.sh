#!/usr/bin/env bash
# Installs dependencies, then builds and runs the whole test suite twice
# (a normal build, the Python package's pytest suite included, whose
# sources clang-format and clang-tidy check, and an AddressSanitizer +
# UndefinedBehaviorSanitizer build), the runtime's concurrency stress test
# under ThreadSanitizer, the installed CMake package with a separate consumer
# project, a runtime-only build (no LLVM, PEGTL or doctest) with the Python
# package on it, then a short libFuzzer smoke run of the front end and
# simulator. The normal build's ctest includes the pictures' browser test,
# which needs Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
# Each stage reports its wall time and the CPU time of its processes (the
# second is what a loaded machine does not change; docs/testing.md records
# both for a quiet two-core machine).
stage_name="" stage_started=$SECONDS stage_cpu=0
children_cpu() { awk '{ printf "%d", ($16 + $17) / 100 }' /proc/$$/stat; }
stage() {
  local cpu
  cpu=$(children_cpu)
  [[ -n $stage_name ]] && echo "-- $stage_name: $((SECONDS - stage_started)) s wall, $((cpu - stage_cpu)) s CPU"
  stage_name=$1 stage_started=$SECONDS stage_cpu=$cpu
  [[ -n $stage_name ]] && echo "== $stage_name"
  return 0
}
trap 'stage ""; echo "-- all stages: $SECONDS s"' EXIT

stage "dependencies"
bash scripts/install-deps.sh --fuzz --browser --lint
jobs=$(nproc)
# No stage reads full debug information, and it costs a third of the compile
# time of the template-heavy sources: every build keeps line tables (-g1),
# enough for a sanitizer's stack trace. ThreadSanitizer and the fuzzers use
# -O1, as their documentation advises, which halves their compile time
# again; the AddressSanitizer build, the largest, uses -O0: 1,037 s of
# compile CPU time against about 1,650 at -O1, for tests that take 155 s
# against 151 (docs/testing.md).
normal_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG")
sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG")
address_sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O0 -g1 -DNDEBUG")
# The sanitizer builds skip what no test there runs: the CUDA backend (no GPU
# in CI), the Python package and the benchmarks (the install test needs the
# man page and completions: fhr-plan-reference).
sanitizer_targets=(--target fhr_tests fhr_runtime_tests fhr-plan fhr-plan-reference embedding_example)

stage "normal build"
cmake -S . -B build -G Ninja "${normal_flags[@]}" >/dev/null
cmake --build build -j "$jobs"
FHR_REQUIRE_CHROMIUM=1 ctest --test-dir build --output-on-failure -j "$jobs"

stage "format and lint (.clang-format, .clang-tidy)"
git ls-files '*.cpp' '*.hpp' '*.h' | xargs clang-format-14 --dry-run -Werror
git ls-files 'runtime/*.cpp' 'compiler/*.cpp' 'dsl/*.cpp' 'tools/*.cpp' 'planner/*.cpp' |
  xargs -P "$jobs" -n 8 clang-tidy-14 -p build --quiet --extra-arg=-Wno-unknown-warning-option

stage "AddressSanitizer + UndefinedBehaviorSanitizer build"
cmake -S . -B build-asan -G Ninja "${address_sanitizer_flags[@]}" -DFHR_SANITIZE=address,undefined \
  -DFHR_PYTHON=OFF -DFHR_WITH_CUDA=OFF >/dev/null
cmake --build build-asan -j "$jobs" "${sanitizer_targets[@]}"
# The bytecode mutants are about 30 times slower here: each byte takes the
# verifier's edge values, not all 255 (the normal build tries every one).
FHR_MUTATION_VALUES=edges ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE browser

stage "ThreadSanitizer build: the runtime tests, concurrency stress included"
cmake -S . -B build-tsan -G Ninja "${sanitizer_flags[@]}" -DFHR_SANITIZE=thread -DFHR_PYTHON=OFF \
  -DFHR_WITH_CUDA=OFF >/dev/null
cmake --build build-tsan -j "$jobs" --target fhr_runtime_tests
# The sizes-only case maps a terabyte of address space, which ThreadSanitizer's
# shadow memory cannot cover; it runs in the two builds above.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/tests/fhr_runtime_tests \
  "--test-case-exclude=*sizes-only*"

stage "the installed package: a separate project builds against it with find_package(fhr)"
prefix=$(mktemp -d)
cmake --install build --prefix "$prefix" >/dev/null
cmake -S examples/consumer -B build-consumer -G Ninja -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build build-consumer -j "$jobs"
grep -q "consumer: stage feasible, 1 transition, pinned holds 65536 bytes" <<<"$(./build-consumer/fhr_consumer)"
grep -q "setup completed; plan completed" <<<"$(./build-consumer/fhr_consumer_compiler)"
python_dir=$(find "$prefix" -name __init__.py -path "*/fhr/__init__.py" -printf "%h\n" | head -1)
PYTHONPATH=$(dirname "$python_dir") /usr/bin/python3 -c \
  "import sys, fhr; assert 'fhr._compiler' not in sys.modules and not [m for m in open('/proc/self/maps') if 'LLVM' in m]; print('import fhr: ok, no LLVM loaded')"

stage "runtime-only build (no LLVM, PEGTL or doctest) with the Python package; plan files through fhr-plan"
cmake -S . -B build-runtime-only -G Ninja "${normal_flags[@]}" -DFHR_RUNTIME_ONLY=ON -DFHR_WITH_CUDA=OFF >/dev/null
# (`! grep` would not stop the script: errexit ignores a negated command.)
if grep -q "^LLVM_DIR:" build-runtime-only/CMakeCache.txt; then
  echo "the runtime-only build looked for LLVM" >&2
  exit 1
fi
cmake --build build-runtime-only -j "$jobs"
runtime_prefix=$(mktemp -d)
cmake --install build-runtime-only --prefix "$runtime_prefix" >/dev/null
cmake -S examples/consumer -B build-consumer-runtime -G Ninja -DCMAKE_PREFIX_PATH="$runtime_prefix" >/dev/null
cmake --build build-consumer-runtime -j "$jobs"
grep -q "consumer: stage feasible" <<<"$(./build-consumer-runtime/fhr_consumer)"
FHR_PLAN=$PWD/build/tools/fhr-plan PYTHONPATH=$PWD/build-runtime-only/python \
  /usr/bin/python3 -m pytest -q -p no:cacheprovider -rs tests/python

stage "fuzz smoke runs (libFuzzer, ASan + UBSan)"
cmake -S . -B build-fuzz -G Ninja "${sanitizer_flags[@]}" -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DFHR_FUZZ=ON -DBUILD_TESTING=OFF -DFHR_PYTHON=OFF -DFHR_WITH_CUDA=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz_explain fuzz_module fuzz_workload fuzz_run
corpus=$(mktemp -d)
cp examples/*.fhr tests/golden/inputs/*.fhr "$corpus"/
runs=$(mktemp -d)
cp "$corpus"/*.fhr "$runs"/
./build-fuzz/fuzz/fuzz_explain -max_total_time="${FHR_FUZZ_SECONDS:-30}" -max_len=4096 -timeout=30 \
  -rss_limit_mb=2048 -dict=fuzz/fhr.dict "$corpus"
./build-fuzz/fuzz/fuzz_run -max_total_time="${FHR_FUZZ_SECONDS:-30}" -max_len=4096 -timeout=30 \
  -rss_limit_mb=2048 -dict=fuzz/fhr.dict "$runs"
modules=$(mktemp -d)
for example in examples/*.fhr; do
  ./build/tools/fhr-plan compile "$example" -o "$modules/$(basename "$example" .fhr).fhrb"
done
./build-fuzz/fuzz/fuzz_module -max_total_time="${FHR_FUZZ_SECONDS:-30}" -max_len=4096 -timeout=30 \
  -rss_limit_mb=2048 "$modules"
workloads=$(mktemp -d)
cp tests/golden/inputs/solve-*.json "$workloads"/
./build-fuzz/fuzz/fuzz_workload -max_total_time="${FHR_FUZZ_SECONDS:-30}" -max_len=4096 -timeout=30 \
  -rss_limit_mb=2048 -dict=fuzz/workload.dict "$workloads"
echo "fuzz smoke runs: no finding"
