#!/usr/bin/env bash
# Runs the message allocator benchmarks (message_alloc/message_alloc_bench_<allocator>) and
# prints one markdown table: reheap's MessageAllocator against malloc/free of glibc, jemalloc,
# tcmalloc and mimalloc on the runtime's cross-thread pattern, all measured in the same run.
#
# Every allocator runs the same workloads with the same message sizes (fixed seed), each
# repetition in a fresh process, in an order that rotates from one repetition to the next. A
# process runs one warm-up pass and several timed passes with the same two threads (pinned to
# two CPUs) and reports their median; the table gives the median of the processes and their
# spread (min..max), and each competitor's time divided by reheap's. "harness" is the workload
# with a no-op allocator: the floor every other row includes (the summary under the table gives
# what reheap and the fastest competitor add to it). See README.md in this directory.
#
# usage: bash tools/bench/message_alloc_bench.sh [--quick] [--build-dir DIR] [--reps N]
#            [--messages N] [--passes N] [--seed N] [--workloads LIST] [--raw FILE] [--no-pin]
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../.." && pwd)
build_dir="$repo_dir/build/release"
quick=0
reps=""
messages=""
passes=""
seed=42
workloads="spsc-64,spsc-mixed,pingpong-64,pingpong-mixed"
raw=""
pin_args=()

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  cat <<'TEXT'

options:
  --quick           about half a minute: fewer repetitions and shorter passes
  --build-dir DIR   the CMake build directory (default: build/release); the executables are
                    taken from DIR/tools/bench/message_alloc
  --reps N          processes per allocator and workload (default 5; quick: 2)
  --messages N      messages per timed pass (default 1000000; quick: 300000)
  --passes N        timed passes per process (default 3)
  --seed N          seed of the mixed message sizes (default 42)
  --workloads LIST  comma-separated subset of spsc-64,spsc-mixed,pingpong-64,pingpong-mixed
  --raw FILE        keep every RESULT line in FILE
  --no-pin          do not pin the two threads to CPUs of their own
TEXT
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --build-dir) build_dir=$2; shift ;;
    --reps) reps=$2; shift ;;
    --messages) messages=$2; shift ;;
    --passes) passes=$2; shift ;;
    --seed) seed=$2; shift ;;
    --workloads) workloads=$2; shift ;;
    --raw) raw=$2; shift ;;
    --no-pin) pin_args=(--no-pin) ;;
    -h|--help) usage; exit 0 ;;
    *) echo "message_alloc_bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
[[ $build_dir = /* ]] || build_dir="$PWD/$build_dir"

bin_dir="$build_dir/tools/bench/message_alloc"
if [[ ! -x "$bin_dir/message_alloc_bench_glibc" ]]; then
  echo "message_alloc_bench.sh: no $bin_dir/message_alloc_bench_glibc; build first:" >&2
  echo "  cmake --preset release && cmake --build --preset release" >&2
  exit 1
fi
if [[ $quick -eq 1 ]]; then
  : "${reps:=2}" "${messages:=300000}" "${passes:=3}"
else
  : "${reps:=5}" "${messages:=1000000}" "${passes:=3}"
fi

# The allocators, in table order; the ones not built are skipped (CMake said why).
variants=()
for a in reheap glibc jemalloc tcmalloc mimalloc harness; do
  if [[ -x "$bin_dir/message_alloc_bench_$a" ]]; then
    variants+=("$a")
  else
    echo "message_alloc_bench.sh: $bin_dir/message_alloc_bench_$a not built; $a is left out" >&2
  fi
done

run_variant() {  # run_variant VARIANT ARGS...: the variant's output on stdout; dies on failure
  local exe="$bin_dir/message_alloc_bench_$1"; shift
  local out
  if ! out=$("$exe" "$@" 2>&1); then
    echo "message_alloc_bench.sh: $exe $* failed:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "$out"
}

# ---- the machine -------------------------------------------------------------------------------

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
machine_line=$("$bin_dir/message_alloc_bench_glibc" --machine)
tsc_mhz=$(sed 's/.*tsc_mhz=\([^ ]*\).*/\1/' <<<"$machine_line")
compiler=$(sed 's/.*compiler="\([^"]*\)".*/\1/' <<<"$machine_line")
echo "== reheap message allocator benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "cpu:       $cpu_model, $(grep -c '^processor' /proc/cpuinfo) logical CPUs (nproc $(nproc))"
echo "kernel:    $(uname -sr); tsc ${tsc_mhz} MHz (TSC ticks, not core cycles: no PMU here)"
echo "compiler:  g++ $compiler, build $build_dir"
echo "load:      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) before the run; other busy processes skew results"
for a in "${variants[@]}"; do
  info=$("$bin_dir/message_alloc_bench_$a" --verify)  # aborts unless the allocator is in use
  printf 'allocator: %-9s %s\n' "$a" "$(sed 's/.*version="\([^"]*\)".*/\1/' <<<"$info")"
done

# ---- timed runs --------------------------------------------------------------------------------

results=$(mktemp)
trap 'rm -f "$results"' EXIT
started=$(date +%s)
IFS=',' read -r -a workload_list <<<"$workloads"
for w in "${workload_list[@]}"; do
  echo "running $w: ${#variants[@]} variants x $reps processes ..." >&2
  for ((rep = 0; rep < reps; rep++)); do
    count=${#variants[@]}
    for ((k = 0; k < count; k++)); do
      v=${variants[$(((k + rep) % count))]}
      run_variant "$v" --workloads "$w" --messages "$messages" --reps "$passes" --seed "$seed" \
        "${pin_args[@]}" | grep '^RESULT' | sed "s/\$/ rep=$rep/" >>"$results"
    done
  done
done
[[ -n $raw ]] && cp "$results" "$raw"

# Every allocator must have used the very same message sizes.
mismatched=$(awk '{ w = ""; t = ""
                    for (i = 1; i <= NF; i++) { if ($i ~ /^workload=/) w = $i; if ($i ~ /^sizes=/) t = $i }
                    if (w in first && first[w] != t) print w; first[w] = t }' "$results" | sort -u)
if [[ -n $mismatched ]]; then
  echo "message_alloc_bench.sh: the variants used different message sizes for: $mismatched" >&2
  exit 1
fi

echo
echo "Median (min..max) over $reps processes per cell; each process: one warm-up pass, then the"
echo "median of $passes timed passes of $messages messages (pingpong: in each direction). A pair is"
echo "one allocation and its free (by the other thread). Peak RSS: growth of VmHWM over the"
echo "workload. \"vs reheap\": the row's median time / reheap's (above 1: reheap is faster)."
echo "$(( $(date +%s) - started )) s of measuring; load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
echo

order=$(printf '%s ' "${variants[@]}")
awk -v order="$order" -v wl="$workloads" '
function sort(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
}
function stat(key, metric, fmt, spread,   n, i, a, s) {
  n = split(vals[key, metric], a, " ")
  if (n == 0) return "-"
  for (i = 1; i <= n; i++) a[i] += 0
  sort(a, n)
  med[key, metric] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  s = sprintf(fmt, med[key, metric])
  if (spread && n > 1) s = s sprintf(" (" fmt ".." fmt ")", a[1], a[n])
  return s
}
{
  delete f
  for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  key = f["workload"] SUBSEP f["alloc"]
  present[key] = 1
  vals[key, "ns"] = vals[key, "ns"] " " f["ns_per_pair"]
  vals[key, "cyc"] = vals[key, "cyc"] " " f["cycles_per_pair"]
  vals[key, "rss"] = vals[key, "rss"] " " f["peak_rss_mb"]
}
END {
  nv = split(order, variants, " ")
  nw = split(wl, workloads, ",")
  print "| workload | allocator | ns/pair | TSC ticks/pair | peak RSS MB | vs reheap |"
  print "| --- | --- | ---: | ---: | ---: | ---: |"
  for (i = 1; i <= nw; i++) {
    w = workloads[i]
    for (j = 1; j <= nv; j++) {
      v = variants[j]; key = w SUBSEP v
      if (!(key in present)) continue
      ns[v] = stat(key, "ns", "%.1f", 1); cyc[v] = stat(key, "cyc", "%.1f", 1); rss[v] = stat(key, "rss", "%.1f", 0)
    }
    rkey = w SUBSEP "reheap"
    best = ""; best_ns = 0
    for (j = 1; j <= nv; j++) {
      v = variants[j]; key = w SUBSEP v
      if (!(key in present)) continue
      if (v == "reheap") ratio = "1.00x"
      else if (v == "harness") ratio = "(floor)"
      else if (rkey in present) ratio = sprintf("%.2fx", med[key, "ns"] / med[rkey, "ns"])
      else ratio = "-"
      if (v != "reheap" && v != "harness" && (best == "" || med[key, "ns"] < best_ns)) { best = v; best_ns = med[key, "ns"] }
      name = (v == "reheap") ? "**reheap**" : v
      printf "| %s | %s | %s | %s | %s | %s |\n", (v == variants[1] ? w : ""), name, ns[v], cyc[v], rss[v], ratio
    }
    if ((rkey in present) && best != "") {
      h = ((w SUBSEP "harness") in present) ? med[w SUBSEP "harness", "ns"] : 0
      net = ""
      if (h > 0) net = sprintf("; over the harness: reheap %+.1f ns/pair, %s %+.1f ns/pair", med[rkey, "ns"] - h, best, best_ns - h)
      summary[i] = sprintf("%s: reheap %.2fx the fastest competitor (%s)%s", w, best_ns / med[rkey, "ns"], best, net)
    }
  }
  print ""
  for (i = 1; i <= nw; i++) if (summary[i] != "") print summary[i]
}' "$results"
