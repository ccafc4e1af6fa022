// The commands on keys rather than values: DEL UNLINK EXISTS TOUCH TYPE EXPIRE PEXPIRE EXPIREAT
// PEXPIREAT TTL PTTL PERSIST KEYS SCAN FLUSHDB FLUSHALL RANDOMKEY RENAME DEBUG.
//
// SCAN's cursor, within one shard, is the index of the next bucket of the table to visit. A key
// present from the first call to the last is returned exactly once as long as the table is not
// rehashed in between; a rehash (the table grows by a factor, to a prime bucket count) may make a
// scan miss or repeat keys. The shard-level encoding of the client's cursor is routing's.
#include <charconv>
#include <limits>

#include "command_args.h"
#include "glob.h"
#include "keyspace.h"
#include "reply.h"

namespace kv {

using detail::equals_ignoring_case;
using detail::parse_int64;

void Keyspace::del(const Call& call) {
  std::int64_t deleted = 0;
  for (std::size_t i = 1; i < call.args.size(); ++i) {
    auto it = find_live(call.args[i], call.now_ms);
    if (it != table_.end()) {
      erase(it);
      ++deleted;
    }
  }
  changes_ += static_cast<std::uint64_t>(deleted);
  append_integer(call.out, deleted);
}

void Keyspace::exists(const Call& call) {
  // EXISTS counts a key once per time it is named, as Redis does; TOUCH has the same reply.
  std::int64_t found = 0;
  for (std::size_t i = 1; i < call.args.size(); ++i) {
    if (find_live(call.args[i], call.now_ms) != table_.end()) ++found;
  }
  append_integer(call.out, found);
}

void Keyspace::type(const Call& call) {
  auto it = find_live(call.args[1], call.now_ms);
  append_simple(call.out, it == table_.end() ? "none" : type_name(it->second.type()));
}

void Keyspace::expire(const Call& call, std::int64_t unit_ms, bool absolute) {
  std::int64_t amount = 0;
  if (!parse_int64(call.args[2], amount)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  bool nx = false, xx = false, gt = false, lt = false;
  for (std::size_t i = 3; i < call.args.size(); ++i) {
    const std::string_view option = call.args[i];
    if (equals_ignoring_case(option, "nx")) {
      nx = true;
    } else if (equals_ignoring_case(option, "xx")) {
      xx = true;
    } else if (equals_ignoring_case(option, "gt")) {
      gt = true;
    } else if (equals_ignoring_case(option, "lt")) {
      lt = true;
    } else {
      call.out += "-ERR Unsupported option ";
      call.out += option;
      call.out += "\r\n";
      return;
    }
  }
  if (nx && (xx || gt || lt)) {
    append_error(call.out, "ERR NX and XX, GT or LT options at the same time are not compatible");
    return;
  }
  if (gt && lt) {
    append_error(call.out, "ERR GT and LT options at the same time are not compatible");
    return;
  }
  std::int64_t when = 0;
  constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
  constexpr std::int64_t kMin = std::numeric_limits<std::int64_t>::min();
  if ((unit_ms > 1 && (amount > kMax / unit_ms || amount < kMin / unit_ms)) ||
      __builtin_add_overflow(amount * unit_ms, absolute ? 0 : call.now_ms, &when) ||
      when == kNoExpiry) {
    call.out += "-ERR invalid expire time in '";
    call.out += call.args[0];
    call.out += "' command\r\n";
    return;
  }
  auto it = find_live(call.args[1], call.now_ms);
  if (it == table_.end()) {
    append_integer(call.out, 0);
    return;
  }
  const std::int64_t current = it->second.expire_at_ms;  // kNoExpiry counts as infinite
  if ((nx && current != kNoExpiry) || (xx && current == kNoExpiry) || (gt && when <= current) ||
      (lt && when >= current)) {
    append_integer(call.out, 0);
    return;
  }
  if (when <= call.now_ms) {
    erase(it);  // a time already past deletes the key, as Redis does
  } else {
    set_expiry(it, when);
  }
  ++changes_;
  append_integer(call.out, 1);
}

void Keyspace::ttl(const Call& call, std::int64_t unit_ms) {
  auto it = find_live(call.args[1], call.now_ms);
  if (it == table_.end()) {
    append_integer(call.out, -2);
  } else if (it->second.expire_at_ms == kNoExpiry) {
    append_integer(call.out, -1);
  } else {
    const std::int64_t remaining = it->second.expire_at_ms - call.now_ms;
    // TTL rounds to the nearest second, as Redis does.
    append_integer(call.out, unit_ms == 1 ? remaining : (remaining + 500) / 1000);
  }
}

void Keyspace::persist(const Call& call) {
  auto it = find_live(call.args[1], call.now_ms);
  if (it == table_.end() || it->second.expire_at_ms == kNoExpiry) {
    append_integer(call.out, 0);
    return;
  }
  set_expiry(it, kNoExpiry);
  ++changes_;
  append_integer(call.out, 1);
}

void Keyspace::keys(const Call& call) {
  const std::string_view pattern = call.args[1];
  const bool everything = pattern == "*";
  std::size_t count = 0;
  std::string body;
  for (const auto& [key, entry] : table_) {
    if (entry.expire_at_ms <= call.now_ms) continue;  // expired: not listed, deleted later
    if (everything || glob_match(pattern, key)) {
      append_bulk(body, key);
      ++count;
    }
  }
  append_array_header(call.out, count);
  call.out += body;
}

void Keyspace::scan(const Call& call) {
  std::uint64_t cursor = 0;
  const std::string_view cursor_text = call.args[1];
  const auto [end, ec] =
      std::from_chars(cursor_text.data(), cursor_text.data() + cursor_text.size(), cursor);
  if (ec != std::errc() || end != cursor_text.data() + cursor_text.size()) {
    append_error(call.out, "ERR invalid cursor");
    return;
  }
  std::string_view pattern;
  bool has_pattern = false;
  std::int64_t count = 10;
  std::string_view type_filter;
  for (std::size_t i = 2; i < call.args.size(); i += 2) {
    if (i + 1 >= call.args.size()) {
      append_error(call.out, kSyntaxError);
      return;
    }
    const std::string_view option = call.args[i];
    if (equals_ignoring_case(option, "match")) {
      pattern = call.args[i + 1];
      has_pattern = pattern != "*";
    } else if (equals_ignoring_case(option, "count")) {
      if (!parse_int64(call.args[i + 1], count)) {
        append_error(call.out, kNotIntegerError);
        return;
      }
      if (count < 1) {
        append_error(call.out, kSyntaxError);
        return;
      }
    } else if (equals_ignoring_case(option, "type")) {
      type_filter = call.args[i + 1];
    } else {
      append_error(call.out, kSyntaxError);
      return;
    }
  }

  const std::size_t buckets = table_.bucket_count();
  std::size_t bucket = cursor < buckets ? static_cast<std::size_t>(cursor) : buckets;
  std::size_t visited = 0;
  std::size_t returned = 0;
  std::string body;
  // Whole buckets at a time, so that the cursor (a bucket index) never splits one.
  while (bucket < buckets && visited < static_cast<std::size_t>(count)) {
    for (auto it = table_.cbegin(bucket); it != table_.cend(bucket); ++it) {
      ++visited;
      const Entry& entry = it->second;
      if (entry.expire_at_ms <= call.now_ms) continue;
      if (has_pattern && !glob_match(pattern, it->first)) continue;
      if (!type_filter.empty() && !equals_ignoring_case(type_filter, type_name(entry.type()))) {
        continue;
      }
      append_bulk(body, it->first);
      ++returned;
    }
    ++bucket;
  }
  const std::uint64_t next = bucket >= buckets ? 0 : bucket;
  char buffer[24];
  const auto [next_end, next_ec] = std::to_chars(buffer, buffer + sizeof(buffer), next);
  (void)next_ec;
  append_array_header(call.out, 2);
  append_bulk(call.out, std::string_view(buffer, static_cast<std::size_t>(next_end - buffer)));
  append_array_header(call.out, returned);
  call.out += body;
}

void Keyspace::flush(const Call& call) {
  if (call.args.size() > 2 ||
      (call.args.size() == 2 && !equals_ignoring_case(call.args[1], "async") &&
       !equals_ignoring_case(call.args[1], "sync"))) {
    append_error(call.out, kSyntaxError);
    return;
  }
  changes_ += table_.size();
  // Swapping with a fresh table also gives the bucket array back, which clear() would keep.
  expiry_order_.clear();
  Table().swap(table_);
  append_ok(call.out);
}

void Keyspace::randomkey(const Call& call) {
  // Draw a bucket, then a key in it. A sparse table (after many deletions) can make empty buckets
  // common, so after a bounded number of misses fall back to a walk from begin().
  constexpr int kBucketTries = 64;
  while (!table_.empty()) {
    Table::iterator chosen = table_.end();
    for (int attempt = 0; attempt < kBucketTries && chosen == table_.end(); ++attempt) {
      const std::size_t bucket = next_random() % table_.bucket_count();
      const std::size_t size = table_.bucket_size(bucket);
      if (size == 0) continue;
      auto local = table_.begin(bucket);
      for (std::size_t skip = next_random() % size; skip > 0; --skip) ++local;
      chosen = table_.find(local->first);
    }
    if (chosen == table_.end()) {
      chosen = table_.begin();
      for (std::size_t skip = next_random() % table_.size(); skip > 0; --skip) ++chosen;
    }
    if (chosen->second.expire_at_ms > call.now_ms) {
      append_bulk(call.out, chosen->first);
      return;
    }
    erase(chosen);
    ++changes_;
  }
  append_null_bulk(call.out);
}

void Keyspace::rename(const Call& call) {
  const std::string_view from = call.args[1];
  const std::string_view to = call.args[2];
  auto source = find_live(from, call.now_ms);
  if (source == table_.end()) {
    append_error(call.out, kNoSuchKeyError);
    return;
  }
  if (!is_mine(to)) {
    append_error(call.out, "CROSSSLOT Keys in request don't hash to the same shard "
                           "(use a {hash tag})");
    return;
  }
  if (from == to) {
    append_ok(call.out);
    return;
  }
  Entry moved = std::move(source->second);
  const std::int64_t expire_at_ms = moved.expire_at_ms;
  moved.expire_at_ms = kNoExpiry;
  source->second.expire_at_ms = expire_at_ms;  // so erase() finds its expiry_order_ entry
  erase(source);
  erase_key(to);
  auto target = table_.emplace(std::string(to), std::move(moved)).first;
  set_expiry(target, expire_at_ms);
  ++changes_;
  append_ok(call.out);
}

void Keyspace::debug(const Call& call) {
  if (!equals_ignoring_case(call.args[1], "populate")) {
    append_error(call.out, "ERR DEBUG subcommand not supported by this server");
    return;
  }
  if (call.args.size() < 3 || call.args.size() > 5) {
    append_wrong_arity(call.out, "debug|populate");
    return;
  }
  std::int64_t count = 0;
  if (!parse_int64(call.args[2], count)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  if (count < 0) {
    append_error(call.out, "ERR value is out of range, must be positive");
    return;
  }
  const std::string_view prefix = call.args.size() >= 4 ? call.args[3] : "key";
  std::int64_t size = 0;
  if (call.args.size() == 5 && (!parse_int64(call.args[4], size) || size < 0)) {
    append_error(call.out, "ERR value is out of range, must be positive");
    return;
  }
  std::string key(prefix);
  key += ':';
  const std::size_t key_stem = key.size();
  std::string value = "value:";
  const std::size_t value_stem = value.size();
  char digits[24];
  for (std::int64_t i = 0; i < count; ++i) {
    const auto [end, ec] = std::to_chars(digits, digits + sizeof(digits), i);
    (void)ec;
    const std::string_view number(digits, static_cast<std::size_t>(end - digits));
    key.resize(key_stem);
    key += number;
    if (!is_mine(key) || find_live(key, call.now_ms) != table_.end()) continue;
    value.resize(value_stem);
    value += number;
    // With a size, the value is "value:i" cut or padded with zero bytes to exactly that size.
    if (size > 0) value.resize(static_cast<std::size_t>(size), '\0');
    insert_new(key, ValueType::kString)->second.str() = value;
    ++changes_;
  }
  append_ok(call.out);
}

}  // namespace kv
