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

# The ledger (examples/ledger): a service with a bug that fires only after a long run. It runs
# recorded until it fails and leaves a crash bundle; reheap-snap replays the bundle in a new
# process of the shipped program (the failure recurs) and of the fixed one (it does not); the
# test binary of the shipped build replays the bundle and fails the same way, the fixed build's
# test binary passes the same recording, and the fixed program runs on.
echo
cmake --build --preset release --target ledger ledger_fixed ledger_replay_test ledger_fix_test reheap-snap
status=0
build/release/examples/ledger/ledger --record "$dir/ledger" || status=$?
if [ "$status" != 1 ]; then
  echo "demo: the ledger was expected to fail and leave a crash bundle (exit status $status)" >&2
  exit 1
fi
bundle=$(ls -d "$dir"/ledger/reactor-*/crash-* | head -n 1)
ls -l "$bundle"
echo
status=0
build/release/tools/snap/reheap-snap replay "$bundle" || status=$?
if [ "$status" != 1 ]; then
  echo "demo: the shipped ledger was expected to fail its replay (exit status $status)" >&2
  exit 1
fi
build/release/tools/snap/reheap-snap replay "$bundle" --program build/release/examples/ledger/ledger_fixed
echo
LEDGER_BUNDLE="$bundle" build/release/examples/ledger/ledger_replay_test
echo
LEDGER_BUNDLE="$bundle" build/release/examples/ledger/ledger_fix_test
echo
build/release/examples/ledger/ledger_fixed --record "$dir/ledger-fixed" --seconds 5
