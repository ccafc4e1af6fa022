// Keyspace: one shard's keys and values, and the execution of every command whose keys all
// belong to that shard.
//
// Data model: `table_` maps each key to its Entry (value.h); `expiry_order_` holds
// (expire time, key) for exactly the keys that have an expiry, sorted by time then key, so that
// the active expiry deletes keys in a deterministic order. The string_view in expiry_order_
// points at the key stored in the table's node, which does not move while the key exists.
//
// Time and randomness come from outside or from inside the object: execute() is given the shard's
// clock (`now_ms`) and never reads one, and SPOP / SRANDMEMBER / RANDOMKEY draw from a xorshift
// state seeded by the constructor's arguments. The same commands with the same clocks thus give
// the same replies and the same state, which is what replay needs.
//
// Ownership: everything the Keyspace owns hangs off the object through std containers that use
// the default allocator; there is no global or static mutable state. A shard reactor owns one
// Keyspace as a member, so all of it lives in that reactor's heap and is snapshotted with it.
//
// Expiry is lazy and active, as in Redis: any access to a key past its time deletes it and
// treats it as missing, and expire_due() deletes due keys in bulk. Both count as changes.
//
// The command families are implemented in one file each (keyspace_strings.cpp, _keys, _lists,
// _sets, _hashes, _sorted_sets); this header declares them all so dispatch is one switch.
#pragma once

#include <cstdint>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "command_table.h"
#include "value.h"

namespace kv {

class Keyspace {
 public:
  using Args = std::span<const std::string_view>;

  Keyspace(std::uint32_t shard, std::uint32_t shard_count);

  // Executes one command all of whose keys belong to this shard (args[0] = name, any case) and
  // appends its RESP2 reply to `out`. now_ms: the shard's clock, ms since the Unix epoch.
  // Commands of Route::kServer and unknown commands get an error reply.
  void execute(Args args, std::int64_t now_ms, std::string& out);

  std::size_t key_count() const { return table_.size(); }
  std::size_t expires_count() const { return expiry_order_.size(); }
  // Data-changing operations since construction (Redis "dirty"), monotonic. A command adds the
  // number of keys or elements it changed (at least 1 if it changed anything); expirations count.
  std::uint64_t changes() const { return changes_; }

  // Active expiry: deletes up to `budget` keys whose time is <= now_ms, earliest first, and
  // returns how many it deleted.
  std::size_t expire_due(std::int64_t now_ms, std::size_t budget);
  // The earliest expiry time, or INT64_MAX if no key has one.
  std::int64_t next_expiry() const;

  // A rough count of the bytes this keyspace holds, walking every key: O(keys), for INFO only.
  std::uint64_t used_bytes_estimate() const;

  std::uint32_t shard() const { return shard_; }
  std::uint32_t shard_count() const { return shard_count_; }

 private:
  using Table = std::unordered_map<std::string, Entry, KeyHash, KeyEqual>;

  // One command being executed.
  struct Call {
    Args args;
    std::int64_t now_ms;
    std::string& out;
  };

  // --- the table (keyspace.cpp) ---
  // The live entry of `key`, deleting it first if it expired; end() if there is none.
  Table::iterator find_live(std::string_view key, std::int64_t now_ms);
  // Like find_live, but a key of another type than `type` appends WRONGTYPE and sets `wrong`.
  Table::iterator find_typed(std::string_view key, ValueType type, const Call& call, bool& wrong);
  // Inserts `key` with an empty value of `type` (the key must not exist).
  Table::iterator insert_new(std::string_view key, ValueType type);
  void erase(Table::iterator it);
  bool erase_key(std::string_view key);  // false if there was no such key
  void set_expiry(Table::iterator it, std::int64_t expire_at_ms);  // kNoExpiry removes it
  // Deletes the key if its aggregate became empty (the non-empty invariant of value.h).
  void erase_if_empty(Table::iterator it);
  std::uint64_t next_random();
  bool is_mine(std::string_view key) const;

  // --- strings (keyspace_strings.cpp) ---
  void get(const Call& call);
  void set(const Call& call);
  void setnx(const Call& call);
  void setex(const Call& call, std::int64_t unit_ms);
  void getset(const Call& call);
  void getdel(const Call& call);
  void mget(const Call& call);
  void mset(const Call& call);
  void msetnx(const Call& call);
  void append(const Call& call);
  void strlen(const Call& call);
  void incr_by(const Call& call, std::int64_t delta);  // INCR / DECR
  void incr_by_argument(const Call& call, bool negate);  // INCRBY / DECRBY
  // Stores a string value, clearing the expiry (SET, MSET, GETSET semantics).
  void store_string(std::string_view key, std::string_view value, std::int64_t now_ms);

  // --- keys (keyspace_keys.cpp) ---
  void del(const Call& call);
  void exists(const Call& call);
  void type(const Call& call);
  void expire(const Call& call, std::int64_t unit_ms, bool absolute);
  void ttl(const Call& call, std::int64_t unit_ms);
  void persist(const Call& call);
  void keys(const Call& call);
  void scan(const Call& call);
  void flush(const Call& call);
  void randomkey(const Call& call);
  void rename(const Call& call);
  void debug(const Call& call);

  // --- lists (keyspace_lists.cpp) ---
  void push(const Call& call, bool left, bool only_existing);
  void pop(const Call& call, bool left);
  void llen(const Call& call);
  void lrange(const Call& call);
  void lindex(const Call& call);
  void lset(const Call& call);
  void lrem(const Call& call);
  void ltrim(const Call& call);

  // --- sets (keyspace_sets.cpp) ---
  void sadd(const Call& call);
  void srem(const Call& call);
  void scard(const Call& call);
  void sismember(const Call& call);
  void smembers(const Call& call);
  void spop(const Call& call);
  void srandmember(const Call& call);
  // A uniformly drawn bucket-then-member element of a non-empty set.
  Set::iterator random_member(Set& set);

  // --- hashes (keyspace_hashes.cpp) ---
  void hset(const Call& call, bool reply_ok);  // HSET / HMSET
  void hsetnx(const Call& call);
  void hget(const Call& call, bool length = false);  // HGET, HSTRLEN
  void hmget(const Call& call);
  void hdel(const Call& call);
  void hlen(const Call& call);
  void hgetall(const Call& call, bool keys, bool values);  // HGETALL / HKEYS / HVALS
  void hexists(const Call& call);
  void hincrby(const Call& call);

  // --- sorted sets (keyspace_sorted_sets.cpp) ---
  void zadd(const Call& call);
  void zincrby(const Call& call);
  void zscore(const Call& call);
  void zcard(const Call& call);
  void zrange(const Call& call);
  enum class RangeBy : std::uint8_t { kIndex, kScore, kLex };
  // ZRANGE BYSCORE and BYLEX, after zrange() has read the options.
  void zrange_by_value(const Call& call, RangeBy by, bool reverse, bool with_scores, std::int64_t offset,
                       std::int64_t count);
  void zrem(const Call& call);
  void zpop(const Call& call, bool max);
  void zrank(const Call& call);

  Table table_;
  std::set<std::pair<std::int64_t, std::string_view>> expiry_order_;
  std::uint64_t changes_ = 0;
  std::uint64_t random_state_;
  std::uint32_t shard_;
  std::uint32_t shard_count_;
};

}  // namespace kv
