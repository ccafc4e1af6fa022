// Shard: the reactor that owns one slice of the keyspace (the keys routing.h's shard_of maps to
// its index) and executes the commands sent to it.
//
// Its whole state is the Keyspace member, plain std containers in the shard's own heap, so a
// snapshot of the shard's heap is a save of its data, with no serialization code, and a restored
// heap is the shard again, at the same addresses (persistence.h). A shard holds no reference to
// any other reactor: it answers the sender of each request, so a restored shard serves the
// gateways of the new process as it served the old ones.
//
// Expiry: keys whose time has come are deleted lazily when read, and actively by a periodic
// timer (kExpiryPeriod) that deletes up to kExpiryBudget of them per tick, so an expired key
// stops using memory even if no one reads it. Time is the runtime's (Reactor::now), so a replay
// of a shard's recording expires the same keys at the same events.
#pragma once

#include <chrono>
#include <cstdint>

#include "keyspace.h"
#include "protocol.h"
#include "resp_parser.h"
#include "reheap/runtime.h"

namespace kv {

class Shard : public reheap::Reactor {
 public:
  static constexpr std::chrono::milliseconds kExpiryPeriod{100};
  static constexpr std::size_t kExpiryBudget = 1000;

  Shard(std::uint32_t index, std::uint32_t count);

  void on_start() override;
  void on_restored() override;
  void on_timer(reheap::TimerId) override;

  std::uint32_t index() const noexcept { return index_; }
  const Keyspace& keyspace() const noexcept { return keyspace_; }

 private:
  void on_request(const ShardRequest& request);
  void on_batch(const ShardBatch& batch);
  // Executes one command into reply_.
  void execute(const std::vector<std::string>& args);
  // Executes args_ (not empty) and appends its reply to `out`.
  void execute_args(std::string& out);
  void on_stats(const StatsRequest& request);
  std::int64_t now_ms();

  std::uint32_t index_;
  Keyspace keyspace_;
  std::string reply_;  // reused for every reply: its capacity stays in the heap
  std::vector<std::string_view> args_;
  RequestParser parser_;  // reads a ShardBatch's commands
  reheap::TimerId expiry_timer_ = 0;
};

}  // namespace kv
