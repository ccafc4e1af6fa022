#!/usr/bin/env bash
# Compares reheap's messaging in two builds, alternating: for each test (oneway, fanin, pingpong)
# and repetition, build A's messaging_bench_reheap and build B's run one after the other in fresh
# processes, so that a machine whose speed drifts (other load, frequency) moves both alike. Prints
# per test the median rate of each build, their spread, and the median of the per-repetition
# ratios A/B (above 1: A is faster). Use it to show that a change of the runtime's hot path keeps
# its throughput: B is a build of the commit before the change, e.g.
#
#   git worktree add --detach /tmp/before HEAD~1
#   cmake -S /tmp/before -B /tmp/before/build -G Ninja -DCMAKE_BUILD_TYPE=Release
#   ninja -C /tmp/before/build messaging_bench_reheap
#   bash tools/bench/messaging_ab.sh --b /tmp/before/build
#
# usage: bash tools/bench/messaging_ab.sh --b DIR [--a DIR] [--reps N] [--tests "oneway fanin"]
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
a_dir="$script_dir/../../build/release"
b_dir=""
reps=9
tests="oneway fanin pingpong"
while [[ $# -gt 0 ]]; do
  case "$1" in
    --a) a_dir=$2; shift ;;
    --b) b_dir=$2; shift ;;
    --reps) reps=$2; shift ;;
    --tests) tests=$2; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "messaging_ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
  shift
done
if [[ -z $b_dir ]]; then
  echo "messaging_ab.sh: --b DIR (the build to compare with) is required (see --help)" >&2
  exit 2
fi
a_exe="$a_dir/tools/bench/messaging/messaging_bench_reheap"
b_exe="$b_dir/tools/bench/messaging/messaging_bench_reheap"
for exe in "$a_exe" "$b_exe"; do
  if [[ ! -x $exe ]]; then
    echo "messaging_ab.sh: $exe does not exist; build it: ninja -C <dir> messaging_bench_reheap" >&2
    exit 1
  fi
done
declare -A size=([oneway]=10000000 [fanin]=10000000 [pingpong]=200000)

rate_of() {  # rate_of EXE TEST: one fresh process, one repetition; its messages per second
  local out
  out=$(timeout 600 "$1" "$2" --n "${size[$2]}" --reps 1 2>&1) || {
    echo "messaging_ab.sh: $1 $2 failed:" >&2
    tail -5 <<<"$out" >&2
    exit 1
  }
  grep -m1 '^RESULT ' <<<"$out" | sed 's/.*rate=//'
}

echo "A: $a_exe"
echo "B: $b_exe"
echo "load before: $(cut -d' ' -f1-3 /proc/loadavg); $reps repetitions, A then B, alternating"
printf '%-10s %22s %22s %10s\n' test "A median (min..max)" "B median (min..max)" "A/B"
for t in $tests; do
  a_rates=() b_rates=() ratios=()
  for ((r = 0; r < reps; r++)); do
    a=$(rate_of "$a_exe" "$t")
    b=$(rate_of "$b_exe" "$t")
    a_rates+=("$a") b_rates+=("$b")
    ratios+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.4f", a / b }')")
  done
  summary() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END {
      m = NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2
      printf "%.2fM (%.1f..%.1f)", m / 1e6, v[1] / 1e6, v[NR] / 1e6 }'; }
  ratio=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END {
      printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  printf '%-10s %22s %22s %10s\n' "$t" "$(summary "${a_rates[@]}")" "$(summary "${b_rates[@]}")" "$ratio"
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
