// Keyspace: list, set, hash and sorted set commands, and WRONGTYPE across families, reply byte
// for reply byte. Replies whose element order Redis leaves unspecified (SMEMBERS, HGETALL) are
// compared as sorted lists of their elements.
#include <gtest/gtest.h>

#include <algorithm>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "keyspace_test_support.h"

namespace kv {
namespace {

using testing::run;

constexpr std::string_view kWrongType =
    "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n";
constexpr std::string_view kNotInteger = "-ERR value is not an integer or out of range\r\n";

// The elements of a flat RESP2 array of bulk strings ("*N\r\n" then N "$len\r\n...\r\n").
std::vector<std::string> bulks(std::string_view reply) {
  std::vector<std::string> out;
  std::size_t pos = reply.find("\r\n") + 2;
  while (pos < reply.size()) {
    const std::size_t line_end = reply.find("\r\n", pos);
    const std::size_t length = std::stoul(std::string(reply.substr(pos + 1, line_end - pos - 1)));
    out.emplace_back(reply.substr(line_end + 2, length));
    pos = line_end + 2 + length + 2;
  }
  return out;
}

std::vector<std::string> sorted_bulks(std::string_view reply) {
  std::vector<std::string> out = bulks(reply);
  std::sort(out.begin(), out.end());
  return out;
}

using Strings = std::vector<std::string>;

// ---------------------------------------------------------------- lists

TEST(KeyspaceLists, PushOrderAndLength) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"LPUSH", "l", "a", "b", "c"}), ":3\r\n");  // c b a
  EXPECT_EQ(run(ks, {"RPUSH", "l", "x", "y"}), ":5\r\n");       // c b a x y
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}),
            "*5\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n$1\r\nx\r\n$1\r\ny\r\n");
  EXPECT_EQ(run(ks, {"LLEN", "l"}), ":5\r\n");
  EXPECT_EQ(run(ks, {"LLEN", "missing"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"LPUSHX", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"RPUSHX", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "missing"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"RPUSHX", "l", "z"}), ":6\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "l"}), "+list\r\n");
}

TEST(KeyspaceLists, PopWithAndWithoutCount) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"LPOP", "l"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"LPOP", "l", "2"}), "*-1\r\n");
  EXPECT_EQ(run(ks, {"RPOP", "l", "2"}), "*-1\r\n");
  run(ks, {"RPUSH", "l", "a", "b", "c", "d", "e"});
  EXPECT_EQ(run(ks, {"LPOP", "l"}), "$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"RPOP", "l"}), "$1\r\ne\r\n");
  EXPECT_EQ(run(ks, {"LPOP", "l", "0"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"LPOP", "l", "1"}), "*1\r\n$1\r\nb\r\n");
  EXPECT_EQ(run(ks, {"RPOP", "l", "1"}), "*1\r\n$1\r\nd\r\n");
  EXPECT_EQ(run(ks, {"LPOP", "l", "-1"}), "-ERR value is out of range, must be positive\r\n");
  EXPECT_EQ(run(ks, {"LPOP", "l", "x"}), kNotInteger);
  EXPECT_EQ(run(ks, {"RPOP", "l", "10"}), "*1\r\n$1\r\nc\r\n");  // fewer than asked
  EXPECT_EQ(run(ks, {"EXISTS", "l"}), ":0\r\n");                 // emptied: gone
  EXPECT_EQ(ks.key_count(), 0u);
  run(ks, {"RPUSH", "l", "a", "b", "c"});
  EXPECT_EQ(run(ks, {"RPOP", "l", "3"}), "*3\r\n$1\r\nc\r\n$1\r\nb\r\n$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "l"}), "+none\r\n");
  run(ks, {"RPUSH", "l", "only"});
  EXPECT_EQ(run(ks, {"LPOP", "l"}), "$4\r\nonly\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

TEST(KeyspaceLists, LrangeIndices) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}), "*0\r\n");
  run(ks, {"RPUSH", "l", "a", "b", "c", "d"});
  EXPECT_EQ(run(ks, {"LRANGE", "l", "1", "2"}), "*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "-2", "-1"}), "*2\r\n$1\r\nc\r\n$1\r\nd\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "-100", "0"}), "*1\r\n$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "2", "100"}), "*2\r\n$1\r\nc\r\n$1\r\nd\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "4", "10"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "2", "1"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "-1", "-2"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-5"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "a", "1"}), kNotInteger);
}

TEST(KeyspaceLists, LindexAndLset) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"LINDEX", "l", "0"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"LSET", "l", "0", "v"}), "-ERR no such key\r\n");
  run(ks, {"RPUSH", "l", "a", "b", "c"});
  EXPECT_EQ(run(ks, {"LINDEX", "l", "0"}), "$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"LINDEX", "l", "-1"}), "$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"LINDEX", "l", "-3"}), "$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"LINDEX", "l", "3"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"LINDEX", "l", "-4"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"LINDEX", "l", "x"}), kNotInteger);
  EXPECT_EQ(run(ks, {"LSET", "l", "1", "B"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"LSET", "l", "-1", "C"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"LSET", "l", "3", "v"}), "-ERR index out of range\r\n");
  EXPECT_EQ(run(ks, {"LSET", "l", "-4", "v"}), "-ERR index out of range\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}), "*3\r\n$1\r\na\r\n$1\r\nB\r\n$1\r\nC\r\n");
}

TEST(KeyspaceLists, Lrem) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"LREM", "l", "0", "a"}), ":0\r\n");
  run(ks, {"RPUSH", "l", "a", "b", "a", "c", "a", "b", "a"});
  EXPECT_EQ(run(ks, {"LREM", "l", "2", "a"}), ":2\r\n");  // from the head
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}),
            "*5\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"LREM", "l", "-1", "b"}), ":1\r\n");  // from the tail
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}),
            "*4\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\na\r\n$1\r\na\r\n");
  EXPECT_EQ(run(ks, {"LREM", "l", "0", "a"}), ":2\r\n");  // all of them
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}), "*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"LREM", "l", "x", "b"}), kNotInteger);
  EXPECT_EQ(run(ks, {"LREM", "l", "-5", "b"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"LREM", "l", "5", "c"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "l"}), ":0\r\n");
}

TEST(KeyspaceLists, Ltrim) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"LTRIM", "l", "0", "1"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "l"}), ":0\r\n");
  run(ks, {"RPUSH", "l", "a", "b", "c", "d", "e"});
  EXPECT_EQ(run(ks, {"LTRIM", "l", "1", "-2"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}), "*3\r\n$1\r\nb\r\n$1\r\nc\r\n$1\r\nd\r\n");
  EXPECT_EQ(run(ks, {"LTRIM", "l", "-100", "100"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"LLEN", "l"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"LTRIM", "l", "1", "1"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}), "*1\r\n$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"LTRIM", "l", "x", "1"}), kNotInteger);
  EXPECT_EQ(run(ks, {"LTRIM", "l", "5", "10"}), "+OK\r\n");  // an empty range empties it
  EXPECT_EQ(run(ks, {"EXISTS", "l"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

// A bug found by this test: an LREM that matched nothing replied :0 but left the list holding
// moved-from (empty) strings, because every element was moved into a scratch list that was only
// swapped back when something matched. Redis leaves the list unchanged, and so do we now.
TEST(KeyspaceLists, LremWithoutMatchesKeepsTheList) {
  Keyspace ks(0, 1);
  run(ks, {"RPUSH", "l", "b", "c"});
  EXPECT_EQ(run(ks, {"LREM", "l", "0", "zzz"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"LREM", "l", "-1", "zzz"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", "l", "0", "-1"}), "*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
}

// ---------------------------------------------------------------- sets

TEST(KeyspaceSets, AddRemoveCardMembers) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"SADD", "s", "a", "b", "a"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"SADD", "s", "b", "c"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"SCARD", "s"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"SCARD", "missing"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"SISMEMBER", "s", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"SISMEMBER", "s", "z"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"SISMEMBER", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(sorted_bulks(run(ks, {"SMEMBERS", "s"})), (Strings{"a", "b", "c"}));
  EXPECT_EQ(run(ks, {"SMEMBERS", "missing"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"SREM", "s", "a", "z", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"SREM", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(sorted_bulks(run(ks, {"SMEMBERS", "s"})), (Strings{"b", "c"}));
  EXPECT_EQ(run(ks, {"TYPE", "s"}), "+set\r\n");
  EXPECT_EQ(run(ks, {"SREM", "s", "b", "c"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "s"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

TEST(KeyspaceSets, SpopRemovesAndEmptiesTheKey) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"SPOP", "s"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"SPOP", "s", "2"}), "*0\r\n");
  run(ks, {"SADD", "s", "a", "b", "c", "d"});
  const std::string reply = run(ks, {"SPOP", "s"});
  ASSERT_EQ(reply.substr(0, 4), "$1\r\n");
  const Strings one = {reply.substr(4, 1)};
  EXPECT_EQ(run(ks, {"SISMEMBER", "s", one[0]}), ":0\r\n");
  EXPECT_EQ(run(ks, {"SCARD", "s"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"SPOP", "s", "0"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"SPOP", "s", "-1"}), "-ERR value is out of range, must be positive\r\n");
  const Strings two = bulks(run(ks, {"SPOP", "s", "2"}));
  ASSERT_EQ(two.size(), 2u);
  EXPECT_EQ(run(ks, {"SCARD", "s"}), ":1\r\n");
  const Strings rest = bulks(run(ks, {"SPOP", "s", "10"}));
  ASSERT_EQ(rest.size(), 1u);
  Strings all = {one[0], two[0], two[1], rest[0]};
  std::sort(all.begin(), all.end());
  EXPECT_EQ(all, (Strings{"a", "b", "c", "d"}));
  EXPECT_EQ(run(ks, {"EXISTS", "s"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  run(ks, {"SADD", "t", "x"});
  EXPECT_EQ(run(ks, {"SPOP", "t"}), "$1\r\nx\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

// ---------------------------------------------------------------- hashes

TEST(KeyspaceHashes, SetGetDelLenExists) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"HSET", "h", "a", "1", "b", "2"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"HSET", "h", "a", "10", "c", "3"}), ":1\r\n");  // a is updated, not new
  EXPECT_EQ(run(ks, {"HSET", "h", "a"}), "-ERR wrong number of arguments for 'hset' command\r\n");
  EXPECT_EQ(run(ks, {"HGET", "h", "a"}), "$2\r\n10\r\n");
  EXPECT_EQ(run(ks, {"HGET", "h", "zz"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"HGET", "missing", "a"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"HMGET", "h", "a", "zz", "c"}), "*3\r\n$2\r\n10\r\n$-1\r\n$1\r\n3\r\n");
  EXPECT_EQ(run(ks, {"HMGET", "missing", "a", "b"}), "*2\r\n$-1\r\n$-1\r\n");
  EXPECT_EQ(run(ks, {"HLEN", "h"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"HLEN", "missing"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"HEXISTS", "h", "b"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"HEXISTS", "h", "zz"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"HEXISTS", "missing", "b"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"HSTRLEN", "h", "a"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"HSTRLEN", "h", "zz"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"HSTRLEN", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"HDEL", "h", "a", "zz", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"HDEL", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"HLEN", "h"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(run(ks, {"HDEL", "h", "b", "c"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "h"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

TEST(KeyspaceHashes, HgetallPairs) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"HGETALL", "missing"}), "*0\r\n");
  run(ks, {"HSET", "h", "f1", "v1", "f2", "v2", "f3", ""});
  const Strings flat = bulks(run(ks, {"HGETALL", "h"}));
  ASSERT_EQ(flat.size(), 6u);
  std::vector<std::pair<std::string, std::string>> pairs;
  for (std::size_t i = 0; i + 1 < flat.size(); i += 2) pairs.emplace_back(flat[i], flat[i + 1]);
  std::sort(pairs.begin(), pairs.end());
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"f1", "v1"}, {"f2", "v2"}, {"f3", ""}};
  EXPECT_EQ(pairs, expected);
  EXPECT_EQ(sorted_bulks(run(ks, {"HKEYS", "h"})), (Strings{"f1", "f2", "f3"}));
  EXPECT_EQ(sorted_bulks(run(ks, {"HVALS", "h"})), (Strings{"", "v1", "v2"}));
}

TEST(KeyspaceHashes, Hincrby) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"HINCRBY", "h", "n", "5"}), ":5\r\n");
  EXPECT_EQ(run(ks, {"HINCRBY", "h", "n", "-7"}), ":-2\r\n");
  EXPECT_EQ(run(ks, {"HGET", "h", "n"}), "$2\r\n-2\r\n");
  EXPECT_EQ(run(ks, {"HINCRBY", "h", "n", "x"}), kNotInteger);
  EXPECT_EQ(run(ks, {"HINCRBY", "h", "n", "1.5"}), kNotInteger);
  run(ks, {"HSET", "h", "s", "abc"});
  EXPECT_EQ(run(ks, {"HINCRBY", "h", "s", "1"}), "-ERR hash value is not an integer\r\n");
  EXPECT_EQ(run(ks, {"HGET", "h", "s"}), "$3\r\nabc\r\n");
  run(ks, {"HSET", "h", "big", "9223372036854775807"});
  EXPECT_EQ(run(ks, {"HINCRBY", "h", "big", "1"}),
            "-ERR increment or decrement would overflow\r\n");
  EXPECT_EQ(run(ks, {"HINCRBY", "new", "n", "x"}), kNotInteger);
  EXPECT_EQ(run(ks, {"EXISTS", "new"}), ":0\r\n");
}

// ---------------------------------------------------------------- sorted sets

TEST(KeyspaceSortedSets, AddScoreCardAndUpdates) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"ZADD", "z", "1", "a", "2", "b"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "5", "a", "3", "c"}), ":1\r\n");  // a updated, c added
  EXPECT_EQ(run(ks, {"ZADD", "z", "CH", "6", "a", "2", "b", "1", "d"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"ZSCORE", "z", "a"}), "$1\r\n6\r\n");
  EXPECT_EQ(run(ks, {"ZSCORE", "z", "zz"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"ZSCORE", "missing", "a"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"ZCARD", "z"}), ":4\r\n");
  EXPECT_EQ(run(ks, {"ZCARD", "missing"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "NX", "100", "a", "7", "e"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "XX", "100", "a", "7", "f"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"ZSCORE", "z", "a"}), "$3\r\n100\r\n");
  EXPECT_EQ(run(ks, {"ZSCORE", "z", "f"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "1.5", "b"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"ZSCORE", "z", "b"}), "$3\r\n1.5\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "x", "b"}), "-ERR value is not a valid float\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "1", "a", "2"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "z", "INCR", "2", "b"}), "$3\r\n3.5\r\n");
  EXPECT_EQ(run(ks, {"ZADD", "other", "XX", "1", "a"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "other"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "z"}), "+zset\r\n");
}

TEST(KeyspaceSortedSets, RangeOrderIsScoreThenMember) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "-1"}), "*0\r\n");
  run(ks, {"ZADD", "z", "1", "b", "1", "a", "2", "c", "0", "d"});
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "-1"}),
            "*4\r\n$1\r\nd\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "-1", "WITHSCORES"}),
            "*8\r\n$1\r\nd\r\n$1\r\n0\r\n$1\r\na\r\n$1\r\n1\r\n"
            "$1\r\nb\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n2\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "-2", "-1"}), "*2\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "1", "100"}), "*3\r\n$1\r\na\r\n$1\r\nb\r\n$1\r\nc\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "3", "1"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "REV", "WITHSCORES"}),
            "*4\r\n$1\r\nc\r\n$1\r\n2\r\n$1\r\nb\r\n$1\r\n1\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "x", "1"}), kNotInteger);
}

// A RESP2 array of bulk strings.
std::string array_of(std::initializer_list<std::string_view> elements) {
  std::string out = "*" + std::to_string(elements.size()) + "\r\n";
  for (const std::string_view e : elements) out += "$" + std::to_string(e.size()) + "\r\n" + std::string(e) + "\r\n";
  return out;
}

// The replies of redis-server 7.0.15 to the same commands.
TEST(KeyspaceSortedSets, RangeByScoreWithRevAndLimit) {
  Keyspace ks(0, 1);
  run(ks, {"ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d"});
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "(1", "+inf", "BYSCORE"}), array_of({"b", "c", "d"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "2", "3", "byscore", "WITHSCORES"}), array_of({"b", "2", "c", "3"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "-INF", "2", "BYSCORE"}), array_of({"a", "b"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "2", "2", "BYSCORE"}), array_of({"b"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "(2", "(2", "BYSCORE"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "3", "2", "BYSCORE"}), "*0\r\n");
  // REV takes the bounds the other way round: max first.
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "+inf", "-inf", "BYSCORE", "REV"}), array_of({"d", "c", "b", "a"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "3", "1", "BYSCORE", "REV", "LIMIT", "1", "1"}), array_of({"b"}));
  // A negative count is no limit; a negative offset is an empty range.
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "-1"}), array_of({"b", "c", "d"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "-1", "2"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "-inf", "+inf", "BYSCORE", "LIMIT", "1", "0"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "missing", "(1", "2", "BYSCORE"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "x", "1", "BYSCORE"}), "-ERR min or max is not a float\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "nan", "1", "BYSCORE"}), "-ERR min or max is not a float\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "missing", "x", "1", "BYSCORE"}), "-ERR min or max is not a float\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "BYSCORE", "LIMIT", "x", "1"}), kNotInteger);
}

TEST(KeyspaceSortedSets, RangeByLexWithRevAndLimit) {
  Keyspace ks(0, 1);
  run(ks, {"ZADD", "l", "0", "a", "0", "b", "0", "c", "0", "d"});
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "-", "+", "BYLEX"}), array_of({"a", "b", "c", "d"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "[b", "(d", "BYLEX"}), array_of({"b", "c"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "(b", "+", "bylex"}), array_of({"c", "d"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "+", "-", "BYLEX", "REV"}), array_of({"d", "c", "b", "a"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "[c", "-", "BYLEX", "REV", "LIMIT", "1", "5"}), array_of({"b", "a"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "+", "+", "BYLEX"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "-", "-", "BYLEX"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "[", "+", "BYLEX"}), array_of({"a", "b", "c", "d"}));
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "a", "c", "BYLEX"}), "-ERR min or max not valid string range item\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "-", "+", "BYLEX", "WITHSCORES"}),
            "-ERR syntax error, WITHSCORES not supported in combination with BYLEX\r\n");
}

TEST(KeyspaceSortedSets, RangeOptionsRefusedAsRedisRefusesThem) {
  Keyspace ks(0, 1);
  run(ks, {"ZADD", "z", "1", "a", "2", "b"});
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "LIMIT", "0", "1"}),
            "-ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "LIMIT", "0", "-1"}), array_of({"a", "b"}));  // LIMIT's defaults
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "LIMIT", "0"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "BYSCORE", "BYLEX"}), "-ERR syntax error\r\n");
  EXPECT_EQ(run(ks, {"ZRANGE", "z", "0", "1", "REV", "REV"}), "-ERR syntax error\r\n");
  run(ks, {"SET", "s", "x"});
  EXPECT_EQ(run(ks, {"ZRANGE", "s", "0", "1", "BYSCORE"}), kWrongType);
}

TEST(KeyspaceSortedSets, ZincrbyRankRem) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"ZINCRBY", "z", "2.5", "a"}), "$3\r\n2.5\r\n");
  EXPECT_EQ(run(ks, {"ZINCRBY", "z", "1", "a"}), "$3\r\n3.5\r\n");
  EXPECT_EQ(run(ks, {"ZINCRBY", "z", "-10", "b"}), "$3\r\n-10\r\n");
  EXPECT_EQ(run(ks, {"ZINCRBY", "z", "x", "b"}), "-ERR value is not a valid float\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "z", "b"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "z", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "z", "a", "WITHSCORE"}), "*2\r\n:1\r\n$3\r\n3.5\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "z", "zz"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "z", "zz", "WITHSCORE"}), "*-1\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "missing", "a"}), "$-1\r\n");
  EXPECT_EQ(run(ks, {"ZREM", "z", "a", "zz", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"ZREM", "missing", "a"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"ZRANK", "z", "b"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"ZREM", "z", "b"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "z"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

TEST(KeyspaceSortedSets, PopMinAndMax) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"ZPOPMIN", "z"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZPOPMAX", "z", "2"}), "*0\r\n");
  run(ks, {"ZADD", "z", "1", "a", "1", "b", "2", "c", "3", "d", "3", "e"});
  EXPECT_EQ(run(ks, {"ZPOPMIN", "z"}), "*2\r\n$1\r\na\r\n$1\r\n1\r\n");
  EXPECT_EQ(run(ks, {"ZPOPMAX", "z"}), "*2\r\n$1\r\ne\r\n$1\r\n3\r\n");
  EXPECT_EQ(run(ks, {"ZPOPMIN", "z", "0"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"ZPOPMIN", "z", "2"}), "*4\r\n$1\r\nb\r\n$1\r\n1\r\n$1\r\nc\r\n$1\r\n2\r\n");
  EXPECT_EQ(run(ks, {"ZPOPMIN", "z", "-1"}), "-ERR value is out of range, must be positive\r\n");
  EXPECT_EQ(run(ks, {"ZCARD", "z"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"ZPOPMAX", "z", "5"}), "*2\r\n$1\r\nd\r\n$1\r\n3\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "z"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
}

// ---------------------------------------------------------------- WRONGTYPE

TEST(KeyspaceWrongType, EveryFamilyAgainstAString) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "s", "v"});
  const std::vector<std::vector<std::string>> commands = {
      {"LPUSH", "s", "a"}, {"RPUSH", "s", "a"}, {"LPUSHX", "s", "a"}, {"LPOP", "s"},
      {"RPOP", "s", "2"}, {"LLEN", "s"}, {"LRANGE", "s", "0", "-1"}, {"LINDEX", "s", "0"},
      {"LSET", "s", "0", "a"}, {"LREM", "s", "0", "a"}, {"LTRIM", "s", "0", "1"},
      {"SADD", "s", "a"}, {"SREM", "s", "a"}, {"SCARD", "s"}, {"SISMEMBER", "s", "a"},
      {"SMEMBERS", "s"}, {"SPOP", "s"}, {"HSET", "s", "f", "v"}, {"HGET", "s", "f"},
      {"HMGET", "s", "f"}, {"HDEL", "s", "f"}, {"HLEN", "s"}, {"HEXISTS", "s", "f"},
      {"HGETALL", "s"}, {"HINCRBY", "s", "f", "1"}, {"HSTRLEN", "s", "f"},
      {"ZADD", "s", "1", "m"}, {"ZSCORE", "s", "m"}, {"ZCARD", "s"}, {"ZRANGE", "s", "0", "-1"},
      {"ZINCRBY", "s", "1", "m"}, {"ZPOPMIN", "s"}, {"ZPOPMAX", "s"}, {"ZRANK", "s", "m"},
      {"ZREM", "s", "m"}};
  for (const auto& command : commands) {
    EXPECT_EQ(run(ks, command), kWrongType) << command[0];
  }
  EXPECT_EQ(run(ks, {"GET", "s"}), "$1\r\nv\r\n");  // untouched
}

TEST(KeyspaceWrongType, StringsAndOtherFamiliesAgainstAggregates) {
  Keyspace ks(0, 1);
  run(ks, {"RPUSH", "l", "a"});
  run(ks, {"SADD", "st", "a"});
  run(ks, {"HSET", "h", "f", "v"});
  run(ks, {"ZADD", "z", "1", "m"});
  for (const std::string key : {"l", "st", "h", "z"}) {
    EXPECT_EQ(run(ks, {"GET", key}), kWrongType) << key;
    EXPECT_EQ(run(ks, {"APPEND", key, "x"}), kWrongType) << key;
    EXPECT_EQ(run(ks, {"INCR", key}), kWrongType) << key;
    EXPECT_EQ(run(ks, {"STRLEN", key}), kWrongType) << key;
  }
  EXPECT_EQ(run(ks, {"SADD", "l", "a"}), kWrongType);
  EXPECT_EQ(run(ks, {"LPUSH", "st", "a"}), kWrongType);
  EXPECT_EQ(run(ks, {"ZADD", "h", "1", "a"}), kWrongType);
  EXPECT_EQ(run(ks, {"HSET", "z", "f", "v"}), kWrongType);
  EXPECT_EQ(run(ks, {"SMEMBERS", "z"}), kWrongType);
  EXPECT_EQ(run(ks, {"LRANGE", "h", "0", "-1"}), kWrongType);
  EXPECT_EQ(run(ks, {"ZRANGE", "l", "0", "-1"}), kWrongType);
  EXPECT_EQ(run(ks, {"HGETALL", "st"}), kWrongType);
  EXPECT_EQ(ks.key_count(), 4u);
}

}  // namespace
}  // namespace kv
