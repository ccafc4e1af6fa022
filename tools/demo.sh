#!/usr/bin/env bash
# Set-up, build (release) and run the demos: the heap, then a snapshot saved by one process and
# restored by another, then two reactors playing ping pong, one of them snapshotted mid-game and
# restored in a new process that finishes the game.
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
cmake --preset release >/dev/null
cmake --build --preset release --target heap_demo snapshot_demo ping_pong
build/release/examples/heap_demo
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
echo
build/release/examples/snapshot_demo save "$dir"
build/release/examples/snapshot_demo restore "$dir"
echo
build/release/examples/ping_pong --rounds 2000 --snapshot "$dir/pong.snap"
echo
build/release/examples/ping_pong --restore "$dir/pong.snap"
