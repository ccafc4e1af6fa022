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
# Each test stage also says `<preset> tests: N passed, M failed, K skipped` and lists every skipped
# test with its reason (the GTEST_SKIP message, or a script's `SKIP:` line), read from ctest's
# JUnit report by tools/test_report.py; a skip is not a pass. The last line sums the stages up:
#   tests: N passed, M failed, K skipped; fuzz: ...
# A test skips only where the machine lacks what its reason names (a kernel feature, root, a
# client program); a case that means something only in another build is not registered in this one.
# Usage: bash tools/test.sh [stage...]   (default: release asan tsan install fuzz)
set -euo pipefail
cd "$(dirname "$0")/.."
bash tools/setup.sh
presets=("$@")
[ ${#presets[@]} -gt 0 ] || presets=(release asan tsan install fuzz)
log=$(mktemp)
junit=$(mktemp)
trap 'rm -f "$log" "$junit"' EXIT
passed=0
failed=0
skipped=0
fuzz_summary=
counts() { echo "tests: $passed passed, $failed failed, $skipped skipped"; }

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
    [ "$status" -eq 0 ] || { echo "$(counts); ${fuzz_summary:-fuzz: FAILED}"; exit "$status"; }
    end_stage fuzz
    continue
  fi
  echo "== $preset: configure and build"
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
  echo "== $preset: test"
  status=0
  : >"$junit"  # a stage whose ctest writes no report must not read the last stage's
  # The JUnit report keeps each test's output, where a skipped test's reason is; a passed (or
  # skipped) test's output is kept whole, not cut at ctest's default of 1 KiB.
  ctest --preset "$preset" --output-junit "$junit" --test-output-size-passed 65536 2>&1 \
    | tee "$log" || status=$?
  if read -r p f s < <(python3 tools/test_report.py --counts "$junit") && [ -n "$s" ]; then
    passed=$((passed + p))
    failed=$((failed + f))
    skipped=$((skipped + s))
    echo "== $preset tests: $p passed, $f failed, $s skipped"
    [ "$s" -eq 0 ] || { echo "skipped:"; python3 tools/test_report.py "$junit"; }
  else
    echo "== $preset: ctest wrote no readable JUnit report: the counts are unknown"
    [ "$status" -ne 0 ] || status=1
  fi
  [ "$status" -eq 0 ] || { counts; exit "$status"; }
  end_stage "$preset"
done
echo "$(counts)${fuzz_summary:+; $fuzz_summary}"
