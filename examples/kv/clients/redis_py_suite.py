#!/usr/bin/python3
"""A functional suite for a RESP2 key-value server, driven by redis-py (the real client).

It is written against redis-server 7.0 and is meant to pass unchanged against reheap-kv: each
test states one behaviour a Redis client relies on, in the order a reader would look for it
(strings, lists, sets, hashes, sorted sets, keys, expiry, pipelines, errors, server commands).

The suite owns the server it talks to: every test starts from FLUSHALL.

usage: /usr/bin/python3 redis_py_suite.py --port P [--host H] [unittest options, e.g. -k Lists]
Exit status 0 only if every test passed; the last line is a one-line summary.
"""
import argparse
import datetime
import os
import sys
import time
import unittest

try:
    import redis
except ImportError:
    print("SKIP: redis-py is not installed for this interpreter "
          "(apt install python3-redis; run with /usr/bin/python3)")
    sys.exit(77)

HOST = "127.0.0.1"
PORT = 6379


def connect():
    # Bytes in, bytes out: several tests check binary safety, so nothing is decoded.
    return redis.Redis(host=HOST, port=PORT, socket_timeout=30, decode_responses=False)


class KvTest(unittest.TestCase):
    def setUp(self):
        self.r = connect()
        self.r.flushall()

    def tearDown(self):
        self.r.close()

    def assertError(self, fragment, fn, *args):
        """fn(*args) must fail with a server error whose text contains fragment."""
        with self.assertRaises(redis.exceptions.ResponseError) as caught:
            fn(*args)
        self.assertIn(fragment, str(caught.exception),
                      f"error text for {args!r} should contain {fragment!r}")


class Strings(KvTest):
    def test_set_get(self):
        r = self.r
        self.assertTrue(r.set("a", "1"))
        self.assertEqual(r.get("a"), b"1")
        self.assertIsNone(r.get("missing"), "GET of a missing key is a nil bulk")
        self.assertTrue(r.set("a", "2"), "SET overwrites")
        self.assertEqual(r.get("a"), b"2")

    def test_set_nx_xx_get(self):
        r = self.r
        self.assertIsNone(r.set("k", "v", xx=True), "SET XX on a missing key does nothing")
        self.assertEqual(r.exists("k"), 0)
        self.assertTrue(r.set("k", "v1", nx=True))
        self.assertIsNone(r.set("k", "v2", nx=True), "SET NX on an existing key does nothing")
        self.assertEqual(r.get("k"), b"v1")
        self.assertTrue(r.set("k", "v3", xx=True))
        self.assertEqual(r.get("k"), b"v3")
        self.assertEqual(r.set("k", "v4", get=True), b"v3", "SET GET returns the old value")
        self.assertIsNone(r.set("new", "x", get=True), "SET GET on a missing key returns nil")
        self.assertEqual(r.get("new"), b"x")

    def test_set_ex_px(self):
        r = self.r
        r.set("ex", "v", ex=100)
        ttl = r.ttl("ex")
        self.assertTrue(98 <= ttl <= 100, f"TTL after SET EX 100 is {ttl}")
        r.set("px", "v", px=100000)
        pttl = r.pttl("px")
        self.assertTrue(98000 <= pttl <= 100000, f"PTTL after SET PX 100000 is {pttl}")
        r.set("short", "v", px=100)
        time.sleep(0.3)
        self.assertIsNone(r.get("short"), "SET PX 100 has expired after 300 ms")
        r.set("ex", "plain")
        self.assertEqual(r.ttl("ex"), -1, "a plain SET clears the TTL")

    def test_incr_decr(self):
        r = self.r
        self.assertEqual(r.incr("n"), 1, "INCR of a missing key starts from 0")
        self.assertEqual(r.incr("n"), 2)
        self.assertEqual(r.incrby("n", 40), 42)
        self.assertEqual(r.decr("n"), 41)
        self.assertEqual(r.decrby("n", 50), -9)
        self.assertEqual(r.get("n"), b"-9", "counters are stored as decimal strings")
        r.set("big", str(2**63 - 2))
        self.assertEqual(r.incr("big"), 2**63 - 1)
        self.assertError("overflow", r.incr, "big")

    def test_mset_mget_many_keys(self):
        # 1000 keys land on every shard of a sharded server; MGET must answer in argument order.
        r = self.r
        pairs = {f"m:{i}": f"value-{i}" for i in range(1000)}
        self.assertTrue(r.mset(pairs))
        names = list(pairs) + ["m:missing"]
        got = r.mget(names)
        self.assertEqual(len(got), len(names))
        for name, value in zip(names[:-1], got):
            self.assertEqual(value, pairs[name].encode(), f"MGET value of {name}")
        self.assertIsNone(got[-1], "MGET answers nil for a missing key")
        self.assertEqual(r.dbsize(), 1000)

    def test_append_strlen_getdel(self):
        r = self.r
        self.assertEqual(r.append("s", "hello"), 5, "APPEND to a missing key creates it")
        self.assertEqual(r.append("s", " world"), 11)
        self.assertEqual(r.get("s"), b"hello world")
        self.assertEqual(r.strlen("s"), 11)
        self.assertEqual(r.strlen("missing"), 0)
        self.assertEqual(r.getdel("s"), b"hello world")
        self.assertEqual(r.exists("s"), 0, "GETDEL deletes")
        self.assertIsNone(r.getdel("s"))

    def test_big_value_roundtrip(self):
        r = self.r
        big = os.urandom(1 << 20)
        self.assertTrue(r.set("big", big))
        self.assertEqual(r.strlen("big"), len(big))
        self.assertEqual(r.get("big"), big, "a 1 MB value comes back byte for byte")

    def test_binary_safe(self):
        r = self.r
        key = b"bin\x00key\r\n\xff"
        value = bytes(range(256)) * 4 + b"\r\n$5\r\n*1\r\n"
        r.set(key, value)
        self.assertEqual(r.get(key), value)
        self.assertEqual(r.exists(b"bin"), 0, "a key is not cut at NUL")
        self.assertEqual(r.keys(b"bin*"), [key])
        r.set(b"", b"empty key")
        self.assertEqual(r.get(b""), b"empty key")
        r.set(b"empty value", b"")
        self.assertEqual(r.get(b"empty value"), b"")


class Lists(KvTest):
    def test_push_pop_range(self):
        r = self.r
        self.assertEqual(r.lpush("l", "b", "a"), 2, "LPUSH returns the new length")
        self.assertEqual(r.rpush("l", "c", "d", "e"), 5)
        self.assertEqual(r.lrange("l", 0, -1), [b"a", b"b", b"c", b"d", b"e"])
        self.assertEqual(r.lrange("l", 1, 2), [b"b", b"c"])
        self.assertEqual(r.lrange("l", -2, -1), [b"d", b"e"])
        self.assertEqual(r.lrange("l", 10, 20), [])
        self.assertEqual(r.llen("l"), 5)
        self.assertEqual(r.lpop("l"), b"a")
        self.assertEqual(r.rpop("l"), b"e")
        self.assertEqual(r.lpop("l", 2), [b"b", b"c"], "LPOP with a count returns a list")
        self.assertEqual(r.rpop("l", 5), [b"d"], "a count past the length returns what is there")
        self.assertEqual(r.exists("l"), 0, "a list that becomes empty is deleted")
        self.assertIsNone(r.lpop("l"))
        self.assertIsNone(r.rpop("l", 3), "RPOP with a count on a missing key is nil")
        self.assertEqual(r.llen("l"), 0)

    def test_lpush_order(self):
        r = self.r
        r.lpush("l", "1", "2", "3")
        self.assertEqual(r.lrange("l", 0, -1), [b"3", b"2", b"1"],
                         "LPUSH pushes its arguments one after the other")


class Sets(KvTest):
    def test_sadd_members(self):
        r = self.r
        self.assertEqual(r.sadd("s", "a", "b", "c", "a"), 3, "SADD counts new members only")
        self.assertEqual(r.sadd("s", "c", "d"), 1)
        self.assertEqual(r.scard("s"), 4)
        self.assertTrue(r.sismember("s", "a"))
        self.assertFalse(r.sismember("s", "z"))
        self.assertFalse(r.sismember("missing", "a"))
        self.assertEqual(r.smembers("s"), {b"a", b"b", b"c", b"d"})
        self.assertEqual(r.scard("missing"), 0)

    def test_spop(self):
        r = self.r
        members = {f"m{i}".encode() for i in range(10)}
        r.sadd("s", *members)
        one = r.spop("s")
        self.assertIn(one, members)
        self.assertFalse(r.sismember("s", one), "SPOP removes the member")
        three = r.spop("s", 3)
        self.assertEqual(len(set(three)), 3)
        self.assertTrue(set(three) <= members - {one})
        rest = r.spop("s", 100)
        self.assertEqual(set(rest) | set(three) | {one}, members)
        self.assertEqual(r.exists("s"), 0, "a set that becomes empty is deleted")
        self.assertIsNone(r.spop("s"))


class Hashes(KvTest):
    def test_hset_hget_hgetall_hdel(self):
        r = self.r
        fields = {f"f{i}": f"v{i}" for i in range(100)}
        self.assertEqual(r.hset("h", mapping=fields), 100, "HSET counts new fields")
        self.assertEqual(r.hset("h", mapping={"f0": "new", "extra": "x"}), 1)
        self.assertEqual(r.hget("h", "f0"), b"new")
        self.assertEqual(r.hget("h", "f1"), b"v1")
        self.assertIsNone(r.hget("h", "nope"))
        everything = r.hgetall("h")
        self.assertEqual(len(everything), 101)
        self.assertEqual(everything[b"f99"], b"v99")
        self.assertEqual(r.hdel("h", "f1", "f2", "nope"), 2)
        self.assertEqual(r.hlen("h"), 99)
        self.assertEqual(r.hgetall("missing"), {})

    def test_hincrby(self):
        r = self.r
        self.assertEqual(r.hincrby("h", "n", 5), 5)
        self.assertEqual(r.hincrby("h", "n", -7), -2)
        r.hset("h", "s", "text")
        self.assertError("not an integer", r.hincrby, "h", "s", 1)


class SortedSets(KvTest):
    def test_zadd_options(self):
        r = self.r
        self.assertEqual(r.zadd("z", {"a": 1, "b": 2, "c": 3}), 3)
        self.assertEqual(r.zadd("z", {"a": 10}, nx=True), 0)
        self.assertEqual(r.zscore("z", "a"), 1.0, "ZADD NX does not update")
        self.assertEqual(r.zadd("z", {"d": 4}, xx=True), 0)
        self.assertIsNone(r.zscore("z", "d"), "ZADD XX does not add")
        self.assertEqual(r.zadd("z", {"a": 0.5, "e": 5}, ch=True), 2, "CH counts changes")
        self.assertEqual(r.zadd("z", {"b": 1}, gt=True, ch=True), 0, "GT keeps the higher score")
        self.assertEqual(r.zadd("z", {"b": 7}, gt=True, ch=True), 1)
        self.assertEqual(r.zadd("z", {"c": 9}, lt=True, ch=True), 0, "LT keeps the lower score")
        self.assertEqual(r.zadd("z", {"c": 2.5}, lt=True, ch=True), 1)
        self.assertEqual(r.zadd("z", {"a": 2}, incr=True), 2.5, "ZADD INCR returns the score")
        self.assertEqual(r.zcard("z"), 4)
        self.assertEqual(r.zscore("z", "b"), 7.0)
        self.assertIsNone(r.zscore("z", "nope"))

    def test_zrange_withscores_order(self):
        r = self.r
        # Equal scores are ordered by member, bytewise.
        r.zadd("z", {"b": 1, "a": 1, "c": -1.5, "d": 1e10})
        self.assertEqual(r.zrange("z", 0, -1), [b"c", b"a", b"b", b"d"])
        self.assertEqual(r.zrange("z", 0, 1, withscores=True), [(b"c", -1.5), (b"a", 1.0)])
        self.assertEqual(r.zrange("z", -1, -1, withscores=True), [(b"d", 1e10)])

    def test_zpopmin(self):
        r = self.r
        r.zadd("z", {"x": 3, "y": 1, "z": 2})
        self.assertEqual(r.zpopmin("z"), [(b"y", 1.0)])
        self.assertEqual(r.zpopmin("z", 5), [(b"z", 2.0), (b"x", 3.0)])
        self.assertEqual(r.zcard("z"), 0)
        self.assertEqual(r.exists("z"), 0, "a sorted set that becomes empty is deleted")
        self.assertEqual(r.zpopmin("z"), [])


class Keys(KvTest):
    def test_del_sums(self):
        r = self.r
        r.set("k1", "1")
        r.set("k3", "3")
        self.assertEqual(r.delete("k1", "k2", "k3"), 2, "DEL returns how many keys it removed")
        self.assertEqual(r.delete("k1"), 0)

    def test_exists_counts_each_argument(self):
        r = self.r
        r.set("k1", "1")
        r.rpush("k2", "x")
        self.assertEqual(r.exists("k1", "k2", "nope", "k1"), 3,
                         "EXISTS counts a repeated key each time")

    def test_type(self):
        r = self.r
        r.set("s", "1")
        r.rpush("l", "1")
        r.sadd("st", "1")
        r.hset("h", "f", "1")
        r.zadd("z", {"m": 1})
        for key, kind in [("s", b"string"), ("l", b"list"), ("st", b"set"), ("h", b"hash"),
                          ("z", b"zset"), ("none", b"none")]:
            self.assertEqual(r.type(key), kind, f"TYPE {key}")

    def test_keys_pattern(self):
        r = self.r
        for name in ["user:1", "user:2", "user:10", "order:1", "hello", "hallo", "hxllo"]:
            r.set(name, "x")
        self.assertEqual(sorted(r.keys("user:*")), [b"user:1", b"user:10", b"user:2"])
        self.assertEqual(sorted(r.keys("user:?")), [b"user:1", b"user:2"])
        self.assertEqual(sorted(r.keys("h[ae]llo")), [b"hallo", b"hello"])
        self.assertEqual(sorted(r.keys("h[^e]llo")), [b"hallo", b"hxllo"])
        self.assertEqual(len(r.keys("*")), 7)
        self.assertEqual(r.keys("nothing*"), [])

    def test_scan_returns_every_key_once(self):
        r = self.r
        names = {f"scan:{i}".encode() for i in range(5000)}
        r.mset({name: b"x" for name in names})
        seen = list(r.scan_iter(count=100))
        self.assertEqual(len(seen), len(set(seen)), "SCAN returned a key twice")
        self.assertEqual(set(seen), names, "SCAN missed keys")
        matched = set(r.scan_iter(match="scan:1*", count=100))
        self.assertEqual(matched, {n for n in names if n.startswith(b"scan:1")})

    def test_dbsize_flushdb_flushall(self):
        r = self.r
        self.assertEqual(r.dbsize(), 0)
        r.mset({f"k{i}": "v" for i in range(100)})
        self.assertEqual(r.dbsize(), 100)
        self.assertTrue(r.flushdb())
        self.assertEqual(r.dbsize(), 0)
        r.set("a", "1")
        self.assertTrue(r.flushall())
        self.assertEqual(r.dbsize(), 0)
        self.assertIsNone(r.get("a"))


class Expiry(KvTest):
    def test_expire_ttl_persist(self):
        r = self.r
        r.set("k", "v")
        self.assertEqual(r.ttl("k"), -1, "TTL of a key without expiry is -1")
        self.assertEqual(r.ttl("missing"), -2, "TTL of a missing key is -2")
        self.assertEqual(r.pttl("missing"), -2)
        self.assertTrue(r.expire("k", 100))
        ttl = r.ttl("k")
        self.assertTrue(98 <= ttl <= 100, f"TTL after EXPIRE 100 is {ttl}")
        self.assertTrue(r.pexpire("k", 50000))
        pttl = r.pttl("k")
        self.assertTrue(48000 <= pttl <= 50000, f"PTTL after PEXPIRE 50000 is {pttl}")
        self.assertTrue(r.persist("k"))
        self.assertEqual(r.ttl("k"), -1, "PERSIST removes the expiry")
        self.assertFalse(r.persist("k"), "PERSIST of a key without expiry answers 0")
        self.assertFalse(r.expire("missing", 10), "EXPIRE of a missing key answers 0")

    def test_expired_key_is_reclaimed_without_being_read(self):
        # The key must disappear by itself (active expiry), not only when a read finds it
        # stale: DBSIZE does not read keys, so it is checked before EXISTS, which does.
        r = self.r
        r.set("keep", "v")
        r.set("gone", "v")
        self.assertTrue(r.pexpire("gone", 100))
        deadline = time.monotonic() + 2.0
        time.sleep(0.3)
        while r.dbsize() != 1 and time.monotonic() < deadline:
            time.sleep(0.05)
        self.assertEqual(r.dbsize(), 1, "a key with PEXPIRE 100 still counts after 2 s")
        self.assertEqual(r.exists("gone"), 0)
        self.assertEqual(r.exists("keep"), 1)

    def test_expire_zero_deletes(self):
        r = self.r
        r.set("k", "v")
        r.expire("k", 0)
        self.assertEqual(r.exists("k"), 0, "EXPIRE 0 deletes at once")


class Pipelines(KvTest):
    def test_thousand_commands_in_order(self):
        r = self.r
        pipe = r.pipeline(transaction=False)
        for i in range(1000):
            kind = i % 3
            if kind == 0:
                pipe.set(f"p:{i}", i)
            elif kind == 1:
                pipe.incr("p:counter")
            else:
                pipe.get(f"p:{i - 2}")
        replies = pipe.execute()
        self.assertEqual(len(replies), 1000)
        counter = 0
        for i, reply in enumerate(replies):
            kind = i % 3
            if kind == 0:
                self.assertEqual(reply, True, f"reply {i} (SET)")
            elif kind == 1:
                counter += 1
                self.assertEqual(reply, counter, f"reply {i} (INCR)")
            else:
                self.assertEqual(reply, str(i - 2).encode(), f"reply {i} (GET)")

    def test_errors_inside_a_pipeline_stay_in_place(self):
        r = self.r
        pipe = r.pipeline(transaction=False)
        pipe.set("s", "text")
        pipe.incr("s")
        pipe.get("s")
        replies = pipe.execute(raise_on_error=False)
        self.assertEqual(replies[0], True)
        self.assertIsInstance(replies[1], redis.exceptions.ResponseError)
        self.assertEqual(replies[2], b"text")


class Errors(KvTest):
    def test_wrongtype(self):
        r = self.r
        r.rpush("l", "x")
        r.set("s", "x")
        self.assertError("WRONGTYPE", r.get, "l")
        self.assertError("WRONGTYPE", r.lpush, "s", "y")
        self.assertError("WRONGTYPE", r.sadd, "l", "y")
        self.assertError("WRONGTYPE", r.hset, "l", "f", "v")
        self.assertError("WRONGTYPE", r.zadd, "s", {"m": 1})
        self.assertEqual(r.lrange("l", 0, -1), [b"x"], "a failed command changes nothing")

    def test_unknown_command(self):
        self.assertError("unknown command", self.r.execute_command, "NOSUCHCOMMAND", "a")

    def test_wrong_arity(self):
        r = self.r
        self.assertError("wrong number of arguments", r.execute_command, "GET")
        self.assertError("wrong number of arguments", r.execute_command, "SET", "k")
        self.assertError("wrong number of arguments", r.execute_command, "GET", "a", "b")

    def test_not_an_integer(self):
        r = self.r
        r.set("s", "abc")
        self.assertError("not an integer", r.incr, "s")
        self.assertError("not an integer", r.incrby, "s", 2)
        self.assertEqual(r.get("s"), b"abc")

    def test_syntax_error(self):
        self.assertError("syntax error", self.r.execute_command, "SET", "k", "v", "BOGUS")

    def test_connection_survives_errors(self):
        r = self.r
        self.assertError("unknown command", r.execute_command, "NOSUCHCOMMAND")
        self.assertTrue(r.ping(), "the connection still works after an error")


class Server(KvTest):
    def test_config_get(self):
        r = self.r
        save = r.config_get("save")
        self.assertIn("save", save, f"CONFIG GET save answered {save!r}")
        aof = r.config_get("appendonly")
        self.assertIn("appendonly", aof, f"CONFIG GET appendonly answered {aof!r}")
        self.assertIn(aof["appendonly"], ("no", "yes"))

    def test_info_fields(self):
        info = self.r.info()
        for field in ("rdb_bgsave_in_progress", "rdb_last_save_time", "loading"):
            self.assertIn(field, info, f"INFO has no {field}")
        self.assertEqual(info["loading"], 0)
        self.assertIn(info["rdb_bgsave_in_progress"], (0, 1))
        self.assertIsInstance(info["rdb_last_save_time"], int)
        persistence = self.r.info("persistence")
        self.assertIn("rdb_bgsave_in_progress", persistence, "INFO persistence section")

    def test_select_zero(self):
        self.assertTrue(self.r.execute_command("SELECT", 0))

    def test_debug_populate(self):
        r = self.r
        self.assertTrue(r.execute_command("DEBUG", "POPULATE", 1000))
        self.assertEqual(r.dbsize(), 1000)
        self.assertEqual(r.get("key:0"), b"value:0", "DEBUG POPULATE's default names")
        self.assertEqual(r.get("key:999"), b"value:999")

    def test_lastsave(self):
        # redis-py turns LASTSAVE's integer into a datetime; the raw reply is an int.
        when = self.r.lastsave()
        self.assertIsInstance(when, (int, datetime.datetime))

    def test_save_and_ping(self):
        r = self.r
        r.set("persisted", "yes")
        self.assertTrue(r.save())
        self.assertTrue(r.ping())
        self.assertIsInstance(r.info("persistence")["rdb_last_save_time"], int)

    def test_echo(self):
        self.assertEqual(self.r.echo(b"hi\x00there"), b"hi\x00there")




def main():
    global HOST, PORT
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--host", default="127.0.0.1")
    args, rest = parser.parse_known_args()
    HOST, PORT = args.host, args.port
    program = unittest.main(argv=[sys.argv[0], "-v"] + rest, exit=False)
    result = program.result
    failed = len(result.failures) + len(result.errors)
    passed = result.testsRun - failed - len(result.skipped)
    print(f"redis_py_suite: {passed} passed, {failed} failed, {len(result.skipped)} skipped "
          f"(redis-py {redis.__version__}, port {PORT})")
    sys.exit(0 if failed == 0 and result.testsRun > 0 else 1)


if __name__ == "__main__":
    main()
