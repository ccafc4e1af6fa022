#!/usr/bin/env bash
# Set-up, then every test suite, in stages:
#   release  builds everything (benchmarks, tools, demos) and runs every test
#   asan     ASan+UBSan with the heap's misuse checks (REHEAP_CHECKS): every test
#   tsan     ThreadSanitizer: builds and runs the suites of code that runs on several threads
#            (ctest label `concurrent`: the zone, the message allocator, the runtime's workers and
#            mailboxes; cmake/reheap_tests.cmake says how a suite gets the label)
#   install  installs the release build into a temporary prefix and builds consumers of it with
#            find_package(reheap) and pkg-config (tools/check_install.sh)
#   fuzz     tools/fuzz.sh: the snapshot loader's regression inputs, then REHEAP_FUZZ_SECONDS (20)
#            of fuzzing; its one-line summary ends the output
# Each stage ends with a line giving its wall time and its CPU time (user+sys of everything it
# ran), so that a run on a loaded machine still says what each stage costs.
# Usage: bash tools/test.sh [stage...]   (default: release asan tsan install fuzz)
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

# CPU seconds (user+sys) of the children this shell has waited for so far.
cpu_seconds() {
  local stat
  read -r stat </proc/$$/stat
  stat=${stat##*) }  # the fields after the command name, which may hold spaces
  set -- $stat
  echo $(((${14} + ${15}) / $(getconf CLK_TCK)))
}
minutes() { printf '%dm%02ds' $(($1 / 60)) $(($1 % 60)); }
stage_started=0
stage_cpu=0
start_stage() { stage_started=$SECONDS; stage_cpu=$(cpu_seconds); }
end_stage() {  # name
  echo "== $1: $(minutes $((SECONDS - stage_started))) wall, $(minutes $(($(cpu_seconds) - stage_cpu))) CPU"
}

for preset in "${presets[@]}"; do
  start_stage
  if [ "$preset" = install ]; then
    bash tools/check_install.sh
    end_stage install
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
    end_stage fuzz
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
  end_stage "$preset"
done
echo "tests: $passed passed, $failed failed${fuzz_summary:+; $fuzz_summary}"
