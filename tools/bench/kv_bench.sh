#!/usr/bin/env bash
# reheap-kv against redis-server, on loopback, measured by the same clients in the same run.
#
# Each repetition runs every server configuration once, alternating the order (reheap-kv first,
# then redis first, ...), and each run starts its server afresh in an empty directory:
#   throughput   redis-benchmark -c 50 -n 200000 -t set,get --csv, at -P 1 and at -P 16. Over
#                each run, the CPU seconds of redis-benchmark (/usr/bin/time) and of the server
#                (/proc/PID/stat) divided by the wall time: on 2 vCPUs the client competes with
#                the server, and a client near 1.0 core means it, not the server, is the limit.
#   snapshots    DEBUG POPULATE 1000000 key 100 (1M keys, 100-byte values); memory per key
#                ((VmRSS after - VmRSS empty) / keys, and INFO used_memory where the server has
#                it); the time the SAVE command takes; the size of the data directory (du);
#                the time of a second SAVE after 10,000 more SETs (reheap-kv: an increment);
#                then the server is stopped and started again on that directory: the load time
#                runs from its start until PING answers and DBSIZE is 1M.
#   BGSAVE       on that loaded server, under a write load (redis-benchmark -t set -r 1000000
#                -d 100, which adds keys key:000000NNNNNN beside POPULATE's key:N): BGSAVE until
#                it is done. The server and all its children (Redis forks) are sampled every
#                10 ms: peak VmRSS and peak PSS during the save against the median of the
#                second before it. RSS counts a page shared by Redis and its fork twice; PSS
#                splits it, so PSS is the memory the save really costs. GET latency comes from
#                a /usr/bin/python3 client (kv_bench_probe.py latency: one connection, one GET
#                at a time, timed around each request); the worst p99 of the one-second windows
#                (slid by 0.25 s) that overlap the save is reported against the second before,
#                and so is the slowest GET that was waiting at any moment of the save.
# redis-server runs with its default single thread for commands whatever --workers says.
#
# Output: the machine, every run's numbers, then a Markdown table (medians, spread as
# (max - min) / median, and the reheap-kv / redis ratio) ready for README.md.
#
# usage: bash tools/bench/kv_bench.sh [--server BIN] [--redis /usr/bin/redis-server] [--reps N]
#                                     [--workers 1,2] [--quick]
#   --server   the reheap-kv binary (default build/release/examples/kv/reheap-kv). Given
#              redis-server, the script measures redis against itself (a check of the script:
#              the ratios should be near 1).
#   --quick    100,000 requests per throughput run, 100,000 keys, 2 repetitions: a few minutes.
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../.." && pwd)
python=/usr/bin/python3
probe=$script_dir/kv_bench_probe.py
server=$repo_dir/build/release/examples/kv/reheap-kv
redis=/usr/bin/redis-server
reps=""
workers_list=1,2
quick=0
command_line="bash tools/bench/kv_bench.sh $*"

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}
die() { echo "kv_bench.sh: $*" >&2; exit 1; }

while [[ $# -gt 0 ]]; do
  case "$1" in
    --server) server=$2; shift ;;
    --redis) redis=$2; shift ;;
    --reps) reps=$2; shift ;;
    --workers) workers_list=$2; shift ;;
    --quick) quick=1 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "kv_bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done

requests=200000
keys=1000000
if [[ $quick == 1 ]]; then
  requests=100000
  keys=100000
  : "${reps:=2}"
fi
: "${reps:=5}"
[[ $reps =~ ^[1-9][0-9]*$ ]] || die "--reps wants a positive integer, not '$reps'"
[[ $workers_list =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] || die "--workers wants e.g. 1,2"
[[ -x $server ]] || die "$server is not an executable (build reheap-kv, or give --server)"
[[ -x $redis ]] || die "$redis is not installed (apt-get install redis-server)"
for tool in redis-benchmark redis-cli; do
  command -v "$tool" >/dev/null || die "$tool is not installed (apt-get install redis-tools)"
done
[[ -x /usr/bin/time ]] || die "/usr/bin/time is not installed (apt-get install time)"
"$python" -c 'import sys' || die "$python is missing"

# The configurations: name, binary, extra arguments. redis-server is recognised by its file name
# (running an unknown binary with --version could start a server); as --server it is measured
# once, since it has no --workers.
cfg_names=() cfg_bins=() cfg_args=()
if [[ $(basename "$server") == redis-server* ]]; then
  cfg_names+=("server") cfg_bins+=("$server") cfg_args+=("--enable-debug-command local")
else
  IFS=, read -r -a worker_counts <<<"$workers_list"
  for w in "${worker_counts[@]}"; do
    cfg_names+=("reheap-kv w=$w") cfg_bins+=("$server") cfg_args+=("--workers $w")
  done
fi
cfg_names+=("redis") cfg_bins+=("$redis") cfg_args+=("--enable-debug-command local")

work=$(mktemp -d /tmp/kv_bench.XXXXXX)
pids=()  # everything started here, killed on exit
cleanup() {
  local pid
  for pid in "${pids[@]}"; do kill -9 "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# launch CFG DIR: starts configuration CFG on a free port with data in DIR, without waiting; sets
# port, server_pid, server_log.
launch() {
  local cfg=$1 dir=$2
  port=$(free_port)
  server_log=$work/server.log
  mkdir -p "$dir"
  # shellcheck disable=SC2086  # cfg_args holds words to split
  "${cfg_bins[$cfg]}" --port "$port" --dir "$dir" --save "" ${cfg_args[$cfg]} \
    >>"$server_log" 2>&1 &
  server_pid=$!
  pids+=("$server_pid")
}

wait_ping() {
  local deadline=$((SECONDS + 20))
  until [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; do
    if [[ $SECONDS -ge $deadline ]] || ! kill -0 "$server_pid" 2>/dev/null; then
      tail -n 40 "$server_log" >&2
      die "${cfg_names[$cfg]} did not answer PING within 20 s (its log is above)"
    fi
    sleep 0.05
  done
}

stop() {  # SIGTERM and wait; with --save "" neither server saves on the way out
  kill "$server_pid" 2>/dev/null || true
  wait "$server_pid" 2>/dev/null || true
}

rss_kb() { awk '/^VmRSS:/ { print $2 }' "/proc/$server_pid/status"; }
cpu_s() { "$python" "$probe" cpu --pid "$server_pid"; }
now() { echo "$EPOCHREALTIME"; }
calc() { awk "BEGIN { printf \"%.${2:-3}f\", $1 }"; }

# Results: values["CFG|METRIC"] is the list of the runs' values.
declare -A values
record() {  # record CFG METRIC VALUE
  values["$1|$2"]+="$3 "
  printf '    %-22s %s\n' "$2" "$3"
}

# --- throughput -------------------------------------------------------------------------------
measure_throughput() {
  local cfg=$1 pipeline csv t0 t1 cpu0 cpu1 client
  launch "$cfg" "$work/data"
  wait_ping
  for pipeline in 1 16; do
    cpu0=$(cpu_s)
    t0=$(now)
    /usr/bin/time -f '%U %S' -o "$work/client_time" \
      redis-benchmark -p "$port" -c 50 -n "$requests" -t set,get -P "$pipeline" --csv \
      >"$work/csv" 2>"$work/benchmark.err" ||
      { cat "$work/benchmark.err" >&2; die "redis-benchmark failed"; }
    t1=$(now)
    cpu1=$(cpu_s)
    # --csv: a header, then "SET","rps",... and "GET","rps",...
    local test
    for test in SET GET; do
      record "$cfg" "${test,,}_rps_p$pipeline" \
        "$(awk -F'"' -v t="$test" '$2 == t { printf "%.0f", $4 }' "$work/csv")"
    done
    client=$(awk '{ print $1 + $2 }' "$work/client_time")
    record "$cfg" "client_cpu_p$pipeline" "$(calc "$client / ($t1 - $t0)" 2)"
    record "$cfg" "server_cpu_p$pipeline" "$(calc "($cpu1 - $cpu0) / ($t1 - $t0)" 2)"
  done
  stop
  rm -rf "$work/data"
}

# --- snapshots: memory per key, SAVE, size, load ---------------------------------------------
measure_snapshots() {
  local cfg=$1 empty full used t0
  launch "$cfg" "$work/data"
  wait_ping
  empty=$(rss_kb)
  [[ $(redis-cli -p "$port" DEBUG POPULATE "$keys" key 100) == OK ]] || die "DEBUG POPULATE failed"
  full=$(rss_kb)
  record "$cfg" mem_per_key_b "$(calc "($full - $empty) * 1024 / $keys" 1)"
  used=$(redis-cli -p "$port" INFO memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }')
  [[ -n $used ]] && record "$cfg" used_memory_per_key_b "$(calc "$used / $keys" 1)"
  record "$cfg" save_s "$("$python" "$probe" save --port "$port")"
  record "$cfg" saved_mb "$(du -sb "$work/data" | awk '{ printf "%.1f", $1 / 1048576 }')"
  # The next save, after 10,000 more writes: what periodic saves cost (reheap-kv writes an
  # increment, the pages those writes touched; Redis writes the whole data set again).
  redis-benchmark -p "$port" -c 10 -n 10000 -t set -r "$keys" -d 100 -q >/dev/null 2>&1 ||
    die "redis-benchmark before the second SAVE failed"
  record "$cfg" save2_s "$("$python" "$probe" save --port "$port")"
  stop
  t0=$(now)
  launch "$cfg" "$work/data"
  record "$cfg" load_s "$("$python" "$probe" ready --port "$port" --keys "$keys" --since "$t0")"
}

# --- BGSAVE under a write load (on the server measure_snapshots left running) ----------------
measure_bgsave() {
  local cfg=$1 sampler prober loader span
  "$python" "$probe" rss --pid "$server_pid" --out "$work/rss" &
  sampler=$!
  "$python" "$probe" latency --port "$port" --out "$work/lat" &
  prober=$!
  redis-benchmark -p "$port" -c 50 -n 100000000 -t set -r 1000000 -d 100 -q \
    >/dev/null 2>&1 &
  loader=$!
  pids+=("$sampler" "$prober" "$loader")
  sleep 2  # the second before the save is the baseline; the first one warms up
  span=$("$python" "$probe" bgsave --port "$port")
  sleep 0.5
  kill "$loader" 2>/dev/null || true
  kill -TERM "$prober" "$sampler"
  wait "$prober" "$sampler"
  wait "$loader" 2>/dev/null || true
  record "$cfg" bgsave_s "$(calc "${span#* } - ${span% *}")"
  local name value
  while read -r name value; do
    record "$cfg" "$name" "$value"
  done < <("$python" "$probe" report --rss "$work/rss" --lat "$work/lat" \
             --start "${span% *}" --end "${span#* }")
  stop
  rm -rf "$work/data"
}

# --- runs -------------------------------------------------------------------------------------
echo "# kv_bench: $(date -u '+%Y-%m-%d %H:%M UTC')"
echo "# $command_line"
echo "# machine: $(nproc) vCPUs, $(awk -F': *' '/model name/ { print $2; exit }' /proc/cpuinfo)," \
     "$(awk '/MemTotal/ { printf "%.0f GB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
echo "# redis: $("$redis" --version | awk '{ print $3 }'); client: redis-benchmark" \
     "$(redis-benchmark --version 2>/dev/null | awk '{ print $2 }'); keys $keys; requests $requests;" \
     "reps $reps"
n=${#cfg_names[@]}
for ((rep = 1; rep <= reps; rep++)); do
  for ((i = 0; i < n; i++)); do
    # Odd repetitions in the listed order, even ones reversed: drift favours no one.
    if ((rep % 2)); then cfg=$i; else cfg=$((n - 1 - i)); fi
    echo "## rep $rep, ${cfg_names[$cfg]}"
    measure_throughput "$cfg"
    measure_snapshots "$cfg"
    measure_bgsave "$cfg"
  done
done

# --- the table --------------------------------------------------------------------------------
median() { tr ' ' '\n' | grep -v '^$' | sort -g |
           awk '{ a[NR] = $1 } END { if (NR == 0) print ""; else if (NR % 2) print a[(NR + 1) / 2];
                                     else print (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
spread() { tr ' ' '\n' | grep -v '^$' | sort -g |
           awk '{ a[NR] = $1 } END { m = (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2;
                                     if (NR < 2 || m == 0) print ""; else printf " ±%.0f%%", 50 * (a[NR] - a[1]) / m }'; }
cell() {  # cell CFG METRIC DECIMALS: "median ±spread" or n/a
  local list=${values["$1|$2"]:-}
  if [[ -z $list ]]; then echo "n/a"; return; fi
  echo "$(calc "$(median <<<"$list")" "$3")$(spread <<<"$list")"
}
ratio() {
  local a b
  a=$(median <<<"${values["$1|$3"]:-}")
  b=$(median <<<"${values["$2|$3"]:-}")
  if [[ -z $a || -z $b ]] || awk "BEGIN { exit !($b == 0) }"; then echo "n/a"; return; fi
  calc "$a / $b" 2
}

# metric | label | decimals in the table
metrics=(
  "set_rps_p1|SET requests/s, -P 1|0"
  "get_rps_p1|GET requests/s, -P 1|0"
  "set_rps_p16|SET requests/s, -P 16|0"
  "get_rps_p16|GET requests/s, -P 16|0"
  "client_cpu_p1|redis-benchmark CPU (cores), -P 1|2"
  "server_cpu_p1|server CPU (cores), -P 1|2"
  "client_cpu_p16|redis-benchmark CPU (cores), -P 16|2"
  "server_cpu_p16|server CPU (cores), -P 16|2"
  "mem_per_key_b|memory per key, RSS (bytes)|0"
  "used_memory_per_key_b|memory per key, INFO used_memory (bytes)|0"
  "save_s|SAVE of $keys keys (s)|3"
  "saved_mb|saved size (MB)|1"
  "save2_s|next SAVE, after 10,000 writes (s)|3"
  "load_s|start-up load until DBSIZE = $keys (s)|3"
  "bgsave_s|BGSAVE under writes (s)|3"
  "steady_rss_mb|RSS before BGSAVE, with children (MB)|1"
  "peak_rss_mb|peak RSS during BGSAVE, with children (MB)|1"
  "steady_pss_mb|PSS before BGSAVE, with children (MB)|1"
  "peak_pss_mb|peak PSS during BGSAVE, with children (MB)|1"
  "baseline_p99_ms|GET p99 in the second before BGSAVE (ms)|2"
  "save_worst_p99_ms|worst 1 s GET p99 during BGSAVE (ms)|2"
  "save_max_ms|slowest GET waiting during BGSAVE (ms)|1"
)
redis_cfg=$((n - 1))
echo
echo "Medians of $reps runs (± half the range, as % of the median); ratio = reheap-kv / redis."
echo "redis-server uses one thread for commands. Command: \`$command_line\`"
echo
for ((cfg = 0; cfg < redis_cfg; cfg++)); do
  echo "| metric (${cfg_names[$cfg]}) | ${cfg_names[$cfg]} | redis | ratio |"
  echo "|---|---:|---:|---:|"
  for entry in "${metrics[@]}"; do
    IFS='|' read -r metric label decimals <<<"$entry"
    echo "| $label | $(cell "$cfg" "$metric" "$decimals") |" \
         "$(cell "$redis_cfg" "$metric" "$decimals") | $(ratio "$cfg" "$redis_cfg" "$metric") |"
  done
  echo
done
