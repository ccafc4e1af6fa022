// The hash commands: HSET HMSET HSETNX HGET HMGET HDEL HLEN HGETALL HKEYS HVALS HEXISTS HINCRBY.
#include <charconv>

#include "command_args.h"
#include "keyspace.h"
#include "reply.h"

namespace kv {

using detail::parse_int64;

void Keyspace::hset(const Call& call, bool reply_ok) {
  if (call.args.size() % 2 != 0) {
    append_wrong_arity(call.out, reply_ok ? "hmset" : "hset");
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kHash);
  Hash& hash = it->second.hash();
  std::int64_t added = 0;
  for (std::size_t i = 2; i + 1 < call.args.size(); i += 2) {
    auto [field, inserted] = hash.try_emplace(std::string(call.args[i]));
    field->second.assign(call.args[i + 1]);
    if (inserted) ++added;
  }
  changes_ += (call.args.size() - 2) / 2;
  if (reply_ok) {
    append_ok(call.out);
  } else {
    append_integer(call.out, added);
  }
}

void Keyspace::hsetnx(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kHash);
  Hash& hash = it->second.hash();
  if (hash.contains(call.args[2])) {
    append_integer(call.out, 0);
    return;
  }
  hash.emplace(std::string(call.args[2]), std::string(call.args[3]));
  ++changes_;
  append_integer(call.out, 1);
}

void Keyspace::hget(const Call& call, bool length) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  if (it != table_.end()) {
    const Hash& hash = it->second.hash();
    auto field = hash.find(call.args[2]);
    if (field != hash.end()) {
      if (length) {
        append_integer(call.out, static_cast<std::int64_t>(field->second.size()));
      } else {
        append_bulk(call.out, field->second);
      }
      return;
    }
  }
  if (length) {
    append_integer(call.out, 0);
  } else {
    append_null_bulk(call.out);
  }
}

void Keyspace::hmget(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  append_array_header(call.out, call.args.size() - 2);
  for (std::size_t i = 2; i < call.args.size(); ++i) {
    if (it != table_.end()) {
      const Hash& hash = it->second.hash();
      auto field = hash.find(call.args[i]);
      if (field != hash.end()) {
        append_bulk(call.out, field->second);
        continue;
      }
    }
    append_null_bulk(call.out);
  }
}

void Keyspace::hdel(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  std::int64_t removed = 0;
  if (it != table_.end()) {
    Hash& hash = it->second.hash();
    for (std::size_t i = 2; i < call.args.size(); ++i) {
      auto field = hash.find(call.args[i]);
      if (field != hash.end()) {
        hash.erase(field);
        ++removed;
      }
    }
    changes_ += static_cast<std::uint64_t>(removed);
    erase_if_empty(it);
  }
  append_integer(call.out, removed);
}

void Keyspace::hlen(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  append_integer(call.out, it == table_.end() ? 0 : static_cast<std::int64_t>(it->second.hash().size()));
}

void Keyspace::hgetall(const Call& call, bool keys, bool values) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  if (it == table_.end()) {
    append_array_header(call.out, 0);
    return;
  }
  const Hash& hash = it->second.hash();
  append_array_header(call.out, hash.size() * ((keys ? 1 : 0) + (values ? 1 : 0)));
  for (const auto& [field, value] : hash) {
    if (keys) append_bulk(call.out, field);
    if (values) append_bulk(call.out, value);
  }
}

void Keyspace::hexists(const Call& call) {
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  append_integer(call.out, it != table_.end() && it->second.hash().contains(call.args[2]) ? 1 : 0);
}

void Keyspace::hincrby(const Call& call) {
  std::int64_t delta = 0;
  if (!parse_int64(call.args[3], delta)) {
    append_error(call.out, kNotIntegerError);
    return;
  }
  bool wrong = false;
  auto it = find_typed(call.args[1], ValueType::kHash, call, wrong);
  if (wrong) return;
  std::int64_t value = 0;
  if (it != table_.end()) {
    const Hash& hash = it->second.hash();
    auto field = hash.find(call.args[2]);
    if (field != hash.end() && !parse_int64(field->second, value)) {
      append_error(call.out, "ERR hash value is not an integer");
      return;
    }
  }
  if (__builtin_add_overflow(value, delta, &value)) {
    append_error(call.out, kOverflowError);
    return;
  }
  if (it == table_.end()) it = insert_new(call.args[1], ValueType::kHash);
  char buffer[24];
  const auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  (void)ec;
  it->second.hash()[std::string(call.args[2])].assign(buffer, static_cast<std::size_t>(end - buffer));
  ++changes_;
  append_integer(call.out, value);
}

}  // namespace kv
