// Shard (see shard.h).
#include "shard.h"

#include <cstddef>
#include <string_view>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reply.h"

namespace kv {

Shard::Shard(std::uint32_t index, std::uint32_t count, std::uint64_t set_id)
    : index_(index), label_{.set_id = set_id, .index = index, .count = count}, keyspace_(index, count) {
  handle<&Shard::on_request>();
  handle<&Shard::on_batch>();
  handle<&Shard::on_stats>();
  handle<&Shard::on_saving>();
}

// Shard is polymorphic, so not standard-layout, where offsetof is only conditionally supported;
// GCC and Clang give the offsets of a class without virtual bases, which it has none of (the
// runtime reads Reactor's own fields from snapshots the same way).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Winvalid-offsetof"
std::size_t Shard::label_offset() noexcept { return offsetof(Shard, label_); }
#pragma GCC diagnostic pop

// The saver's next message is the snapshot request of that save (shard_label.h).
void Shard::on_saving(const ShardSaving& saving) { label_.generation = saving.generation; }

void Shard::on_start() { expiry_timer_ = start_timer(kExpiryPeriod, kExpiryPeriod); }

// The periodic timer was saved with the heap and is re-armed by the runtime: nothing to do but
// to say so, for the reader who looks for the timer's start.
void Shard::on_restored() {}

std::int64_t Shard::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now().time_since_epoch()).count();
}

void Shard::on_timer(reheap::TimerId) { keyspace_.expire_due(now_ms(), kExpiryBudget); }

void Shard::execute(const std::vector<std::string>& args) {
  args_.clear();
  for (const std::string& a : args) args_.emplace_back(a);
  reply_.clear();
  if (args_.empty()) {
    reply_ = "-ERR empty command\r\n";
  } else {
    execute_args(reply_);
  }
}

void Shard::execute_args(std::string& out) { keyspace_.execute(args_, now_ms(), out); }

void Shard::on_request(const ShardRequest& request) {
  execute(request.args);
  send(sender(), ShardReply{.request = request.request, .reply = reply_});
}

void Shard::on_batch(const ShardBatch& batch) {
  ShardReplies replies;
  replies.requests = batch.requests;
  replies.lengths.reserve(batch.requests.size());
  std::string_view in = batch.commands;
  for (std::size_t i = 0; i < batch.requests.size(); ++i) {
    const std::size_t before = replies.replies.size();
    const ParseResult r = parser_.parse(in, args_);
    if (r.status == ParseStatus::kCommand) {
      in.remove_prefix(r.consumed);
      execute_args(replies.replies);
    } else {
      // A gateway encodes whole commands: this is a bug, said to each client it concerns.
      in = {};
      append_error(replies.replies, "ERR internal error: a malformed batch reached the shard");
    }
    replies.lengths.push_back(static_cast<std::uint32_t>(replies.replies.size() - before));
  }
  send(sender(), replies);
}

void Shard::on_stats(const StatsRequest& request) {
  const reheap::HeapStats heap = reheap::current_heap()->stats();
  send(sender(), ShardStats{.request = request.request,
                            .shard = index_,
                            .keys = keyspace_.key_count(),
                            .expires = keyspace_.expires_count(),
                            .changes = keyspace_.changes(),
                            .heap_live = heap.live_bytes,
                            .heap_committed = heap.committed_bytes});
}

}  // namespace kv
