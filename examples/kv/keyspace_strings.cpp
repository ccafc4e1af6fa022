// The string commands: GET SET SETNX SETEX PSETEX GETSET GETDEL MGET MSET MSETNX APPEND STRLEN
// INCR DECR INCRBY DECRBY.
//
// INCR keeps the number as its decimal text, as every reader (GET, APPEND) wants it; parsing and
// printing an int64 in place is a few dozen cycles and allocates nothing for numbers of up to 15
// digits (std::string's in-place buffer).
#include <charconv>
#include <limits>

#include "command_args.h"
#include "keyspace.h"
#include "reply.h"

namespace kv {

using detail::equals_ignoring_case;
using detail::parse_int64;

void Keyspace::store_string(std::string_view key, std::string_view value, std::int64_t now_ms) {
  auto it = find_live(key, now_ms);
  if (it == table_.end()) {
    it = insert_new(key, ValueType::kString);
  } else {
    set_expiry(it, kNoExpiry);
    if (it->second.type() != ValueType::kString) it->second.value = std::string();
  }
  it->second.str().assign(value);
  ++changes_;
}

void Keyspace::get(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kString, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_null_bulk(call.out);
  } else {
    append_bulk(call.out, it->second.str());
  }
}

namespace {

// The options of SET after the key and the value.
struct SetOptions {
  enum class Condition : std::uint8_t { kAlways, kIfMissing, kIfExists } condition = Condition::kAlways;
  bool get = false;
  bool keep_ttl = false;
  std::int64_t expire_at_ms = kNoExpiry;  // absolute; kNoExpiry if no EX/PX/EXAT/PXAT
};

// Parses SET's options; on failure appends the error and returns false.
bool parse_set_options(std::span<const std::string_view> options, std::int64_t now_ms,
                       SetOptions& parsed, std::string& out) {
  bool has_expiry = false;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const std::string_view option = options[i];
    if (equals_ignoring_case(option, "nx") && parsed.condition != SetOptions::Condition::kIfExists) {
      parsed.condition = SetOptions::Condition::kIfMissing;
    } else if (equals_ignoring_case(option, "xx") &&
               parsed.condition != SetOptions::Condition::kIfMissing) {
      parsed.condition = SetOptions::Condition::kIfExists;
    } else if (equals_ignoring_case(option, "get")) {
      parsed.get = true;
    } else if (equals_ignoring_case(option, "keepttl") && !has_expiry) {
      parsed.keep_ttl = true;
    } else if ((equals_ignoring_case(option, "ex") || equals_ignoring_case(option, "px") ||
                equals_ignoring_case(option, "exat") || equals_ignoring_case(option, "pxat")) &&
               !has_expiry && !parsed.keep_ttl && i + 1 < options.size()) {
      std::int64_t amount = 0;
      if (!parse_int64(options[++i], amount)) {
        append_error(out, kNotIntegerError);
        return false;
      }
      const bool seconds = option[0] == 'e' || option[0] == 'E';
      const bool absolute = option.size() == 4;
      constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();
      std::int64_t when = 0;
      if (amount <= 0 || (seconds && amount > kMax / 1000) ||
          __builtin_add_overflow(seconds ? amount * 1000 : amount, absolute ? 0 : now_ms, &when) ||
          when == kNoExpiry) {
        append_error(out, "ERR invalid expire time in 'set' command");
        return false;
      }
      parsed.expire_at_ms = when;
      has_expiry = true;
    } else {
      append_error(out, kSyntaxError);
      return false;
    }
  }
  return true;
}

}  // namespace

void Keyspace::set(const Call& call) {
  SetOptions options;
  if (!parse_set_options(call.args.subspan(3), call.now_ms, options, call.out)) return;
  const std::string_view key = call.args[1];
  auto it = find_live(key, call.now_ms);
  const bool exists = it != table_.end();
  if (options.get) {
    if (exists && it->second.type() != ValueType::kString) {
      append_error(call.out, kWrongTypeError);
      return;
    }
  }
  const bool blocked = (options.condition == SetOptions::Condition::kIfMissing && exists) ||
                       (options.condition == SetOptions::Condition::kIfExists && !exists);
  if (options.get) {
    if (exists) {
      append_bulk(call.out, it->second.str());
    } else {
      append_null_bulk(call.out);
    }
  } else if (blocked) {
    append_null_bulk(call.out);
  } else {
    append_ok(call.out);
  }
  if (blocked) return;

  if (!exists) {
    it = insert_new(key, ValueType::kString);
  } else if (it->second.type() != ValueType::kString) {
    it->second.value = std::string();
  }
  it->second.str().assign(call.args[2]);
  if (options.expire_at_ms != kNoExpiry) {
    set_expiry(it, options.expire_at_ms);
  } else if (!options.keep_ttl) {
    set_expiry(it, kNoExpiry);
  }
  ++changes_;
}

void Keyspace::setnx(const Call& call) {
  if (find_live(call.args[1], call.now_ms) != table_.end()) {
    append_integer(call.out, 0);
    return;
  }
  insert_new(call.args[1], ValueType::kString)->second.str().assign(call.args[2]);
  ++changes_;
  append_integer(call.out, 1);
}

void Keyspace::setex(const Call& call, std::int64_t unit_ms) {
  std::int64_t amount = 0;
  if (!parse_int64(call.args[2], amount)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  std::int64_t when = 0;
  if (amount <= 0 || amount > std::numeric_limits<std::int64_t>::max() / unit_ms ||
      __builtin_add_overflow(amount * unit_ms, call.now_ms, &when) || when == kNoExpiry) {
    call.out += unit_ms == 1 ? "-ERR invalid expire time in 'psetex' command\r\n"
                             : "-ERR invalid expire time in 'setex' command\r\n";
    return;
  }
  store_string(call.args[1], call.args[3], call.now_ms);
  set_expiry(table_.find(call.args[1]), when);
  append_ok(call.out);
}

void Keyspace::getset(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kString, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_null_bulk(call.out);
    it = insert_new(call.args[1], ValueType::kString);
  } else {
    append_bulk(call.out, it->second.str());
    set_expiry(it, kNoExpiry);
  }
  it->second.str().assign(call.args[2]);
  ++changes_;
}

void Keyspace::getdel(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kString, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_null_bulk(call.out);
    return;
  }
  append_bulk(call.out, it->second.str());
  erase(it);
  ++changes_;
}

void Keyspace::mget(const Call& call) {
  append_array_header(call.out, call.args.size() - 1);
  for (std::size_t i = 1; i < call.args.size(); ++i) {
    auto it = find_live(call.args[i], call.now_ms);
    if (it == table_.end() || it->second.type() != ValueType::kString) {
      append_null_bulk(call.out);
    } else {
      append_bulk(call.out, it->second.str());
    }
  }
}

void Keyspace::mset(const Call& call) {
  if (call.args.size() % 2 != 1) {
    append_wrong_arity(call.out, "mset");
    return;
  }
  for (std::size_t i = 1; i + 1 < call.args.size(); i += 2) {
    store_string(call.args[i], call.args[i + 1], call.now_ms);
  }
  append_ok(call.out);
}

void Keyspace::msetnx(const Call& call) {
  if (call.args.size() % 2 != 1) {
    append_wrong_arity(call.out, "msetnx");
    return;
  }
  // Atomic only within one shard: a command spanning shards is refused rather than half done.
  for (std::size_t i = 1; i < call.args.size(); i += 2) {
    if (!is_mine(call.args[i])) {
      append_error(call.out, "CROSSSLOT Keys in request don't hash to the same shard "
                             "(use a {hash tag})");
      return;
    }
  }
  for (std::size_t i = 1; i < call.args.size(); i += 2) {
    if (find_live(call.args[i], call.now_ms) != table_.end()) {
      append_integer(call.out, 0);
      return;
    }
  }
  for (std::size_t i = 1; i < call.args.size(); i += 2) {
    store_string(call.args[i], call.args[i + 1], call.now_ms);
  }
  append_integer(call.out, 1);
}

void Keyspace::append(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kString, call, wrong);
  if (wrong) return;
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kString);
  std::string& value = it->second.str();
  value.append(call.args[2]);
  ++changes_;
  append_integer(call.out, static_cast<std::int64_t>(value.size()));
}

void Keyspace::strlen(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kString, call, wrong);
  if (wrong) return;
  append_integer(call.out, it == table_.end() ? 0 : static_cast<std::int64_t>(it->second.str().size()));
}

void Keyspace::incr_by(const Call& call, std::int64_t delta) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kString, call, wrong);
  if (wrong) return;
  std::int64_t value = 0;
  if (it != table_.end() && !parse_int64(it->second.str(), value)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  if (__builtin_add_overflow(value, delta, &value)) {
    append_error(call.out, kOverflowError);
    return;
  }
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kString);
  // The expiry stays: INCR changes the value in place, as in Redis.
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  (void)ec;
  const std::string_view text(buffer, static_cast<std::size_t>(end - buffer));
  it->second.str().assign(text);
  ++changes_;
  call.out += ':';
  call.out += text;
  call.out += "\r\n";
}

void Keyspace::incr_by_argument(const Call& call, bool negate) {
  std::int64_t delta = 0;
  if (!parse_int64(call.args[2], delta)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  if (negate) {
    if (delta == std::numeric_limits<std::int64_t>::min()) {
      append_error(call.out, "ERR decrement would overflow");
      return;
    }
    delta = -delta;
  }
  incr_by(call, delta);
}

}  // namespace kv
