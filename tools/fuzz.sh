#!/usr/bin/env bash
# Builds the libFuzzer targets (clang, ASan+UBSan) in build/fuzz and fuzzes the snapshot reader
# and restore for N seconds (default 60). Exits non-zero if the fuzzer finds a crash; the crashing
# input is left in build/fuzz/artifacts/ (reproduce: build/fuzz/tools/fuzz/snapshot_fuzz FILE).
# Usage: bash tools/fuzz.sh [seconds]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build/fuzz

# -fsanitize=fuzzer-no-link instruments the library too: without it libFuzzer sees coverage of
# the fuzz target's own file only, and cannot tell which mutants reach new code in the reader.
cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DREHEAP_FUZZ=ON \
  -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
  -DREHEAP_SANITIZE=address,undefined -DREHEAP_BUILD_TESTS=OFF -DREHEAP_BUILD_BENCH=OFF \
  -DREHEAP_BUILD_EXAMPLES=OFF -DREHEAP_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
cmake --build "$build" --target snapshot_fuzz -j "${REHEAP_FUZZ_JOBS:-2}"

fuzzer="$build/tools/fuzz/snapshot_fuzz"
corpus="$build/corpus/snapshot"
seeds="$build/seeds/snapshot"
mkdir -p "$corpus" "$seeds" "$build/artifacts"
# Seeds come from the fuzzer binary itself, so that their zone and layout match the process that
# restores them. They are regenerated each run: a rebuilt binary has a new layout.
rm -f "$seeds"/*.snap
REHEAP_FUZZ_WRITE_SEEDS="$seeds" "$fuzzer"

# Seeds are up to ~100 KiB (a heap with a page run); -max_len leaves room to grow a little.
# -rss_limit_mb is raised because restore maps zone chunks and ASan counts them.
"$fuzzer" "$corpus" "$seeds" -max_total_time="$seconds" -max_len=262144 -timeout=10 \
  -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$build/artifacts/"
