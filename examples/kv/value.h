// Value: what a key of a shard holds - a string, a list, a set, a hash or a sorted set - and its
// expiry time.
//
// A string lives inline in the Entry (std::string, short ones in place); the aggregates live
// behind a unique_ptr so that the common case, a string key, pays 40 bytes for the variant
// rather than the size of the largest container. Every container uses the default allocator
// (plain new), so in the kv server all of a shard's values are in that shard reactor's heap.
//
// Invariant: an aggregate is never empty - the command that removes its last element deletes the
// key, as Redis does, so "exists" and "has at least one element" are the same thing.
//
// A sorted set keeps two views of the same pairs: `scores` answers "what is the score of m" in
// O(1) and `order` keeps (score, member) sorted by score then by member bytes, which is Redis's
// order. Ranks are found by walking `order` (O(rank)); a skip list with spans would make them
// O(log n) and is the known next step if ZRANK on large sets matters.
#pragma once

#include <cstdint>
#include <deque>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <variant>

#include "key_hash.h"

namespace kv {

// The order of the alternatives is the order of Entry::value's variant.
enum class ValueType : std::uint8_t { kString, kList, kSet, kHash, kSortedSet };

using List = std::deque<std::string>;
using Set = std::unordered_set<std::string, KeyHash, KeyEqual>;
using Hash = std::unordered_map<std::string, std::string, KeyHash, KeyEqual>;

struct SortedSet {
  std::unordered_map<std::string, double, KeyHash, KeyEqual> scores;
  std::set<std::pair<double, std::string>> order;

  std::size_t size() const { return scores.size(); }
};

// No expiry: later than any time a clock can give.
inline constexpr std::int64_t kNoExpiry = std::numeric_limits<std::int64_t>::max();

struct Entry {
  std::variant<std::string, std::unique_ptr<List>, std::unique_ptr<Set>, std::unique_ptr<Hash>,
               std::unique_ptr<SortedSet>>
      value;
  std::int64_t expire_at_ms = kNoExpiry;  // ms since the Unix epoch; kNoExpiry if none

  ValueType type() const { return static_cast<ValueType>(value.index()); }
  std::string& str() { return std::get<std::string>(value); }
  List& list() { return *std::get<std::unique_ptr<List>>(value); }
  Set& set() { return *std::get<std::unique_ptr<Set>>(value); }
  Hash& hash() { return *std::get<std::unique_ptr<Hash>>(value); }
  SortedSet& zset() { return *std::get<std::unique_ptr<SortedSet>>(value); }
};

// The name TYPE replies with.
inline std::string_view type_name(ValueType type) {
  switch (type) {
    case ValueType::kString: return "string";
    case ValueType::kList: return "list";
    case ValueType::kSet: return "set";
    case ValueType::kHash: return "hash";
    case ValueType::kSortedSet: return "zset";
  }
  return "none";
}

}  // namespace kv
