#!/usr/bin/env bash
# Runs the messaging benchmarks (messaging_bench_<impl>: reheap, caf, rawuv) and prints one table.
#
# For each test, every implementation that was built runs in a fresh process per repetition, in
# an order that rotates from one repetition to the next. The table gives the median rate of the
# repetitions and their spread (min..max), and reheap's ratio to CAF and to the raw libuv bound
# (above 1 means reheap is faster); a ratio is printed only when both sides ran. An executable
# that does not exist is skipped. See
# "Messaging benchmarks" in tools/bench/README.md for what each test does.
#
# reheap's plain pingpong spawns its pair as a user would (no worker given: round robin starts the
# two on different workers, and the runtime's placement policy may bring them together); the
# pingpong-pinned row pins them to workers 0 and 1, as every reheap pingpong did before the policy.
# Last, each runtime is left idle for 3 s (--idle-cpu) and its CPU use is reported.
#
# With --record MODES, reheap's oneway, fanin and pingpong also run with every reactor recorded
# (messaging_bench_reheap --record file|ring), alternating with unrecorded runs in the same
# repetitions, and a second table gives the recorded/unrecorded ratios and the log's bytes per
# message.
#
# usage: bash tools/bench/messaging_bench.sh [--build-dir DIR] [--quick] [--reps N] [--raw FILE]
#                                            [--record file,ring [--record-only]]
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../.." && pwd)
build_dir="$repo_dir/build/release"
quick=0
reps=""
raw=""
record_modes=()
record_only=0

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  cat <<'EOF'

options:
  --build-dir DIR  the CMake build directory (default: build/release); the executables are
                   taken from DIR/tools/bench/messaging
  --quick          a tenth of the work per test and 3 repetitions (under a minute)
  --reps N         repetitions per implementation and test (default 5; quick: 3); a full
                   run takes about 3 minutes
  --raw FILE       keep every RESULT and NOTE line in FILE
  --record MODES   also run reheap's oneway, fanin and pingpong recorded (MODES: file, ring or
                   file,ring), alternating with unrecorded runs, and print the ratios and the
                   log bytes per message (file mode; logs go to a temporary directory that is
                   removed at the end)
  --record-only    with --record: only the recording table (reheap alone; a full run takes
                   about 2 minutes)
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --build-dir) build_dir=$2; shift ;;
    --quick) quick=1 ;;
    --reps) reps=$2; shift ;;
    --raw) raw=$2; shift ;;
    --record) IFS=, read -r -a record_modes <<<"$2"; shift ;;
    --record-only) record_only=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "messaging_bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
if [[ -z $reps ]]; then
  reps=$(( quick ? 3 : 5 ))
fi
for mode in "${record_modes[@]}"; do
  if [[ $mode != file && $mode != ring ]]; then
    echo "messaging_bench.sh: --record wants file, ring or file,ring, not '$mode'" >&2
    exit 2
  fi
done
if [[ $record_only -eq 1 && ${#record_modes[@]} -eq 0 ]]; then
  echo "messaging_bench.sh: --record-only needs --record" >&2
  exit 2
fi
if ! [[ $reps =~ ^[1-9][0-9]*$ ]]; then
  echo "messaging_bench.sh: --reps wants a positive integer" >&2
  exit 2
fi

bin_dir="$build_dir/tools/bench/messaging"

# Implementations in table order, with their column titles.
impls=(reheap caf rawuv)
declare -A title=([reheap]="reheap" [caf]="CAF" [rawuv]="raw libuv")
if [[ $record_only -eq 1 ]]; then
  impls=(reheap)
fi
available=()
for impl in "${impls[@]}"; do
  if [[ -x "$bin_dir/messaging_bench_$impl" ]]; then
    available+=("$impl")
  else
    echo "messaging_bench.sh: $bin_dir/messaging_bench_$impl not built; ${title[$impl]} is left out" >&2
  fi
done
if [[ ${#available[@]} -eq 0 ]]; then
  echo "messaging_bench.sh: no messaging_bench_* in $bin_dir; build first:" >&2
  echo "  cmake --preset release && cmake --build build/release -j2 --target messaging_bench_reheap messaging_bench_caf messaging_bench_rawuv" >&2
  exit 1
fi

# Tests and their sizes (n; see messaging_bench.h). --quick does a tenth of the work.
tests=(pingpong oneway fanin spawn spawnmain)
declare -A size=([pingpong]=200000 [oneway]=10000000 [fanin]=10000000 [spawn]=1000000 [spawnmain]=1000000)
if [[ $quick -eq 1 ]]; then
  for t in "${tests[@]}"; do size[$t]=$(( size[$t] / 10 )); done
fi

load_before=$(cut -d' ' -f1-3 /proc/loadavg)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
results="$tmp/results"  # lines: row impl rate seconds   (rate "n/a" or "FAILED")
notes="$tmp/notes"      # lines: row impl key value
: >"$results"
: >"$notes"
failures=0

# run_one ROW IMPL TEST [EXTRA ARGS...]: one fresh process, one timed repetition.
run_one() {
  local row=$1 impl=$2 test=$3; shift 3
  local exe="$bin_dir/messaging_bench_$impl" out status=0
  out=$(timeout 900 "$exe" "$test" --n "${size[$test]}" --reps 1 "$@" 2>&1) || status=$?
  if [[ -n $raw ]]; then
    { grep -E '^(RESULT|NOTE) ' <<<"$out" || true; } | sed "s/\$/ row=$row/" >>"$raw"
  fi
  local line
  line=$(grep -m1 '^RESULT ' <<<"$out" || true)
  if [[ $status -ne 0 || -z $line ]]; then
    echo "messaging_bench.sh: $exe $test --n ${size[$test]} $* failed (status $status):" >&2
    echo "$out" | tail -20 >&2
    echo "$row $impl FAILED FAILED" >>"$results"
    failures=$(( failures + 1 ))
    return
  fi
  local rate seconds
  rate=$(sed 's/.* rate=\([^ ]*\).*/\1/' <<<"$line")
  seconds=$(sed 's/.* seconds=\([^ ]*\).*/\1/' <<<"$line")
  echo "$row $impl $rate $seconds" >>"$results"
  { grep '^NOTE ' <<<"$out" || true; } | while read -r _ _ _ kv; do
    for pair in $kv; do echo "$row $impl ${pair%%=*} ${pair#*=}" >>"$notes"; done
  done
}

# The rows of the table: a test and which implementations run it. The extra rows run CAF's
# pingpong with detached actors, which CAF does put on two threads (its scheduled actors mostly
# share one worker; see the NOTE lines), and reheap's pingpong with workers that poll for work
# spin_us µs before they sleep (RuntimeConfig::spin; CAF's workers poll before they sleep too),
# unpinned and with each worker pinned to a CPU of its own (--pin): unpinned, the scheduler often
# puts both workers on one CPU, where the spinning one keeps the other from running.
spin_us=50
rows=("${tests[@]}")
have_caf=0
have_reheap=0
for impl in "${available[@]}"; do
  [[ $impl == caf ]] && have_caf=1
  [[ $impl == reheap ]] && have_reheap=1
done
[[ $have_reheap -eq 1 ]] && rows+=(pingpong-pinned pingpong-spin pingpong-spin-pin)
[[ $have_caf -eq 1 ]] && rows+=(pingpong-detached)
if [[ $record_only -eq 1 ]]; then
  rows=()
fi
if [[ ${#record_modes[@]} -gt 0 && $have_reheap -eq 0 ]]; then
  echo "messaging_bench.sh: --record needs messaging_bench_reheap" >&2
  exit 1
fi

echo "running: ${available[*]}; $reps repetitions each; $(if [[ $quick -eq 1 ]]; then echo quick; else echo full; fi) sizes" >&2
for row in "${rows[@]}"; do
  if [[ $row == pingpong-detached ]]; then
    test=pingpong; row_impls=(caf); extra=(--detached)
  elif [[ $row == pingpong-pinned ]]; then
    test=pingpong; row_impls=(reheap); extra=(--pinned)
  elif [[ $row == pingpong-spin ]]; then
    test=pingpong; row_impls=(reheap); extra=(--spin "$spin_us")
  elif [[ $row == pingpong-spin-pin ]]; then
    test=pingpong; row_impls=(reheap); extra=(--spin "$spin_us" --pin)
  else
    test=$row; row_impls=("${available[@]}"); extra=()
  fi
  echo "  $row (n=${size[$test]}) ..." >&2
  count=${#row_impls[@]}
  for (( rep = 0; rep < reps; rep++ )); do
    for (( k = 0; k < count; k++ )); do
      run_one "$row" "${row_impls[$(( (k + rep) % count ))]}" "$test" "${extra[@]}"
    done
  done
done

# Idle CPU: each runtime built as the tests build it, then left alone for idle_ms; the share of
# one core the whole process used meanwhile (messaging_bench.h, --idle-cpu). rawuv has no runtime.
idle_ms=3000
idle="$tmp/idle"  # lines: label cpu_pct
: >"$idle"
idle_runs=()
[[ $have_reheap -eq 1 ]] && idle_runs+=("reheap|reheap" "reheap --spin $spin_us|reheap --spin $spin_us")
[[ $have_caf -eq 1 ]] && idle_runs+=("CAF|caf")
if [[ $record_only -eq 0 && ${#idle_runs[@]} -gt 0 ]]; then
  echo "  idle CPU (${idle_ms} ms each) ..." >&2
  count=${#idle_runs[@]}
  for (( rep = 0; rep < reps; rep++ )); do
    for (( k = 0; k < count; k++ )); do
      entry=${idle_runs[$(( (k + rep) % count ))]}
      label=${entry%%|*}
      read -r -a command <<<"${entry#*|}"
      out=$(timeout 60 "$bin_dir/messaging_bench_${command[0]}" --idle-cpu "$idle_ms" "${command[@]:1}" 2>&1) || true
      pct=$(sed -n 's/^IDLE .* cpu_pct=\([0-9.]*\).*/\1/p' <<<"$out")
      [[ -n $raw ]] && { grep '^IDLE ' <<<"$out" || true; } >>"$raw"
      [[ -n $pct ]] && echo "$label|$pct" >>"$idle"
    done
  done
fi

# The recording rows: for each test, one repetition runs reheap unrecorded and once per mode
# recorded, in an order rotated per repetition; the rows are rec-<test>-off, rec-<test>-<mode>.
rec_tests=(oneway fanin pingpong)
if [[ ${#record_modes[@]} -gt 0 ]]; then
  variants=(off "${record_modes[@]}")
  count=${#variants[@]}
  for test in "${rec_tests[@]}"; do
    echo "  recording: $test (n=${size[$test]}; ${variants[*]}) ..." >&2
    for (( rep = 0; rep < reps; rep++ )); do
      for (( k = 0; k < count; k++ )); do
        mode=${variants[$(( (k + rep) % count ))]}
        run_one "rec-$test-$mode" reheap "$test" --record "$mode" --record-dir "$tmp"
      done
    done
  done
fi

# ---- the table ---------------------------------------------------------------------------------

# stats ROW IMPL: "median min max" of the rates, "n/a" if the test does not apply, "FAILED" if a
# repetition failed, nothing if the implementation did not run.
stats() {
  awk -v row="$1" -v impl="$2" '
    $1 == row && $2 == impl { if ($3 == "FAILED") failed = 1; else if ($3 == "n/a") na = 1;
                              else v[n++] = $3 }
    END {
      if (failed) { print "FAILED"; exit }
      if (na && n == 0) { print "n/a"; exit }
      if (n == 0) exit
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
      printf "%.0f %.0f %.0f\n", m, v[0], v[n - 1]
    }' "$results"
}

human() {  # 1234567 -> 1.23M
  awk -v x="$1" 'BEGIN {
    if (x >= 1e9) printf "%.2fG", x / 1e9; else if (x >= 1e6) printf "%.2fM", x / 1e6;
    else if (x >= 1e3) printf "%.1fk", x / 1e3; else printf "%.0f", x }'
}

cell() {  # cell "median min max" | n/a | FAILED | "" -> table cell
  case "$1" in
    "") echo "—" ;;
    n/a|FAILED) echo "$1" ;;
    *) read -r m lo hi <<<"$1"; echo "$(human "$m") ($(human "$lo")..$(human "$hi"))" ;;
  esac
}

ratio() {  # ratio STATS_A STATS_B -> median_a / median_b, or — unless both are numbers
  if [[ $1 =~ ^[0-9] && $2 =~ ^[0-9] ]]; then
    awk -v a="${1%% *}" -v b="${2%% *}" 'BEGIN { printf "%.2fx", a / b }'
  else
    echo "—"
  fi
}

unit() {
  case "$1" in
    pingpong*) echo "round trips/s" ;;
    spawn*) echo "actors/s" ;;
    *) echo "messages/s" ;;
  esac
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
version_of() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo "?"; }

echo
echo "## Messaging benchmarks  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "machine: nproc $(nproc), ${cpu_model:-unknown CPU}, kernel $(uname -sr)"
echo "libraries: libuv1 $(version_of libuv1-dev), CAF $(version_of libcaf-dev)"
echo "load (1, 5, 15 min): $load_before before the run, $(cut -d' ' -f1-3 /proc/loadavg) after; the"
echo "      benchmarks use both cores, so anything else running skews them"
echo "runs: $reps repetitions per cell, each in a fresh process, order rotated per repetition; sizes:"
echo "      $(for t in "${tests[@]}"; do printf '%s n=%s  ' "$t" "${size[$t]}"; done)"
if [[ ${#rows[@]} -gt 0 ]]; then
  echo
  echo "| test | unit | reheap | CAF | raw libuv | reheap/CAF | reheap/raw libuv |"
  echo "|---|---|---:|---:|---:|---:|---:|"
  for row in "${rows[@]}"; do
    if [[ $row == pingpong-detached ]]; then
      # reheap's pingpong row is compared with CAF's detached actors, both on two threads.
      s_reheap=$(stats pingpong reheap)
      s_caf=$(stats pingpong-detached caf)
      s_raw=""
      label="pingpong, CAF --detached"
    elif [[ $row == pingpong-spin* ]]; then
      # reheap with spinning workers, compared with the plain pingpong of the others.
      s_reheap=$(stats "$row" reheap)
      s_caf=$(stats pingpong caf)
      s_raw=$(stats pingpong rawuv)
      label="pingpong, reheap --spin $spin_us"
      [[ $row == pingpong-spin-pin ]] && label+=" --pin"
    elif [[ $row == pingpong-pinned ]]; then
      # reheap's pair pinned apart, compared with the plain pingpong of the others.
      s_reheap=$(stats "$row" reheap)
      s_caf=$(stats pingpong caf)
      s_raw=$(stats pingpong rawuv)
      label="pingpong, reheap --pinned (apart)"
    else
      s_reheap=$(stats "$row" reheap)
      s_caf=$(stats "$row" caf)
      s_raw=$(stats "$row" rawuv)
      label=$row
    fi
    reheap_cell=$(cell "$s_reheap")
    if [[ $row == pingpong-detached && -n $s_reheap ]]; then
      reheap_cell="(pingpong row)"
    fi
    echo "| $label | $(unit "$row") | $reheap_cell | $(cell "$s_caf") | $(cell "$s_raw") | $(ratio "$s_reheap" "$s_caf") | $(ratio "$s_reheap" "$s_raw") |"
  done
  echo
  echo "Cells: median rate (min..max). Ratios: reheap's median rate over the other's (above 1: reheap faster)."
  if [[ $have_reheap -eq 1 ]]; then
    echo "The \"reheap --spin $spin_us\" rows: reheap's workers poll for work $spin_us µs before sleeping (--pin: each"
    echo "pinned to a CPU of its own); their ratios use the others' pingpong row, whose cells they repeat."
    echo "The \"reheap --pinned\" row pins the pair to workers 0 and 1 (every hand-over crosses threads); the plain"
    echo "pingpong row lets reheap's placement policy bring the pair onto one worker (see its NOTEs)."
  fi
  if [[ $have_caf -eq 1 ]]; then
    echo "The \"CAF --detached\" row gives each CAF actor its own thread; its ratio uses reheap's pingpong."
  fi
fi

if [[ -s $idle ]]; then
  echo
  echo "Idle CPU (${idle_ms} ms, nothing sent; % of one core used by the whole process; median (min..max)):"
  echo
  echo "| runtime | idle CPU % |"
  echo "|---|---:|"
  awk -F'|' '{ v[$1] = v[$1] " " $2; if (!($1 in seen)) { seen[$1] = 1; order[n++] = $1 } }
    END {
      for (k = 0; k < n; k++) {
        m = split(v[order[k]], a, " ")
        for (i = 1; i <= m; i++) for (j = i + 1; j <= m; j++) if (a[j] + 0 < a[i] + 0) { t = a[i]; a[i] = a[j]; a[j] = t }
        printf "| %s | %.2f (%.2f..%.2f) |\n", order[k], a[int((m + 1) / 2)], a[1], a[m]
      }
    }' "$idle"
fi

if [[ -s $notes ]]; then
  echo
  echo "Notes (median over the repetitions):"
  sort -k1,1 -k2,2 -k3,3 "$notes" | awk '
    function flush() {
      if (n == 0) return
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      printf "- %s, %s: %s = %s (%s..%s)\n", key_row, key_impl, key_name, v[int((n - 1) / 2)], v[0], v[n - 1]
      n = 0
    }
    { if ($1 != key_row || $2 != key_impl || $3 != key_name) { flush(); key_row = $1; key_impl = $2; key_name = $3 }
      v[n++] = $4 + 0 }
    END { flush() }'
  echo "  (caf thread_change_pct: share of pingpong handlers that ran on another thread than the"
  echo "  handler before; cross_thread_pct: share of messages handled on another thread than their"
  echo "  sender's.)"
fi

# ---- the recording table -------------------------------------------------------------------------

# pair_ratio ROW_A ROW_B: the median over the repetitions of rate_a / rate_b, the k-th run of one
# row paired with the k-th of the other (they ran in the same repetition, next to each other).
pair_ratio() {
  awk -v a="$1" -v b="$2" '
    $1 == a && $2 == "reheap" && $3 ~ /^[0-9]/ { ra[na++] = $3 }
    $1 == b && $2 == "reheap" && $3 ~ /^[0-9]/ { rb[nb++] = $3 }
    END {
      n = (na < nb) ? na : nb
      if (n == 0) { print "—"; exit }
      for (i = 0; i < n; i++) v[i] = ra[i] / rb[i]
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
      printf "%.2fx (%.2f..%.2f)\n", m, v[0], v[n - 1]
    }' "$results"
}

# note_median ROW KEY: the median of a NOTE over the repetitions, or —.
note_median() {
  awk -v row="$1" -v key="$2" '
    $1 == row && $2 == "reheap" && $3 == key { v[n++] = $4 + 0 }
    END {
      if (n == 0) { print "—"; exit }
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      printf "%.1f\n", (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
    }' "$notes"
}

if [[ ${#record_modes[@]} -gt 0 ]]; then
  declare -A payload=([oneway]=16 [fanin]=16 [pingpong]=8)
  echo
  echo "### Recording overhead (reheap, every reactor recorded, RecordedOutputs::kDigests)"
  echo
  header="| test | unit | unrecorded"
  rule="|---|---|---:"
  for mode in "${record_modes[@]}"; do header+=" | $mode"; rule+="|---:"; done
  for mode in "${record_modes[@]}"; do header+=" | $mode/unrecorded"; rule+="|---:"; done
  if [[ " ${record_modes[*]} " == *" file "* ]]; then
    header+=" | log B/msg, all logs | log B/msg, receiver | payload"
    rule+="|---:|---:|---:"
  fi
  echo "$header |"
  echo "$rule|"
  for test in "${rec_tests[@]}"; do
    line="| $test | $(unit "$test") | $(cell "$(stats "rec-$test-off" reheap)")"
    for mode in "${record_modes[@]}"; do line+=" | $(cell "$(stats "rec-$test-$mode" reheap)")"; done
    for mode in "${record_modes[@]}"; do line+=" | $(pair_ratio "rec-$test-$mode" "rec-$test-off")"; done
    if [[ " ${record_modes[*]} " == *" file "* ]]; then
      sink="—"
      [[ $test != pingpong ]] && sink=$(note_median "rec-$test-file" rlog_sink_bytes_per_msg)
      line+=" | $(note_median "rec-$test-file" rlog_bytes_per_msg) | $sink | ${payload[$test]} B"
    fi
    echo "$line |"
  done
  echo
  echo "Cells: median rate (min..max). Ratios: recorded rate over unrecorded rate, per repetition"
  echo "(the runs of one repetition are neighbours), median (min..max); 1.00x means free, 0.91x a"
  echo "10% loss. Log bytes: the .rlog files over the messages delivered (pingpong: 2 per round"
  echo "trip); \"all logs\" counts the sender's log (a digest record per send) and the receiver's (the"
  echo "message with its payload); \"receiver\" the receiver's log alone. The recording's goal is"
  echo "at most payload + 16 bytes per message, and at most 10% cost on oneway and fanin."
fi

if [[ $failures -gt 0 ]]; then
  echo
  echo "messaging_bench.sh: $failures run(s) FAILED; see the messages above" >&2
  exit 1
fi
