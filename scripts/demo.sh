#!/usr/bin/env bash
# Installs dependencies, builds fhr-plan and explains a bundled example.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target fhr-plan
./build/tools/fhr-plan explain examples/inference.fhr
