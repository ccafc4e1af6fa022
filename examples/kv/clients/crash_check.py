#!/usr/bin/python3
"""Crash consistency of snapshots: what a server serves after `kill -9` during BGSAVE.

The test (driven by kv_clients_test.sh) is:
  load   write a known data set and SAVE it: --keys strings s:<i> = "0:<padding>" and 100
         counters c:<j> = 0;
  write  one writer, in batches of 100 pipelined commands: SET s:<i> "<gen>:<padding>" with a
         generation that only grows, INCR c:<j>, and SET n:<gen> <gen> (keys the SAVE did not
         have). Each batch is logged before it is sent and marked acknowledged once every reply
         has come back. The writer stops when the server goes away;
  bgsave BGSAVE, then either, with --kill-tree PID, SIGKILL the server and its children as soon as
         BGSAVE replies (the save is running then); or (default) wait until INFO shows
         rdb_bgsave_in_progress:1, or 0.5 s,
         so that the caller can kill -9 the server (and its children) while the save runs; or,
         with --until-done, wait until the save has finished (rdb_bgsave_in_progress:0 and
         LASTSAVE past the SAVE's) and note in --mark which batches had been acknowledged
         before BGSAVE was sent;
  check  after the restart on the same --dir, every key must hold a value it held at some point:
         its value at the SAVE or a value from an acknowledged batch (or from the one batch in
         flight at the kill, which the server may have applied without the reply arriving).
         Never a value that was never written, never a key of the SAVE missing, no key nobody
         wrote. With --mark (the BGSAVE completed), no key may be older than its last write
         acknowledged before BGSAVE: a finished BGSAVE is durable. The restarted server must
         report INFO loading:0.

One global instant is not required: reheap-kv saves each shard at its own instant (like the
nodes of a Redis Cluster), so the state after a restart can mix instants across keys. Per key,
the check above is what a client may rely on. redis-server (one instant, taken by fork) passes it
too.

usage: /usr/bin/python3 crash_check.py {load,write,bgsave,check} --port P [--keys N] [--log F]
"""
import argparse
import hashlib
import json
import os
import random
import signal
import sys
import time

import redis

COUNTERS = 100
BATCH = 100


def connect(port, timeout=30):
    return redis.Redis(port=port, socket_timeout=timeout, decode_responses=True)


def string_value(gen):
    """The value of generation gen: ~200 bytes that do not compress (Redis compresses its
    snapshots), so the save takes long enough to be caught in progress."""
    padding = hashlib.sha256(str(gen).encode()).hexdigest() * 3
    return f"{gen}:{padding}"


def load(args):
    r = connect(args.port)
    r.flushall()
    pipe = r.pipeline(transaction=False)
    for i in range(args.keys):
        pipe.set(f"s:{i}", string_value(0))
        if len(pipe) == 1000:
            pipe.execute()
    for j in range(COUNTERS):
        pipe.set(f"c:{j}", 0)
    pipe.execute()
    started = time.monotonic()
    r.save()
    print(f"  loaded {args.keys} strings and {COUNTERS} counters; SAVE took "
          f"{time.monotonic() - started:.2f} s")


def write(args):
    """Writes until the server disappears; the log says what was sent and what acknowledged."""
    rng = random.Random(1)  # a fixed seed: the same run writes the same keys
    r = connect(args.port, timeout=5)
    counters = [0] * COUNTERS  # the values the server acknowledged (the writer is alone)
    gen, batch_no = 0, 0
    with open(args.log, "w") as log:
        while True:
            ops, pipe = [], r.pipeline(transaction=False)
            predicted = list(counters)
            for _ in range(BATCH):
                gen += 1
                kind = rng.randrange(3)
                if kind == 0:
                    key, value = f"s:{rng.randrange(args.keys)}", string_value(gen)
                    pipe.set(key, value)
                elif kind == 1:
                    j = rng.randrange(COUNTERS)
                    predicted[j] += 1
                    key, value = f"c:{j}", str(predicted[j])
                    pipe.incr(key)
                else:
                    key, value = f"n:{gen}", str(gen)
                    pipe.set(key, value)
                ops.append((key, value))
            log.write(json.dumps({"batch": batch_no, "ops": ops}) + "\n")
            log.flush()
            try:
                replies = pipe.execute()
            except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError):
                print(f"  writer: the server went away during batch {batch_no}; "
                      f"{batch_no} batches ({batch_no * BATCH} commands) acknowledged")
                return
            for (key, value), reply in zip(ops, replies):
                if key.startswith("c:") and str(reply) != value:
                    sys.exit(f"writer: INCR {key} answered {reply}, expected {value}")
            counters = predicted
            log.write(json.dumps({"ack": batch_no}) + "\n")
            log.flush()
            batch_no += 1


def last_acknowledged(log_path):
    """The number of the last batch acknowledged so far, -1 if none."""
    last = -1
    with open(log_path) as log:
        for line in log:
            if line.startswith('{"ack"') and line.endswith("\n"):
                last = json.loads(line)["ack"]
    return last


def kill_tree(pid):
    """SIGKILL the children of `pid` (a Redis fork saving), then `pid`."""
    children = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += [int(c) for c in f.read().split()]
    except OSError:
        pass
    for victim in children + [pid]:
        try:
            os.kill(victim, signal.SIGKILL)
        except ProcessLookupError:
            pass


def bgsave(args):
    r = connect(args.port)
    if args.until_done:
        before = r.lastsave()
        mark = last_acknowledged(args.log)
        with open(args.mark, "w") as f:
            f.write(f"{mark}\n")
    started = r.bgsave()
    if args.kill_tree:
        # At once, from here: the save has just started (Redis has forked before it replies;
        # reheap-kv's shards have the snapshot requests in their mailboxes), and any round trip
        # more - an INFO, or returning to the shell - could let a fast save finish first.
        kill_tree(args.kill_tree)
        print(f"  BGSAVE: {started}; killed the server (pid {args.kill_tree}) and its children "
              "with SIGKILL right after the reply")
        return
    print(f"  BGSAVE: {started}")
    if args.until_done:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if (r.info("persistence").get("rdb_bgsave_in_progress") == 0
                    and r.lastsave() > before):
                print(f"  the BGSAVE finished; batches up to {mark} were acknowledged before it")
                return
            time.sleep(0.01)
        sys.exit("crash_check: the BGSAVE did not finish within 60 s (LASTSAVE did not move)")
    deadline = time.monotonic() + 0.5
    while time.monotonic() < deadline:
        if r.info("persistence").get("rdb_bgsave_in_progress") == 1:
            print("  rdb_bgsave_in_progress:1 seen; kill now")
            return
        time.sleep(0.002)
    print("  rdb_bgsave_in_progress:1 not seen within 0.5 s (the save may have ended); kill now")


def history(args):
    """key -> {value: batch number} of every value the key may hold after the restart (batch -1
    is the SAVE; None stands for "absent", for keys the SAVE did not have)."""
    hist = {f"s:{i}": {string_value(0): -1} for i in range(args.keys)}
    hist.update({f"c:{j}": {"0": -1} for j in range(COUNTERS)})
    batches, acked = {}, set()
    with open(args.log) as log:
        for line in log:
            if not line.endswith("\n"):
                break  # the writer was cut off mid-line; that batch was never sent
            record = json.loads(line)
            if "batch" in record:
                batches[record["batch"]] = record["ops"]
            else:
                acked.add(record["ack"])
    unacked = sorted(set(batches) - acked)
    if len(unacked) > 1:
        sys.exit(f"crash_check: log has {len(unacked)} unacknowledged batches; the writer "
                 "sends one batch at a time")
    for number, ops in sorted(batches.items()):
        for key, value in ops:
            hist.setdefault(key, {None: -1})[value] = number
    return hist, len(acked), len(unacked)


def check(args):
    hist, acked, in_flight = history(args)
    mark = None
    if args.mark:
        with open(args.mark) as f:
            mark = int(f.read())
    r = connect(args.port)
    loading = r.info("persistence").get("loading")
    failures = []
    if loading != 0:
        failures.append(f"INFO loading is {loading!r} after PING answered, not 0")
    served = {}
    names = list(r.scan_iter(count=1000))
    for start in range(0, len(names), 1000):
        chunk = names[start:start + 1000]
        served.update(zip(chunk, r.mget(chunk)))
    at_base = newer = 0
    for key, value in served.items():
        if key not in hist:
            failures.append(f"{key} = {value[:40]!r}: a key nobody wrote")
        elif value not in hist[key]:
            failures.append(f"{key} = {value[:40]!r}: a value never written to it")
        elif hist[key][value] == -1:
            at_base += 1
        else:
            newer += 1
    for key, values in hist.items():
        value = served.get(key)
        if value is None and None not in values:
            failures.append(f"{key}: saved by SAVE, missing after the restart")
        if mark is None or (value is not None and value not in values):
            continue
        # The newest write to key acknowledged before BGSAVE was sent must have been saved.
        durable = max((n for n in values.values() if n <= mark), default=-1)
        if durable >= 0 and values.get(value, -1) < durable:
            failures.append(f"{key} = {str(value)[:40]!r}: older than its write of batch "
                            f"{durable}, acknowledged before the BGSAVE that finished")
    print(f"  served {len(served)} keys: {at_base} at their SAVE value, {newer} at a later "
          f"written value; the writer had {acked} batches acknowledged, {in_flight} in flight")
    for failure in failures[:20]:
        print(f"  FAIL {failure}")
    if len(failures) > 20:
        print(f"  ... and {len(failures) - 20} more")
    print(f"crash_check: {'all keys consistent' if not failures else f'{len(failures)} failed'}")
    sys.exit(1 if failures else 0)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["load", "write", "bgsave", "check"])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--keys", type=int, default=50_000)
    parser.add_argument("--log", default="writer.log")
    parser.add_argument("--kill-tree", type=int, metavar="PID",
                        help="bgsave: SIGKILL PID and its children as soon as BGSAVE replies")
    parser.add_argument("--until-done", action="store_true",
                        help="bgsave: wait for the save to finish instead of its start")
    parser.add_argument("--mark", help="bgsave --until-done writes, check reads: the last "
                        "batch acknowledged before BGSAVE was sent")
    args = parser.parse_args()
    {"load": load, "write": write, "bgsave": bgsave, "check": check}[args.action](args)


if __name__ == "__main__":
    main()
