#!/usr/bin/python3
"""The measuring half of kv_bench.sh: the parts that need sub-millisecond clocks or /proc.

  cpu --pid P                 CPU seconds (user + system) of P and its children, reaped or not
  rss --pid P --out F         every 10 ms until SIGTERM: "time rss_kb pss_kb" of P and all its
                              descendants (Redis forks for BGSAVE). RSS counts a page shared by
                              parent and child twice; PSS splits it, so it is the memory really
                              used. Both are written.
  latency --port P --out F    GET key:0 in a loop until SIGTERM, one connection, one request at a
                              time: "send_time latency_s" per request
  save --port P               seconds the SAVE command takes
  bgsave --port P             BGSAVE, wait until it is done; prints "start end" (epoch seconds)
  ready --port P --keys N --since T
                              seconds from T (epoch, when the server was started) until PING
                              answers and DBSIZE is N: the time to load a snapshot
  report --rss F --lat F --start T0 --end T1
                              steady RSS/PSS (median over the second before T0), peak RSS/PSS in
                              [T0, T1], p99 GET latency over the second before T0 and the worst
                              p99 of the one-second windows that overlap [T0, T1]

usage: /usr/bin/python3 kv_bench_probe.py ACTION [options]
"""
import argparse
import os
import signal
import socket
import statistics
import sys
import time

TICKS = os.sysconf("SC_CLK_TCK")
stopping = False


def on_term(signum, frame):
    global stopping
    stopping = True


def descendants(pid):
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


def cpu(args):
    total = 0
    for p in descendants(args.pid):
        try:
            with open(f"/proc/{p}/stat") as f:
                # Fields after the command name, which may contain spaces: utime is field 14,
                # stime 15, and the reaped children's cutime 16, cstime 17.
                fields = f.read().rsplit(")", 1)[1].split()
            total += sum(int(v) for v in fields[11:15])
        except OSError:
            pass
    print(f"{total / TICKS:.3f}")


def memory_kb(pids):
    rss = pss = 0
    for p in pids:
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        rss += int(line.split()[1])
                        break
            with open(f"/proc/{p}/smaps_rollup") as f:
                for line in f:
                    if line.startswith("Pss:"):
                        pss += int(line.split()[1])
                        break
        except OSError:
            pass
    return rss, pss


def rss(args):
    signal.signal(signal.SIGTERM, on_term)
    samples = []
    while not stopping:
        now = time.time()
        samples.append((now, *memory_kb(descendants(args.pid))))
        time.sleep(max(0.0, 0.01 - (time.time() - now)))
    with open(args.out, "w") as f:
        f.writelines(f"{t:.4f} {r} {p}\n" for t, r, p in samples)


class Resp:
    """A minimal RESP client: the probe must not depend on a library's own overheads."""

    def __init__(self, port):
        self.s = socket.create_connection(("127.0.0.1", port), timeout=30)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def call(self, *args):
        parts = [f"*{len(args)}\r\n".encode()]
        for a in args:
            a = str(a).encode()
            parts.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(parts))
        return self._reply()

    def _reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind in (b"+", b"-"):
            return rest.decode()
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise ConnectionError("closed")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data.decode(errors="replace")
        if kind == b"*":
            return [self._reply() for _ in range(int(rest))]
        raise ValueError(f"bad reply {line!r}")

    def info_field(self, name):
        for line in self.call("INFO", "persistence").splitlines():
            if line.startswith(name + ":"):
                return line.split(":", 1)[1].strip()
        return None


def latency(args):
    signal.signal(signal.SIGTERM, on_term)
    client = Resp(args.port)
    samples = []
    while not stopping:
        start = time.time()
        client.call("GET", "key:0")
        samples.append((start, time.time() - start))
    with open(args.out, "w") as f:
        f.writelines(f"{t:.6f} {lat:.6f}\n" for t, lat in samples)


def save(args):
    client = Resp(args.port)
    start = time.monotonic()
    reply = client.call("SAVE")
    if reply != "OK":
        sys.exit(f"SAVE answered {reply!r}")
    print(f"{time.monotonic() - start:.3f}")


def bgsave(args):
    client = Resp(args.port)
    before = client.call("LASTSAVE")
    start = time.time()
    reply = client.call("BGSAVE")
    if not str(reply).startswith("Background saving"):
        sys.exit(f"BGSAVE answered {reply!r}")
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        if client.info_field("rdb_bgsave_in_progress") == "0" and client.call("LASTSAVE") > before:
            print(f"{start:.4f} {time.time():.4f}")
            return
        time.sleep(0.005)
    sys.exit("BGSAVE did not finish within 600 s")


def ready(args):
    deadline = time.monotonic() + 600
    while time.monotonic() < deadline:
        try:
            client = Resp(args.port)
            while time.monotonic() < deadline:
                # Redis answers -LOADING until the snapshot is in memory.
                # At least: the writes before the second SAVE added keys of their own.
                if client.call("PING") == "PONG" and client.call("DBSIZE") >= args.keys:
                    print(f"{time.time() - args.since:.3f}")
                    return
                time.sleep(0.002)
        except (ConnectionError, OSError):
            time.sleep(0.002)
    sys.exit(f"the server did not serve {args.keys} keys within 600 s")


def p99(values):
    if not values:
        return float("nan")
    values = sorted(values)
    return values[min(len(values) - 1, int(0.99 * len(values)))]


def report(args):
    mem = [tuple(map(float, line.split())) for line in open(args.rss)]
    before = [m for m in mem if args.start - 1 <= m[0] < args.start] or mem[:1]
    during = [m for m in mem if args.start <= m[0] <= args.end] or mem[-1:]
    print(f"steady_rss_mb {statistics.median(m[1] for m in before) / 1024:.1f}")
    print(f"steady_pss_mb {statistics.median(m[2] for m in before) / 1024:.1f}")
    print(f"peak_rss_mb {max(m[1] for m in during) / 1024:.1f}")
    print(f"peak_pss_mb {max(m[2] for m in during) / 1024:.1f}")
    lat = [tuple(map(float, line.split())) for line in open(args.lat)]
    base = [v for t, v in lat if args.start - 1 <= t < args.start]
    print(f"baseline_p99_ms {p99(base) * 1000:.2f}")
    # One-second windows starting at T0 - 1 + k*0.25 s (overlapping, so that a stall is not
    # split between two windows); the windows that overlap the save count.
    worst, t = 0.0, args.start - 1
    while t <= args.end:
        window = [v for s, v in lat if t <= s < t + 1]
        if window and t + 1 > args.start:
            worst = max(worst, p99(window))
        t += 0.25
    print(f"save_worst_p99_ms {worst * 1000:.2f}")
    print(f"gets_during_save {sum(1 for t, _ in lat if args.start <= t <= args.end)}")
    # The slowest GET that was waiting at some point of the save: a p99 over a second hides a
    # stall that only the few GETs sent while a shard (or the fork) was busy saw.
    overlapping = [v for s, v in lat if s <= args.end and s + v >= args.start]
    print(f"save_max_ms {max(overlapping, default=float('nan')) * 1000:.2f}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["cpu", "rss", "latency", "save", "bgsave", "ready",
                                           "report"])
    parser.add_argument("--pid", type=int)
    parser.add_argument("--port", type=int)
    parser.add_argument("--out")
    parser.add_argument("--keys", type=int)
    parser.add_argument("--since", type=float)
    parser.add_argument("--rss")
    parser.add_argument("--lat")
    parser.add_argument("--start", type=float)
    parser.add_argument("--end", type=float)
    args = parser.parse_args()
    globals()[args.action](args)


if __name__ == "__main__":
    main()
