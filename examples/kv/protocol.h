// The messages of reheap-kv: what a gateway (the reactor that owns client connections on a
// worker) asks a shard or the saver, and what it hears back.
//
// Every request carries the gateway's request number and every reply returns it, so a gateway
// can put the replies of many shards back into each client's command order (a client's replies
// must come out in the order its commands came in, whichever shard answers first). Replies are
// complete RESP2 replies, ready to be written: a shard formats its own answer, the gateway only
// gathers (routing.h) and writes.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <msgpack.hpp>

#include "reply.h"

namespace kv {

// A command for one shard (routing.h's split), or for the saver.
struct ShardRequest {
  static constexpr std::string_view reheap_message_name = "kv::ShardRequest";
  std::uint64_t request = 0;
  std::vector<std::string> args;
  MSGPACK_DEFINE(request, args)
};

struct ShardReply {
  static constexpr std::string_view reheap_message_name = "kv::ShardReply";
  std::uint64_t request = 0;
  std::string reply;  // one RESP2 reply
  MSGPACK_DEFINE(request, reply)
};

// The commands of one read of a gateway for one shard, and their replies, in one message each
// way: with pipelining (redis-benchmark -P 16) a message per command would cost more than the
// commands. The commands travel as RESP2 arrays back to back, as a client sends them, and the
// replies as RESP2 replies back to back with their lengths: two strings for the whole batch, not
// a msgpack string per argument. The shard answers a batch with one ShardReplies, in its order.
struct ShardBatch {
  static constexpr std::string_view reheap_message_name = "kv::ShardBatch";
  std::vector<std::uint64_t> requests;  // one per command
  std::string commands;                 // requests.size() RESP2 arrays
  MSGPACK_DEFINE(requests, commands)
};

struct ShardReplies {
  static constexpr std::string_view reheap_message_name = "kv::ShardReplies";
  std::vector<std::uint64_t> requests;  // the batch's, in its order
  std::vector<std::uint32_t> lengths;   // of each reply in `replies`
  std::string replies;
  MSGPACK_DEFINE(requests, lengths, replies)
};

// Appends `args` as one RESP2 array of bulk strings (what ShardBatch::commands holds).
inline void append_command(std::string& out, std::span<const std::string_view> args) {
  append_array_header(out, args.size());
  for (const std::string_view a : args) append_bulk(out, a);
}

// The saver asks each shard for its counters (INFO, and the `--save SECONDS CHANGES` rules).
struct StatsRequest {
  static constexpr std::string_view reheap_message_name = "kv::StatsRequest";
  std::uint64_t request = 0;
  MSGPACK_DEFINE(request)
};

struct ShardStats {
  static constexpr std::string_view reheap_message_name = "kv::ShardStats";
  std::uint64_t request = 0;
  std::uint32_t shard = 0;
  std::uint64_t keys = 0;
  std::uint64_t expires = 0;
  std::uint64_t changes = 0;       // monotonic: data-changing commands since the shard was created
  std::uint64_t heap_live = 0;     // bytes of live blocks in the shard's heap
  std::uint64_t heap_committed = 0;
  MSGPACK_DEFINE(request, shard, keys, expires, changes, heap_live, heap_committed)
};

// The saver tells a shard which save its next snapshot belongs to, just before it asks for the
// snapshot (shard_label.h): the shard writes the generation into its label, and so into the file.
struct ShardSaving {
  static constexpr std::string_view reheap_message_name = "kv::ShardSaving";
  std::uint64_t generation = 0;
  MSGPACK_DEFINE(generation)
};

}  // namespace kv
