#!/usr/bin/env bash
# Installs dependencies, then builds and runs the whole test suite twice
# (a normal build and an AddressSanitizer + UndefinedBehaviorSanitizer
# build), the runtime's concurrency stress test under ThreadSanitizer, then
# a short libFuzzer smoke run of the front end and simulator. The normal
# build's ctest includes the pictures' browser test, which needs Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh --fuzz --browser
jobs=$(nproc)

echo "== normal build"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build build -j "$jobs"
FHR_REQUIRE_CHROMIUM=1 ctest --test-dir build --output-on-failure -j "$jobs"

echo "== AddressSanitizer + UndefinedBehaviorSanitizer build"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFHR_SANITIZE=address,undefined >/dev/null
cmake --build build-asan -j "$jobs"
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
  ctest --test-dir build-asan --output-on-failure -j "$jobs" -LE browser

echo "== ThreadSanitizer build: the runtime tests, concurrency stress included"
cmake -S . -B build-tsan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DFHR_SANITIZE=thread >/dev/null
cmake --build build-tsan -j "$jobs" --target fhr_runtime_tests
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" ./build-tsan/tests/fhr_runtime_tests

echo "== fuzz smoke runs (libFuzzer, ASan + UBSan)"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang-14 \
  -DCMAKE_CXX_COMPILER=clang++-14 -DFHR_FUZZ=ON -DBUILD_TESTING=OFF >/dev/null
cmake --build build-fuzz -j "$jobs" --target fuzz_explain fuzz_module
corpus=$(mktemp -d)
cp examples/*.fhr tests/golden/inputs/*.fhr "$corpus"/
./build-fuzz/fuzz/fuzz_explain -max_total_time="${FHR_FUZZ_SECONDS:-30}" -max_len=4096 -timeout=30 \
  -rss_limit_mb=2048 -dict=fuzz/fhr.dict "$corpus"
modules=$(mktemp -d)
for example in examples/*.fhr; do
  ./build/tools/fhr-plan compile "$example" -o "$modules/$(basename "$example" .fhr).fhrb"
done
./build-fuzz/fuzz/fuzz_module -max_total_time="${FHR_FUZZ_SECONDS:-30}" -max_len=4096 -timeout=30 \
  -rss_limit_mb=2048 "$modules"
echo "fuzz smoke runs: no finding"
