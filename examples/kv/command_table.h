// Command table: every command the kv server knows, with what the connection side needs to route
// it before any shard sees it - its arity, where its keys are (the Route), and whether it writes.
//
// The table is literal data sorted by name; find_command() looks a name up in any letter case
// without allocating. A CommandSpec carries a CommandId so that the Keyspace dispatches with a
// switch: no function pointer is ever stored in a shard's heap.
//
// Routes: kServer commands are answered by the connection side; kKey commands go whole to the
// shard of args[1]; kEachKey commands are split per shard by the routing (routing.h) and their
// replies combined; kAllShards commands go to every shard (SCAN to one, chosen by its cursor).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace kv {

enum class Route : std::uint8_t {
  kServer,     // answered by the connection side, never by a shard
  kKey,        // one key at args[1]: the whole command goes to that key's shard
  kEachKey,    // several keys: split per shard, replies combined
  kAllShards,  // every shard (SCAN: one shard, chosen by the cursor)
};

enum class CommandId : std::uint8_t {
  // server (connection side)
  kBgsave, kClient, kCommand, kConfig, kEcho, kHello, kInfo, kLastsave, kPing, kQuit, kSave,
  kSelect,
  // strings
  kAppend, kDecr, kDecrby, kGet, kGetdel, kGetset, kIncr, kIncrby, kMget, kMset, kMsetnx, kPsetex,
  kSet, kSetex, kSetnx, kStrlen,
  // keys
  kDbsize, kDebug, kDel, kExists, kExpire, kExpireat, kFlushall, kFlushdb, kKeys, kPersist,
  kPexpire, kPexpireat, kPttl, kRandomkey, kRename, kScan, kTouch, kTtl, kType, kUnlink,
  // lists
  kLindex, kLlen, kLpop, kLpush, kLpushx, kLrange, kLrem, kLset, kLtrim, kRpop, kRpush, kRpushx,
  // sets
  kSadd, kScard, kSismember, kSmembers, kSpop, kSrandmember, kSrem,
  // hashes
  kHdel, kHexists, kHget, kHgetall, kHincrby, kHkeys, kHlen, kHmget, kHmset, kHset, kHsetnx, kHstrlen,
  kHvals,
  // sorted sets
  kZadd, kZcard, kZincrby, kZpopmax, kZpopmin, kZrange, kZrank, kZrem, kZscore,
};

struct CommandSpec {
  std::string_view name;  // lower case
  int arity;              // Redis convention: N exact (command name included), -N at least N
  Route route;
  int key_step;           // kEachKey: 1 (DEL k1 k2) or 2 (MSET k v k v); otherwise 1
  bool write;             // changes data (counts toward `--save SECONDS CHANGES`)
  CommandId id;
};

// The command named `name` in any letter case, or nullptr if there is none. Never allocates.
const CommandSpec* find_command(std::string_view name);

// Every command, sorted by name.
std::span<const CommandSpec> all_commands();

// False -> the caller replies "-ERR wrong number of arguments for '<name>' command"
// (append_wrong_arity in reply.h).
bool arity_ok(const CommandSpec& spec, std::size_t argc);

// The reply to COMMAND: one Redis 7 style info entry per command (name, arity, flags, first key,
// last key, step, and empty ACL categories, tips, key specs and subcommands).
void append_command_reply(std::string& out);
// COMMAND COUNT.
void append_command_count_reply(std::string& out);
// COMMAND DOCS [name...]: an empty array, which clients read as "no docs".
void append_command_docs_reply(std::string& out);
// COMMAND INFO name...: one entry per name, a null for an unknown name.
void append_command_info_reply(std::span<const std::string_view> names, std::string& out);
// COMMAND with any arguments: dispatches to the helpers above (args[0] is "command").
void append_command_subcommand_reply(std::span<const std::string_view> args, std::string& out);

}  // namespace kv
