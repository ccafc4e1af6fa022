#!/usr/bin/env bash
# Restart-then-restore cycles: runs one life of a restarted service N times, each a new process
# and so a new incarnation of node 5, against one data directory, and counts the restores that
# collided with a heap the process had just created (kRangeInUse). One life
# (tests/snapshot/restart_cycle.h): spawn 1 to 12 heaps that grow, restore the service's two
# snapshots, grow and shrink them, save them (one in place, one under a new name with the old one
# removed), save and delete a scratch snapshot.
#
# With a state directory (the default) every cycle must restore: the script fails on any
# collision or other failure. With --no-state-dir the incarnations are random and the script
# measures the odds of a collision per restart (heap/README.md, "Held for restore"); a collided
# cycle saves nothing, so the next one retries the same snapshots.
#
# Usage: bash tools/restart_cycles.sh [N] [--no-state-dir] [--build DIR]   (N defaults to 1000,
#        DIR to build/release; the snapshot_tests target must be built there)
set -uo pipefail
cd "$(dirname "$0")/.."
cycles=1000
state=1
build=build/release
while [ $# -gt 0 ]; do
  case $1 in
    --no-state-dir) state=0 ;;
    --build) build=$2; shift ;;
    [0-9]*) cycles=$1 ;;
    *) echo "usage: bash tools/restart_cycles.sh [N] [--no-state-dir] [--build DIR]" >&2; exit 2 ;;
  esac
  shift
done
binary="$build/tests/snapshot_tests"
if [ ! -x "$binary" ]; then
  echo "restart_cycles: $binary is missing: build the snapshot_tests target first" >&2
  exit 2
fi
work=$(mktemp -d "${TMPDIR:-/tmp}/reheap-restart-cycles-XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/data"
env_state=()
if [ "$state" = 1 ]; then env_state=("REHEAP_STATE_DIR=$work/state"); fi

RANDOM=42  # the same spawn counts in every run of the script
collisions=0
failures=0
first_failure=""
start=$(date +%s.%N)
for ((n = 0; n < cycles; n++)); do
  spawned=$((1 + RANDOM % 12))
  output=$(env REHEAP_NODE=5 "${env_state[@]}" "$binary" --restart-cycle "$work/data" "$spawned" "$n" 2>&1)
  status=$?
  if [ $status -eq 3 ]; then
    collisions=$((collisions + 1))
    [ -n "$first_failure" ] || first_failure="cycle $n: $output"
  elif [ $status -ne 0 ]; then
    failures=$((failures + 1))
    [ -n "$first_failure" ] || first_failure="cycle $n (exit $status): $output"
  fi
done
seconds=$(echo "$(date +%s.%N) - $start" | bc)
echo "restart_cycles: $cycles cycles $([ "$state" = 1 ] && echo with || echo without) a state directory" \
     "($build): $collisions collisions, $failures other failures," \
     "$(echo "scale=1; $seconds * 1000 / $cycles" | bc) ms a cycle ($(printf %.0f "$seconds") s in all)"
if [ "$state" = 0 ]; then
  echo "restart_cycles: collision rate $(echo "scale=3; $collisions / $cycles" | bc) per restart"
fi
[ -z "$first_failure" ] || echo "restart_cycles: first failure: $first_failure"
if [ "$state" = 1 ] && [ $((collisions + failures)) -ne 0 ]; then exit 1; fi
[ $failures -eq 0 ]
