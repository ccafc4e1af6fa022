// Reactors and helpers the replay tests share: a ledger with maps, strings, timers, a spawn and
// random numbers, recorded under a real multi-worker reheap::Runtime with concurrent senders.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "reheap/reactor.h"
#include "reheap/recording.h"
#include "reheap/runtime.h"

namespace replay_test {

using namespace std::chrono_literals;
using reheap::ActorRef;
using reheap::Reactor;

struct Deposit {
  std::string account;
  std::int64_t amount = 0;
  std::uint32_t seq = 0;
  MSGPACK_DEFINE(account, amount, seq)
};
struct Receipt {
  std::string account;
  std::int64_t balance = 0;
  std::uint64_t token = 0;
  MSGPACK_DEFINE(account, balance, token)
};

class Idle : public Reactor {};

// Keeps accounts in a std::map of structs holding vectors, notes in an unordered_map of strings;
// answers each deposit with a receipt carrying a random token; ticks a periodic timer five times;
// spawns an auditor and tells it every 50th deposit.
class Ledger : public Reactor {
 public:
  struct Account {
    std::int64_t balance = 0;
    std::vector<std::int64_t> history;
  };
  Ledger() { handle<&Ledger::on_deposit>(); }
  void on_start() override {
    timer_ = start_timer(1ms, 1ms);
    started_ns_ = now().time_since_epoch().count();
    reheap::SpawnOptions options;
    options.name = "auditor";
    auditor_ = spawn<Idle>(options);
  }
  void on_deposit(const Deposit& d) {
    Account& a = accounts_[d.account];
    a.balance += d.amount;
    a.history.push_back(d.amount);
    notes_[d.account + "#" + std::to_string(d.seq)] = "from " + std::to_string(sender().value());
    const std::uint64_t token = random();
    send(sender(), Receipt{d.account, a.balance, token});
    if (++deposits_ % 50 == 0) send(auditor_, Receipt{"audit", total(), token});
  }
  void on_timer(reheap::TimerId id) override {
    last_tick_ns_ = steady_now().time_since_epoch().count();
    if (++ticks_ == 5) cancel_timer(id);
  }
  std::int64_t total() const {
    std::int64_t sum = 0;
    for (const auto& [name, a] : accounts_) sum += a.balance;
    return sum;
  }
  std::uint32_t deposits() const { return deposits_; }
  std::uint32_t ticks() const { return ticks_; }
  const std::map<std::string, Account>& accounts() const { return accounts_; }
  std::size_t notes() const { return notes_.size(); }

 private:
  std::map<std::string, Account> accounts_;
  std::unordered_map<std::string, std::string> notes_;
  reheap::TimerId timer_ = 0;
  ActorRef auditor_;
  std::int64_t started_ns_ = 0;
  std::int64_t last_tick_ns_ = 0;
  std::uint32_t deposits_ = 0;
  std::uint32_t ticks_ = 0;
};

// Sends `count` deposits to the ledger at once from on_start, to accounts "<prefix>0".."<prefix>6".
class Depositor : public Reactor {
 public:
  Depositor(ActorRef ledger, std::string prefix, std::uint32_t count)
      : ledger_(ledger), prefix_(std::move(prefix)), count_(count) {
    handle<&Depositor::on_receipt>();
  }
  void on_start() override {
    for (std::uint32_t i = 0; i < count_; ++i) {
      send(ledger_, Deposit{prefix_ + std::to_string(i % 7), static_cast<std::int64_t>(i + 1), i});
    }
  }
  void on_receipt(const Receipt&) { ++receipts_; }

 private:
  ActorRef ledger_;
  std::string prefix_;
  std::uint32_t count_;
  std::uint32_t receipts_ = 0;
};

class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "reheap-replay-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

inline reheap::RecordingOptions file_recording(const std::filesystem::path& directory,
                                               reheap::RecordedOutputs outputs = reheap::RecordedOutputs::kPayloads,
                                               std::uint32_t state_hash_every = 1) {
  reheap::RecordingOptions r;
  r.mode = reheap::RecordingMode::kFile;
  r.directory = directory;
  r.outputs = outputs;
  r.state_hash_every = state_hash_every;
  return r;
}

inline std::filesystem::path recording_of(const std::filesystem::path& directory, ActorRef ref) {
  return directory / ("reactor-" + std::to_string(ref.value()));
}

inline constexpr std::uint32_t kDepositsEach = 200;

// Waits, for a minute at most, until `ledger` has handled its on_start, the deposits of two
// Depositors of `each` and its five ticks. Runtime::wait_idle does not wait for timers, and on a
// loaded machine the ticks' milliseconds pass whenever the worker gets to them.
inline bool wait_for_every_event(reheap::Runtime& rt, ActorRef ledger, std::uint32_t each) {
  const std::uint64_t all = 1 + 2 * std::uint64_t{each} + 5;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::minutes(1);
  while (rt.stats(ledger).events < all) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

struct LedgerRun {
  ActorRef ledger;
  std::filesystem::path recording;
  std::vector<std::filesystem::path> snapshots;  // taken while the deposits flowed, when asked
};

// Records a ledger on worker 0 of a 2-worker runtime, two depositors sending at once from both
// workers; waits until every deposit is handled and the timer stopped ticking; then shuts the
// runtime down (the ledger's log ends with on_stop), so that its heap's addresses are free for
// a replay in this process. With `snapshot_dir`, Runtime::snapshot saves the ledger three times
// while deposits arrive.
inline LedgerRun record_ledger(const std::filesystem::path& directory, const std::filesystem::path& snapshot_dir = {}) {
  LedgerRun run;
  reheap::RuntimeConfig config;
  config.workers = 2;
  reheap::Runtime rt(config);
  reheap::SpawnOptions options;
  options.name = "ledger";
  options.worker = 0;
  options.recording = file_recording(directory);
  run.ledger = rt.spawn<Ledger>(options);
  reheap::SpawnOptions on1;
  on1.worker = 1;
  rt.spawn<Depositor>(on1, run.ledger, std::string("a"), kDepositsEach);
  rt.spawn<Depositor>(run.ledger, std::string("b"), kDepositsEach);
  if (!snapshot_dir.empty()) {
    // After on_start, whose event anchors the recording: a snapshot before it is of no recording.
    while (rt.stats(run.ledger).events == 0) std::this_thread::sleep_for(100us);
    for (int i = 0; i < 3; ++i) {
      const std::filesystem::path file = snapshot_dir / ("ledger-" + std::to_string(i) + ".snap");
      rt.snapshot(run.ledger, file);
      run.snapshots.push_back(file);
      std::this_thread::sleep_for(1ms);
    }
  }
  EXPECT_TRUE(wait_for_every_event(rt, run.ledger, kDepositsEach));
  EXPECT_TRUE(rt.wait_idle());
  run.recording = recording_of(directory, run.ledger);
  return run;
}

inline std::vector<char> read_file(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

inline void write_file(const std::filesystem::path& file, const std::vector<char>& bytes) {
  std::ofstream out(file, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

}  // namespace replay_test
