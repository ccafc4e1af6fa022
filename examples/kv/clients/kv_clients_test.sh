#!/usr/bin/env bash
# Drives a Redis-compatible server with real clients: redis-cli, redis-benchmark, redis-py and raw
# sockets. Written against redis-server 7.0 so that it is known to be right before it is pointed
# at reheap-kv; both servers take the same command line:
#
#   SERVER --port P --dir DIR --save ""            (reheap-kv also gets --workers N if given)
#
# Each step starts its own server on a free loopback port in a fresh directory, prints PASS or
# FAIL, and prints the server's log when it fails. The steps (run all, or one with --step):
#
#   redis_cli                  one-shot commands, --no-raw output, an interactive session on a
#                              pseudo-terminal (interactive_cli.py), commands fed on stdin,
#                              --pipe mass insertion, --scan
#   redis_benchmark_default    redis-benchmark's default run (every test), then the data it left
#   redis_benchmark_pipelined  redis-benchmark -P 16 -t set,get,incr,lpush
#   raw_protocol               inline commands, malformed requests (raw_protocol.py)
#   redis_py                   the functional suite (redis_py_suite.py)
#   slow_reader                a client that never reads its replies (slow_reader.py)
#   crash_during_bgsave        kill -9 during BGSAVE under writes (the instant BGSAVE replies),
#                              restart, check; then kill -9
#                              after a BGSAVE finished, restart, check it kept every
#                              acknowledged write (crash_check.py)
#
# --quick shrinks the loads (for sanitizer builds, ~10x slower). --rss-limit-mb N (256) bounds
# the server's RSS growth in slow_reader; 0 prints it without checking. Exit status: 0 if every step
# passed, 1 if one failed, 77 if a client program is missing (ctest's SKIP_RETURN_CODE).
#
# usage: bash examples/kv/clients/kv_clients_test.sh SERVER_BINARY [--quick] [--step NAME]
#                                                    [--workers N] [--keep] [--rss-limit-mb N]
set -uo pipefail

script_dir=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
python=/usr/bin/python3  # the system interpreter: it is the one python3-redis installs into
all_steps=(redis_cli redis_benchmark_default redis_benchmark_pipelined raw_protocol redis_py
           slow_reader crash_during_bgsave)

usage() {
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "${BASH_SOURCE[0]}"
}

server=""
quick=0
rss_limit_mb=256  # slow_reader: the server's RSS may grow by less than this
steps=()
workers=""
keep=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --quick) quick=1 ;;
    --rss-limit-mb) rss_limit_mb=$2; shift ;;
    --step) steps+=("$2"); shift ;;
    --workers) workers=$2; shift ;;
    --keep) keep=1 ;;
    -h|--help) usage; exit 0 ;;
    -*) echo "kv_clients_test.sh: unknown option $1" >&2; usage >&2; exit 2 ;;
    *) [[ -z $server ]] || { echo "kv_clients_test.sh: two servers given" >&2; exit 2; }
       server=$1 ;;
  esac
  shift
done
[[ -n $server ]] || { usage >&2; exit 2; }
[[ -x $server ]] || { echo "kv_clients_test.sh: $server is not an executable" >&2; exit 2; }
[[ ${#steps[@]} -gt 0 ]] || steps=("${all_steps[@]}")
for step in "${steps[@]}"; do
  [[ " ${all_steps[*]} " == *" $step "* ]] ||
    { echo "kv_clients_test.sh: no step '$step' (steps: ${all_steps[*]})" >&2; exit 2; }
done

# A missing client is a skip, not a failure: the server may be fine.
skip_missing() {
  echo "SKIP: $1 is not installed (apt install redis-tools python3-redis)"
  exit 77
}
command -v redis-cli >/dev/null || skip_missing redis-cli
command -v redis-benchmark >/dev/null || skip_missing redis-benchmark
[[ -x $python ]] || skip_missing "$python"
"$python" -c 'import redis' 2>/dev/null || skip_missing "redis-py for $python"

# redis-server needs two settings that reheap-kv has built in. DEBUG is refused by default since
# Redis 7 (the suite and the benchmark use DEBUG POPULATE); and Redis buffers replies for a
# client without limit (client-output-buffer-limit normal 0 0 0), so the slow_reader step sets a
# limit at run time (see step_slow_reader). Redis is recognised by its file name only: running an
# unknown binary with --version could start a server.
is_redis=0
[[ $(basename "$server") == redis-server* ]] && is_redis=1

work=$(mktemp -d /tmp/kv_clients.XXXXXX)
server_pids=()
helper_pids=()
cleanup() {
  local pid
  for pid in "${helper_pids[@]}" "${server_pids[@]}"; do
    kill -9 "$pid" 2>/dev/null
  done
  wait 2>/dev/null
  if [[ $keep == 1 ]]; then echo "kept $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() {
  "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# start_server DIR: starts the server on a free port, data in DIR; sets port, server_pid and
# server_log, and returns once PING answers PONG (or fails after 20 s, printing the log).
server_count=0
start_server() {
  local dir=$1
  local args=(--port "$(free_port)" --dir "$dir" --save "")
  port=${args[1]}
  server_count=$((server_count + 1))
  server_log=$work/server-$server_count.log
  mkdir -p "$dir"
  if [[ $is_redis == 1 ]]; then
    args+=(--enable-debug-command local)
  elif [[ -n $workers ]]; then
    args+=(--workers "$workers")
  fi
  echo "  start: $server$(printf ' %q' "${args[@]}")"
  "$server" "${args[@]}" >"$server_log" 2>&1 &
  server_pid=$!
  server_pids+=("$server_pid")
  wait_ready "$port" "$server_pid"
}

wait_ready() {
  local port=$1 pid=$2 deadline=$((SECONDS + 20))
  while [[ $SECONDS -lt $deadline ]]; do
    [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]] && return 0
    if ! kill -0 "$pid" 2>/dev/null; then
      fail "the server exited before answering PING"  # the step prints its log
      return 1
    fi
    sleep 0.05
  done
  fail "the server did not answer PING within 20 s"
  return 1
}

# stop_server: SIGTERM, then SIGKILL after 10 s. A server that dies on its own is a failure.
stop_server() {
  if ! kill -0 "$server_pid" 2>/dev/null; then
    fail "the server was no longer running at the end of the step"
    return
  fi
  kill "$server_pid"
  local i
  for i in $(seq 100); do
    kill -0 "$server_pid" 2>/dev/null || break
    sleep 0.1
  done
  kill -9 "$server_pid" 2>/dev/null
  wait "$server_pid" 2>/dev/null
}

show_log() {
  echo "  ---- server log ($server_log, last 40 lines) ----"
  tail -n 40 "$server_log" | sed 's/^/  | /'
  echo "  ----"
}

# Checks. A step fails if any check failed or its function returned non-zero.
step_ok=1
fail() { echo "  FAIL $*"; step_ok=0; }
expect() {  # expect WHAT EXPECTED ACTUAL
  if [[ $2 == "$3" ]]; then
    echo "  ok   $1"
  else
    fail "$1: expected $(printf '%q' "$2"), got $(printf '%q' "$3")"
  fi
}
cli() { redis-cli -p "$port" "$@" 2>&1; }

# --- a. redis-cli ------------------------------------------------------------------------------
step_redis_cli() {
  start_server "$work/redis_cli" || return 1
  # One-shot: with stdout not a terminal, redis-cli prints raw replies.
  expect "SET a 1" OK "$(cli SET a 1)"
  expect "GET a" 1 "$(cli GET a)"
  expect "INCR a" 2 "$(cli INCR a)"
  expect "GET missing (raw: empty line)" "" "$(cli GET missing)"
  # --no-raw: the formatting a person sees in a terminal; it shows each reply's RESP type.
  expect "--no-raw INCR" "(integer) 3" "$(cli --no-raw INCR a)"
  expect "--no-raw GET" '"3"' "$(cli --no-raw GET a)"
  expect "--no-raw GET missing" "(nil)" "$(cli --no-raw GET missing)"
  expect "--no-raw RPUSH" "(integer) 2" "$(cli --no-raw RPUSH l x y)"
  expect "--no-raw LRANGE" $'1) "x"\n2) "y"' "$(cli --no-raw LRANGE l 0 -1)"
  expect "--no-raw empty array" "(empty array)" "$(cli --no-raw LRANGE nope 0 -1)"
  expect "--no-raw WRONGTYPE" \
    "(error) WRONGTYPE Operation against a key holding the wrong kind of value" \
    "$(cli --no-raw GET l)"

  # Interactive, on a pseudo-terminal: the prompt, the line editor, replies formatted for people.
  "$python" "$script_dir/interactive_cli.py" --port "$port" || fail "interactive redis-cli"

  # Batch: redis-cli reads one command per line from stdin when it is not a terminal.
  # (It first sends COMMAND DOCS for its help; an error reply there is fine.) Error replies
  # are followed by an empty line; error texts are compared by their first word only.
  local out
  out=$(printf '%s\n' 'SET b hello' 'GET b' 'APPEND b " world"' 'GET b' 'INCR b' 'DEL b' \
          'EXISTS b' 'PING' | redis-cli -p "$port" 2>&1 | sed 's/^\(ERR\) .*/\1/')
  expect "commands on stdin" $'OK\nhello\n11\nhello world\nERR\n\n1\n0\nPONG' "$out"
  out=$(printf '%s\n' 'HSET h f1 v1 f2 v2' 'HGET h f2' 'SADD s m' 'TYPE s' 'GET nope' \
          | redis-cli -p "$port" --no-raw 2>&1)
  expect "commands on stdin, --no-raw" $'(integer) 2\n"v2"\n(integer) 1\nset\n(nil)' "$out"

  # --pipe: mass insertion of raw RESP; redis-cli ends it with an ECHO of a random marker.
  local n=1000 i
  out=$(for ((i = 0; i < n; i++)); do
          printf '*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$1\r\nv\r\n' "${#i}" "$i"  # key = i
        done | redis-cli -p "$port" --pipe 2>&1)
  expect "--pipe of $n SETs" "errors: 0, replies: $n" "$(grep -o 'errors: .*' <<<"$out")"
  # --scan uses SCAN with MATCH; keys 0..999 that start with 9: 9, 90-99, 900-999.
  expect "--scan --pattern '9*'" 111 "$(cli --scan --pattern '9*' | sort -u | wc -l)"
  expect "DBSIZE" $((n + 7)) "$(cli DBSIZE)"
  stop_server
}

# --- b. redis-benchmark, default run -----------------------------------------------------------
# redis-benchmark 7.0 stops at the first error reply, exits 1 and prints "Error from server:"
# (its -e option is a no-op now). Without -r, __rand_int__ is not replaced: every test works on
# the same keys, key:__rand_int__, counter:__rand_int__, mylist, myset, myhash, myzset, and the
# data left after a run with -n N is exact:
#   counter:__rand_int__ = N      (INCR, N times)
#   LLEN mylist = N               (LPUSH N, RPUSH N, LPOP N, RPOP N, LPUSH N for LRANGE_*)
#   key:__rand_int__ = 3 bytes    (SET and MSET with the default -d 3)
#   HGET myhash element:__rand_int__ = 3 bytes
#   myset and myzset are gone     (SADD N then SPOP N; ZADD N then ZPOPMIN N)
run_benchmark() {  # run_benchmark NAME ARGS...: fails the step on a non-zero exit or an error
  local name=$1 out rc
  shift
  out=$(redis-benchmark -p "$port" "$@" 2>&1)
  rc=$?
  # The progress lines are separated by \r; keep only each test's final line.
  tr '\r' '\n' <<<"$out" | grep -v 'rps=' | grep -v '^ *$' | sed 's/^ */  | /'
  expect "$name: exit status" 0 "$rc"
  if grep -qi 'error' <<<"$out"; then
    fail "$name: the output mentions an error: $(grep -i -m1 'error' <<<"$out")"
  fi
}

step_redis_benchmark_default() {
  local n=100000
  [[ $quick == 1 ]] && n=2000
  start_server "$work/redis_benchmark_default" || return 1
  run_benchmark "redis-benchmark -n $n" -n "$n" -q
  expect "GET counter:__rand_int__" "$n" "$(cli GET counter:__rand_int__)"
  expect "LLEN mylist" "$n" "$(cli LLEN mylist)"
  expect "STRLEN key:__rand_int__" 3 "$(cli STRLEN key:__rand_int__)"
  expect "HSTRLEN myhash element:__rand_int__" 3 "$(cli HSTRLEN myhash element:__rand_int__)"
  expect "SCARD myset (SADD then SPOP N times)" 0 "$(cli SCARD myset)"
  expect "ZCARD myzset (ZADD then ZPOPMIN N times)" 0 "$(cli ZCARD myzset)"
  expect "DBSIZE" 4 "$(cli DBSIZE)"
  expect "LRANGE mylist 0 2: three 3-byte elements" $'3\n3\n3' \
    "$(cli LRANGE mylist 0 2 | awk '{ print length($0) }')"
  stop_server
}

# --- c. redis-benchmark, pipelined -------------------------------------------------------------
step_redis_benchmark_pipelined() {
  local n=100000
  [[ $quick == 1 ]] && n=2000
  start_server "$work/redis_benchmark_pipelined" || return 1
  run_benchmark "redis-benchmark -P 16" -P 16 -t set,get,incr,lpush -n "$n" -q
  # Pipelining must not lose or repeat a command: the counts are exact.
  expect "GET counter:__rand_int__" "$n" "$(cli GET counter:__rand_int__)"
  expect "LLEN mylist" "$n" "$(cli LLEN mylist)"
  stop_server
}

# --- d. inline commands and malformed requests -------------------------------------------------
step_raw_protocol() {
  start_server "$work/raw_protocol" || return 1
  "$python" "$script_dir/raw_protocol.py" --port "$port" || fail "raw_protocol.py"
  stop_server
}

# --- e. the redis-py suite ---------------------------------------------------------------------
step_redis_py() {
  start_server "$work/redis_py" || return 1
  local out
  out=$("$python" "$script_dir/redis_py_suite.py" --port "$port" 2>&1) ||
    { echo "$out" | grep -v ' ok$' | sed 's/^/  | /'; fail "redis_py_suite.py"; }
  tail -n 1 <<<"$out" | sed 's/^/  /'
  stop_server
}

# --- f. a client that never reads --------------------------------------------------------------
step_slow_reader() {
  start_server "$work/slow_reader" || return 1
  if [[ $is_redis == 1 ]]; then
    # Redis's own protection, off by default for normal clients: drop a client whose pending
    # replies pass 64 MB. Without it Redis would buffer the 20 GB of replies.
    expect "redis: CONFIG SET client-output-buffer-limit" OK \
      "$(cli CONFIG SET client-output-buffer-limit 'normal 64mb 16mb 10')"
  fi
  local seconds=3
  [[ $quick == 1 ]] && seconds=2
  "$python" "$script_dir/slow_reader.py" --port "$port" --pid "$server_pid" \
    --seconds "$seconds" --max-growth-mb "$rss_limit_mb" || fail "slow_reader.py"
  stop_server
}

# --- g. kill -9 during BGSAVE under writes -----------------------------------------------------
# kill_tree PID: SIGKILL to the server and every descendant (redis-server's BGSAVE runs in a
# forked child, which would otherwise finish the save after its parent died; a crash of the
# machine leaves no such child either). Descendants are collected first, then all are killed.
kill_tree() {
  local pids=("$1") i=0 task
  while [[ $i -lt ${#pids[@]} ]]; do
    for task in /proc/"${pids[$i]}"/task/*; do
      [[ -r $task/children ]] && pids+=($(<"$task/children"))
    done
    i=$((i + 1))
  done
  kill -9 "${pids[@]}" 2>/dev/null
}

# crash_round WHEN: one round on the running server (port, server_pid, dir): load and SAVE, start
# the writer, BGSAVE, kill -9 the server WHEN the save is "running" or "done", restart it on the
# same dir and check what it serves. After a finished BGSAVE the check is stricter: every write
# acknowledged before BGSAVE was sent must have survived.
crash_round() {
  local when=$1 log=$work/writer-$1.log mark=$work/mark-$1
  local common=(--port "$port" --keys "$keys" --log "$log")
  echo "  -- kill -9 when the BGSAVE is $when"
  "$python" "$script_dir/crash_check.py" load "${common[@]}" || { fail "load and SAVE"; return 1; }

  "$python" "$script_dir/crash_check.py" write "${common[@]}" &
  local writer=$!
  helper_pids+=("$writer")
  sleep 1  # acknowledged writes before the save starts; LASTSAVE moves past the SAVE's second
  if [[ $when == running ]]; then
    "$python" "$script_dir/crash_check.py" bgsave "${common[@]}" --kill-tree "$server_pid" ||
      fail "BGSAVE"
  else
    "$python" "$script_dir/crash_check.py" bgsave "${common[@]}" --until-done --mark "$mark" ||
      fail "BGSAVE to completion"
  fi
  kill_tree "$server_pid"
  wait "$server_pid" 2>/dev/null
  echo "  killed the server (pid $server_pid) and its children with SIGKILL"
  # The writer notices the closed connection and exits; a writer that hangs is a bug here.
  local i
  for i in $(seq 100); do kill -0 "$writer" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$writer" 2>/dev/null && { fail "the writer did not stop"; kill -9 "$writer"; }
  wait "$writer" || fail "the writer failed"

  # The restart may take a while to load; wait_ready waits for PONG, which Redis answers only
  # once loading is done (before that it answers -LOADING).
  start_server "$dir" || { fail "restart on the same --dir"; return 1; }
  local check_args=(--port "$port" --keys "$keys" --log "$log")  # the new port
  [[ $when == done ]] && check_args+=(--mark "$mark")
  "$python" "$script_dir/crash_check.py" check "${check_args[@]}" || fail "crash_check.py check"
}

step_crash_during_bgsave() {
  local keys=50000 dir=$work/crash_during_bgsave
  [[ $quick == 1 ]] && keys=10000
  start_server "$dir" || return 1
  crash_round running || return 1
  crash_round done || return 1
  stop_server
}

# --- main ----------------------------------------------------------------------------------------
echo "kv_clients_test: $server ($([[ $is_redis == 1 ]] && echo redis-server || echo reheap-kv))" \
     "$([[ $quick == 1 ]] && echo '--quick')"
failed=()
for step in "${steps[@]}"; do
  echo "=== $step"
  step_ok=1
  started=$SECONDS
  "step_$step" || step_ok=0
  if [[ $step_ok == 1 ]]; then
    echo "PASS $step ($((SECONDS - started)) s)"
  else
    show_log
    echo "FAIL $step ($((SECONDS - started)) s)"
    failed+=("$step")
    # Leave no server of a failed step running into the next one.
    kill -9 "$server_pid" 2>/dev/null
  fi
done
if [[ ${#failed[@]} -eq 0 ]]; then
  echo "kv_clients_test: all ${#steps[@]} steps passed"
  exit 0
fi
echo "kv_clients_test: ${#failed[@]} of ${#steps[@]} steps failed: ${failed[*]}"
exit 1
