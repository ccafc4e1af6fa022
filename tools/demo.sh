#!/usr/bin/env bash
# Set-up, build (release) and run the project's main job: the heap demo.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target heap_demo
exec build/release/examples/heap_demo
