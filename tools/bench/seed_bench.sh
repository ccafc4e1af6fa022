#!/usr/bin/env bash
# seed_bench.sh: seeds 000 (memory pools), 003 (unordered_set<int>) and 004 (large blocks freed
# and allocated again) against reheap, in one run.
#
#   tools/bench/seed_bench.sh [--reps R] [--only 000|003|004] [--bin DIR]
#
# Runs every seed_bench_<allocator> executable built in DIR (default build/release/tools/bench)
# R times (default 3), alternating them within each repetition so that the machine's drift hits
# every allocator alike; seed_bench_glibc also runs the pool libraries (boost::object_pool,
# boost::pool, std::pmr pools) on the seed-000 lines. Prints, per line, each allocator's median
# over the repetitions, its spread (min..max) and its ratio to reheap's median (> 1: reheap is
# faster). Lower values are better on every line (ms, or TSC ticks per operation).
set -euo pipefail

reps=3
only=all
bin_dir=build/release/tools/bench
while [[ $# -gt 0 ]]; do
  case "$1" in
    --reps) reps="$2"; shift 2 ;;
    --only) only="$2"; shift 2 ;;
    --bin) bin_dir="$2"; shift 2 ;;
    -h|--help) sed -n 2,13p "$0"; exit 0 ;;
    *) echo "seed_bench.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

exes=()
for a in reheap glibc mimalloc tcmalloc jemalloc; do
  [[ -x "$bin_dir/seed_bench_$a" ]] && exes+=("$a")
done
if [[ ! " ${exes[*]} " =~ " reheap " ]]; then
  echo "seed_bench.sh: no $bin_dir/seed_bench_reheap; build first:" >&2
  echo "  cmake --build build/release --target seed_bench_reheap seed_bench_glibc seed_bench_mimalloc seed_bench_tcmalloc seed_bench_jemalloc" >&2
  exit 1
fi

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "machine: $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(nproc) CPUs; load before: $(cut -d' ' -f1-3 /proc/loadavg)"
for ((r = 1; r <= reps; ++r)); do
  for a in "${exes[@]}"; do
    "$bin_dir/seed_bench_$a" "$only" >> "$out"
    if [[ $a == glibc && ( $only == all || $only == 000 ) ]]; then "$bin_dir/seed_bench_glibc" pools >> "$out"; fi
  done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg); $reps repetitions"

python3 - "$out" <<'PY'
import sys, statistics
rows = {}
order = []
for line in open(sys.argv[1]):
    name, alloc, value, unit = line.rstrip("\n").split("\t")
    if name not in rows:
        rows[name] = {}
        order.append(name)
    rows[name].setdefault(alloc, []).append((float(value), unit))
for name in order:
    allocs = rows[name]
    unit = next(iter(allocs.values()))[0][1]
    base = statistics.median(v for v, _ in allocs["reheap"]) if "reheap" in allocs else None
    print(f"\n{name} ({unit}, lower is better; ratio = other / reheap)")
    ranked = sorted(allocs.items(), key=lambda kv: statistics.median(v for v, _ in kv[1]))
    for alloc, values in ranked:
        vs = [v for v, _ in values]
        med = statistics.median(vs)
        ratio = f"{med / base:6.2f}x" if base else "   -"
        print(f"  {alloc:20s} {med:10.1f}  [{min(vs):.1f}..{max(vs):.1f}]  {ratio}")
PY
