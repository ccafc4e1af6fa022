// Saver: the reactor that saves the shards (SAVE, BGSAVE, the `--save SECONDS CHANGES` rules) and
// answers the commands about saving and about the server as a whole (LASTSAVE, INFO).
//
// A save is one snapshot per shard, asked of the runtime with request_snapshot: each shard is
// paused between two of its own events for exactly its own save, while the other shards and the
// gateways keep serving. There is no fork and no serializer: a shard's heap is its data. The set
// of files becomes the saved set only when the manifest naming it is durable (manifest.h); a save
// that fails anywhere leaves the previous set, and the next save is full.
//
// What a save touches (the guarantees of manifest.h, kept here). Before each shard's snapshot the
// saver sends the shard the save's generation (ShardSaving), so that the file says which save
// wrote it (shard_label.h). A save's generation is the lowest above the saved set's under which
// no shard file name exists in the directory (free_generation), so no save overwrites a file.
// A save that fails deletes every file of its generation, which it alone wrote, and nothing
// else: the previous set stays whole and restorable. A save that succeeds deletes, once its
// manifest is durable, the files of the set it replaced that the new set does not use, and, the
// first time, the files start-up found to be this data set's but unused (SaverConfig::
// unused_own_files); never a file it cannot account for, so a file an operator or another server
// put in the directory survives every save.
//
// Shutdown: main stops the gateways, then sends SaverShutdown. The saver lets a save under way
// finish (so that it cleans up after itself, and no file of it is left unnamed), then, if asked,
// takes the last save on the way out (full), and reports through SaverConfig::on_closed. Saves
// by the rules stop once the shutdown has begun.
//
// What point in time a saved set holds: each shard's own instant, the moment its snapshot ran,
// as in a Redis Cluster of masters saving separately. A client that wrote k1 then k2 (on other
// shards) may find k2 saved and k1 not, if k1's shard saved before the write and k2's after.
// Within a shard the save is exact: it holds every command the shard executed before it, and none
// after.
//
// Order: the shards of one worker save one after the other (a snapshot holds up its whole
// worker), the workers in parallel; see save_shard.
//
// Full and incremental. Every save asks for an increment on the shard's previous file, writing
// only the pages the shard changed since: a new shard's first save falls back to a full one by
// itself, and a restored shard builds on the file it was restored from. The save after a failed
// one is full, and so is the save after a chain grew past kMaxIncrements increments, so that a
// restore never follows a long chain. SAVE and BGSAVE work alike
// (the snapshots never stop the server); SAVE replies when the set is durable, BGSAVE at once.
//
// Counters. Once a second the saver asks every shard for its counters (ShardStats): the
// `--save` rules compare the changes since the last save with their thresholds, and INFO reports
// the counters, asked of every shard when INFO comes (so that INFO after a write shows it).
#pragma once

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "manifest.h"
#include "protocol.h"
#include "reheap/runtime.h"
#include "reheap/snapshot_request.h"

namespace kv {

// One `--save SECONDS CHANGES` rule: save when SECONDS have passed since the last save and at
// least CHANGES writes happened since.
struct SaveRule {
  std::int64_t seconds = 0;
  std::uint64_t changes = 0;
};

// main's request once the gateways have stopped: finish the save under way, then take the save
// on the way out if `save`, and call SaverConfig::on_closed.
struct SaverShutdown {
  static constexpr std::string_view reheap_message_name = "kv::SaverShutdown";
  bool save = false;
  MSGPACK_DEFINE(save)
};

// The saver's last word, on its worker: `ok` is false if the save on the way out failed (the
// saved set is then the previous one, and stderr says why); `generation` is the saved set's.
using SaverClosed = void (*)(bool ok, std::uint64_t generation);

struct SaverConfig {
  std::filesystem::path dir;
  std::vector<reheap::ActorRef> shards;  // by shard index
  std::vector<SaveRule> rules;
  // What start-up loaded: the manifest (no chains when the set is empty).
  Manifest loaded;
  // The files of this data set in `dir` that the loaded set does not use (saved_set_check.h):
  // deleted by the first save that succeeds.
  std::vector<std::string> unused_own_files;
  SaverClosed on_closed = nullptr;
  std::map<std::string, std::uint64_t> file_bytes;  // size of each file the manifest names
  double load_seconds = 0;
  // For INFO.
  std::uint16_t port = 0;
  int workers = 1;
  std::int64_t process_id = 0;
};

class Saver : public reheap::Reactor {
 public:
  static constexpr int kMaxIncrements = 8;
  static constexpr std::chrono::seconds kStatsPeriod{1};
  static constexpr std::chrono::seconds kRetryAfterFailure{5};  // as Redis's bgsave retry delay

  explicit Saver(SaverConfig config);

  void on_start() override;
  void on_timer(reheap::TimerId) override;

 private:
  struct Waiter {  // a SAVE that replies when the save ends
    reheap::ActorRef gateway;
    std::uint64_t request;
  };

  void on_request(const ShardRequest& request);
  void on_stats(const ShardStats& stats);
  void on_snapshot(const reheap::SnapshotDone& done);
  void on_shutdown(const SaverShutdown& shutdown);

  // Starts a save of every shard (`full`: full snapshots whatever the chains); false if one is
  // already running.
  bool start_save(bool full = false);
  void save_shard(std::uint32_t index);
  void finish_save();
  // During a shutdown, once no save runs: the save on the way out, or the report of it.
  void continue_shutdown();
  // Deletes the files of `dir` named `names`; failures are left for an operator (the files are
  // this data set's and unused, and harmless).
  void delete_files(const std::vector<std::string>& names);
  void answer(std::uint64_t request, const std::string& reply);
  std::string info_text(std::int64_t now) const;
  std::int64_t now_ms();
  std::uint64_t set_bytes() const;  // bytes of every file the current manifest names

  SaverConfig config_;
  Manifest manifest_;  // the saved set: what a restart would load

  // The running save.
  bool saving_ = false;
  std::uint64_t save_generation_ = 0;
  std::int64_t save_started_ms_ = 0;
  std::uint32_t snapshots_left_ = 0;
  std::map<reheap::SnapshotRequestId, std::uint32_t> snapshot_shard_;  // request -> shard
  std::vector<std::string> save_files_;  // the names this save asked the shards to write
  std::vector<std::vector<std::string>> save_chains_;
  std::vector<std::uint64_t> changes_at_save_start_;
  std::string save_error_;
  std::uint64_t save_bytes_written_ = 0;
  std::vector<std::chrono::steady_clock::time_point> shard_save_started_;  // by shard
  double save_longest_shard_seconds_ = 0;
  bool save_full_ = false;  // every shard wrote a full snapshot
  reheap::SnapshotKind save_kind_ = reheap::SnapshotKind::kIncremental;  // asked of every shard
  std::vector<Waiter> waiters_;

  // The outcome of earlier saves.
  std::vector<std::uint64_t> changes_at_last_save_;  // by shard
  std::int64_t last_save_ms_ = 0;                     // of the saved set (start-up: the loaded one)
  std::int64_t last_attempt_ms_ = 0;
  bool last_save_ok_ = true;
  bool next_save_full_ = false;
  std::uint64_t saves_ = 0;
  double last_save_seconds_ = -1;
  std::uint64_t last_save_bytes_written_ = 0;
  bool last_save_was_full_ = true;
  double last_save_longest_shard_seconds_ = 0;
  std::string last_fallback_reason_;  // why an increment asked for was written full, if one was

  // The shutdown (SaverShutdown): under way, with a save on the way out wanted, and started.
  bool closing_ = false;
  bool final_wanted_ = false;
  bool final_started_ = false;

  // Why counters were asked for: the periodic round, a save's start, or an INFO (which answers
  // with fresh counters once every shard has sent them).
  enum class StatsPurpose : std::uint8_t { kPeriodic, kSave, kInfo };
  struct StatsAsked {
    StatsPurpose purpose;
    std::uint64_t info = 0;  // kInfo: the key of infos_
  };
  struct InfoWaiter {
    reheap::ActorRef gateway;
    std::uint64_t request;
    std::size_t shards_left;
  };
  void ask_stats(StatsPurpose purpose, std::uint64_t info = 0);

  // The latest counters of each shard (ShardStats), and what each request for them was for.
  std::vector<ShardStats> stats_;
  std::map<std::uint64_t, StatsAsked> stats_asked_;
  std::map<std::uint64_t, InfoWaiter> infos_;
  std::uint64_t next_info_ = 1;
  std::uint64_t next_stats_request_ = 1;
  std::int64_t started_ms_ = 0;
};

}  // namespace kv
