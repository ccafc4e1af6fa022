// The command table as literal data, and the COMMAND replies built from it.
#include "command_table.h"

#include <algorithm>
#include <array>

#include "reply.h"

namespace kv {
namespace {

// Sorted by name (checked below), so find_command() can binary-search it.
constexpr std::array kCommands = {
    CommandSpec{"append", 3, Route::kKey, 1, true, CommandId::kAppend},
    CommandSpec{"bgsave", -1, Route::kServer, 1, false, CommandId::kBgsave},
    CommandSpec{"client", -2, Route::kServer, 1, false, CommandId::kClient},
    CommandSpec{"command", -1, Route::kServer, 1, false, CommandId::kCommand},
    CommandSpec{"config", -2, Route::kServer, 1, false, CommandId::kConfig},
    CommandSpec{"dbsize", 1, Route::kAllShards, 1, false, CommandId::kDbsize},
    CommandSpec{"debug", -2, Route::kAllShards, 1, true, CommandId::kDebug},
    CommandSpec{"decr", 2, Route::kKey, 1, true, CommandId::kDecr},
    CommandSpec{"decrby", 3, Route::kKey, 1, true, CommandId::kDecrby},
    CommandSpec{"del", -2, Route::kEachKey, 1, true, CommandId::kDel},
    CommandSpec{"echo", 2, Route::kServer, 1, false, CommandId::kEcho},
    CommandSpec{"exists", -2, Route::kEachKey, 1, false, CommandId::kExists},
    CommandSpec{"expire", -3, Route::kKey, 1, true, CommandId::kExpire},
    CommandSpec{"expireat", -3, Route::kKey, 1, true, CommandId::kExpireat},
    CommandSpec{"flushall", -1, Route::kAllShards, 1, true, CommandId::kFlushall},
    CommandSpec{"flushdb", -1, Route::kAllShards, 1, true, CommandId::kFlushdb},
    CommandSpec{"get", 2, Route::kKey, 1, false, CommandId::kGet},
    CommandSpec{"getdel", 2, Route::kKey, 1, true, CommandId::kGetdel},
    CommandSpec{"getset", 3, Route::kKey, 1, true, CommandId::kGetset},
    CommandSpec{"hdel", -3, Route::kKey, 1, true, CommandId::kHdel},
    CommandSpec{"hello", -1, Route::kServer, 1, false, CommandId::kHello},
    CommandSpec{"hexists", 3, Route::kKey, 1, false, CommandId::kHexists},
    CommandSpec{"hget", 3, Route::kKey, 1, false, CommandId::kHget},
    CommandSpec{"hgetall", 2, Route::kKey, 1, false, CommandId::kHgetall},
    CommandSpec{"hincrby", 4, Route::kKey, 1, true, CommandId::kHincrby},
    CommandSpec{"hkeys", 2, Route::kKey, 1, false, CommandId::kHkeys},
    CommandSpec{"hlen", 2, Route::kKey, 1, false, CommandId::kHlen},
    CommandSpec{"hmget", -3, Route::kKey, 1, false, CommandId::kHmget},
    CommandSpec{"hmset", -4, Route::kKey, 1, true, CommandId::kHmset},
    CommandSpec{"hset", -4, Route::kKey, 1, true, CommandId::kHset},
    CommandSpec{"hsetnx", 4, Route::kKey, 1, true, CommandId::kHsetnx},
    CommandSpec{"hstrlen", 3, Route::kKey, 1, false, CommandId::kHstrlen},
    CommandSpec{"hvals", 2, Route::kKey, 1, false, CommandId::kHvals},
    CommandSpec{"incr", 2, Route::kKey, 1, true, CommandId::kIncr},
    CommandSpec{"incrby", 3, Route::kKey, 1, true, CommandId::kIncrby},
    CommandSpec{"info", -1, Route::kServer, 1, false, CommandId::kInfo},
    CommandSpec{"keys", 2, Route::kAllShards, 1, false, CommandId::kKeys},
    CommandSpec{"lastsave", 1, Route::kServer, 1, false, CommandId::kLastsave},
    CommandSpec{"lindex", 3, Route::kKey, 1, false, CommandId::kLindex},
    CommandSpec{"llen", 2, Route::kKey, 1, false, CommandId::kLlen},
    CommandSpec{"lpop", -2, Route::kKey, 1, true, CommandId::kLpop},
    CommandSpec{"lpush", -3, Route::kKey, 1, true, CommandId::kLpush},
    CommandSpec{"lpushx", -3, Route::kKey, 1, true, CommandId::kLpushx},
    CommandSpec{"lrange", 4, Route::kKey, 1, false, CommandId::kLrange},
    CommandSpec{"lrem", 4, Route::kKey, 1, true, CommandId::kLrem},
    CommandSpec{"lset", 4, Route::kKey, 1, true, CommandId::kLset},
    CommandSpec{"ltrim", 4, Route::kKey, 1, true, CommandId::kLtrim},
    CommandSpec{"mget", -2, Route::kEachKey, 1, false, CommandId::kMget},
    CommandSpec{"mset", -3, Route::kEachKey, 2, true, CommandId::kMset},
    CommandSpec{"msetnx", -3, Route::kKey, 1, true, CommandId::kMsetnx},
    CommandSpec{"persist", 2, Route::kKey, 1, true, CommandId::kPersist},
    CommandSpec{"pexpire", -3, Route::kKey, 1, true, CommandId::kPexpire},
    CommandSpec{"pexpireat", -3, Route::kKey, 1, true, CommandId::kPexpireat},
    CommandSpec{"ping", -1, Route::kServer, 1, false, CommandId::kPing},
    CommandSpec{"psetex", 4, Route::kKey, 1, true, CommandId::kPsetex},
    CommandSpec{"pttl", 2, Route::kKey, 1, false, CommandId::kPttl},
    CommandSpec{"quit", -1, Route::kServer, 1, false, CommandId::kQuit},
    CommandSpec{"randomkey", 1, Route::kAllShards, 1, false, CommandId::kRandomkey},
    CommandSpec{"rename", 3, Route::kKey, 1, true, CommandId::kRename},
    CommandSpec{"rpop", -2, Route::kKey, 1, true, CommandId::kRpop},
    CommandSpec{"rpush", -3, Route::kKey, 1, true, CommandId::kRpush},
    CommandSpec{"rpushx", -3, Route::kKey, 1, true, CommandId::kRpushx},
    CommandSpec{"sadd", -3, Route::kKey, 1, true, CommandId::kSadd},
    CommandSpec{"save", 1, Route::kServer, 1, false, CommandId::kSave},
    CommandSpec{"scan", -2, Route::kAllShards, 1, false, CommandId::kScan},
    CommandSpec{"scard", 2, Route::kKey, 1, false, CommandId::kScard},
    CommandSpec{"select", 2, Route::kServer, 1, false, CommandId::kSelect},
    CommandSpec{"set", -3, Route::kKey, 1, true, CommandId::kSet},
    CommandSpec{"setex", 4, Route::kKey, 1, true, CommandId::kSetex},
    CommandSpec{"setnx", 3, Route::kKey, 1, true, CommandId::kSetnx},
    CommandSpec{"sismember", 3, Route::kKey, 1, false, CommandId::kSismember},
    CommandSpec{"smembers", 2, Route::kKey, 1, false, CommandId::kSmembers},
    CommandSpec{"spop", -2, Route::kKey, 1, true, CommandId::kSpop},
    CommandSpec{"srandmember", -2, Route::kKey, 1, false, CommandId::kSrandmember},
    CommandSpec{"srem", -3, Route::kKey, 1, true, CommandId::kSrem},
    CommandSpec{"strlen", 2, Route::kKey, 1, false, CommandId::kStrlen},
    CommandSpec{"touch", -2, Route::kEachKey, 1, false, CommandId::kTouch},
    CommandSpec{"ttl", 2, Route::kKey, 1, false, CommandId::kTtl},
    CommandSpec{"type", 2, Route::kKey, 1, false, CommandId::kType},
    CommandSpec{"unlink", -2, Route::kEachKey, 1, true, CommandId::kUnlink},
    CommandSpec{"zadd", -4, Route::kKey, 1, true, CommandId::kZadd},
    CommandSpec{"zcard", 2, Route::kKey, 1, false, CommandId::kZcard},
    CommandSpec{"zincrby", 4, Route::kKey, 1, true, CommandId::kZincrby},
    CommandSpec{"zpopmax", -2, Route::kKey, 1, true, CommandId::kZpopmax},
    CommandSpec{"zpopmin", -2, Route::kKey, 1, true, CommandId::kZpopmin},
    CommandSpec{"zrange", -4, Route::kKey, 1, false, CommandId::kZrange},
    CommandSpec{"zrank", -3, Route::kKey, 1, false, CommandId::kZrank},
    CommandSpec{"zrem", -3, Route::kKey, 1, true, CommandId::kZrem},
    CommandSpec{"zscore", 3, Route::kKey, 1, false, CommandId::kZscore},
};

constexpr bool sorted_by_name() {
  for (std::size_t i = 1; i < kCommands.size(); ++i) {
    if (!(kCommands[i - 1].name < kCommands[i].name)) return false;
  }
  return true;
}
static_assert(sorted_by_name(), "find_command() binary-searches kCommands by name");

// Longer than any command name: a longer name cannot be a command, so no buffer is needed for it.
constexpr std::size_t kMaxNameLength = 16;
static_assert(std::all_of(kCommands.begin(), kCommands.end(),
                          [](const CommandSpec& c) { return c.name.size() <= kMaxNameLength; }));

// The key positions COMMAND reports (first key, last key, step), in the Redis convention:
// a negative last key counts from the end of the argument list.
struct KeyPositions {
  int first;
  int last;
  int step;
};

KeyPositions key_positions(const CommandSpec& spec) {
  switch (spec.route) {
    case Route::kServer:
    case Route::kAllShards:
      return {0, 0, 0};
    case Route::kEachKey:
      return {1, -1, spec.key_step};
    case Route::kKey:
      break;
  }
  if (spec.id == CommandId::kRename) return {1, 2, 1};
  if (spec.id == CommandId::kMsetnx) return {1, -1, 2};
  return {1, 1, 1};
}

void append_info_entry(const CommandSpec& spec, std::string& out) {
  append_array_header(out, 10);
  append_bulk(out, spec.name);
  append_integer(out, spec.arity);
  append_array_header(out, 1);
  if (spec.route == Route::kServer) {
    append_simple(out, "fast");
  } else {
    append_simple(out, spec.write ? "write" : "readonly");
  }
  const KeyPositions keys = key_positions(spec);
  append_integer(out, keys.first);
  append_integer(out, keys.last);
  append_integer(out, keys.step);
  for (int i = 0; i < 4; ++i) append_array_header(out, 0);  // ACL categories, tips, key specs, subcommands
}

bool equals_ignoring_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    char x = a[i];
    char y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

}  // namespace

const CommandSpec* find_command(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return nullptr;
  char lower[kMaxNameLength];
  for (std::size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    lower[i] = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  const std::string_view key(lower, name.size());
  const auto it = std::lower_bound(kCommands.begin(), kCommands.end(), key,
                                   [](const CommandSpec& c, std::string_view k) { return c.name < k; });
  if (it == kCommands.end() || it->name != key) return nullptr;
  return &*it;
}

std::span<const CommandSpec> all_commands() { return kCommands; }

bool arity_ok(const CommandSpec& spec, std::size_t argc) {
  if (spec.arity >= 0) return argc == static_cast<std::size_t>(spec.arity);
  return argc >= static_cast<std::size_t>(-spec.arity);
}

void append_command_reply(std::string& out) {
  append_array_header(out, kCommands.size());
  for (const CommandSpec& spec : kCommands) append_info_entry(spec, out);
}

void append_command_count_reply(std::string& out) {
  append_integer(out, static_cast<std::int64_t>(kCommands.size()));
}

void append_command_docs_reply(std::string& out) { append_array_header(out, 0); }

void append_command_info_reply(std::span<const std::string_view> names, std::string& out) {
  append_array_header(out, names.size());
  for (std::string_view name : names) {
    const CommandSpec* spec = find_command(name);
    if (spec == nullptr) {
      append_null_array(out);
    } else {
      append_info_entry(*spec, out);
    }
  }
}

void append_command_subcommand_reply(std::span<const std::string_view> args, std::string& out) {
  if (args.size() <= 1) {
    append_command_reply(out);
    return;
  }
  const std::string_view sub = args[1];
  if (equals_ignoring_case(sub, "count") && args.size() == 2) {
    append_command_count_reply(out);
  } else if (equals_ignoring_case(sub, "docs")) {
    append_command_docs_reply(out);
  } else if (equals_ignoring_case(sub, "info")) {
    append_command_info_reply(args.subspan(2), out);
  } else {
    out += "-ERR unknown subcommand or wrong number of arguments for '";
    out += sub;
    out += "'. Try COMMAND HELP.\r\n";
  }
}

}  // namespace kv
