#!/usr/bin/env bash
# Builds the snapshot fuzzer (clang, ASan+UBSan, libFuzzer) in build/fuzz, replays the regression
# inputs, then fuzzes the snapshot reader and restore for N seconds (default 60).
#
#   1. Build the fuzz target only (build log: build/fuzz/build.log).
#   2. Seeds and hostile inputs, written by the fuzzer binary itself: their zone and chunk
#      placement must match the process that restores them, and a rebuilt binary may differ.
#   3. Replay, each input in its own process: every file of ../shared/regressions (inputs that
#      crashed before, kept by reviewers; skipped if the directory is absent), of
#      tools/fuzz/regressions (inputs the fuzzer found, kept by us) and every generated
#      hostile input (tools/fuzz/hostile_inputs.h). A crash fails the run before any fuzzing.
#   4. Fuzz in one process, each input recorded in a black box (tools/fuzz/black_box.h) first, so
#      that even a crash that kills the process outright, with no handler left to write libFuzzer's
#      artefact or a sanitizer report, still names its input.
#
# Every crash is reported in one block: the input's path, the mutation that made it, how far it
# got, the command that reproduces it, whether it crashes again in a fresh process, and the tail
# of the sanitizer report. The last line starts with "fuzz:" and sums up the run (test.sh shows it).
#
# Usage: bash tools/fuzz.sh [seconds]
# Environment:
#   REHEAP_FUZZ_SEED=N        libFuzzer's seed (every run prints the one it used)
#   REHEAP_FUZZ_KEEP_GOING=1  fuzz even when a regression input crashes (the run still fails)
#   REHEAP_FUZZ_COLLECT=1     find many crashes rather than stop at the first: a new session after
#                             each crash, then every crashing input is replayed and grouped by stack
#   REHEAP_FUZZ_JOBS=N        build parallelism (default 2)
set -uo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-60}
build=build/fuzz
fuzzer="$build/tools/fuzz/snapshot_fuzz"
corpus="$build/corpus/snapshot"
seeds="$build/seeds/snapshot"
generated="$build/regressions"
artifacts="$build/artifacts"
boxes="$build/blackbox"
shared_regressions=${REHEAP_FUZZ_SHARED_REGRESSIONS:-../shared/regressions}
mkdir -p "$corpus" "$seeds" "$generated" "$artifacts" "$boxes"
# UBSan prints no stack by default, and a report without one does not say which caller lied.
export UBSAN_OPTIONS="print_stacktrace=1${UBSAN_OPTIONS:+:$UBSAN_OPTIONS}"

# What an exit status means, in the words of whoever chose it.
describe_status() {
  case $1 in
    0) echo "exit 0" ;;
    1) echo "exit 1 (a sanitizer report)" ;;
    70) echo "exit 70 (libFuzzer: timeout)" ;;
    71) echo "exit 71 (libFuzzer: out of memory)" ;;
    77) echo "exit 77 (libFuzzer's crash handler: a signal or abort)" ;;
    124 | 137) echo "exit $1 (killed by timeout(1): the process hung)" ;;
    *) if [ "$1" -gt 128 ]; then
         echo "killed by SIG$(kill -l $(($1 - 128)) 2>/dev/null) (no handler ran: nothing caught it)"
       else
         echo "exit $1"
       fi ;;
  esac
}

# The report in a log: from the first line of a sanitizer, libFuzzer or oracle message on, without
# libFuzzer's and libc's own frames, addresses and parameter lists (the function name and the
# source line are what a reader needs).
report_tail() {
  awk -v root="$PWD/" '
    !on && /ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|libFuzzer)|runtime error:|^(snapshot_fuzz|reheap): |^ALARM:/ { on = 1 }
    !on || /^(INFO:|MS:|artifact_prefix|Base64:|stat::|Test unit written|SUMMARY: libFuzzer|NOTE: libFuzzer|Executed |==[0-9]+==ABORTING)/ { next }
    / in (fuzzer::|__sanitizer_|__GI_|__pthread_kill|__libc_start|abort|raise|gsignal)|libc\.so|<unknown module>|Combine libFuzzer|can not provide additional info|^ *$/ { next }
    /^ *#[0-9]+ |^SUMMARY:/ {
      gsub(/\(anonymous namespace\)::/, "")
      while (gsub(/\([^()]*\)/, "")) {}
      sub(/ 0x[0-9a-f]+ in /, " in ")
      if (/ in (main|_start) *$/) next
    }
    { gsub(root, ""); print "    " $0; if (++n == 20) exit }' "$1" | cut -c1-200
}

# Runs one input in a fresh process; the stage it reached is left in $replay_stage.
replay() {  # input log
  local box="$boxes/replay" line status
  rm -rf "$box" && mkdir -p "$box"
  # In a subshell whose stderr is discarded: bash announces a child killed by a signal
  # ("Segmentation fault") on its own stderr, out of place; the block below says it instead.
  (REHEAP_FUZZ_BLACKBOX_DIR="$box" timeout -k 5 120 "$fuzzer" -timeout=5 -rss_limit_mb=4096 "$1" >"$2" 2>&1
   exit $?) 2>/dev/null
  status=$?
  line=$(REHEAP_FUZZ_BLACKBOX_DIR="$box" REHEAP_FUZZ_EXTRACT="$box" "$fuzzer" 2>/dev/null | head -1)
  replay_stage=$(printf '%s' "$line" | cut -f2)
  rm -rf "$box"
  return $status
}

crashes=0
# One block per crashing input. `log` is the failed run's output; `fresh` = yes replays the input
# in a new process first (for crashes found while fuzzing: is the input alone enough?).
crash_block() {  # input made_by stage status log fresh
  local input=$1 made_by=$2 stage=$3 status=$4 log=$5 fresh=$6 replay_log="$build/replay.log" again=
  crashes=$((crashes + 1))
  if [ "$stage" = "between inputs" ]; then
    again="not replayed: no input was running (the crash is in the mutator or libFuzzer; see the report)"
  elif [ "$fresh" = yes ] && [ -f "$input" ]; then
    replay "$input" "$replay_log"
    local again_status=$?
    if [ "$again_status" -eq 0 ]; then
      again="does NOT crash: it needs state that earlier inputs of the session left (rerun with REHEAP_FUZZ_SEED=$seed)"
    else
      again="crashes too, $(describe_status "$again_status")${replay_stage:+, while $replay_stage}"
    fi
  fi
  echo "==================== fuzz: crash $crashes ===================="
  echo "input:      $input"
  echo "made by:    $made_by" | cut -c1-600
  echo "stage:      ${stage:-unknown} ($(describe_status "$status"))"
  [ -z "$again" ] || echo "fresh run:  $again"
  echo "reproduce:  $fuzzer $input"
  echo "            (REHEAP_FUZZ_VERBOSE=1 also prints what the reader and restore said)"
  echo "report:"
  local tail_text
  tail_text=$(report_tail "$log")
  [ -n "$tail_text" ] || { [ "$fresh" != yes ] || tail_text=$(report_tail "$replay_log"); }
  if [ -n "$tail_text" ]; then
    echo "$tail_text"
  else
    echo "    (none: the process died before any handler could report; the stage above is the black box's)"
  fi
  echo "=========================================================="
}

# The signature of a crash, for grouping: the error and the first frame in the library, or the
# message (a fuzz oracle's, or the library's own fatal one) with its numbers blanked.
signature() {  # log
  local kind frame
  kind=$(grep -m1 -oE 'AddressSanitizer: [A-Za-z-]+|runtime error: .*|libFuzzer: (timeout|out-of-memory)|^(snapshot_fuzz|reheap): .*' "$1" |
         sed -E 's/0x[0-9a-f]+/ADDR/g; s/[0-9]+/N/g' | cut -c1-90)
  frame=$(grep -m1 -E '#[0-9]+ .* in .* [^ ]*/heap/src/[^ ]+' "$1" |
          sed -E 's/\(anonymous namespace\):://g; s/.* in (reheap::)?(detail::)?([A-Za-z_:~]+).* [^ ]*\/heap\/src\/([^ :]+(:[0-9]+)?).*/\3 \4/')
  echo "${kind:-no report}${frame:+ in $frame}"
}

echo "-- building $build (log: $build/build.log)"
# -fsanitize=fuzzer-no-link instruments the library too: without it libFuzzer sees coverage of
# the fuzz target's own file only, and cannot tell which mutants reach new code in the reader.
if ! { cmake -S . -B "$build" -G Ninja -DCMAKE_CXX_COMPILER=clang++ -DREHEAP_FUZZ=ON \
         -DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link \
         -DREHEAP_SANITIZE=address,undefined -DREHEAP_BUILD_TESTS=OFF -DREHEAP_BUILD_BENCH=OFF \
         -DREHEAP_BUILD_EXAMPLES=OFF -DREHEAP_BUILD_TOOLS=OFF -DCMAKE_BUILD_TYPE=RelWithDebInfo &&
       cmake --build "$build" --target snapshot_fuzz -j "${REHEAP_FUZZ_JOBS:-2}"; } >"$build/build.log" 2>&1; then
  tail -30 "$build/build.log"
  echo "fuzz: FAILED: the fuzz target does not build (see $build/build.log)"
  exit 1
fi

# Seeds and hostile inputs are regenerated each run: a rebuilt binary has a new layout. Each
# generator runs as node 0's first incarnation (a fresh state directory), whose heaps start at
# the first chunk of the node's slice: a random incarnation would place them at one of eight
# windows (zone.h), and the hostile inputs find header fields by their values.
rm -f "$seeds"/*.snap "$generated"/*.snap
first_incarnation() { rm -rf "$build/state" && mkdir -p "$build/state" && echo "$build/state"; }
if ! REHEAP_NODE=0 REHEAP_STATE_DIR="$(first_incarnation)" REHEAP_FUZZ_WRITE_SEEDS="$seeds" "$fuzzer" \
       >"$build/seeds.log" 2>&1 ||
   ! REHEAP_NODE=0 REHEAP_STATE_DIR="$(first_incarnation)" REHEAP_FUZZ_WRITE_REGRESSIONS="$generated" \
       "$fuzzer" >"$build/regressions.log" 2>&1; then
  cat "$build/seeds.log" "$build/regressions.log" 2>/dev/null | grep -v '^INFO' | tail -20
  echo "fuzz: FAILED: the fuzzer could not write its seeds or hostile inputs"
  exit 1
fi

inputs=()
if [ -d "$shared_regressions" ]; then
  for f in "$shared_regressions"/*; do
    case $f in *.md | *.txt) continue ;; esac  # their descriptions, not inputs
    [ -f "$f" ] && inputs+=("$f")
  done
fi
for f in tools/fuzz/regressions/*; do
  case $f in *.md) continue ;; esac
  [ -f "$f" ] && inputs+=("$f")
done
inputs+=("$generated"/*.snap)
echo "-- replaying ${#inputs[@]} regression inputs ($(ls "$seeds" | wc -l) seeds written)"
replay_failed=0
for f in "${inputs[@]}"; do
  replay "$f" "$build/replay.log"
  status=$?
  if [ "$status" -eq 0 ]; then
    echo "   ok     $f"
    continue
  fi
  echo "   CRASH  $f"
  lie=$(grep -F "wrote $f: " "$build/regressions.log" | sed 's/^[^:]*: //')
  crash_block "$f" "${lie:-a kept regression input (see the README beside it)}" "$replay_stage" "$status" \
    "$build/replay.log" no
  replay_failed=$((replay_failed + 1))
done
replayed="${#inputs[@]} regression inputs replayed, $replay_failed crashed"
if [ "$replay_failed" -ne 0 ] && [ "${REHEAP_FUZZ_KEEP_GOING:-0}" != 1 ]; then
  echo "fuzz: FAILED: $replay_failed of ${#inputs[@]} regression inputs crash (not fuzzed; REHEAP_FUZZ_KEEP_GOING=1 fuzzes anyway)"
  exit 1
fi

seed=${REHEAP_FUZZ_SEED:-$(($(od -An -N4 -tu4 /dev/urandom | tr -d ' ') % 2147483646 + 1))}
collect=${REHEAP_FUZZ_COLLECT:-0}
log="$build/fuzz.log"
rm -f "$boxes"/blackbox-*
marker="$build/fuzz.started"
touch "$marker"
# Seeds are up to ~170 KiB (a heap with page runs); -max_len leaves room to grow a little.
# -rss_limit_mb is raised because restore maps zone chunks and ASan counts them.
options=(-max_len=262144 -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 -artifact_prefix="$artifacts/")
echo "-- fuzzing for $seconds s (seed $seed; log: $log)"
# One in-process session; in collect mode, a new session (next seed) after each crash until the
# time is up. Restarting costs a pass over the corpus, a fraction of a second, far less than
# libFuzzer's -fork mode, which merges corpora between its short jobs.
: >"$log"
started=$SECONDS
executions=0
sessions=0
while :; do
  remaining=$((seconds - (SECONDS - started)))
  [ "$remaining" -gt 0 ] || [ "$sessions" -eq 0 ] || break
  sessions=$((sessions + 1))
  (REHEAP_FUZZ_BLACKBOX_DIR="$boxes" "$fuzzer" "$corpus" "$seeds" -seed=$((seed + sessions - 1)) \
     -max_total_time=$((remaining > 0 ? remaining : 1)) "${options[@]}" >"$log.session" 2>&1; exit $?) 2>/dev/null
  status=$?
  cat "$log.session" >>"$log"
  # libFuzzer prints its count at the end and after a crash it caught; after a death it could
  # not catch, its last status line is the best count there is.
  n=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+)/\1/p' "$log.session" | tail -1)
  [ -n "$n" ] || n=$(grep -oE '^#[0-9]+' "$log.session" | tail -1 | tr -d '#')
  executions=$((executions + ${n:-0}))
  [ "$collect" = 1 ] && [ "$status" -ne 0 ] || break
done
rm -f "$log.session"
elapsed=$((SECONDS - started > 0 ? SECONDS - started : 1))
# libFuzzer's own rate counts whole seconds since its start (0 for a session that crashed in its
# first second), so the rate is ours: executions over the wall time.
stats="$executions executions in $elapsed s ($((executions / elapsed))/s)"

mapfile -t found < <(REHEAP_FUZZ_BLACKBOX_DIR="$boxes" REHEAP_FUZZ_EXTRACT="$artifacts" "$fuzzer" 2>/dev/null)
if [ "$collect" = 1 ]; then
  declare -A count example made stage_of
  for entry in "${found[@]}"; do
    IFS=$'\t' read -r input stage made_by <<<"$entry"
    replay "$input" "$build/replay.log"
    replay_status=$?
    sig=$(signature "$build/replay.log")
    [ "$replay_status" -ne 0 ] || sig="does not crash in a fresh process"
    case $sig in "no report"*) sig="no report: $(describe_status "$replay_status") while ${replay_stage:-$stage}" ;; esac
    count[$sig]=$((${count[$sig]:-0} + 1))
    example[$sig]=${example[$sig]:-$input}
    made[$sig]=${made[$sig]:-$made_by}
    stage_of[$sig]=${stage_of[$sig]:-$stage}
  done
  echo "-- $sessions sessions, ${#found[@]} crashing inputs, ${#count[@]} distinct crashes:"
  for sig in "${!count[@]}"; do printf '%d\t%s\n' "${count[$sig]}" "$sig"; done | sort -rn |
    while IFS=$'\t' read -r n sig; do
      printf '%6d  %s\n        e.g. %s (while %s)\n        made by: %s\n' "$n" "$sig" "${example[$sig]}" \
        "${stage_of[$sig]}" "$(echo "${made[$sig]}" | cut -c1-400)"
    done
  echo "fuzz: collected: $stats, ${#found[@]} crashing inputs, ${#count[@]} distinct; $replayed"
  [ "${#found[@]}" -eq 0 ] && [ "$replay_failed" -eq 0 ]
  exit
fi

if [ "$status" -eq 0 ] && [ "${#found[@]}" -eq 0 ]; then
  echo "fuzz: $stats, 0 crashes; $replayed"
  [ "$replay_failed" -eq 0 ]
  exit
fi
if [ "${#found[@]}" -eq 0 ]; then
  # No input was running when the process died (libFuzzer failed between inputs: its RSS or
  # malloc limit hit in the mutator, a leak check): its artefact of this run is the best lead.
  newest=$(find "$artifacts" -type f -newer "$marker" -printf '%T@ %p\n' | sort -n | tail -1 | cut -d' ' -f2-)
  found=("${newest:-(no input: libFuzzer failed outside any input, see $log)}	between inputs	libFuzzer's artefact")
fi
for entry in "${found[@]}"; do
  IFS=$'\t' read -r input stage made_by <<<"$entry"
  crash_block "$input" "$made_by" "$stage" "$status" "$log" yes
done
echo "fuzz: FAILED: $((crashes - replay_failed)) crash(es) while fuzzing, after $stats (seed $seed); $replayed"
exit 1
