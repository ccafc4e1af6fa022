#!/usr/bin/env bash
# Runs the allocator benchmarks (alloc_bench_<allocator>) and prints one table.
#
# Every allocator runs the same workloads with the same seed and parameters, each repetition in a
# fresh process, in an order that rotates from one repetition to the next (so no allocator always
# runs first, right after the one before it, or last). The table gives the median of the
# repetitions and their spread (min..max), and for reheap the ratio to the fastest competitor of
# the same run. "harness" is the workload with a no-op allocator: what the loops cost by
# themselves. See README.md in this directory for what every number means.
#
# usage: bash tools/bench/alloc_bench.sh [--quick] [--build-dir DIR] [--reps N] [--seed N]
#                                        [--workloads LIST] [--raw FILE] [--no-pin] [--callgrind]
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../.." && pwd)
build_dir="$repo_dir/build/release"
quick=0
reps=""
seed=42
workloads="hot,live-4M,live-128M,live-1.3G"
raw=""
pin=1
callgrind=0

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  cat <<'EOF'

options:
  --quick           about a minute: fewer repetitions and shorter timed regions
  --build-dir DIR   the CMake build directory (default: build/release); the executables are
                    taken from DIR/tools/bench
  --reps N          repetitions of every measurement (default 5, 3 for live-1.3G; quick: 2, 1)
  --seed N          seed of the live workloads' trace (default 42)
  --workloads LIST  comma-separated subset of hot,live-4M,live-128M,live-1.3G
  --raw FILE        keep every RESULT line in FILE
  --no-pin          do not pin the benchmark to one CPU with taskset
  --callgrind       instead of timing: instructions per pair of the hot loop, per allocator and
                    size, counted by valgrind --tool=callgrind
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --build-dir) build_dir=$2; shift ;;
    --reps) reps=$2; shift ;;
    --seed) seed=$2; shift ;;
    --workloads) workloads=$2; shift ;;
    --raw) raw=$2; shift ;;
    --no-pin) pin=0 ;;
    --callgrind) callgrind=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "alloc_bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

bin_dir="$build_dir/tools/bench"
if [[ ! -x "$bin_dir/alloc_bench_glibc" ]]; then
  echo "alloc_bench.sh: no $bin_dir/alloc_bench_glibc; build first:" >&2
  echo "  cmake --preset release && cmake --build --preset release" >&2
  exit 1
fi

# The allocators, in table order; the ones not built are skipped (CMake said why).
allocators=()
for a in reheap glibc jemalloc tcmalloc mimalloc; do
  if [[ -x "$bin_dir/alloc_bench_$a" ]]; then
    allocators+=("$a")
  else
    echo "alloc_bench.sh: $bin_dir/alloc_bench_$a not built; $a is left out" >&2
  fi
done
variants=("${allocators[@]}" harness)

# Pin to the last CPU we may run on: one core, no migrations. On a 2-core VM that leaves the
# other core to the kernel and everything else.
runner=()
pinned_cpu="none"
if [[ $pin -eq 1 ]] && command -v taskset >/dev/null; then
  pinned_cpu=$(taskset -cp $$ | sed 's/.*: //' | tr ',' '\n' | sed 's/.*-//' | sort -n | tail -1)
  runner=(taskset -c "$pinned_cpu")
fi

run_variant() {  # run_variant VARIANT ARGS...: the variant's output on stdout; dies on failure
  local variant=$1; shift
  local exe="$bin_dir/alloc_bench_$variant"
  local extra=()
  if [[ $variant == harness ]]; then
    exe="$bin_dir/alloc_bench_glibc"
    extra=(--harness)
  fi
  local out
  if ! out=$("${runner[@]}" "$exe" "${extra[@]}" "$@" 2>&1); then
    echo "alloc_bench.sh: $exe ${extra[*]} $* failed:" >&2
    echo "$out" >&2
    exit 1
  fi
  echo "$out"
}

# ---- the machine -------------------------------------------------------------------------------

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
cpu_id=$(awk -F': *' '/^cpu family/ {f = $2} /^model[[:space:]]*:/ {m = $2} /^stepping/ {s = $2}
                      END {printf "family %s model %s stepping %s", f, m, s}' /proc/cpuinfo)
caches=""
for c in /sys/devices/system/cpu/cpu0/cache/index*; do
  [[ -r $c/size ]] || continue
  t=$(cat "$c/type"); [[ $t == Instruction ]] && continue
  caches+="L$(cat "$c/level")$([[ $t == Data ]] && echo d) $(cat "$c/size"), "
done
cpu_count=$(grep -c '^processor' /proc/cpuinfo)
tsc_flags=$(grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E '^(constant_tsc|nonstop_tsc)$' |
            tr '\n' ' ')
thp=$(sed 's/.*\[\(.*\)\].*/\1/' /sys/kernel/mm/transparent_hugepage/enabled 2>/dev/null || echo "?")
machine_line=$("${runner[@]}" "$bin_dir/alloc_bench_glibc" --machine)
tsc_mhz=$(sed 's/.*tsc_mhz=\([^ ]*\).*/\1/' <<<"$machine_line")
compiler=$(sed 's/.*compiler="\([^"]*\)".*/\1/' <<<"$machine_line")

echo "== reheap allocator benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "cpu:       $cpu_model ($cpu_id), $cpu_count logical CPUs (nproc $(nproc)); pinned to CPU $pinned_cpu"
echo "caches:    ${caches%, } (per cpu0)"
echo "kernel:    $(uname -sr); transparent huge pages: $thp; $(free -g | awk '/^Mem:/ {print $2}') GiB RAM"
echo "tsc:       ${tsc_mhz} MHz (measured against CLOCK_MONOTONIC); flags: ${tsc_flags:-none}"
echo "           cycles below are TSC ticks, which run at this constant rate whatever the core"
echo "           clock does (no PMU here: perf cycles are unavailable)"
echo "compiler:  g++ $compiler, build $build_dir"
echo "load:      $(cut -d' ' -f1-3 /proc/loadavg) (1, 5, 15 min) before the run; other busy processes skew results"
for a in "${allocators[@]}"; do
  info=$("${runner[@]}" "$bin_dir/alloc_bench_$a" --verify)  # aborts unless the allocator is in use
  printf 'allocator: %-9s %s\n' "$a" "$(sed 's/.*version="\([^"]*\)".*operator_new_from=\([^ ]*\).*/\1 (operator new from \2)/' <<<"$info")"
done

# ---- callgrind mode ----------------------------------------------------------------------------

if [[ $callgrind -eq 1 ]]; then
  command -v valgrind >/dev/null || { echo "alloc_bench.sh: valgrind not installed" >&2; exit 1; }
  iters=100000
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  echo
  echo "instructions per allocate+free pair (callgrind Ir of alloc_bench_callgrind_loop / $iters;"
  echo "the harness column is the loop and its two calls alone)"
  printf '%-8s' size
  for v in "${variants[@]}"; do printf '%10s' "$v"; done
  echo
  for size in 8 16 32 64 128 256 512 1024 4096 16384 65536; do
    printf '%-8s' "$size"
    for v in "${variants[@]}"; do
      exe="$bin_dir/alloc_bench_$v"; extra=()
      if [[ $v == harness ]]; then exe="$bin_dir/alloc_bench_glibc"; extra=(--harness); fi
      valgrind --tool=callgrind --toggle-collect=alloc_bench_callgrind_loop \
        --callgrind-out-file="$tmp/cg.out" "$exe" "${extra[@]}" --callgrind --sizes "$size" \
        --iters "$iters" >/dev/null 2>"$tmp/valgrind.log" ||
        { cat "$tmp/valgrind.log" >&2; exit 1; }
      total=$(sed -n 's/^totals: *\([0-9]*\).*/\1/p' "$tmp/cg.out")
      awk -v t="$total" -v n="$iters" 'BEGIN { printf "%10.1f", t / n }'
    done
    echo
  done
  exit 0
fi

# ---- timed runs --------------------------------------------------------------------------------

if [[ $quick -eq 1 ]]; then
  default_reps=2; big_reps=1
  hot_args=(--reps 3 --rep-ms 5)
  live_args=(--pairs 1000000)
else
  default_reps=5; big_reps=3
  hot_args=(--reps 7 --rep-ms 20)
  live_args=()
fi
if [[ -n $reps ]]; then default_reps=$reps; big_reps=$reps; fi

results=$(mktemp)
trap 'rm -f "$results"' EXIT
started=$(date +%s)

IFS=',' read -r -a workload_list <<<"$workloads"
for w in "${workload_list[@]}"; do
  case "$w" in
    hot) n=$default_reps; args=(--workload hot "${hot_args[@]}") ;;
    live-4M|live-128M) n=$default_reps; args=(--workload "$w" --seed "$seed" "${live_args[@]}") ;;
    live-1.3G) n=$big_reps; args=(--workload "$w" --seed "$seed" "${live_args[@]}") ;;
    *) echo "alloc_bench.sh: unknown workload $w" >&2; exit 2 ;;
  esac
  echo "running $w: ${#variants[@]} variants x $n repetitions ..." >&2
  for ((rep = 0; rep < n; rep++)); do
    # Rotate the order by one variant per repetition.
    count=${#variants[@]}
    for ((k = 0; k < count; k++)); do
      v=${variants[$(((k + rep) % count))]}
      run_variant "$v" "${args[@]}" | grep '^RESULT' | sed "s/\$/ rep=$rep/" >>"$results"
    done
  done
done
[[ -n $raw ]] && cp "$results" "$raw"

# Every allocator must have replayed the very same trace, and peak RSS must have been resettable.
mismatched=$(awk '/kind=live/ { w = ""; t = ""
                    for (i = 1; i <= NF; i++) { if ($i ~ /^workload=/) w = $i; if ($i ~ /^trace=/) t = $i }
                    if (w in first && first[w] != t) print w; first[w] = t }' "$results" | sort -u)
if [[ -n $mismatched ]]; then
  echo "alloc_bench.sh: the variants replayed different traces for: $mismatched" >&2
  exit 1
fi
if grep -q 'rss_reset=0' "$results"; then
  echo "warning: /proc/self/clear_refs was not writable: footprints include building the trace" >&2
fi

echo
echo "median (min..max) of the repetitions; each repetition a fresh process; seed $seed;"
echo "$(( $(date +%s) - started )) s of measuring; load average after: $(cut -d' ' -f1-3 /proc/loadavg)."
echo "Mops/s counts allocations and frees (2 per pair)."
echo "footprint = peak RSS growth over the untimed warm-up (every page of every block written);"
echo "overhead = footprint / peak live requested bytes of the warm-up - 1."
echo "vs fastest = the fastest competitor's time per pair / reheap's (> 1: reheap is faster)."
echo

# ---- the table ---------------------------------------------------------------------------------

order=$(printf '%s ' "${variants[@]}")
awk -v order="$order" '
function sort(a, n,   i, j, t) {
  for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
}
function stat(key, metric, fmt,   n, i, a, s) {
  n = split(vals[key, metric], a, " ")
  if (n == 0) return "-"
  for (i = 1; i <= n; i++) a[i] += 0
  sort(a, n)
  med[key, metric] = (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
  s = sprintf(fmt, med[key, metric])
  if (n > 1) s = s sprintf(" (" fmt ".." fmt ")", a[1], a[n])
  return s
}
{
  delete f
  for (i = 2; i <= NF; i++) { split($i, kv, "="); f[kv[1]] = kv[2] }
  w = f["workload"]; v = f["alloc"]; key = w SUBSEP v
  if (!(w in seen_w)) { seen_w[w] = 1; workloads[++nw] = w; kind[w] = f["kind"]; size[w] = f["size"] + 0 }
  present[key] = 1
  vals[key, "mops"] = vals[key, "mops"] " " f["mops_per_s"]
  vals[key, "ns"] = vals[key, "ns"] " " f["ns_per_pair"]
  vals[key, "cyc"] = vals[key, "cyc"] " " f["cycles_per_pair"]
  if (f["kind"] == "live" && v != "harness") {
    vals[key, "foot"] = vals[key, "foot"] " " f["footprint_mb"]
    vals[key, "over"] = vals[key, "over"] " " f["overhead_pct"]
    live_info[w] = sprintf("mean live %s MB, peak live %s MB (warm-up %s MB), %d slots, %s timed pairs",
                           f["mean_live_mb"], f["peak_live_mb"], f["warmup_peak_live_mb"],
                           f["peak_live_blocks"], f["pairs"])
  }
}
END {
  nv = split(order, variants, " ")
  # Hot-loop workloads by size, then the live ones in the order they ran.
  for (i = 1; i <= nw; i++) for (j = i + 1; j <= nw; j++) {
    a = workloads[i]; b = workloads[j]
    if ((kind[a] == "live" && kind[b] == "hot") || (kind[a] == kind[b] && kind[a] == "hot" && size[a] > size[b])) {
      workloads[i] = b; workloads[j] = a
    }
  }
  hdr = sprintf("%-10s %-9s %-24s %-24s %-24s %-22s %-22s %s", "workload", "allocator", "Mops/s",
                "ns/pair", "TSC cycles/pair", "footprint MB", "overhead %", "vs fastest")
  print hdr
  gsub(/./, "-", hdr); print hdr
  for (i = 1; i <= nw; i++) {
    w = workloads[i]
    if (kind[w] == "live" && kind[workloads[i - 1]] == "hot") print ""
    best = ""; best_ns = 0
    for (j = 1; j <= nv; j++) {
      v = variants[j]; key = w SUBSEP v
      if (!(key in present)) continue
      row[v] = sprintf("%-10s %-9s %-24s %-24s %-24s %-22s %-22s", w, v, stat(key, "mops", "%.1f"),
                       stat(key, "ns", (kind[w] == "hot") ? "%.2f" : "%.1f"), stat(key, "cyc", "%.1f"),
                       stat(key, "foot", "%.1f"), stat(key, "over", "%.1f"))
      if (v != "reheap" && v != "harness" && (best == "" || med[key, "ns"] < best_ns)) {
        best = v; best_ns = med[key, "ns"]
      }
    }
    for (j = 1; j <= nv; j++) {
      v = variants[j]; key = w SUBSEP v
      if (!(key in present)) continue
      ratio = ""
      if (v == "reheap" && best != "") {
        ratio = sprintf("%.2fx vs %s", best_ns / med[key, "ns"], best)
        speedup[w] = best_ns / med[key, "ns"]; fastest[w] = best
      }
      print row[v] " " ratio
    }
    if (kind[w] == "live") print "           (" live_info[w] ")"
  }

  # The targets of the issue, checked against the medians above.
  print ""
  print "targets (medians of this run):"
  if (("hot-8" SUBSEP "reheap") in present) {
    worst = 0; worst_w = ""; big = 0; big_w = ""; list = ""
    for (i = 1; i <= nw; i++) {
      w = workloads[i]; key = w SUBSEP "reheap"
      if (kind[w] != "hot" || !(key in present)) continue
      c = med[key, "cyc"]; list = list sprintf(" %s=%.1f", substr(w, 5), c)
      if (size[w] > 16384) { if (c > big) { big = c; big_w = w } }
      else if (c > worst) { worst = c; worst_w = w }
    }
    printf "  <= 15 cycles/pair, hot loop (cache-resident), reheap per size:%s\n", list
    printf "      worst of the class sizes (<= 16 KiB), %s: %.1f -> %s\n", worst_w, worst,
           (worst <= 15) ? "met" : "NOT met"
    if (big_w != "") printf "      page runs (> 16 KiB), %s: %.1f -> %s\n", big_w, big,
                            (big <= 15) ? "met" : "NOT met"
  }
  if (("live-4M" SUBSEP "reheap") in present)
    printf "  <= 15 cycles/pair, live-4M (4 MB live): %.1f -> %s\n", med["live-4M" SUBSEP "reheap", "cyc"],
           (med["live-4M" SUBSEP "reheap", "cyc"] <= 15) ? "met" : "NOT met"
  for (i = 1; i <= nw; i++) {
    w = workloads[i]
    if (kind[w] != "live" || !((w SUBSEP "reheap") in present) || fastest[w] == "") continue
    h = ((w SUBSEP "harness") in present) ? med[w SUBSEP "harness", "ns"] : 0
    net = (med[w SUBSEP fastest[w], "ns"] - h) / (med[w SUBSEP "reheap", "ns"] - h)
    printf "  >= 1.5x the fastest competitor, %s: %.2fx vs %s -> %s (%.2fx net of the harness)\n",
           w, speedup[w], fastest[w], (speedup[w] >= 1.5) ? "met" : "NOT met", net
  }
  for (i = 1; i <= nw; i++) {
    w = workloads[i]
    if (kind[w] != "live" || !((w SUBSEP "reheap") in present) || !((w SUBSEP "jemalloc") in present)) continue
    r = med[w SUBSEP "reheap", "over"]; j = med[w SUBSEP "jemalloc", "over"]
    printf "  overhead <= jemalloc, %s: reheap %.1f%% vs jemalloc %.1f%% -> %s\n", w, r, j,
           (r <= j) ? "met" : "NOT met"
  }
}' "$results"
