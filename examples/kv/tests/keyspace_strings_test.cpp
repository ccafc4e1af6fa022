// Keyspace: string commands, key commands, expiry and glob patterns, reply byte for reply byte.
#include <gtest/gtest.h>

#include "glob.h"
#include "keyspace_test_support.h"

namespace kv {
namespace {

using testing::kStartMs;
using testing::run;

constexpr std::string_view kWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
constexpr std::string_view kNotInteger = "-ERR value is not an integer or out of range\r\n";

TEST(KeyspaceStrings, GetSetAndMissingKeys) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"GET", "k"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "hello"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"get", "k"}), "$5\r\nhello\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", ""}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"GET", "k"}), "$0\r\n\r\n");
  EXPECT_EQ(ks.key_count(), 1u);
  EXPECT_EQ(ks.changes(), 2u);
}

TEST(KeyspaceStrings, BinarySafeValues) {
  Keyspace ks(0, 1);
  const std::string value("a\0b\r\nc", 6);
  EXPECT_EQ(run(ks, {"SET", "k", value}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"GET", "k"}), "$6\r\n" + value + "\r\n");
}

TEST(KeyspaceStrings, SetConditionsAndGet) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"SET", "k", "1", "XX"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "1", "NX"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "2", "NX"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "3", "XX", "GET"}), "$1\r\n1\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "4", "NX", "GET"}), "$1\r\n3\r\n");  // not set: k exists
  EXPECT_EQ(run(ks, {"GET", "k"}), "$1\r\n3\r\n");
  EXPECT_EQ(run(ks, {"SET", "new", "v", "GET"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"GET", "new"}), "$1\r\nv\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "NX", "XX"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX", "10", "PX", "5"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX", "10", "KEEPTTL"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "BOGUS"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX", "ten"}), kNotInteger);
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX", "0"}),
            "-ERR invalid expire time in 'set' command\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX", "9223372036854775807"}),
            "-ERR invalid expire time in 'set' command\r\n");
  run(ks, {"LPUSH", "list", "a"});
  EXPECT_EQ(run(ks, {"SET", "list", "v", "GET"}), kWrongType);
  EXPECT_EQ(run(ks, {"SET", "list", "v"}), "+OK\r\n");  // SET replaces any type
  EXPECT_EQ(run(ks, {"TYPE", "list"}), "+string\r\n");
}

TEST(KeyspaceStrings, SetExpiryOptions) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EX", "10"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":10\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":10000\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v2", "KEEPTTL"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":10000\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v3"}), "+OK\r\n");  // no KEEPTTL: the TTL goes
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(run(ks, {"SET", "k", "v", "PX", "1500"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":1500\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":2\r\n");  // rounded to the nearest second
  EXPECT_EQ(run(ks, {"SET", "k", "v", "PXAT", std::to_string(kStartMs + 42)}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":42\r\n");
  EXPECT_EQ(run(ks, {"SET", "k", "v", "EXAT", std::to_string(kStartMs / 1000 + 7)}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":7000\r\n");
  EXPECT_EQ(ks.expires_count(), 1u);
}

TEST(KeyspaceStrings, SetnxSetexPsetex) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"SETNX", "k", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"SETNX", "k", "b"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"GET", "k"}), "$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"SETEX", "k", "5", "c"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":5000\r\n");
  EXPECT_EQ(run(ks, {"PSETEX", "k", "250", "d"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":250\r\n");
  EXPECT_EQ(run(ks, {"GET", "k"}), "$1\r\nd\r\n");
  EXPECT_EQ(run(ks, {"SETEX", "k", "0", "c"}), "-ERR invalid expire time in 'setex' command\r\n");
  EXPECT_EQ(run(ks, {"PSETEX", "k", "-1", "c"}),
            "-ERR invalid expire time in 'psetex' command\r\n");
  EXPECT_EQ(run(ks, {"SETEX", "k", "x", "c"}), kNotInteger);
}

TEST(KeyspaceStrings, GetsetGetdelAppendStrlen) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"GETSET", "k", "a"}), "$-1\r\n");
  run(ks, {"EXPIRE", "k", "100"});
  EXPECT_EQ(run(ks, {"GETSET", "k", "b"}), "$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(run(ks, {"APPEND", "k", "cd"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"APPEND", "other", "xyz"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"STRLEN", "k"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"STRLEN", "missing"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"GETDEL", "k"}), "$3\r\nbcd\r\n");
  EXPECT_EQ(run(ks, {"GETDEL", "k"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "k"}), ":0\r\n");
  run(ks, {"SADD", "set", "m"});
  EXPECT_EQ(run(ks, {"GETSET", "set", "v"}), kWrongType);
  EXPECT_EQ(run(ks, {"GETDEL", "set"}), kWrongType);
  EXPECT_EQ(run(ks, {"APPEND", "set", "v"}), kWrongType);
  EXPECT_EQ(run(ks, {"STRLEN", "set"}), kWrongType);
  EXPECT_EQ(run(ks, {"GET", "set"}), kWrongType);
}

TEST(KeyspaceStrings, IncrDecrFamily) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"INCR", "n"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"INCRBY", "n", "41"}), ":42\r\n");
  EXPECT_EQ(run(ks, {"DECR", "n"}), ":41\r\n");
  EXPECT_EQ(run(ks, {"DECRBY", "n", "50"}), ":-9\r\n");
  EXPECT_EQ(run(ks, {"GET", "n"}), "$2\r\n-9\r\n");
  EXPECT_EQ(run(ks, {"INCRBY", "n", "x"}), kNotInteger);
  EXPECT_EQ(run(ks, {"INCRBY", "n", "1.5"}), kNotInteger);
  run(ks, {"SET", "s", "abc"});
  EXPECT_EQ(run(ks, {"INCR", "s"}), kNotInteger);
  for (std::string_view bad : {" 1", "+1", "01", "-0", "1 ", "", "99999999999999999999"}) {
    run(ks, {"SET", "s", bad});
    EXPECT_EQ(run(ks, {"INCR", "s"}), kNotInteger) << "value '" << bad << "'";
  }
  run(ks, {"LPUSH", "l", "1"});
  EXPECT_EQ(run(ks, {"INCR", "l"}), kWrongType);
}

TEST(KeyspaceStrings, IncrOverflowIsRefused) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "n", "9223372036854775807"});
  EXPECT_EQ(run(ks, {"INCR", "n"}), "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(run(ks, {"GET", "n"}), "$19\r\n9223372036854775807\r\n");
  run(ks, {"SET", "n", "-9223372036854775808"});
  EXPECT_EQ(run(ks, {"DECR", "n"}), "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(run(ks, {"INCRBY", "n", "-1"}), "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(run(ks, {"DECRBY", "m", "-9223372036854775808"}),
            "-ERR decrement would overflow\r\n");
  EXPECT_EQ(run(ks, {"INCRBY", "m", "9223372036854775807"}), ":9223372036854775807\r\n");
}

TEST(KeyspaceStrings, IncrKeepsTheExpiry) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "n", "1", "EX", "100"});
  EXPECT_EQ(run(ks, {"INCR", "n"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"TTL", "n"}), ":100\r\n");
}

TEST(KeyspaceStrings, MgetMsetMsetnx) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"MSET", "a", "1", "b", "2"}), "+OK\r\n");
  run(ks, {"RPUSH", "l", "x"});
  EXPECT_EQ(run(ks, {"MGET", "a", "missing", "b", "l"}),
            "*4\r\n$1\r\n1\r\n$-1\r\n$1\r\n2\r\n$-1\r\n");
  EXPECT_EQ(run(ks, {"MSET", "a", "1", "b"}),
            "-ERR wrong number of arguments for 'mset' command\r\n");
  EXPECT_EQ(run(ks, {"MSETNX", "a", "9", "c", "3"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "c"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"MSETNX", "c", "3", "d", "4"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"MGET", "c", "d"}), "*2\r\n$1\r\n3\r\n$1\r\n4\r\n");
}

TEST(KeyspaceStrings, MsetnxRefusesKeysOfOtherShards) {
  // With two shards, find a key of each.
  std::string mine = "a";
  std::string theirs = "b";
  for (int i = 0; shard_of(mine, 2) != 0; ++i) mine = "a" + std::to_string(i);
  for (int i = 0; shard_of(theirs, 2) != 1; ++i) theirs = "b" + std::to_string(i);
  Keyspace ks(0, 2);
  EXPECT_EQ(run(ks, {"MSETNX", mine, "1", theirs, "2"}).substr(0, 10), "-CROSSSLOT");
  EXPECT_EQ(ks.key_count(), 0u);
}

TEST(KeyspaceStrings, ArityAndUnknownCommands) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"GET"}), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(run(ks, {"get", "a", "b"}), "-ERR wrong number of arguments for 'get' command\r\n");
  EXPECT_EQ(run(ks, {"NOPE", "a"}), "-ERR unknown command 'NOPE', with args beginning with: 'a' \r\n");
  EXPECT_EQ(run(ks, {"PING"}).substr(0, 5), "-ERR ");
}

TEST(KeyspaceKeys, DelExistsTypeTouch) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "s", "v"});
  run(ks, {"RPUSH", "l", "v"});
  run(ks, {"SADD", "st", "v"});
  run(ks, {"HSET", "h", "f", "v"});
  run(ks, {"ZADD", "z", "1", "m"});
  EXPECT_EQ(run(ks, {"TYPE", "s"}), "+string\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "l"}), "+list\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "st"}), "+set\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "z"}), "+zset\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "none"}), "+none\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "s", "s", "none", "l"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"TOUCH", "s", "none"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":5\r\n");
  EXPECT_EQ(run(ks, {"DEL", "s", "l", "none"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"UNLINK", "st", "s"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"FLUSHDB", "ASYNC"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"FLUSHALL", "NOW"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"FLUSHALL", "sync"}), "+OK\r\n");
}

TEST(KeyspaceKeys, ExpireTtlPersist) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":-2\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":-2\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "10"}), ":0\r\n");
  run(ks, {"SET", "k", "v"});
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(run(ks, {"PERSIST", "k"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "10"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":10\r\n");
  EXPECT_EQ(run(ks, {"PEXPIRE", "k", "2500"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":2500\r\n");
  EXPECT_EQ(run(ks, {"EXPIREAT", "k", std::to_string(kStartMs / 1000 + 20)}), ":1\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":20\r\n");
  EXPECT_EQ(run(ks, {"PEXPIREAT", "k", std::to_string(kStartMs + 5)}), ":1\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "k"}), ":5\r\n");
  EXPECT_EQ(run(ks, {"PERSIST", "k"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":-1\r\n");
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "ten"}), kNotInteger);
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "9223372036854775807"}),
            "-ERR invalid expire time in 'EXPIRE' command\r\n");
}

TEST(KeyspaceKeys, ExpireOptions) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "k", "v"});
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "10", "XX"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "10", "GT"}), ":0\r\n");  // no TTL counts as infinite
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "10", "NX"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "20", "NX"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "5", "GT"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "20", "GT"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "30", "LT"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "15", "LT", "XX"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"TTL", "k"}), ":15\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "15", "NX", "XX"}),
            "-ERR NX and XX, GT or LT options at the same time are not compatible\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "15", "GT", "LT"}),
            "-ERR GT and LT options at the same time are not compatible\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "15", "SOON"}), "-ERR Unsupported option SOON\r\n");
}

TEST(KeyspaceKeys, ExpireInThePastDeletes) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "k", "v"});
  EXPECT_EQ(run(ks, {"EXPIRE", "k", "0"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "k"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  run(ks, {"SET", "k", "v"});
  EXPECT_EQ(run(ks, {"PEXPIREAT", "k", "1"}), ":1\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  EXPECT_EQ(ks.expires_count(), 0u);
}

TEST(KeyspaceExpiry, LazyExpiryOnAccess) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "k", "v", "PX", "100"});
  EXPECT_EQ(run(ks, {"GET", "k"}, kStartMs + 99), "$1\r\nv\r\n");
  EXPECT_EQ(ks.key_count(), 1u);
  const std::uint64_t changes = ks.changes();
  EXPECT_EQ(run(ks, {"GET", "k"}, kStartMs + 100), "$-1\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(ks.changes(), changes + 1);  // the expiration is a change
  EXPECT_EQ(run(ks, {"TTL", "k"}, kStartMs + 100), ":-2\r\n");
  // Any type, any command: an expired list is a missing list.
  run(ks, {"RPUSH", "l", "a", "b"});
  run(ks, {"PEXPIRE", "l", "10"});
  EXPECT_EQ(run(ks, {"RPUSH", "l", "c"}, kStartMs + 10), ":1\r\n");
  EXPECT_EQ(run(ks, {"TTL", "l"}, kStartMs + 10), ":-1\r\n");
}

TEST(KeyspaceExpiry, ExpiredKeysAreNotListed) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "a", "v", "PX", "10"});
  run(ks, {"SET", "b", "v"});
  EXPECT_EQ(run(ks, {"KEYS", "*"}, kStartMs + 10), "*1\r\n$1\r\nb\r\n");
  EXPECT_EQ(run(ks, {"SCAN", "0", "COUNT", "100"}, kStartMs + 10),
            "*2\r\n$1\r\n0\r\n*1\r\n$1\r\nb\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "a", "b"}, kStartMs + 10), ":1\r\n");
}

TEST(KeyspaceExpiry, ActiveExpiryHonoursTheBudgetAndTheOrder) {
  Keyspace ks(0, 1);
  EXPECT_EQ(ks.next_expiry(), INT64_MAX);
  for (int i = 0; i < 10; ++i) {
    run(ks, {"SET", "k" + std::to_string(i), "v", "PX", std::to_string(100 + 10 * i)});
  }
  run(ks, {"SET", "forever", "v"});
  EXPECT_EQ(ks.expires_count(), 10u);
  EXPECT_EQ(ks.next_expiry(), kStartMs + 100);
  EXPECT_EQ(ks.expire_due(kStartMs + 99, 100), 0u);
  EXPECT_EQ(ks.expire_due(kStartMs + 150, 3), 3u);  // k0..k5 are due; the budget allows 3
  EXPECT_EQ(run(ks, {"EXISTS", "k0", "k1", "k2", "k3"}, kStartMs), ":1\r\n");
  EXPECT_EQ(ks.next_expiry(), kStartMs + 130);
  EXPECT_EQ(ks.expire_due(kStartMs + 150, 100), 3u);
  EXPECT_EQ(ks.expire_due(kStartMs + 10'000, 100), 4u);
  EXPECT_EQ(ks.key_count(), 1u);
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(ks.next_expiry(), INT64_MAX);
}

TEST(KeyspaceKeys, KeysWithPatterns) {
  Keyspace ks(0, 1);
  run(ks, {"MSET", "hello", "1", "hallo", "1", "hxllo", "1", "hllo", "1", "heeeello", "1"});
  auto sorted_keys = [&](std::string_view pattern) {
    std::string reply = run(ks, {"KEYS", pattern});
    std::vector<std::string> names;
    std::size_t pos = reply.find("\r\n") + 2;
    while (pos < reply.size()) {
      const std::size_t line_end = reply.find("\r\n", pos);
      const std::size_t length = std::stoul(reply.substr(pos + 1, line_end - pos - 1));
      names.push_back(reply.substr(line_end + 2, length));
      pos = line_end + 2 + length + 2;
    }
    std::sort(names.begin(), names.end());
    std::string joined;
    for (const auto& n : names) joined += n + " ";
    return joined;
  };
  EXPECT_EQ(sorted_keys("h?llo"), "hallo hello hxllo ");
  EXPECT_EQ(sorted_keys("h*llo"), "hallo heeeello hello hllo hxllo ");
  EXPECT_EQ(sorted_keys("h[ae]llo"), "hallo hello ");
  EXPECT_EQ(sorted_keys("h[^e]llo"), "hallo hxllo ");
  EXPECT_EQ(sorted_keys("h[a-b]llo"), "hallo ");
  EXPECT_EQ(sorted_keys("nothing*"), "");
}

TEST(KeyspaceGlob, MatchesLikeRedis) {
  EXPECT_TRUE(glob_match("*", ""));
  EXPECT_TRUE(glob_match("*", "anything"));
  EXPECT_TRUE(glob_match("a*b*c", "aXXbYYc"));
  EXPECT_FALSE(glob_match("a*b*c", "aXXbYY"));
  EXPECT_TRUE(glob_match("?", "x"));
  EXPECT_FALSE(glob_match("?", ""));
  EXPECT_FALSE(glob_match("?", "xy"));
  EXPECT_TRUE(glob_match("[abc]", "b"));
  EXPECT_FALSE(glob_match("[abc]", "d"));
  EXPECT_TRUE(glob_match("[^abc]", "d"));
  EXPECT_FALSE(glob_match("[^abc]", "a"));
  EXPECT_TRUE(glob_match("[a-z]1", "q1"));
  EXPECT_TRUE(glob_match("[z-a]", "q"));  // a reversed range still works
  EXPECT_FALSE(glob_match("[a-z]", "Q"));
  EXPECT_TRUE(glob_match("\\*", "*"));
  EXPECT_FALSE(glob_match("\\*", "x"));
  EXPECT_TRUE(glob_match("a\\?b", "a?b"));
  EXPECT_FALSE(glob_match("a\\?b", "axb"));
  EXPECT_TRUE(glob_match("[\\]]", "]"));
  EXPECT_TRUE(glob_match("user:*:name", "user:42:name"));
  EXPECT_FALSE(glob_match("user:*:name", "user:42:mail"));
  EXPECT_TRUE(glob_match("*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaab"));
  EXPECT_FALSE(glob_match("*a*a*a*a*a*a*a*b", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"));
  EXPECT_TRUE(glob_match("a**", "a"));
  EXPECT_FALSE(glob_match("", "a"));
  EXPECT_TRUE(glob_match("", ""));
}

TEST(KeyspaceKeys, RenameWithinTheShard) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"RENAME", "a", "b"}), "-ERR no such key\r\n");
  run(ks, {"SET", "a", "1", "EX", "50"});
  run(ks, {"SET", "b", "old"});
  EXPECT_EQ(run(ks, {"RENAME", "a", "b"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"GET", "b"}), "$1\r\n1\r\n");
  EXPECT_EQ(run(ks, {"TTL", "b"}), ":50\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "a"}), ":0\r\n");
  EXPECT_EQ(ks.expires_count(), 1u);
  EXPECT_EQ(run(ks, {"RENAME", "b", "b"}), "+OK\r\n");
  EXPECT_EQ(ks.expire_due(kStartMs + 50'000, 10), 1u);
  EXPECT_EQ(ks.key_count(), 0u);
}

TEST(KeyspaceKeys, RandomkeyAndScanOnOneShard) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"RANDOMKEY"}), "$-1\r\n");
  run(ks, {"SET", "only", "v"});
  EXPECT_EQ(run(ks, {"RANDOMKEY"}), "$4\r\nonly\r\n");
  EXPECT_EQ(run(ks, {"SCAN", "x"}), "-ERR invalid cursor\r\n");
  EXPECT_EQ(run(ks, {"SCAN", "0", "COUNT", "0"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"SCAN", "0", "MATCH"}), "-ERR syntax error\r\n");
  run(ks, {"RPUSH", "list", "v"});
  EXPECT_EQ(run(ks, {"SCAN", "0", "COUNT", "1000", "TYPE", "list"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$4\r\nlist\r\n");
  EXPECT_EQ(run(ks, {"SCAN", "0", "COUNT", "1000", "MATCH", "o*"}),
            "*2\r\n$1\r\n0\r\n*1\r\n$4\r\nonly\r\n");
}

TEST(KeyspaceKeys, DebugPopulate) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "3"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"MGET", "key:0", "key:2", "key:3"}),
            "*3\r\n$7\r\nvalue:0\r\n$7\r\nvalue:2\r\n$-1\r\n");
  run(ks, {"SET", "p:1", "mine"});
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "2", "p", "10"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"GET", "p:0"}), std::string("$10\r\nvalue:0\0\0\0\r\n", 17));
  EXPECT_EQ(run(ks, {"GET", "p:1"}), "$4\r\nmine\r\n");  // existing keys are kept
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "1", "t", "3"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"GET", "t:0"}), "$3\r\nval\r\n");
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "-1"}),
            "-ERR value is out of range, must be positive\r\n");
  EXPECT_EQ(run(ks, {"DEBUG", "SLEEP", "0"}),
            "-ERR DEBUG subcommand not supported by this server\r\n");
  EXPECT_EQ(ks.key_count(), 6u);
}

}  // namespace
}  // namespace kv
