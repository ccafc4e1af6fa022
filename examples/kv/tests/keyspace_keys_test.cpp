// Keyspace: key commands (DEL EXISTS TYPE EXPIRE TTL PERSIST KEYS SCAN FLUSHDB DBSIZE RENAME
// DEBUG POPULATE), expiry driven by the now_ms parameter, and the changes() counter.
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <map>
#include <string>
#include <vector>

#include "key_hash.h"
#include "keyspace_test_support.h"

namespace kv {
namespace {

using testing::kStartMs;
using testing::run;

using Strings = std::vector<std::string>;

// Reads "$len\r\nbytes\r\n" at `pos` and moves `pos` past it.
std::string read_bulk(std::string_view reply, std::size_t& pos) {
  const std::size_t line_end = reply.find("\r\n", pos);
  const std::size_t length = std::stoul(std::string(reply.substr(pos + 1, line_end - pos - 1)));
  std::string value(reply.substr(line_end + 2, length));
  pos = line_end + 2 + length + 2;
  return value;
}

// Reads "*N\r\n" at `pos` and moves `pos` past it.
std::size_t read_array_header(std::string_view reply, std::size_t& pos) {
  const std::size_t line_end = reply.find("\r\n", pos);
  const std::size_t count = std::stoul(std::string(reply.substr(pos + 1, line_end - pos - 1)));
  pos = line_end + 2;
  return count;
}

Strings sorted_bulks(std::string_view reply) {
  std::size_t pos = 0;
  const std::size_t n = read_array_header(reply, pos);
  Strings out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(read_bulk(reply, pos));
  std::sort(out.begin(), out.end());
  return out;
}

// Runs SCAN to completion with `options` after the cursor; returns every key it gave (with
// repeats, sorted) and the number of calls it took.
Strings full_scan(Keyspace& ks, const Strings& options, int& calls) {
  Strings keys;
  std::string cursor = "0";
  calls = 0;
  do {
    Strings args = {"SCAN", cursor};
    args.insert(args.end(), options.begin(), options.end());
    const std::string reply = run(ks, args);
    std::size_t pos = 0;
    EXPECT_EQ(read_array_header(reply, pos), 2u);
    cursor = read_bulk(reply, pos);
    const std::size_t n = read_array_header(reply, pos);
    for (std::size_t i = 0; i < n; ++i) keys.push_back(read_bulk(reply, pos));
    EXPECT_EQ(pos, reply.size());
    ++calls;
  } while (cursor != "0" && calls < 100'000);
  std::sort(keys.begin(), keys.end());
  return keys;
}

TEST(KeyspaceKeysFamily, DelAndExistsCount) {
  Keyspace ks(0, 1);
  run(ks, {"MSET", "a", "1", "b", "2", "c", "3"});
  EXPECT_EQ(run(ks, {"EXISTS", "a"}), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "a", "a", "b", "nope", "c"}), ":4\r\n");  // once per naming
  EXPECT_EQ(run(ks, {"EXISTS", "nope"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"DEL", "a", "a", "nope"}), ":1\r\n");  // a second naming finds nothing
  EXPECT_EQ(run(ks, {"DEL", "nope"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"DEL", "b", "c"}), ":2\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "a", "b", "c"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  run(ks, {"RPUSH", "l", "x"});
  run(ks, {"ZADD", "z", "1", "m"});
  EXPECT_EQ(run(ks, {"DEL", "l", "z"}), ":2\r\n");  // any type
}

TEST(KeyspaceKeysFamily, TypeNames) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "s", "v", "PX", "10"});
  run(ks, {"HSET", "h", "f", "v"});
  EXPECT_EQ(run(ks, {"TYPE", "s"}), "+string\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "h"}), "+hash\r\n");
  EXPECT_EQ(run(ks, {"TYPE", "s"}, kStartMs + 10), "+none\r\n");  // expired
  EXPECT_EQ(run(ks, {"TYPE", "nope"}), "+none\r\n");
}

TEST(KeyspaceKeysFamily, ExpiresExactlyAtItsTime) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "k", "v"});
  EXPECT_EQ(run(ks, {"PEXPIRE", "k", "100"}), ":1\r\n");
  EXPECT_EQ(ks.next_expiry(), kStartMs + 100);
  EXPECT_EQ(run(ks, {"PTTL", "k"}, kStartMs + 99), ":1\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "k"}, kStartMs + 99), ":1\r\n");
  EXPECT_EQ(ks.key_count(), 1u);
  EXPECT_EQ(run(ks, {"EXISTS", "k"}, kStartMs + 100), ":0\r\n");  // deleted on access
  EXPECT_EQ(ks.key_count(), 0u);
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(ks.next_expiry(), INT64_MAX);
  EXPECT_EQ(run(ks, {"PTTL", "k"}, kStartMs + 100), ":-2\r\n");
}

TEST(KeyspaceKeysFamily, ExpireIsRelativeToTheGivenClock) {
  Keyspace ks(0, 1);
  const std::int64_t t = kStartMs + 1000;
  run(ks, {"RPUSH", "l", "a"}, t);
  EXPECT_EQ(run(ks, {"EXPIRE", "l", "5"}, t), ":1\r\n");
  EXPECT_EQ(ks.next_expiry(), t + 5000);
  EXPECT_EQ(run(ks, {"TTL", "l"}, t), ":5\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "l"}, t + 2500), ":2500\r\n");
  EXPECT_EQ(run(ks, {"TTL", "l"}, t + 2500), ":3\r\n");  // 2.5 s rounds to 3
  EXPECT_EQ(run(ks, {"TTL", "l"}, t + 2501), ":2\r\n");
  EXPECT_EQ(run(ks, {"PEXPIRE", "l", "300"}, t + 4000), ":1\r\n");
  EXPECT_EQ(run(ks, {"PTTL", "l"}, t + 4000), ":300\r\n");
  EXPECT_EQ(run(ks, {"LLEN", "l"}, t + 4299), ":1\r\n");
  EXPECT_EQ(run(ks, {"LLEN", "l"}, t + 4300), ":0\r\n");
  EXPECT_EQ(run(ks, {"TTL", "l"}, t + 4300), ":-2\r\n");
  EXPECT_EQ(run(ks, {"EXPIRE", "l", "5"}, t + 4300), ":0\r\n");  // no such key
}

TEST(KeyspaceKeysFamily, PersistKeepsTheKeyForever) {
  Keyspace ks(0, 1);
  run(ks, {"SADD", "s", "m"});
  EXPECT_EQ(run(ks, {"PERSIST", "s"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"PERSIST", "nope"}), ":0\r\n");
  run(ks, {"PEXPIRE", "s", "50"});
  EXPECT_EQ(ks.expires_count(), 1u);
  EXPECT_EQ(run(ks, {"PERSIST", "s"}, kStartMs + 49), ":1\r\n");
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(ks.next_expiry(), INT64_MAX);
  EXPECT_EQ(run(ks, {"TTL", "s"}, kStartMs + 1'000'000), ":-1\r\n");
  EXPECT_EQ(ks.expire_due(kStartMs + 1'000'000, 10), 0u);
  EXPECT_EQ(run(ks, {"SCARD", "s"}, kStartMs + 1'000'000), ":1\r\n");
}

TEST(KeyspaceKeysFamily, ExpireDueDeletesEarliestFirst) {
  Keyspace ks(0, 1);
  run(ks, {"SET", "a", "v", "PX", "300"});
  run(ks, {"SET", "b", "v", "PX", "100"});
  run(ks, {"SET", "c", "v", "PX", "200"});
  run(ks, {"SET", "d", "v", "PX", "200"});
  run(ks, {"SET", "keep", "v"});
  EXPECT_EQ(ks.next_expiry(), kStartMs + 100);
  EXPECT_EQ(ks.expire_due(kStartMs + 1000, 0), 0u);
  EXPECT_EQ(ks.expire_due(kStartMs + 99, 10), 0u);
  EXPECT_EQ(ks.expire_due(kStartMs + 100, 10), 1u);  // exactly at its time
  EXPECT_EQ(run(ks, {"EXISTS", "a", "b", "c", "d"}), ":3\r\n");
  EXPECT_EQ(ks.next_expiry(), kStartMs + 200);
  EXPECT_EQ(ks.expire_due(kStartMs + 1000, 1), 1u);  // c before d (same time, then key)
  EXPECT_EQ(run(ks, {"EXISTS", "c"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "a", "d"}), ":2\r\n");
  EXPECT_EQ(ks.expire_due(kStartMs + 1000, 1), 1u);
  EXPECT_EQ(run(ks, {"EXISTS", "a", "d"}), ":1\r\n");
  EXPECT_EQ(ks.next_expiry(), kStartMs + 300);
  const std::uint64_t changes = ks.changes();
  EXPECT_EQ(ks.expire_due(kStartMs + 1000, 10), 1u);
  EXPECT_EQ(ks.changes(), changes + 1);
  EXPECT_EQ(ks.next_expiry(), INT64_MAX);
  EXPECT_EQ(ks.key_count(), 1u);
  EXPECT_EQ(ks.expires_count(), 0u);
}

TEST(KeyspaceKeysFamily, KeysGlobPatterns) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"KEYS", "*"}), "*0\r\n");
  run(ks, {"MSET", "user:1", "a", "user:2", "b", "user:10", "c", "order:1", "d", "*star", "e"});
  run(ks, {"RPUSH", "user:list", "x"});
  EXPECT_EQ(sorted_bulks(run(ks, {"KEYS", "*"})),
            (Strings{"*star", "order:1", "user:1", "user:10", "user:2", "user:list"}));
  EXPECT_EQ(sorted_bulks(run(ks, {"KEYS", "user:?"})), (Strings{"user:1", "user:2"}));
  EXPECT_EQ(sorted_bulks(run(ks, {"KEYS", "user:*"})),
            (Strings{"user:1", "user:10", "user:2", "user:list"}));
  EXPECT_EQ(sorted_bulks(run(ks, {"KEYS", "*:1*"})), (Strings{"order:1", "user:1", "user:10"}));
  EXPECT_EQ(sorted_bulks(run(ks, {"KEYS", "user:[12]"})), (Strings{"user:1", "user:2"}));
  EXPECT_EQ(sorted_bulks(run(ks, {"KEYS", "\\*star"})), (Strings{"*star"}));
  EXPECT_EQ(run(ks, {"KEYS", "user:3"}), "*0\r\n");
  EXPECT_EQ(run(ks, {"KEYS", "order:1"}), "*1\r\n$7\r\norder:1\r\n");
}

TEST(KeyspaceKeysFamily, ScanVisitsEveryKeyOnce) {
  Keyspace ks(0, 1);
  int calls = 0;
  EXPECT_EQ(full_scan(ks, {}, calls), Strings{});
  Strings expected;
  for (int i = 0; i < 500; ++i) {
    std::string key = "key:";
    key += std::to_string(i);
    run(ks, {"SET", key, "v"});
    expected.push_back(key);
  }
  std::sort(expected.begin(), expected.end());
  EXPECT_EQ(full_scan(ks, {"COUNT", "7"}, calls), expected);
  EXPECT_GT(calls, 1);
  EXPECT_EQ(full_scan(ks, {}, calls), expected);  // the default COUNT
  EXPECT_GT(calls, 1);
  EXPECT_EQ(full_scan(ks, {"COUNT", "100000"}, calls), expected);
  Strings matching;
  std::copy_if(expected.begin(), expected.end(), std::back_inserter(matching),
               [](const std::string& k) { return k.rfind("key:4", 0) == 0; });
  EXPECT_EQ(matching.size(), 111u);  // key:4, key:40..49, key:400..499
  EXPECT_EQ(full_scan(ks, {"MATCH", "key:4*", "COUNT", "13"}, calls), matching);
  EXPECT_EQ(full_scan(ks, {"MATCH", "nothing*"}, calls), Strings{});
}

TEST(KeyspaceKeysFamily, FlushdbAndDbsize) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":0\r\n");
  run(ks, {"SET", "a", "1", "EX", "10"});
  run(ks, {"SADD", "s", "x", "y"});
  run(ks, {"HSET", "h", "f", "v"});
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":3\r\n");
  EXPECT_EQ(run(ks, {"FLUSHDB"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":0\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(ks.next_expiry(), INT64_MAX);
  EXPECT_EQ(run(ks, {"EXISTS", "a", "s", "h"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"FLUSHDB", "BOGUS"}), "-ERR syntax error\r\n");
  run(ks, {"SET", "a", "1"});  // usable after a flush
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":1\r\n");
}

TEST(KeyspaceKeysFamily, RenameWithinTheShard) {
  std::string mine = "m";
  std::string mine2 = "n";
  std::string theirs = "t";
  for (int i = 0; shard_of(mine, 2) != 0; ++i) mine = "m" + std::to_string(i);
  for (int i = 0; shard_of(mine2, 2) != 0; ++i) mine2 = "n" + std::to_string(i);
  for (int i = 0; shard_of(theirs, 2) != 1; ++i) theirs = "t" + std::to_string(i);
  Keyspace ks(0, 2);
  run(ks, {"RPUSH", mine, "a", "b"});
  run(ks, {"SET", mine2, "old", "EX", "100"});
  EXPECT_EQ(run(ks, {"RENAME", mine, mine2}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"TYPE", mine2}), "+list\r\n");
  EXPECT_EQ(run(ks, {"LRANGE", mine2, "0", "-1"}), "*2\r\n$1\r\na\r\n$1\r\nb\r\n");
  EXPECT_EQ(run(ks, {"TTL", mine2}), ":-1\r\n");  // the source had no TTL
  EXPECT_EQ(ks.expires_count(), 0u);
  EXPECT_EQ(run(ks, {"EXISTS", mine}), ":0\r\n");
  EXPECT_EQ(run(ks, {"RENAME", mine, mine2}), "-ERR no such key\r\n");
  EXPECT_EQ(run(ks, {"RENAME", mine2, theirs}).substr(0, 10), "-CROSSSLOT");
  EXPECT_EQ(run(ks, {"EXISTS", mine2}), ":1\r\n");
  EXPECT_EQ(ks.key_count(), 1u);
}

TEST(KeyspaceKeysFamily, DebugPopulateOnOneShard) {
  Keyspace ks(0, 1);
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "0"}), "+OK\r\n");
  EXPECT_EQ(ks.key_count(), 0u);
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "100"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"DBSIZE"}), ":100\r\n");
  EXPECT_EQ(run(ks, {"GET", "key:99"}), "$8\r\nvalue:99\r\n");
  EXPECT_EQ(run(ks, {"EXISTS", "key:100"}), ":0\r\n");
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "100"}), "+OK\r\n");  // all exist already
  EXPECT_EQ(ks.key_count(), 100u);
  EXPECT_EQ(run(ks, {"debug", "populate", "5", "obj", "4"}), "+OK\r\n");
  EXPECT_EQ(run(ks, {"GET", "obj:3"}), "$4\r\nvalu\r\n");
  EXPECT_EQ(run(ks, {"STRLEN", "obj:4"}), ":4\r\n");
  EXPECT_EQ(ks.key_count(), 105u);
  EXPECT_EQ(run(ks, {"DEBUG", "POPULATE", "x"}),
            "-ERR value is not an integer or out of range\r\n");
}

TEST(KeyspaceKeysFamily, DebugPopulateKeepsOnlyTheShardsKeys) {
  Keyspace first(0, 2);
  Keyspace second(1, 2);
  EXPECT_EQ(run(first, {"DEBUG", "POPULATE", "200", "p"}), "+OK\r\n");
  EXPECT_EQ(run(second, {"DEBUG", "POPULATE", "200", "p"}), "+OK\r\n");
  EXPECT_EQ(first.key_count() + second.key_count(), 200u);
  EXPECT_GT(first.key_count(), 0u);
  EXPECT_GT(second.key_count(), 0u);
  for (int i = 0; i < 200; ++i) {
    std::string key = "p:";
    key += std::to_string(i);
    Keyspace& owner = shard_of(key, 2) == 0 ? first : second;
    std::string value = "value:";
    value += std::to_string(i);
    std::string expected = "$";
    expected += std::to_string(value.size());
    expected += "\r\n";
    expected += value;
    expected += "\r\n";
    EXPECT_EQ(run(owner, {"GET", key}), expected) << key;
  }
}

TEST(KeyspaceKeysFamily, ChangesCountWrites) {
  Keyspace ks(0, 1);
  EXPECT_EQ(ks.changes(), 0u);
  run(ks, {"SET", "a", "1"});
  EXPECT_EQ(ks.changes(), 1u);
  run(ks, {"GET", "a"});
  run(ks, {"EXISTS", "a"});
  run(ks, {"KEYS", "*"});
  run(ks, {"TTL", "a"});
  EXPECT_EQ(ks.changes(), 1u);  // reads change nothing
  run(ks, {"RPUSH", "l", "x", "y", "z"});
  EXPECT_EQ(ks.changes(), 4u);  // one per element
  run(ks, {"SADD", "s", "m", "m", "n"});
  EXPECT_EQ(ks.changes(), 6u);  // one per new member
  run(ks, {"SADD", "s", "m"});
  EXPECT_EQ(ks.changes(), 6u);
  run(ks, {"HSET", "h", "f", "1", "g", "2"});
  EXPECT_EQ(ks.changes(), 8u);
  run(ks, {"EXPIRE", "a", "10"});
  EXPECT_EQ(ks.changes(), 9u);
  run(ks, {"EXPIRE", "nope", "10"});
  run(ks, {"PERSIST", "nope"});
  EXPECT_EQ(ks.changes(), 9u);
  run(ks, {"PERSIST", "a"});
  EXPECT_EQ(ks.changes(), 10u);
  run(ks, {"DEL", "a", "l", "nope"});
  EXPECT_EQ(ks.changes(), 12u);  // one per deleted key
  run(ks, {"RENAME", "s", "s2"});
  EXPECT_EQ(ks.changes(), 13u);
  run(ks, {"FLUSHDB"});
  EXPECT_EQ(ks.changes(), 15u);  // one per flushed key (s2, h)
  run(ks, {"SET", "e", "v", "PX", "5"});
  EXPECT_EQ(ks.expire_due(kStartMs + 5, 10), 1u);
  EXPECT_EQ(ks.changes(), 17u);  // the SET and the expiration
}

// A divergence found by this test: LTRIM added 1 to changes() even when it removed nothing.
// Redis adds the number of elements removed (`server.dirty += (ltrim + rtrim)` in t_list.c).
TEST(KeyspaceKeysFamily, LtrimChangesCountRemovedElements) {
  Keyspace ks(0, 1);
  run(ks, {"RPUSH", "l", "a", "b", "c", "d", "e"});
  const std::uint64_t before = ks.changes();
  run(ks, {"LTRIM", "l", "0", "-1"});  // removes nothing
  EXPECT_EQ(ks.changes(), before);
  run(ks, {"LTRIM", "l", "1", "2"});  // removes a, d, e
  EXPECT_EQ(ks.changes(), before + 3);
}

}  // namespace
}  // namespace kv
