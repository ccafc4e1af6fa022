// Routing: how a client's command becomes commands for the shards, and how the shards' replies
// become the client's reply. Pure functions of their arguments: the connection side calls split(),
// sends each part to its shard's Keyspace::execute(), and calls gather() with the replies.
//
//   kKey       one part, to shard_of(args[1]); its reply is the client's reply.
//   kEachKey   one part per shard holding any of the keys (DEL UNLINK EXISTS TOUCH MGET: every
//              argument is a key; MSET: key value pairs), keys in their original relative order;
//              `positions` says where each of the part's keys stands among the client's keys.
//   kAllShards one part per shard, with the client's arguments - except SCAN, which goes to one
//              shard chosen by its cursor.
//   kServer    no part: the connection side answers these itself.
//
// SCAN cursor encoding: the client's cursor C means (shard C % shard_count, that shard's own
// cursor C / shard_count). Cursor 0 is shard 0's start. When a shard says its scan ended (its
// cursor 0), the client gets the start of the next shard - which is just its index - or 0 after
// the last shard, so a client that scans until 0 visits every shard once. The same cursor must be
// used with the same shard_count.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "command_table.h"
#include "key_hash.h"

namespace kv {

struct ShardCommand {
  std::uint32_t shard = 0;
  std::vector<std::string> args;
  // kEachKey only: for each key of this part, its index (0-based) among the client's keys.
  std::vector<std::uint32_t> positions;
  // The shard count split() was given; gather() needs it to re-encode a SCAN cursor.
  std::uint32_t shard_count = 1;
};

// The commands the client's command becomes, one per shard involved, in ascending shard order.
// The caller has checked the arity (arity_ok). A kEachKey command whose arguments do not come in
// whole groups (MSET k v k) goes unsplit to the shard of its first key, which replies the
// wrong-arity error.
std::vector<ShardCommand> split(const CommandSpec& spec, std::span<const std::string_view> args,
                                std::uint32_t shard_count);

// The client's reply, from replies[i] answering parts[i] (each one complete RESP2 reply).
// DEL UNLINK EXISTS TOUCH DBSIZE: the integers summed. MSET FLUSHDB FLUSHALL DEBUG: +OK.
// MGET: the values in the client's key order. KEYS: the arrays concatenated in shard order.
// SCAN: the shard's reply with its cursor re-encoded (see above). RANDOMKEY: one of the shards'
// keys, chosen from the replies' bytes (deterministic). Any error reply: the first error, in
// part order.
void gather(const CommandSpec& spec, std::span<const std::string_view> args,
            std::span<const ShardCommand> parts, std::span<const std::string> replies,
            std::string& out);

}  // namespace kv
