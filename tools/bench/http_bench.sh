#!/usr/bin/env bash
# HTTP benchmark: a reheap HTTP server against nginx, both loaded by wrk over 127.0.0.1.
#
# nginx (Debian's /usr/sbin/nginx) runs from a configuration generated in a temporary directory:
# one worker process, no access log, keep-alive, and `GET /` answered with 200 and the 16-byte
# body "0123456789abcdef". The reheap server is the command given with --server-cmd and must
# answer `GET /` the same way; both are checked once before anything is measured. Both servers
# are pinned to CPU 1 and wrk (one thread) to CPU 0, so the load generator never competes with
# the server for a core.
#
# While wrk runs, the script samples utime+stime of wrk and of the server (the server process
# and its children, e.g. nginx's master and worker) from /proc/<pid>/stat, and reports both as a
# percentage of one core over the same window. If wrk uses 95% of its core or more while the
# server uses less than 90% of its own, wrk is the bottleneck and the requests/s say more about
# wrk than about the server; the script prints a warning then.
#
# The repetitions alternate the order of the servers (nginx first, then the reheap server first,
# ...). Each server gets one untimed second of load before the first repetition.
#
# usage: bash tools/bench/http_bench.sh [--server-cmd "CMD"] [--duration S] [--connections C]
#                                       [--port P] [--reps N]
set -euo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo_dir=$(cd "$script_dir/../.." && pwd)
server_cmd=""
duration=10
connections=64
port=8080
reps=3
nginx_bin=/usr/sbin/nginx
body="0123456789abcdef"
server_cpu=1
wrk_cpu=0

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
  cat <<'EOF'

options:
  --server-cmd "CMD"  the reheap server to measure, e.g.
                      "build/release/examples/http_server --port 8081 --threads 1"
                      (relative paths are taken from the repository root). Its port is the
                      value after --port in CMD, or P + 1 if CMD has none. Without it, or if its
                      executable does not exist, only nginx is measured.
  --duration S        seconds of each wrk run (default 10)
  --connections C     wrk connections, all on one wrk thread (default 64)
  --port P            nginx's port (default 8080)
  --reps N            repetitions per server (default 3)
EOF
}

while [[ $# -gt 0 ]]; do
  case "$1" in
    --server-cmd) server_cmd=$2; shift ;;
    --duration) duration=$2; shift ;;
    --connections) connections=$2; shift ;;
    --port) port=$2; shift ;;
    --reps) reps=$2; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "http_bench.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
  esac
  shift
done
for v in duration connections port reps; do
  if ! [[ ${!v} =~ ^[1-9][0-9]*$ ]]; then
    echo "http_bench.sh: --$v wants a positive integer, not '${!v}'" >&2
    exit 2
  fi
done

die() { echo "http_bench.sh: $*" >&2; exit 1; }

for tool in wrk taskset; do
  command -v "$tool" >/dev/null || die "$tool is not installed (Debian: apt-get install $tool)"
done
[[ -x $nginx_bin ]] || die "$nginx_bin is not installed (Debian: apt-get install nginx-light)"
if [[ $(nproc) -lt 2 ]]; then
  die "needs two CPUs (wrk on CPU $wrk_cpu, the servers on CPU $server_cpu); nproc is $(nproc)"
fi

# ---- the servers -------------------------------------------------------------------------------

tmp=$(mktemp -d)
chmod 755 "$tmp"  # nginx's worker runs as nobody when the script runs as root
server_pids=()

cleanup() {
  local pid
  for pid in "${server_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${server_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

accepts() {  # accepts PORT: whether something accepts TCP connections on 127.0.0.1:PORT
  (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null
}

# wait_for_port NAME PID PORT LOG...: until the server accepts connections; shows its logs and
# dies if it exits first or takes longer than 10 s.
wait_for_port() {
  local name=$1 pid=$2 p=$3 i
  shift 3
  for (( i = 0; i < 200; i++ )); do
    if ! kill -0 "$pid" 2>/dev/null; then
      cat "$@" >&2 2>/dev/null || true
      die "$name exited before accepting connections on port $p"
    fi
    accepts "$p" && return 0
    sleep 0.05
  done
  cat "$@" >&2 2>/dev/null || true
  die "$name does not accept connections on 127.0.0.1:$p after 10 s"
}

# check_response NAME PORT: GET / must answer 200 with exactly the 16-byte body.
check_response() {
  local name=$1 p=$2 status got
  if command -v curl >/dev/null; then
    got=$(curl -sS --max-time 5 -o "$tmp/body.$p" -w '%{http_code}' "http://127.0.0.1:$p/") ||
      die "$name: GET http://127.0.0.1:$p/ failed"
    status=$got
    got=$(cat "$tmp/body.$p")
  else
    local response
    exec 3<>"/dev/tcp/127.0.0.1/$p" || die "$name: cannot connect to port $p"
    printf 'GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' >&3
    response=$(timeout 5 cat <&3 | tr -d '\r') || true
    exec 3<&-
    status=$(head -1 <<<"$response" | awk '{print $2}')
    got=$(awk 'body {print} /^$/ {body = 1}' <<<"$response")
  fi
  if [[ $status != 200 || $got != "$body" ]]; then
    die "$name: GET / answered status '$status' with body '$got' (${#got} bytes); expected 200 and '$body'"
  fi
  echo "check: $name answers GET / with 200 and the ${#body}-byte body"
}

if accepts "$port"; then
  die "port $port is already in use; choose another with --port"
fi

cat >"$tmp/nginx.conf" <<EOF
# Generated by tools/bench/http_bench.sh. No "user" directive: as root the worker runs as nobody,
# otherwise as the invoking user; nothing here needs more.
daemon off;
worker_processes 1;
pid $tmp/nginx.pid;
error_log $tmp/nginx-error.log warn;
events {
  worker_connections 4096;
}
http {
  access_log off;
  server_tokens off;
  keepalive_timeout 65s;
  keepalive_requests 100000000;  # keep every wrk connection alive for the whole run
  client_body_temp_path $tmp/client_body;
  proxy_temp_path $tmp/proxy;
  fastcgi_temp_path $tmp/fastcgi;
  uwsgi_temp_path $tmp/uwsgi;
  scgi_temp_path $tmp/scgi;
  server {
    listen 127.0.0.1:$port;
    location = / {
      default_type text/plain;
      return 200 "$body";
    }
  }
}
EOF

taskset -c "$server_cpu" "$nginx_bin" -p "$tmp" -c "$tmp/nginx.conf" -e "$tmp/nginx-error.log" \
  >"$tmp/nginx.out" 2>&1 &
nginx_pid=$!
server_pids+=("$nginx_pid")
wait_for_port nginx "$nginx_pid" "$port" "$tmp/nginx.out" "$tmp/nginx-error.log"
check_response nginx "$port"

servers=(nginx)
declare -A server_port=([nginx]=$port)
declare -A server_pid=([nginx]=$nginx_pid)

if [[ -n $server_cmd ]]; then
  read -r -a cmd <<<"$server_cmd"
  exe=${cmd[0]}
  [[ $exe == /* || ! -e $repo_dir/$exe ]] || exe="$repo_dir/$exe"
  if [[ ! -x $exe ]]; then
    echo "http_bench.sh: $exe does not exist or is not executable; measuring nginx only"
  else
    cmd[0]=$exe
    reheap_port=$(( port + 1 ))
    for (( i = 0; i + 1 < ${#cmd[@]}; i++ )); do
      [[ ${cmd[$i]} == --port ]] && reheap_port=${cmd[$(( i + 1 ))]}
    done
    [[ $reheap_port != "$port" ]] || die "the reheap server's port $reheap_port is nginx's; use --port"
    accepts "$reheap_port" && die "port $reheap_port is already in use before the reheap server starts"
    taskset -c "$server_cpu" "${cmd[@]}" >"$tmp/reheap.out" 2>&1 &
    reheap_pid=$!
    server_pids+=("$reheap_pid")
    wait_for_port "reheap server ($server_cmd)" "$reheap_pid" "$reheap_port" "$tmp/reheap.out"
    check_response "reheap server" "$reheap_port"
    servers+=(reheap)
    server_port[reheap]=$reheap_port
    server_pid[reheap]=$reheap_pid
  fi
else
  echo "http_bench.sh: no --server-cmd; measuring nginx only"
fi

# ---- measuring ---------------------------------------------------------------------------------

# A way to sleep without forking: read with a timeout from a FIFO nobody writes to. Forks would
# cost CPU time on the cores we are measuring.
mkfifo "$tmp/sleep.fifo"
exec {sleep_fd}<>"$tmp/sleep.fifo"
nap() { read -r -t "$1" -u "$sleep_fd" _ || true; }

ticks_per_s=$(getconf CLK_TCK)

# cpu_ticks PID...: utime + stime, in clock ticks, summed over the processes (each process's
# line counts all its threads). Fields 14 and 15 of /proc/PID/stat; the name field, which may
# hold spaces, ends at the last ')'.
cpu_ticks() {
  local total=0 pid line
  for pid in "$@"; do
    line=""
    read -r line 2>/dev/null <"/proc/$pid/stat" || true
    [[ -n $line ]] || continue
    line=${line##*) }
    read -r -a f <<<"$line"
    total=$(( total + f[11] + f[12] ))  # after the name: state is f[0], utime f[11], stime f[12]
  done
  echo "$total"
}

# core_busy CPU: busy clock ticks of one CPU so far (all of /proc/stat's columns but idle and
# iowait), which unlike the per-process times includes softirq work done on the CPU for
# nobody in particular, such as much of loopback TCP.
core_busy() {
  local line
  local -a f
  while read -r line; do
    if [[ $line == "cpu$1 "* ]]; then
      read -r -a f <<<"$line"
      echo $(( f[1] + f[2] + f[3] + f[6] + f[7] + f[8] ))
      return
    fi
  done </proc/stat
}

# server_tree PID: the processes whose CPU time counts as the server's, the server and its
# descendants (nginx's worker), found once per run from the parent pids in /proc/*/stat (this
# kernel may lack /proc/PID/task/TID/children).
server_tree() {
  local -A parent_of=()
  local stat line pid
  local -a f
  for stat in /proc/[0-9]*/stat; do
    line=""
    read -r line 2>/dev/null <"$stat" || true
    [[ -n $line ]] || continue
    pid=${line%% *}
    line=${line##*) }
    read -r -a f <<<"$line"
    parent_of[$pid]=${f[1]}
  done
  local -a tree=("$1")
  local changed=1 member
  while (( changed )); do
    changed=0
    for pid in "${!parent_of[@]}"; do
      for member in "${tree[@]}"; do
        if [[ ${parent_of[$pid]} == "$member" ]]; then
          tree+=("$pid")
          unset "parent_of[$pid]"
          changed=1
          break
        fi
      done
    done
  done
  echo "${tree[*]}"
}

# bench NAME SECONDS: one wrk run against the server; prints
# "requests/s wrk_cpu% server_cpu% wrk_core_busy% server_core_busy%".
# Call it directly, not in a subshell, so that its die() ends the script.
# CPU shares are taken over the same window for both: from just after wrk started to the last
# sample before it exited (samples every 0.1 s), so the window covers all but ~0.1 s of the run.
bench() {
  local name=$1 seconds=$2
  local p=${server_port[$name]} out="$tmp/wrk.$name.out"
  local tree
  tree=$(server_tree "${server_pid[$name]}")
  taskset -c "$wrk_cpu" wrk -t1 -c"$connections" -d"${seconds}s" "http://127.0.0.1:$p/" >"$out" 2>&1 &
  local wrk_pid=$!
  local t0=$EPOCHREALTIME w0 s0 c0 d0
  w0=$(cpu_ticks "$wrk_pid")
  # shellcheck disable=SC2086
  s0=$(cpu_ticks $tree)
  c0=$(core_busy "$wrk_cpu")
  d0=$(core_busy "$server_cpu")
  local t1=$t0 w1=$w0 s1=$s0 c1=$c0 d1=$d0 w s c d state
  while :; do
    nap 0.1
    state=""
    read -r state 2>/dev/null <"/proc/$wrk_pid/stat" || true
    state=${state##*) }
    [[ -n $state && ${state:0:1} != Z ]] || break
    w=$(cpu_ticks "$wrk_pid")
    # shellcheck disable=SC2086
    s=$(cpu_ticks $tree)
    c=$(core_busy "$wrk_cpu")
    d=$(core_busy "$server_cpu")
    t1=$EPOCHREALTIME w1=$w s1=$s c1=$c d1=$d
  done
  wait "$wrk_pid" || { cat "$out" >&2; die "wrk against $name failed"; }
  if grep -q 'Non-2xx\|Socket errors' "$out"; then
    echo "http_bench.sh: warning: wrk against $name reported errors:" >&2
    grep 'Non-2xx\|Socket errors' "$out" >&2
  fi
  local rps
  rps=$(awk '/^Requests\/sec:/ {print $2}' "$out")
  [[ -n $rps ]] || { cat "$out" >&2; die "no Requests/sec in wrk's output against $name"; }
  awk -v rps="$rps" -v t0="$t0" -v t1="$t1" -v w="$(( w1 - w0 ))" -v s="$(( s1 - s0 ))" \
      -v c="$(( c1 - c0 ))" -v d="$(( d1 - d0 ))" -v hz="$ticks_per_s" 'BEGIN {
        span = t1 - t0
        if (span <= 0) { printf "%s nan nan nan nan\n", rps; exit }
        f = 100 / hz / span
        printf "%s %.1f %.1f %.1f %.1f\n", rps, w * f, s * f, c * f, d * f }'
}

echo "warm-up: 1 s of load on each server"
for name in "${servers[@]}"; do bench "$name" 1 >/dev/null; done

results="$tmp/results"
: >"$results"
disturbed=0
echo "measuring: ${servers[*]}; $reps repetitions of ${duration} s, wrk -t1 -c$connections"
for (( rep = 0; rep < reps; rep++ )); do
  order=("${servers[@]}")
  if (( rep % 2 == 1 && ${#servers[@]} == 2 )); then order=("${servers[1]}" "${servers[0]}"); fi
  for name in "${order[@]}"; do
    bench "$name" "$duration" >"$tmp/one"
    read -r rps wcpu scpu wcore score <"$tmp/one"
    printf '  rep %d  %-7s %10s req/s   wrk %5s%%  server %5s%%   busy: CPU %d %5s%%, CPU %d %5s%%\n' \
      $(( rep + 1 )) "$name" "$rps" "$wcpu" "$scpu" "$wrk_cpu" "$wcore" "$server_cpu" "$score"
    echo "$name $rps $wcpu $scpu $wcore $score" >>"$results"
    if awk -v w="$wcpu" -v s="$scpu" 'BEGIN { exit !(w >= 95 && s < 90) }'; then
      echo "  WARNING: wrk used ${wcpu}% of its core while $name used ${scpu}%: wrk is the" \
           "bottleneck of this run, not $name"
    fi
    # Loopback softirq work is charged to the cores, not always to the processes: a few percent
    # of difference is normal. More means that something else ran on the cores (the machine is
    # shared), and the run measured that too.
    if awk -v a="$wcore" -v b="$wcpu" -v c="$score" -v d="$scpu" \
         'BEGIN { exit !(a - b > 20 || c - d > 20) }'; then
      echo "  WARNING: the cores were busy beyond wrk's and $name's own time (CPU $wrk_cpu" \
           "${wcore}% vs ${wcpu}%, CPU $server_cpu ${score}% vs ${scpu}%): other processes" \
           "or interrupts disturbed this run"
      disturbed=$(( disturbed + 1 ))
    fi
  done
done

# ---- the table ---------------------------------------------------------------------------------

# column NAME FIELD: "median min max" of a column of the results for one server.
column() {
  awk -v name="$1" -v field="$2" '
    $1 == name { v[n++] = $field + 0 }
    END {
      for (i = 0; i < n; i++) for (j = i + 1; j < n; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
      m = (n % 2) ? v[(n - 1) / 2] : (v[n / 2 - 1] + v[n / 2]) / 2
      printf "%.1f %.1f %.1f\n", m, v[0], v[n - 1]
    }' "$results"
}

cpu_model=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo
echo "## HTTP benchmark  $(date -u '+%Y-%m-%d %H:%M UTC')"
echo
echo "machine: nproc $(nproc), ${cpu_model:-unknown CPU}, kernel $(uname -sr); load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "load generator: $(wrk -v 2>&1 | head -1 | sed 's/ Copyright.*//'), -t1 -c$connections -d${duration}s, pinned to CPU $wrk_cpu"
echo "servers, pinned to CPU $server_cpu: $("$nginx_bin" -v 2>&1 | sed 's/.*: //') (1 worker, keep-alive, access_log off)$(
  [[ ${#servers[@]} -eq 2 ]] && echo "; reheap: $server_cmd")"
echo "request: GET / over 127.0.0.1 -> 200, 16-byte body; $reps repetitions, order alternating"
echo
echo "| server | requests/s (median, min..max) | wrk CPU % | server CPU % | ratio to nginx |"
echo "|---|---:|---:|---:|---:|"
read -r nginx_median _ _ < <(column nginx 2)
for name in "${servers[@]}"; do
  read -r m lo hi < <(column "$name" 2)
  read -r wm _ _ < <(column "$name" 3)
  read -r sm _ _ < <(column "$name" 4)
  ratio=$(awk -v a="$m" -v b="$nginx_median" 'BEGIN { printf "%.2fx", a / b }')
  label=$name
  [[ $name == reheap ]] && label="reheap ($(basename "${cmd[0]}"))"
  printf '| %s | %.0f (%.0f..%.0f) | %.1f | %.1f | %s |\n' "$label" "$m" "$lo" "$hi" "$wm" "$sm" "$ratio"
done
echo
echo "CPU %: utime+stime per wall second from /proc/<pid>/stat over each run (100 = one core),"
echo "median over the repetitions; the server's includes its child processes. Whole-core busy"
echo "time (/proc/stat, softirq included), median: $(for name in "${servers[@]}"; do
  read -r wc _ _ < <(column "$name" 5); read -r sc _ _ < <(column "$name" 6)
  printf '%s run: CPU %d %.0f%%, CPU %d %.0f%%; ' "$name" "$wrk_cpu" "$wc" "$server_cpu" "$sc"; done)"
if [[ $disturbed -gt 0 ]]; then
  echo "WARNING: $disturbed run(s) shared their cores with other work (see above); rerun on a quiet machine."
fi
