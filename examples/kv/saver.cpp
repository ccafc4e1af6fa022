// Saver (see saver.h).
#include "saver.h"

#include <algorithm>
#include <cinttypes>
#include <cstdio>
#include <limits>
#include <set>
#include <system_error>
#include <utility>

#include "command_table.h"
#include "reply.h"

namespace kv {

namespace {

constexpr std::uint64_t kUnknown = std::numeric_limits<std::uint64_t>::max();

void append_field(std::string& text, std::string_view name, const std::string& value) {
  text += name;
  text += ':';
  text += value;
  text += "\r\n";
}

void append_field(std::string& text, std::string_view name, std::uint64_t value) {
  append_field(text, name, std::to_string(value));
}

std::string seconds_text(double seconds) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", seconds);
  return buffer;
}

}  // namespace

Saver::Saver(SaverConfig config)
    : config_(std::move(config)),
      manifest_(config_.loaded),
      save_generation_(config_.loaded.generation),
      changes_at_last_save_(config_.shards.size(), kUnknown),
      stats_(config_.shards.size()) {
  for (std::uint32_t i = 0; i < stats_.size(); ++i) stats_[i].shard = i;
  handle<&Saver::on_request>();
  handle<&Saver::on_stats>();
  handle<&Saver::on_snapshot>();
  handle<&Saver::on_shutdown>();
}

std::int64_t Saver::now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(now().time_since_epoch()).count();
}

void Saver::on_start() {
  started_ms_ = now_ms();
  // Until a save, the rules count from the start, as Redis counts from its start-up.
  last_save_ms_ = manifest_.chains.empty() ? started_ms_ : manifest_.saved_ms;
  start_timer(std::chrono::milliseconds(1), kStatsPeriod);
}

void Saver::on_timer(reheap::TimerId) {
  // The rules, on the counters of the previous round (a second old at most).
  bool known = true;
  for (const std::uint64_t c : changes_at_last_save_) known = known && c != kUnknown;
  if (!saving_ && !closing_ && known && !config_.rules.empty()) {
    const std::int64_t now = now_ms();
    std::uint64_t changed = 0;
    for (std::size_t i = 0; i < stats_.size(); ++i) changed += stats_[i].changes - changes_at_last_save_[i];
    const bool may_retry = last_save_ok_ || now - last_attempt_ms_ >= kRetryAfterFailure.count() * 1000;
    for (const SaveRule& rule : config_.rules) {
      if (may_retry && changed >= rule.changes && changed > 0 && now - last_save_ms_ >= rule.seconds * 1000) {
        start_save();
        break;
      }
    }
  }
  ask_stats(StatsPurpose::kPeriodic);
}

void Saver::ask_stats(StatsPurpose purpose, std::uint64_t info) {
  for (const reheap::ActorRef shard : config_.shards) {
    const std::uint64_t request = next_stats_request_++;
    stats_asked_.emplace(request, StatsAsked{purpose, info});
    send(shard, StatsRequest{.request = request});
  }
}

void Saver::on_stats(const ShardStats& stats) {
  const auto asked_it = stats_asked_.find(stats.request);
  if (asked_it == stats_asked_.end() || stats.shard >= stats_.size()) return;
  const StatsAsked asked = asked_it->second;
  stats_asked_.erase(asked_it);
  stats_[stats.shard] = stats;
  if (changes_at_last_save_[stats.shard] == kUnknown) {
    // The first counters of a shard: what it holds now is what was loaded (or nothing).
    changes_at_last_save_[stats.shard] = stats.changes;
  }
  if (asked.purpose == StatsPurpose::kSave && saving_) changes_at_save_start_[stats.shard] = stats.changes;
  if (asked.purpose == StatsPurpose::kInfo) {
    const auto waiter = infos_.find(asked.info);
    if (waiter != infos_.end() && --waiter->second.shards_left == 0) {
      send(waiter->second.gateway, ShardReply{.request = waiter->second.request, .reply = info_text(now_ms())});
      infos_.erase(waiter);
    }
  }
}

bool Saver::start_save(bool full_asked) {
  if (saving_) return false;
  saving_ = true;
  // Names no file has: above the saved set's and above every generation a save started, and
  // clear of whatever files the directory holds (manifest.h).
  save_generation_ = free_generation(config_.dir, static_cast<std::uint32_t>(config_.shards.size()),
                                     std::max(save_generation_, manifest_.generation));
  save_started_ms_ = now_ms();
  last_attempt_ms_ = save_started_ms_;
  // A restored shard's snapshotter builds on the file it was restored from, and a new shard's
  // first increment falls back to a full save by itself: only a failure or a long chain asks
  // for a full save.
  std::size_t longest_chain = 0;
  for (const auto& chain : manifest_.chains) longest_chain = std::max(longest_chain, chain.size());
  const bool full = full_asked || next_save_full_ || longest_chain > static_cast<std::size_t>(kMaxIncrements);
  save_full_ = true;  // until a shard writes an increment
  save_error_.clear();
  save_bytes_written_ = 0;
  save_longest_shard_seconds_ = 0;
  shard_save_started_.assign(config_.shards.size(), {});
  save_chains_.assign(config_.shards.size(), {});
  changes_at_save_start_.assign(config_.shards.size(), kUnknown);
  snapshot_shard_.clear();
  save_files_.clear();
  snapshots_left_ = static_cast<std::uint32_t>(config_.shards.size());
  save_kind_ = full ? reheap::SnapshotKind::kFull : reheap::SnapshotKind::kIncremental;
  // One lane per worker: shard i lives on worker i % workers, and a snapshot runs on its shard's
  // worker, holding up everything else there (the gateway too). Saving a worker's shards one
  // after the other lets that worker serve between them, so a client waits for at most one
  // shard's snapshot, not for all of its worker's; the workers save in parallel.
  const auto lanes = std::min<std::size_t>(static_cast<std::size_t>(std::max(config_.workers, 1)), config_.shards.size());
  for (std::uint32_t i = 0; i < lanes; ++i) save_shard(i);
  return true;
}

void Saver::save_shard(std::uint32_t i) {
  // The counters just before the snapshot, in the same mailbox: the writes counted as saved are
  // all in the file (a write between the two is saved and still counted as unsaved).
  const std::uint64_t request = next_stats_request_++;
  stats_asked_.emplace(request, StatsAsked{StatsPurpose::kSave, 0});
  send(config_.shards[i], StatsRequest{.request = request});
  // The generation into the shard's label, so into the file (shard_label.h): the snapshot request
  // below is a message in the same mailbox, after this one.
  send(config_.shards[i], ShardSaving{.generation = save_generation_});
  save_files_.push_back(shard_file_name(i, save_generation_));
  const std::filesystem::path file = config_.dir / save_files_.back();
  snapshot_shard_.emplace(request_snapshot(config_.shards[i], file, save_kind_), i);
  shard_save_started_[i] = steady_now();
}

void Saver::on_snapshot(const reheap::SnapshotDone& done) {
  const auto it = snapshot_shard_.find(done.request);
  if (!saving_ || it == snapshot_shard_.end()) return;
  const std::uint32_t shard = it->second;
  snapshot_shard_.erase(it);
  // From the request to the answer: the shard's snapshot and whatever its worker ran before it.
  const double seconds = std::chrono::duration<double>(steady_now() - shard_save_started_[shard]).count();
  save_longest_shard_seconds_ = std::max(save_longest_shard_seconds_, seconds);
  if (done.ok()) {
    save_bytes_written_ += done.bytes_written;
    if (done.info().kind != reheap::SnapshotKind::kFull) save_full_ = false;
    if (!done.fallback_reason.empty()) last_fallback_reason_ = done.fallback_reason;
    config_.file_bytes[shard_file_name(shard, save_generation_)] = done.bytes_written;
    try {
      for (const std::filesystem::path& file : reheap::snapshot_chain(done.file)) {
        save_chains_[shard].push_back(file.filename().string());
      }
    } catch (const std::exception& e) {
      if (save_error_.empty()) save_error_ = "shard " + std::to_string(shard) + ": " + e.what();
    }
  } else if (save_error_.empty()) {
    save_error_ = "shard " + std::to_string(shard) + ": " + reheap::to_string(done.snapshot_status()) +
                  (done.error.empty() ? "" : ": " + done.error);
  }
  const std::uint32_t next = shard + static_cast<std::uint32_t>(std::max(config_.workers, 1));
  if (next < config_.shards.size()) save_shard(next);  // the next shard of this lane
  if (--snapshots_left_ == 0) finish_save();
}

void Saver::finish_save() {
  const std::int64_t now = now_ms();
  if (save_error_.empty()) {
    Manifest next;
    next.set_id = manifest_.set_id;
    next.node = manifest_.node;
    next.generation = save_generation_;
    next.shards = static_cast<std::uint32_t>(config_.shards.size());
    next.saved_ms = now;
    next.chains = save_chains_;
    // What the new set, once durable, no longer needs: the replaced set's files it does not use,
    // and (once) the unused files of this data set that start-up found. Nothing else (manifest.h).
    // Listed before the commit, so that nothing after it can fail and call the save failed.
    std::set<std::string> kept;
    for (const auto& chain : next.chains) kept.insert(chain.begin(), chain.end());
    std::vector<std::string> unused;
    for (const std::string& name : config_.unused_own_files) {
      if (kept.count(name) == 0) unused.push_back(name);
    }
    for (const auto& chain : manifest_.chains) {
      for (const std::string& name : chain) {
        if (kept.count(name) == 0) unused.push_back(name);
      }
    }
    try {
      write_manifest(config_.dir, next);
    } catch (const std::exception& e) {
      save_error_ = std::string("manifest: ") + e.what();
    }
    if (save_error_.empty()) {
      manifest_ = std::move(next);
      config_.unused_own_files.clear();
      delete_files(unused);
    }
  }
  const bool ok = save_error_.empty();
  if (ok) {
    for (std::size_t i = 0; i < changes_at_save_start_.size(); ++i) {
      if (changes_at_save_start_[i] != kUnknown) changes_at_last_save_[i] = changes_at_save_start_[i];
    }
    last_save_ms_ = now;
    next_save_full_ = false;
    ++saves_;
    last_save_bytes_written_ = save_bytes_written_;
    last_save_was_full_ = save_full_;
    last_save_longest_shard_seconds_ = save_longest_shard_seconds_;
  } else {
    std::fprintf(stderr, "reheap-kv: %s (generation %" PRIu64 "), the saved set is still generation %" PRIu64 ": %s\n",
                 final_started_ ? "the save on the way out failed" : "a save failed", save_generation_,
                 manifest_.generation, save_error_.c_str());
    // The files of this attempt are not a set: remove them. Their names were free when the save
    // began, so whatever is under them now is this save's (a shard whose snapshot failed may
    // still have renamed its file into place before a later step failed).
    delete_files(save_files_);
    for (const std::string& name : save_files_) config_.file_bytes.erase(name);
    next_save_full_ = true;
  }
  last_save_ok_ = ok;
  last_save_seconds_ = static_cast<double>(now - save_started_ms_) / 1000.0;
  saving_ = false;
  std::string reply;
  if (ok) {
    append_simple(reply, "OK");
  } else {
    append_error(reply, "ERR save failed: " + save_error_);
  }
  for (const Waiter& w : waiters_) send(w.gateway, ShardReply{.request = w.request, .reply = reply});
  waiters_.clear();
  if (closing_) continue_shutdown();
}

void Saver::delete_files(const std::vector<std::string>& names) {
  for (const std::string& name : names) {
    std::error_code ignored;
    std::filesystem::remove(config_.dir / name, ignored);
  }
}

void Saver::on_shutdown(const SaverShutdown& shutdown) {
  closing_ = true;
  final_wanted_ = shutdown.save;
  if (!saving_) continue_shutdown();
}

void Saver::continue_shutdown() {
  if (final_wanted_ && !final_started_) {
    // Full: the shards change no more (the gateways are gone), and a restart then reads one file
    // per shard.
    final_started_ = true;
    start_save(true);
    return;
  }
  if (config_.on_closed != nullptr) config_.on_closed(last_save_ok_ || !final_started_, manifest_.generation);
  config_.on_closed = nullptr;  // once
}

void Saver::answer(std::uint64_t request, const std::string& reply) {
  send(sender(), ShardReply{.request = request, .reply = reply});
}

void Saver::on_request(const ShardRequest& request) {
  std::string reply;
  const CommandSpec* spec = request.args.empty() ? nullptr : find_command(request.args[0]);
  switch (spec == nullptr ? CommandId::kPing : spec->id) {
    case CommandId::kSave:
      if (!start_save()) {
        append_error(reply, "ERR Background save already in progress");
        break;
      }
      waiters_.push_back(Waiter{sender(), request.request});
      return;
    case CommandId::kBgsave:
      if (!start_save()) {
        append_error(reply, "ERR Background save already in progress");
      } else {
        append_simple(reply, "Background saving started");
      }
      break;
    case CommandId::kLastsave:
      append_integer(reply, last_save_ms_ / 1000);
      break;
    case CommandId::kInfo:
      // Answered when every shard has sent fresh counters (on_stats); the gateway adds its
      // section and wraps the text in a bulk string.
      if (!config_.shards.empty()) {
        const std::uint64_t info = next_info_++;
        infos_.emplace(info, InfoWaiter{sender(), request.request, config_.shards.size()});
        ask_stats(StatsPurpose::kInfo, info);
        return;
      }
      reply = info_text(now_ms());
      break;
    default:
      append_error(reply, "ERR not a saver command");
      break;
  }
  answer(request.request, reply);
}

std::uint64_t Saver::set_bytes() const {
  std::uint64_t total = 0;
  for (const auto& chain : manifest_.chains) {
    for (const std::string& file : chain) {
      const auto it = config_.file_bytes.find(file);
      if (it != config_.file_bytes.end()) total += it->second;
    }
  }
  return total;
}

std::string Saver::info_text(std::int64_t now) const {
  std::uint64_t keys = 0, expires = 0, live = 0, committed = 0, since_save = 0;
  for (std::size_t i = 0; i < stats_.size(); ++i) {
    keys += stats_[i].keys;
    expires += stats_[i].expires;
    live += stats_[i].heap_live;
    committed += stats_[i].heap_committed;
    if (changes_at_last_save_[i] != kUnknown) since_save += stats_[i].changes - changes_at_last_save_[i];
  }
  std::string text;
  text += "# Server\r\n";
  append_field(text, "redis_version", std::string("7.0.15"));
  append_field(text, "reheap_kv", std::string("1"));
  append_field(text, "redis_mode", std::string("standalone"));
  append_field(text, "process_id", static_cast<std::uint64_t>(config_.process_id));
  append_field(text, "uptime_in_seconds", static_cast<std::uint64_t>((now - started_ms_) / 1000));
  append_field(text, "tcp_port", static_cast<std::uint64_t>(config_.port));
  append_field(text, "workers", static_cast<std::uint64_t>(config_.workers));
  append_field(text, "shards", static_cast<std::uint64_t>(config_.shards.size()));
  text += "\r\n# Memory\r\n";
  append_field(text, "used_memory", live);
  append_field(text, "reheap_heap_committed", committed);
  text += "\r\n# Persistence\r\n";
  append_field(text, "loading", std::string("0"));
  append_field(text, "reheap_load_time_sec", seconds_text(config_.load_seconds));
  append_field(text, "reheap_loaded_generation", config_.loaded.generation);
  append_field(text, "rdb_changes_since_last_save", since_save);
  append_field(text, "rdb_bgsave_in_progress", std::string(saving_ ? "1" : "0"));
  append_field(text, "rdb_last_save_time", static_cast<std::uint64_t>(last_save_ms_ / 1000));
  append_field(text, "rdb_last_bgsave_status", std::string(last_save_ok_ ? "ok" : "err"));
  append_field(text, "rdb_last_bgsave_time_sec",
               last_save_seconds_ < 0 ? std::string("-1") : seconds_text(last_save_seconds_));
  append_field(text, "rdb_saves", saves_);
  append_field(text, "reheap_saved_generation", manifest_.generation);
  append_field(text, "reheap_snapshot_set_bytes", set_bytes());
  append_field(text, "reheap_last_save_kind", std::string(saves_ == 0 ? "none" : last_save_was_full_ ? "full" : "incremental"));
  append_field(text, "reheap_last_save_bytes_written", last_save_bytes_written_);
  append_field(text, "reheap_last_save_longest_shard_sec", seconds_text(last_save_longest_shard_seconds_));
  append_field(text, "reheap_last_full_fallback", last_fallback_reason_.empty() ? std::string("none") : last_fallback_reason_);
  append_field(text, "aof_enabled", std::string("0"));
  text += "\r\n# Keyspace\r\n";
  if (keys > 0) {
    text += "db0:keys=" + std::to_string(keys) + ",expires=" + std::to_string(expires) + ",avg_ttl=0\r\n";
  }
  return text;
}

}  // namespace kv
