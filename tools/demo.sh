#!/usr/bin/env bash
# Set-up, build (release) and run the demos: the heap, then a snapshot saved by one process and
# restored by another.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target heap_demo snapshot_demo
build/release/examples/heap_demo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo
build/release/examples/snapshot_demo save "$dir"
build/release/examples/snapshot_demo restore "$dir"
