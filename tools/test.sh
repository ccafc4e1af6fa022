#!/usr/bin/env bash
# Set-up, build and run every test suite: release; debug with ASan+UBSan and REHEAP_CHECKS;
# ThreadSanitizer (the heap's concurrent part is the zone; the runtime's will be more).
# Also checks that an installed reheap is usable with find_package(reheap) and pkg-config.
# Usage: bash tools/test.sh [preset...]   (default: release asan tsan install)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release asan tsan install)
for preset in "${presets[@]}"; do
  if [ "$preset" = install ]; then
    bash tools/check_install.sh
    continue
  fi
  echo "== $preset: configure and build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  echo "== $preset: test"
  ctest --preset "$preset"
done
