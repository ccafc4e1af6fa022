// The list commands: LPUSH RPUSH LPUSHX RPUSHX LPOP RPOP LLEN LRANGE LINDEX LSET LREM LTRIM.
// A list is a std::deque: O(1) at both ends and O(1) by index, which LINDEX and LRANGE use.
#include <algorithm>
#include <iterator>

#include "command_args.h"
#include "keyspace.h"
#include "reply.h"

namespace kv {

using detail::parse_int64;
using detail::parse_index_pair;
using detail::parse_pop_count;

void Keyspace::push(const Call& call, bool left, bool only_existing) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    if (only_existing) {
      append_integer(call.out, 0);
      return;
    }
    it = insert_new(call.args[1], ValueType::kList);
  }
  List& list = it->second.list();
  for (std::size_t i = 2; i < call.args.size(); ++i) {
    if (left) {
      list.emplace_front(call.args[i]);
    } else {
      list.emplace_back(call.args[i]);
    }
  }
  changes_ += call.args.size() - 2;
  append_integer(call.out, static_cast<std::int64_t>(list.size()));
}

void Keyspace::pop(const Call& call, bool left) {
  if (call.args.size() > 3) {
    append_wrong_arity(call.out, left ? "lpop" : "rpop");
    return;
  }
  const bool has_count = call.args.size() == 3;
  std::int64_t count = 1;
  if (!parse_pop_count(call.args, 2, call.out, count)) return;
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    if (has_count) {
      append_null_array(call.out);
    } else {
      append_null_bulk(call.out);
    }
    return;
  }
  List& list = it->second.list();
  const std::size_t n = std::min(list.size(), static_cast<std::size_t>(count));
  if (has_count) append_array_header(call.out, n);
  for (std::size_t i = 0; i < n; ++i) {
    if (left) {
      append_bulk(call.out, list.front());
      list.pop_front();
    } else {
      append_bulk(call.out, list.back());
      list.pop_back();
    }
  }
  changes_ += n;
  erase_if_empty(it);
}

void Keyspace::llen(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  append_integer(call.out, it == table_.end() ? 0 : static_cast<std::int64_t>(it->second.list().size()));
}

void Keyspace::lrange(const Call& call) {
  std::int64_t start = 0;
  std::int64_t stop = 0;
  if (!parse_index_pair(call.args, 2, call.out, start, stop)) return;
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  std::size_t first = 0;
  std::size_t last = 0;
  if (it == table_.end() || !detail::resolve_range(start, stop, it->second.list().size(), first, last)) {
    append_array_header(call.out, 0);
    return;
  }
  const List& list = it->second.list();
  append_array_header(call.out, last - first + 1);
  for (std::size_t i = first; i <= last; ++i) append_bulk(call.out, list[i]);
}

void Keyspace::lindex(const Call& call) {
  std::int64_t index = 0;
  if (!parse_int64(call.args[2], index)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_null_bulk(call.out);
    return;
  }
  const List& list = it->second.list();
  const auto n = static_cast<std::int64_t>(list.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) {
    append_null_bulk(call.out);
    return;
  }
  append_bulk(call.out, list[static_cast<std::size_t>(index)]);
}

void Keyspace::lset(const Call& call) {
  std::int64_t index = 0;
  if (!parse_int64(call.args[2], index)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_error(call.out, kNoSuchKeyError);
    return;
  }
  List& list = it->second.list();
  const auto n = static_cast<std::int64_t>(list.size());
  if (index < 0) index += n;
  if (index < 0 || index >= n) {
    append_error(call.out, kIndexOutOfRangeError);
    return;
  }
  list[static_cast<std::size_t>(index)].assign(call.args[3]);
  ++changes_;
  append_ok(call.out);
}

void Keyspace::lrem(const Call& call) {
  std::int64_t count = 0;
  if (!parse_int64(call.args[2], count)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_integer(call.out, 0);
    return;
  }
  List& list = it->second.list();
  const std::string_view element = call.args[3];
  // count > 0: the first `count` matches from the head; < 0: from the tail; 0: all of them.
  // Build the kept elements in order, then swap, so removal is one O(n) pass. Nothing moves
  // unless something matches: moving out of `list` and keeping it would leave it holding
  // moved-from (empty) strings.
  const std::uint64_t limit = count == 0 ? UINT64_MAX
                              : count > 0 ? static_cast<std::uint64_t>(count)
                                          : static_cast<std::uint64_t>(-(count + 1)) + 1;
  std::uint64_t removed = 0;
  if (std::find(list.begin(), list.end(), element) == list.end()) {
    append_integer(call.out, 0);
    return;
  }
  List kept;
  if (count >= 0) {
    for (auto& value : list) {
      if (removed < limit && value == element) {
        ++removed;
      } else {
        kept.push_back(std::move(value));
      }
    }
  } else {
    for (auto rit = list.rbegin(); rit != list.rend(); ++rit) {
      if (removed < limit && *rit == element) {
        ++removed;
      } else {
        kept.push_front(std::move(*rit));
      }
    }
  }
  if (removed > 0) {
    list.swap(kept);
    changes_ += removed;
  }
  append_integer(call.out, static_cast<std::int64_t>(removed));
  erase_if_empty(it);
}

void Keyspace::ltrim(const Call& call) {
  std::int64_t start = 0;
  std::int64_t stop = 0;
  if (!parse_index_pair(call.args, 2, call.out, start, stop)) return;
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kList, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_ok(call.out);
    return;
  }
  List& list = it->second.list();
  const std::size_t before = list.size();
  std::size_t first = 0;
  std::size_t last = 0;
  if (!detail::resolve_range(start, stop, list.size(), first, last)) {
    list.clear();
  } else {
    list.erase(list.begin() + static_cast<std::ptrdiff_t>(last) + 1, list.end());
    list.erase(list.begin(), list.begin() + static_cast<std::ptrdiff_t>(first));
  }
  changes_ += before - list.size();  // as Redis: the elements removed, none if none were
  append_ok(call.out);
  erase_if_empty(it);
}

}  // namespace kv
