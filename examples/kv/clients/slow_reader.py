#!/usr/bin/python3
"""A client that sends and never reads: the server must bound the memory it spends on it.

The client stores one 100 KB value, then pipelines up to 200,000 `GET bigkey` (20 GB of replies)
for a few seconds without reading a byte. A server that keeps answering into an unbounded output
buffer grows by gigabytes; a server that stops reading from the client once its replies back up
(or drops the client) stays flat. Both are accepted: the check is that the server's resident set
(VmRSS of the server and of its children, from /proc) grows by less than --max-growth-mb, and that
another client is answered promptly while this goes on and after the socket is closed.

usage: /usr/bin/python3 slow_reader.py --port P --pid SERVER_PID [--seconds 3]
"""
import argparse
import os
import socket
import sys
import time

import redis

failures = []


def check(ok, what):
    print(f"  {'ok  ' if ok else 'FAIL'} {what}")
    if not ok:
        failures.append(what)


def process_tree(pid):
    """pid and its descendants (Redis forks for BGSAVE; their memory counts too)."""
    pids, pending = [], [pid]
    while pending:
        p = pending.pop()
        pids.append(p)
        try:
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    pending.extend(int(c) for c in f.read().split())
        except OSError:
            pass
    return pids


def rss_kb(pid):
    total = 0
    for p in process_tree(pid):
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def ping_latency(port):
    """Seconds another client waits for PING, or None if it is not answered within 5 s."""
    r = redis.Redis(port=port, socket_timeout=5)
    try:
        start = time.monotonic()
        ok = r.ping()
        return time.monotonic() - start if ok else None
    except redis.exceptions.RedisError:
        return None
    finally:
        r.close()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--pid", type=int, required=True)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--requests", type=int, default=200_000)
    parser.add_argument("--value-kb", type=int, default=100)
    parser.add_argument("--max-growth-mb", type=int, default=256,
                        help="bound on the server's RSS growth; 0 does not check it")
    args = parser.parse_args()

    r = redis.Redis(port=args.port, socket_timeout=30)
    r.set("bigkey", os.urandom(args.value_kb * 1024))
    r.close()
    base_kb = rss_kb(args.pid)
    peak_kb = base_kb

    request = b"*2\r\n$3\r\nGET\r\n$6\r\nbigkey\r\n"
    s = socket.create_connection(("127.0.0.1", args.port))
    s.setblocking(False)
    pending = request * 1000  # sent in chunks of 1000 requests
    sent_requests, dropped = 0, False
    worst_ping, pings, unanswered = 0.0, 0, 0
    start = time.monotonic()
    next_ping = start + 0.5
    while time.monotonic() - start < args.seconds:
        if sent_requests < args.requests and not dropped:
            try:
                n = s.send(pending)
                # Whole requests only are counted; a partial chunk is finished on the next turn.
                if n == len(pending):
                    sent_requests += 1000
                    pending = request * 1000
                else:
                    pending = pending[n:]
            except BlockingIOError:
                time.sleep(0.01)  # the kernel buffers are full: the server is not reading
            except (BrokenPipeError, ConnectionResetError):
                dropped = True
        else:
            time.sleep(0.01)
        peak_kb = max(peak_kb, rss_kb(args.pid))
        if time.monotonic() >= next_ping:
            latency = ping_latency(args.port)
            pings += 1
            unanswered += latency is None
            worst_ping = max(worst_ping, 99 if latency is None else latency)
            next_ping = time.monotonic() + 0.5
    s.close()

    growth_mb = (peak_kb - base_kb) / 1024
    print(f"  sent {sent_requests} GETs of a {args.value_kb} KB value in {args.seconds:.0f} s; "
          f"{'the server dropped the client; ' if dropped else ''}"
          f"RSS {base_kb // 1024} MB before, peak growth {growth_mb:.1f} MB; "
          f"slowest PING of another client {worst_ping * 1000:.1f} ms")
    check(pings > 0 and unanswered == 0,
          f"another client is answered while one does not read ({pings - unanswered}/{pings})")
    if args.max_growth_mb > 0:
        check(growth_mb < args.max_growth_mb,
              f"RSS growth {growth_mb:.1f} MB stays under {args.max_growth_mb} MB")
    else:
        print("  --   RSS growth not checked (--max-growth-mb 0: a sanitizer build, whose own "
              "memory counts in RSS)")
    time.sleep(0.2)
    check(ping_latency(args.port) is not None, "the server answers after the socket is closed")
    print(f"slow_reader: {'all passed' if not failures else f'{len(failures)} failed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
