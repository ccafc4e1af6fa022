// The set commands: SADD SREM SCARD SISMEMBER SMEMBERS SPOP SRANDMEMBER.
//
// Random members come from the Keyspace's own generator (never a global one), so SPOP and
// SRANDMEMBER are replayed exactly. SMEMBERS lists in the table's order, which depends only on
// the sequence of operations, so it too is the same in every run.
#include <algorithm>
#include <vector>

#include "command_args.h"
#include "keyspace.h"
#include "reply.h"

namespace kv {

using detail::parse_int64;
using detail::parse_pop_count;

void Keyspace::sadd(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kSet);
  Set& set = it->second.set();
  std::int64_t added = 0;
  for (std::size_t i = 2; i < call.args.size(); ++i) {
    if (set.emplace(call.args[i]).second) ++added;
  }
  changes_ += static_cast<std::uint64_t>(added);
  append_integer(call.out, added);
}

void Keyspace::srem(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  std::int64_t removed = 0;
  if (it != table_.end()) {
    Set& set = it->second.set();
    for (std::size_t i = 2; i < call.args.size() && !set.empty(); ++i) {
      auto member = set.find(call.args[i]);
      if (member != set.end()) {
        set.erase(member);
        ++removed;
      }
    }
    changes_ += static_cast<std::uint64_t>(removed);
    erase_if_empty(it);
  }
  append_integer(call.out, removed);
}

void Keyspace::scard(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  append_integer(call.out, it == table_.end() ? 0 : static_cast<std::int64_t>(it->second.set().size()));
}

void Keyspace::sismember(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  append_integer(call.out, it != table_.end() && it->second.set().contains(call.args[2]) ? 1 : 0);
}

void Keyspace::smembers(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_array_header(call.out, 0);
    return;
  }
  const Set& set = it->second.set();
  append_array_header(call.out, set.size());
  for (const auto& member : set) append_bulk(call.out, member);
}

Set::iterator Keyspace::random_member(Set& set) {
  // A random bucket, then a random member of it; a set left sparse by removals falls back to a
  // walk after a bounded number of empty buckets.
  constexpr int kBucketTries = 64;
  for (int attempt = 0; attempt < kBucketTries; ++attempt) {
    const std::size_t bucket = next_random() % set.bucket_count();
    const std::size_t size = set.bucket_size(bucket);
    if (size == 0) continue;
    auto local = set.begin(bucket);
    for (std::size_t skip = next_random() % size; skip > 0; --skip) ++local;
    return set.find(*local);
  }
  auto it = set.begin();
  for (std::size_t skip = next_random() % set.size(); skip > 0; --skip) ++it;
  return it;
}

void Keyspace::spop(const Call& call) {
  if (call.args.size() > 3) {
    append_error(call.out, kSyntaxError);
    return;
  }
  const bool has_count = call.args.size() == 3;
  std::int64_t count = 1;
  if (!parse_pop_count(call.args, 2, call.out, count)) return;
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    if (has_count) {
      append_array_header(call.out, 0);
    } else {
      append_null_bulk(call.out);
    }
    return;
  }
  Set& set = it->second.set();
  const std::size_t n = std::min(set.size(), static_cast<std::size_t>(count));
  if (has_count) append_array_header(call.out, n);
  for (std::size_t i = 0; i < n; ++i) {
    auto member = random_member(set);
    append_bulk(call.out, *member);
    set.erase(member);
  }
  changes_ += n;
  erase_if_empty(it);
}

void Keyspace::srandmember(const Call& call) {
  if (call.args.size() > 3) {
    append_error(call.out, kSyntaxError);
    return;
  }
  const bool has_count = call.args.size() == 3;
  std::int64_t count = 1;
  if (has_count && !parse_int64(call.args[2], count)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  if (count == INT64_MIN) {  // its negation, the number of draws, is not an int64
    append_error(call.out, "ERR value is out of range");
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kSet, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    if (has_count) {
      append_array_header(call.out, 0);
    } else {
      append_null_bulk(call.out);
    }
    return;
  }
  Set& set = it->second.set();
  if (!has_count) {
    append_bulk(call.out, *random_member(set));
    return;
  }
  if (count < 0) {
    // A negative count: that many draws, each from the whole set, so members may repeat.
    const auto draws = static_cast<std::uint64_t>(-count);
    append_array_header(call.out, draws);
    for (std::uint64_t i = 0; i < draws; ++i) append_bulk(call.out, *random_member(set));
    return;
  }
  // A positive count: distinct members, all of them if the set is that small. A partial
  // Fisher-Yates shuffle of the members' addresses picks them without repeats.
  std::vector<const std::string*> members;
  members.reserve(set.size());
  for (const auto& member : set) members.push_back(&member);
  const std::size_t n = std::min(members.size(), static_cast<std::size_t>(count));
  append_array_header(call.out, n);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t j = i + next_random() % (members.size() - i);
    std::swap(members[i], members[j]);
    append_bulk(call.out, *members[i]);
  }
}

}  // namespace kv
