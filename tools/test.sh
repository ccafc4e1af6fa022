#!/usr/bin/env bash
# Set-up, build and run every test suite: release; debug with ASan+UBSan and REHEAP_CHECKS;
# ThreadSanitizer (the heap's concurrent part is the zone; the runtime's will be more).
# Also checks that an installed reheap is usable with find_package(reheap) and pkg-config, and
# runs tools/fuzz.sh: the snapshot loader's regression inputs, then REHEAP_FUZZ_SECONDS (20) of
# fuzzing; its one-line summary ends the output.
# Usage: bash tools/test.sh [preset...]   (default: release asan tsan install fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release asan tsan install fuzz)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0
failed=0
fuzz_summary=
for preset in "${presets[@]}"; do
  if [ "$preset" = install ]; then
    bash tools/check_install.sh
    continue
  fi
  if [ "$preset" = fuzz ]; then
    echo "== fuzz: regression inputs, then the snapshot loader for ${REHEAP_FUZZ_SECONDS:-20} s"
    # fuzz.sh prints a few progress lines, one block per crash and a last line starting with
    # "fuzz:" that sums the run up; that line goes into the summary below.
    status=0
    bash tools/fuzz.sh "${REHEAP_FUZZ_SECONDS:-20}" 2>&1 | tee "$log" || status=$?
    fuzz_summary=$(grep '^fuzz: ' "$log" | tail -1)
    [ "$status" -eq 0 ] || { echo "tests: $passed passed, $failed failed; ${fuzz_summary:-fuzz: FAILED}"; exit "$status"; }
    continue
  fi
  echo "== $preset: configure and build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  echo "== $preset: test"
  status=0
  ctest --preset "$preset" 2>&1 | tee "$log" || status=$?
  # "100% tests passed, 0 tests failed out of 78"
  read -r nfail ntotal < <(sed -nE 's/.* ([0-9]+) tests failed out of ([0-9]+).*/\1 \2/p' "$log" | tail -1)
  passed=$((passed + ${ntotal:-0} - ${nfail:-0}))
  failed=$((failed + ${nfail:-0}))
  [ "$status" -eq 0 ] || { echo "tests: $passed passed, $failed failed"; exit "$status"; }
done
echo "tests: $passed passed, $failed failed${fuzz_summary:+; $fuzz_summary}"
