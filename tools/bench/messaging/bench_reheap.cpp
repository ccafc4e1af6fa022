// messaging_bench_reheap: the messaging benchmarks on reheap's runtime.
//
// The runtime is used the way its headers show: reactors derived from reheap::Reactor, typed
// handlers registered with handle<&R::fn>(), messages that are small trivially copyable structs
// (so they travel raw and are read in place, never decoded), `send`, `stop`, `runtime().spawn`
// from a reactor, and Runtime::spawn / stop / wait_stopped / stats from main. One Runtime serves
// the whole process (warm-up and repetitions), like CAF's one actor_system.
//
// Configuration: RuntimeConfig{.workers = 2} (two cores); everything else at the runtime's
// defaults (batch 256, no spinning, placement kLocality). `--spin US` sets RuntimeConfig::spin: an idle worker polls
// its run queue for US microseconds before it sleeps in epoll. Runs with it print
// `test=<test>-spin` so that they never mix with the default ones. `--batch N` (messages per
// reactor turn) and `--pin` (RuntimeConfig::pin_workers: worker i on the i-th allowed CPU) are there to explore; they add -batch / -pin.
//
// `--record off|file|ring` records every reactor of the benchmark (RuntimeConfig::recording, so
// runtime-wide; recording.h) with RecordedOutputs at its default (digests of what is sent):
// file mode into a fresh directory made with mkdtemp under `--record-dir DIR` (default: $TMPDIR,
// else /tmp), removed at exit; ring mode with the default ring size (kDefaultRingBytes) and no
// directory. Runs print test=<test>-record-file / -record-ring. In file mode, after each
// repetition every reactor has stopped (so its recorder has flushed), the sizes of the .rlog
// files are summed into the NOTEs rlog_bytes_per_msg (all logs over the messages delivered: n for
// oneway and fanin, 2n for pingpong), rlog_sink_bytes_per_msg (oneway/fanin: the receiver's log
// alone, over n) and anchor_kib (the base-*.snap anchors), and the files are deleted before the
// next repetition. The warm-up is recorded too.
//
// Where reactors run: the default pingpong spawns its pair as a user would, with no worker
// (kAnyWorker): round robin starts them on different workers (checked), and the runtime's
// placement policy may bring them together (runtime.h, "Placement"); NOTEs say whether they
// ended on one worker and how many moves the policy made. `--pinned` (test=pingpong-pinned), and
// the `--spin` variants, pin them to workers 0 and 1 instead (SpawnOptions::worker), so that
// every hand-over crosses threads, as every pingpong did before the policy. oneway pins its pair
// to workers 0 and 1 and fanin pins its senders alternately to both, so that they measure
// cross-thread hand-overs, not placement. `--idle-cpu MS` measures an idle runtime's CPU
// (messaging_bench.h). NOTE lines give the runtime's wake-ups (eventfd writes to a sleeping
// worker) per unit of work, and for oneway/fanin the longest the receiver's mailbox got.
//
// The tests (what "n" counts is in messaging_bench.h), each checked like the CAF and raw ones:
//   pingpong  Pinger (worker 0 at first) sends Ping{v} to Ponger (worker 1 at first), which answers Pong{v} to the
//             message's sender; Pinger checks v and sends v + 1, n times. Clock: in Pinger, from
//             its first send (on_start) to the n-th reply.
//   oneway    a Source (worker 0) sends Item{0, seq} for seq = 1..n from its on_start, in one go,
//             and stops; the Sink (worker 1) checks the order and the sum and stops the clock at
//             the n-th message. Memory: like CAF's sender, which sends everything from its
//             initialization into an unbounded mailbox, the Source is not flow-controlled: the
//             Sink's mailbox is unbounded and what the Sink has not yet taken stays in flight
//             (the NOTE queue_high_water shows how much did). A bounded mailbox with kReject
//             would make the sender retry on kMailboxFull, which CAF's sender does not have to.
//   fanin     S Sources, spawned from main on workers 0, 1, 0, 1, ... send Item{i, seq} for
//             seq = 1..n/S from their on_start; the Sink (worker 1) checks each sender's order
//             and the total. Clock: from before the first Source is spawned to the n-th message.
//   spawn     a Spawner (worker 0) spawns Children in waves of 1,000 with runtime().spawn (no
//             worker given: the runtime places them round robin over both workers); each Child
//             sends Done to the Spawner from on_start and stops. The next wave starts when the
//             previous wave's last Done has arrived. Clock: in main, from spawning the Spawner
//             until every reactor has stopped (the Spawner's last Done, then
//             Runtime::stats().reactors polled back to 0): CAF's await_all_actors_done.
//
// The reactors hold pointers to result records in main's memory. That breaks the rule that a
// reactor's heap points only into itself, which matters only for snapshots; none is taken here.
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "messaging_bench.h"
#include "reheap/recording.h"
#include "reheap/runtime.h"

namespace reheapbench {
namespace {

using msgbench::Clock;
using msgbench::fail;
using reheap::ActorRef;
using reheap::Reactor;
using reheap::Runtime;
using reheap::SendResult;
using reheap::SpawnOptions;

constexpr std::uint64_t kSpawnWave = 1000;
// Long enough for the full sizes on a slow machine; a test that takes longer has hung.
constexpr std::chrono::milliseconds kStopTimeout{600'000};

unsigned long long ull(std::uint64_t v) { return static_cast<unsigned long long>(v); }

SpawnOptions on_worker(int worker) {
  SpawnOptions options;
  options.worker = worker;
  return options;
}

void check_sent(SendResult result, const char* what) {
  if (result != SendResult::kOk) fail("%s: send failed: %s", what, reheap::to_string(result));
}

// Set by a reactor when its test is over; main waits for it. In main's memory.
class Finish {
 public:
  void signal() noexcept {
    done_.store(true, std::memory_order_release);
    done_.notify_all();
  }
  void wait() const noexcept { done_.wait(false, std::memory_order_acquire); }

 private:
  std::atomic<bool> done_{false};
};

void wait_stopped(Runtime& rt, ActorRef ref, const char* what) {
  if (!rt.wait_stopped(ref, kStopTimeout)) fail("%s did not stop", what);
}

// Until no reactor lives (Runtime has no "wait for all", so poll its count).
void wait_all_stopped(Runtime& rt) {
  const auto deadline = Clock::now() + kStopTimeout;
  while (rt.stats().reactors != 0) {
    if (Clock::now() > deadline) fail("%zu reactors still alive", rt.stats().reactors);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// Wake-ups (eventfd writes to sleeping workers) per unit of work since `before`.
void note_wakeups(Runtime& rt, std::uint64_t before, std::uint64_t n) {
  msgbench::note("wakeups_per_1k",
                 1000.0 * static_cast<double>(rt.stats().wakeups - before) / static_cast<double>(n));
}

// ---- recording ---------------------------------------------------------------------------------

// File mode's directory (empty when not recording to files): a mkdtemp directory, removed with
// everything in it when the process ends normally. Declared before the Runtime in main, so that
// it outlives the recorders the Runtime flushes at its end.
class RecordDir {
 public:
  explicit RecordDir(const std::filesystem::path& parent) {
    std::string pattern = (parent / "messaging_bench_record.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) {
      fail("cannot create a directory under %s: %s", parent.c_str(), std::strerror(errno));
    }
    path_ = pattern;
  }
  ~RecordDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  RecordDir(const RecordDir&) = delete;
  RecordDir& operator=(const RecordDir&) = delete;

  const std::filesystem::path& path() const noexcept { return path_; }

 private:
  std::filesystem::path path_;
};

const RecordDir* g_record_dir = nullptr;  // set in main when --record file

struct RecordedBytes {
  std::uintmax_t logs = 0;     // every .rlog file
  std::uintmax_t sink = 0;     // the .rlog files of one reactor (`sink`)
  std::uintmax_t anchors = 0;  // every .snap file
};

RecordedBytes recorded_bytes(ActorRef sink) {
  RecordedBytes bytes;
  const std::string sink_dir = "reactor-" + std::to_string(sink.value());
  const std::filesystem::path& root = g_record_dir->path();
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    if (!entry.is_regular_file()) continue;
    const std::filesystem::path& file = entry.path();
    const std::uintmax_t size = entry.file_size();
    if (file.extension() == ".snap") bytes.anchors += size;
    if (file.extension() != ".rlog") continue;
    bytes.logs += size;
    // reactor-<ref>/log-*.rlog, or reactor-<ref>/restart-<k>/log-*.rlog
    const std::filesystem::path relative = file.lexically_relative(root);
    if (!relative.empty() && relative.begin()->string() == sink_dir) bytes.sink += size;
  }
  return bytes;
}

// File mode, after a repetition whose reactors have all stopped: notes the log sizes per message
// delivered (`sink_messages` of them delivered to `sink`; 0: no sink note) and empties the
// directory for the next repetition.
void account_recording(std::uint64_t messages, ActorRef sink, std::uint64_t sink_messages) {
  if (g_record_dir == nullptr) return;
  const RecordedBytes bytes = recorded_bytes(sink);
  msgbench::note("rlog_bytes_per_msg",
                 static_cast<double>(bytes.logs) / static_cast<double>(messages));
  if (sink_messages > 0) {
    msgbench::note("rlog_sink_bytes_per_msg",
                   static_cast<double>(bytes.sink) / static_cast<double>(sink_messages));
  }
  msgbench::note("anchor_kib", static_cast<double>(bytes.anchors) / 1024.0);
  for (const auto& entry : std::filesystem::directory_iterator(g_record_dir->path())) {
    std::filesystem::remove_all(entry.path());
  }
}

// ---- pingpong ----------------------------------------------------------------------------------

struct Ping {
  std::uint64_t value;
};
struct Pong {
  std::uint64_t value;
};

struct PingPongResult {
  std::uint64_t n = 0;
  std::uint64_t replies = 0;
  std::atomic<int> ponger_started_on{-1};  // the workers of the two on_start hooks
  std::atomic<int> pinger_started_on{-1};
  std::atomic<int> pinger_ended_on{-1};
  Clock::time_point start, end;
  Finish finish;
};

class Ponger final : public Reactor {
 public:
  explicit Ponger(PingPongResult* result) : result_(result) { handle<&Ponger::on_ping>(); }
  void on_start() override { result_->ponger_started_on.store(worker()); }

  // Typed handlers do not see the message's sender, so remember it on the way through.
  void on_message(const reheap::Message& message) override {
    sender_ = message.sender();
    Reactor::on_message(message);
  }

 private:
  void on_ping(const Ping& ping) { check_sent(send(sender_, Pong{ping.value}), "pong"); }

  PingPongResult* result_;
  ActorRef sender_;
};

class Pinger final : public Reactor {
 public:
  Pinger(ActorRef peer, PingPongResult* result) : peer_(peer), result_(result) {
    handle<&Pinger::on_pong>();
  }

  void on_start() override {
    result_->pinger_started_on.store(worker());
    result_->start = Clock::now();
    check_sent(send(peer_, Ping{1}), "ping");
  }

 private:
  void on_pong(const Pong& pong) {
    if (pong.value != replies_ + 1) {
      fail("pingpong: reply %llu to ping %llu", ull(pong.value), ull(replies_ + 1));
    }
    if (++replies_ == result_->n) {
      result_->end = Clock::now();
      result_->replies = replies_;
      result_->pinger_ended_on.store(worker());
      stop();
      result_->finish.signal();
      return;
    }
    check_sent(send(peer_, Ping{pong.value + 1}), "ping");
  }

  ActorRef peer_;
  PingPongResult* result_;
  std::uint64_t replies_ = 0;
};

// `pinned`: on workers 1 and 0 (SpawnOptions::worker); else placed by the runtime.
double run_pingpong(Runtime& rt, std::uint64_t n, bool pinned) {
  PingPongResult result;
  result.n = n;
  const std::uint64_t wakeups = rt.stats().wakeups;
  const std::uint64_t moves = rt.stats().placement_moves;
  const ActorRef pong = rt.spawn<Ponger>(on_worker(pinned ? 1 : reheap::kAnyWorker), &result);
  const ActorRef ping =
      rt.spawn<Pinger>(on_worker(pinned ? 0 : reheap::kAnyWorker), pong, &result);
  result.finish.wait();
  if (result.replies != n) fail("pingpong: %llu round trips of %llu", ull(result.replies), ull(n));
  if (result.pinger_started_on.load() == result.ponger_started_on.load()) {
    fail("pingpong: the pair started on one worker (%d): the test is of a pair started apart",
         result.pinger_started_on.load());
  }
  note_wakeups(rt, wakeups, n);
  msgbench::note("placement_moves", static_cast<double>(rt.stats().placement_moves - moves));
  msgbench::note("together_at_end", result.pinger_ended_on.load() == rt.stats(pong).worker ? 1.0 : 0.0);
  rt.stop(pong);
  wait_stopped(rt, ping, "the pinger");
  wait_stopped(rt, pong, "the ponger");
  account_recording(2 * n, ActorRef{}, 0);
  return msgbench::seconds_between(result.start, result.end);
}

// ---- oneway and fanin --------------------------------------------------------------------------

struct Item {
  std::uint64_t sender;
  std::uint64_t seq;
};

struct StreamResult {
  std::uint64_t n = 0;
  std::uint64_t senders = 0;
  std::uint64_t per_sender = 0;
  Clock::time_point start, end;
  Finish finish;
};

class Sink final : public Reactor {
 public:
  explicit Sink(StreamResult* result) : result_(result), next_seq_(result->senders, 1) {
    handle<&Sink::on_item>();
  }

 private:
  void on_item(const Item& item) {
    if (item.sender >= next_seq_.size() || item.seq != next_seq_[item.sender]) {
      fail("message %llu of sender %llu arrived out of order", ull(item.seq), ull(item.sender));
    }
    ++next_seq_[item.sender];
    sum_ += item.seq;
    if (++received_ == result_->n) {
      result_->end = Clock::now();
      const std::uint64_t expected = result_->senders * msgbench::sum_1_to(result_->per_sender);
      if (sum_ != expected) {
        fail("received %llu messages summing to %llu instead of %llu", ull(received_), ull(sum_),
             ull(expected));
      }
      result_->finish.signal();
    }
  }

  StreamResult* result_;
  std::vector<std::uint64_t> next_seq_;  // per sender, in this reactor's heap
  std::uint64_t received_ = 0;
  std::uint64_t sum_ = 0;
};

class Source final : public Reactor {
 public:
  Source(ActorRef sink, StreamResult* result, std::uint64_t index)
      : sink_(sink), result_(result), index_(index) {}

  void on_start() override {
    if (result_->senders == 1) result_->start = Clock::now();
    const std::uint64_t per_sender = result_->per_sender;
    for (std::uint64_t seq = 1; seq <= per_sender; ++seq) {
      check_sent(send(sink_, Item{index_, seq}), "item");
    }
    stop();
  }

 private:
  ActorRef sink_;
  StreamResult* result_;
  std::uint64_t index_;
};

double run_stream(Runtime& rt, std::uint64_t n, std::uint64_t senders) {
  StreamResult result;
  result.n = n;
  result.senders = senders;
  result.per_sender = n / senders;
  const std::uint64_t wakeups = rt.stats().wakeups;
  const ActorRef sink = rt.spawn<Sink>(on_worker(1), &result);
  std::vector<ActorRef> sources;
  sources.reserve(senders);
  if (senders > 1) result.start = Clock::now();
  for (std::uint64_t i = 0; i < senders; ++i) {
    const int worker = senders == 1 ? 0 : static_cast<int>(i % 2);
    sources.push_back(rt.spawn<Source>(on_worker(worker), sink, &result, i));
  }
  result.finish.wait();
  note_wakeups(rt, wakeups, n);
  msgbench::note("queue_high_water", static_cast<double>(rt.stats(sink).queue_high_water));
  rt.stop(sink);
  for (ActorRef source : sources) wait_stopped(rt, source, "a source");
  wait_stopped(rt, sink, "the sink");
  account_recording(n, sink, n);
  return msgbench::seconds_between(result.start, result.end);
}

// ---- spawn -------------------------------------------------------------------------------------

struct Done {};

class Child final : public Reactor {
 public:
  explicit Child(ActorRef parent) : parent_(parent) {}

  void on_start() override {
    check_sent(send(parent_, Done{}), "done");
    stop();
  }

 private:
  ActorRef parent_;
};

struct SpawnResult {
  std::uint64_t done = 0;  // Done messages the Spawner received
  Finish finish;           // the last one arrived
};

class Spawner final : public Reactor {
 public:
  Spawner(std::uint64_t n, SpawnResult* result) : to_spawn_(n), result_(result) {
    handle<&Spawner::on_done>();
  }

  void on_start() override { spawn_wave(); }

 private:
  void on_done(const Done&) {
    ++result_->done;
    if (--outstanding_ > 0) return;
    if (to_spawn_ > 0) {
      spawn_wave();
    } else {
      stop();
      result_->finish.signal();
    }
  }

  void spawn_wave() {
    const std::uint64_t wave = std::min(kSpawnWave, to_spawn_);
    to_spawn_ -= wave;
    outstanding_ = wave;
    for (std::uint64_t i = 0; i < wave; ++i) runtime().spawn<Child>(self());
  }

  std::uint64_t to_spawn_;
  std::uint64_t outstanding_ = 0;
  SpawnResult* result_;
};

// Main waits for the Spawner's signal rather than in Runtime::wait_stopped: the runtime notifies
// wait_stopped's condition variable at every reactor's stop, which would wake main once per
// Child and charge a million context switches to the runtime.
double run_spawn(Runtime& rt, std::uint64_t n) {
  SpawnResult result;
  const std::uint64_t wakeups = rt.stats().wakeups;
  const Clock::time_point start = Clock::now();
  rt.spawn<Spawner>(on_worker(0), n, &result);
  result.finish.wait();
  wait_all_stopped(rt);
  const Clock::time_point end = Clock::now();
  if (result.done != n) fail("spawn: %llu actors reported of %llu", ull(result.done), ull(n));
  note_wakeups(rt, wakeups, n);
  return msgbench::seconds_between(start, end);
}

// ---- spawnmain ---------------------------------------------------------------------------------
// Main spawns the Children itself (Runtime::spawn from outside the runtime, placed by the runtime)
// in waves of 1,000; each sends Done to a Collector (worker 0), which wakes main when a wave is
// complete. Clock: in main, from the first spawn until every reactor has stopped.

class Collector final : public Reactor {
 public:
  Collector(std::uint64_t n, std::atomic<std::uint64_t>* done) : n_(n), done_(done) {
    handle<&Collector::on_done>();
  }

 private:
  void on_done(const Done&) {
    const std::uint64_t count = ++count_;
    done_->store(count, std::memory_order_release);
    // Main waits for whole waves only: a wake-up per Done would charge it a futex call each.
    if (count % kSpawnWave == 0 || count == n_) done_->notify_one();
    if (count == n_) stop();
  }

  std::uint64_t n_;
  std::uint64_t count_ = 0;
  std::atomic<std::uint64_t>* done_;
};

double run_spawn_main(Runtime& rt, std::uint64_t n) {
  std::atomic<std::uint64_t> done{0};
  const std::uint64_t wakeups = rt.stats().wakeups;
  const Clock::time_point start = Clock::now();
  const ActorRef collector = rt.spawn<Collector>(on_worker(0), n, &done);
  for (std::uint64_t spawned = 0; spawned < n;) {
    const std::uint64_t wave = std::min(kSpawnWave, n - spawned);
    for (std::uint64_t i = 0; i < wave; ++i) rt.spawn<Child>(collector);
    spawned += wave;
    for (std::uint64_t d = done.load(std::memory_order_acquire); d < spawned; d = done.load(std::memory_order_acquire)) {
      done.wait(d, std::memory_order_acquire);
    }
  }
  wait_all_stopped(rt);
  const Clock::time_point end = Clock::now();
  note_wakeups(rt, wakeups, n);
  return msgbench::seconds_between(start, end);
}

}  // namespace

// The value of a numeric flag of ours, `fallback` when absent; exits with status 2 if malformed.
long parse_knob(const char* flag, const char* text, long fallback, long max) {
  if (text == nullptr) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < 0 || value > max) {
    std::fprintf(stderr, "messaging_bench_reheap: %s wants an integer from 0 to %ld, not '%s'\n",
                 flag, max, text);
    std::exit(2);
  }
  return value;
}

}  // namespace reheapbench

int main(int argc, char** argv) {
  const char* spin_text = msgbench::take_value(argc, argv, "--spin");
  const char* batch_text = msgbench::take_value(argc, argv, "--batch");
  const bool pin = msgbench::take_flag(argc, argv, "--pin");
  const bool pinned = msgbench::take_flag(argc, argv, "--pinned");
  const char* idle_text = msgbench::take_value(argc, argv, "--idle-cpu");
  const char* idle_argv[] = {argv[0], "pingpong", nullptr};  // --idle-cpu stands for the test
  if (idle_text != nullptr) {
    argc = 2;
    argv = const_cast<char**>(idle_argv);
  }
  const char* record_text = msgbench::take_value(argc, argv, "--record");
  const char* record_dir_text = msgbench::take_value(argc, argv, "--record-dir");
  const char* hash_text = msgbench::take_value(argc, argv, "--state-hash-every");
  const msgbench::Options options = msgbench::parse_options(
      argc, argv, "reheap",
      "reheap options (each one names a variant: RESULT lines then say, e.g.,\n"
      "test=pingpong-spin or test=pingpong-spin-pin):\n"
      "  --spin US   an idle worker polls for work US microseconds before it sleeps\n"
      "              (RuntimeConfig::spin; default 0)\n"
      "  --batch N   messages a reactor handles per turn (RuntimeConfig::batch; default: the\n"
      "              runtime's)\n"
      "  --pin       pin worker i to the i-th allowed CPU (default: unpinned, like CAF)\n"
      "  --pinned    pingpong: pin the pair to workers 0 and 1 (SpawnOptions::worker) instead of\n"
      "              letting the runtime place it (implied by --spin)\n"
      "  --idle-cpu MS\n"
      "              no test: measure the CPU the idle runtime uses over MS ms (IDLE line)\n"
      "  --record off|file|ring\n"
      "              record every reactor (RuntimeConfig::recording, outputs as digests):\n"
      "              file: logs in a temporary directory, removed at exit, and NOTEs of the\n"
      "              log bytes per message; ring: in memory, default ring size (default: off)\n"
      "  --record-dir DIR\n"
      "              file mode: where the temporary directory goes (default: $TMPDIR or /tmp)\n"
      "  --state-hash-every N\n"
      "              with --record: RecordingOptions::state_hash_every (a state digest every N\n"
      "              events; default 0, none)\n");
  const long spin_us = reheapbench::parse_knob("--spin", spin_text, 0, 1'000'000);
  const long batch = reheapbench::parse_knob("--batch", batch_text, 1, 1'000'000'000);

  reheap::RecordingMode record = reheap::RecordingMode::kOff;
  if (record_text != nullptr) {
    if (std::strcmp(record_text, "file") == 0) {
      record = reheap::RecordingMode::kFile;
    } else if (std::strcmp(record_text, "ring") == 0) {
      record = reheap::RecordingMode::kRing;
    } else if (std::strcmp(record_text, "off") != 0) {
      std::fprintf(stderr, "messaging_bench_reheap: --record wants off, file or ring, not '%s'\n",
                   record_text);
      return 2;
    }
  }
  // Declared before the Runtime, so that it outlives the recorders' last blocks.
  std::optional<reheapbench::RecordDir> file_dir;
  if (record == reheap::RecordingMode::kFile) {
    std::filesystem::path parent;
    if (record_dir_text != nullptr) {
      parent = record_dir_text;
    } else if (const char* tmp = std::getenv("TMPDIR"); tmp != nullptr && *tmp != '\0') {
      parent = tmp;
    } else {
      parent = "/tmp";
    }
    file_dir.emplace(parent);
    reheapbench::g_record_dir = &*file_dir;
  }

  reheap::RuntimeConfig config{.workers = 2};
  if (record != reheap::RecordingMode::kOff) {
    config.recording.mode = record;  // outputs, ring size: RecordingOptions' defaults
    if (file_dir) config.recording.directory = file_dir->path();
    if (hash_text != nullptr) {
      config.recording.state_hash_every =
          static_cast<std::uint32_t>(reheapbench::parse_knob("--state-hash-every", hash_text, 0, 1'000'000'000));
    }
  }
  config.spin = std::chrono::microseconds(spin_us);
  config.pin_workers = pin;
  if (batch_text != nullptr) config.batch = static_cast<std::uint32_t>(batch);
  static std::string variant;  // outlives every RESULT line
  if (spin_us > 0) variant += "-spin";
  if (batch_text != nullptr) variant += "-batch";
  if (pin) variant += "-pin";
  if (pinned && spin_us == 0) variant += "-pinned";
  if (record == reheap::RecordingMode::kFile) variant += "-record-file";
  if (record == reheap::RecordingMode::kRing) variant += "-record-ring";
  if (record != reheap::RecordingMode::kOff && hash_text != nullptr) variant += std::string("-hash") + hash_text;
  if (!variant.empty()) msgbench::set_variant(variant.c_str() + 1);
  reheap::Runtime rt(std::move(config));
  if (rt.workers() != 2) msgbench::fail("the runtime has %d workers, not 2", rt.workers());
  if (idle_text != nullptr) {
    const long idle_ms = reheapbench::parse_knob("--idle-cpu", idle_text, 1, 600'000);
    return msgbench::print_idle_cpu("reheap", static_cast<std::uint64_t>(idle_ms));
  }

  return msgbench::run(options, "reheap", [&](msgbench::Test test, std::uint64_t n) {
    using namespace reheapbench;
    switch (test) {
      case msgbench::Test::pingpong:
        // The spin variants keep the pair apart: crossing threads fast is what they measure.
        return msgbench::Seconds(run_pingpong(rt, n, pinned || spin_us > 0));
      case msgbench::Test::oneway:
        return msgbench::Seconds(run_stream(rt, n, 1));
      case msgbench::Test::fanin:
        return msgbench::Seconds(run_stream(rt, n, options.senders));
      case msgbench::Test::spawn:
        return msgbench::Seconds(run_spawn(rt, n));
      case msgbench::Test::spawnmain:
        return msgbench::Seconds(run_spawn_main(rt, n));
    }
    return msgbench::Seconds();
  });
}
