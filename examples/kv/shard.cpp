// Shard (see shard.h).
#include "shard.h"

#include <string_view>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"

namespace kv {

Shard::Shard(std::uint32_t index, std::uint32_t count) : index_(index), keyspace_(index, count) {
  handle<&Shard::on_request>();
  handle<&Shard::on_batch>();
  handle<&Shard::on_stats>();
}

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
    keyspace_.execute(args_, now_ms(), reply_);
  }
}

void Shard::on_request(const ShardRequest& request) {
  execute(request.args);
  send(sender(), ShardReply{.request = request.request, .reply = reply_});
}

void Shard::on_batch(const ShardBatch& batch) {
  ShardReplies replies;
  replies.replies.reserve(batch.requests.size());
  for (const ShardRequest& request : batch.requests) {
    execute(request.args);
    replies.replies.push_back(ShardReply{.request = request.request, .reply = reply_});
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
