// Shard: the reactor that owns one slice of the keyspace (the keys routing.h's shard_of maps to
// its index) and executes the commands sent to it.
//
// Its whole state is the Keyspace member, plain std containers in the shard's own heap, so a
// snapshot of the shard's heap is a save of its data, with no serialization code, and a restored
// heap is the shard again, at the same addresses (persistence.h). A shard holds no reference to
// any other reactor: it answers the sender of each request, so a restored shard serves the
// gateways of the new process as it served the old ones.
//
// Label: each shard keeps in its heap which data set, which shard of how many, and which save
// it belongs to (shard_label.h), so that every file saved of it says so, and start-up can check
// the files against the manifest before restoring any.
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
#include "shard_label.h"

namespace kv {

class Shard : public reheap::Reactor {
 public:
  static constexpr std::chrono::milliseconds kExpiryPeriod{100};
  static constexpr std::size_t kExpiryBudget = 1000;

  // Shard `index` of `count` of the data set `set_id`.
  Shard(std::uint32_t index, std::uint32_t count, std::uint64_t set_id);

  void on_start() override;
  void on_restored() override;
  void on_timer(reheap::TimerId) override;

  std::uint32_t index() const noexcept { return index_; }
  const Keyspace& keyspace() const noexcept { return keyspace_; }
  const ShardLabel& label() const noexcept { return label_; }
  // Where label_ lies in a Shard, from the Shard's (and so its Reactor's) address.
  static std::size_t label_offset() noexcept;

 private:
  void on_request(const ShardRequest& request);
  void on_batch(const ShardBatch& batch);
  // Executes one command into reply_.
  void execute(const std::vector<std::string>& args);
  // Executes args_ (not empty) and appends its reply to `out`.
  void execute_args(std::string& out);
  void on_stats(const StatsRequest& request);
  void on_saving(const ShardSaving& saving);
  std::int64_t now_ms();

  std::uint32_t index_;
  ShardLabel label_;
  Keyspace keyspace_;
  std::string reply_;  // reused for every reply: its capacity stays in the heap
  std::vector<std::string_view> args_;
  RequestParser parser_;  // reads a ShardBatch's commands
  reheap::TimerId expiry_timer_ = 0;
};

}  // namespace kv
