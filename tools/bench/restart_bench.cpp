// restart_bench: how long an exact restart of a recorded reactor takes, how long its worker's
// other reactors wait meanwhile, and what the recording's periodic flush costs (README.md in this
// directory, "Restart benchmark").
//
// Part 1, restart. A Counter reactor (a std::map of 16,384 keys updated by each Item) runs on
// worker 0 of a 2-worker reheap::Runtime under kRestart; a Feeder on worker 1 sends it `--events`
// Items from its on_start. A ping-pong pair on worker 0 keeps exchanging messages and notes the
// longest gap between two pongs. Then the Counter gets a Boom, which throws; the restart time is
// from the failure (on_failure, on the worker) to the Counter's first event after it (a Query sent
// right behind the Boom). For a recorded Counter (kFile, kRing) the restart replays every Item
// (the recording's anchor is taken before on_start); an unrecorded one restores its checkpoint after
// on_start and loses them, which is shown for scale. Reported: the restart time, the replayed
// events per second, the longest pong gap during the restart and the longest before it (the same
// pair, the same worker, no restart), each the median of `--reps` runs with min and max.
//
// Part 2, flush interval. 16 recorded sinks on worker 0 each receive `--messages` small messages
// from a source on worker 1; the rate (messages over the wall time from the first send to the last
// receipt) is measured with RecordingOptions::flush_interval 0 (blocks written when full only),
// 1000 ms (the default), 100 ms and 10 ms, alternating, and reported as ratios to 0 ms.
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <stdexcept>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include "reheap/reactor.h"
#include "reheap/recording.h"
#include "reheap/runtime.h"

namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;
using reheap::ActorRef;
using reheap::Reactor;

std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch()).count();
}

// ---- part 1 ---------------------------------------------------------------------------------------

struct Item {
  std::uint32_t seq;
  std::uint32_t key;
};
struct Boom {
  int unused;
};
struct Query {
  int unused;
};
struct Ping {
  std::uint64_t n;
};

// Outside every heap: what the bench reads. The replay runs the Counter's hooks again, so nothing
// it keeps depends on these.
std::atomic<std::int64_t> g_failed_ns{0};
std::atomic<std::int64_t> g_back_ns{0};
std::atomic<std::int64_t> g_last_pong_ns{0};
std::atomic<std::int64_t> g_max_gap_ns{0};
std::atomic<bool> g_pinging{true};

class Counter : public Reactor {
 public:
  Counter() {
    handle<&Counter::on_item>();
    handle<&Counter::on_boom>();
    handle<&Counter::on_query>();
  }
  void on_item(const Item& item) {
    std::uint64_t& v = counts_[item.key % 16384];
    v = v * 31 + item.seq + 1;
    ++items_;
  }
  void on_boom(const Boom&) { throw std::runtime_error("boom"); }
  void on_query(const Query&) {
    if (g_back_ns.load() == 0) g_back_ns.store(now_ns());
  }

 private:
  std::map<std::uint32_t, std::uint64_t> counts_;
  std::uint64_t items_ = 0;
};

class Feeder : public Reactor {
 public:
  Feeder(ActorRef to, std::uint64_t count) : to_(to), count_(count) {}
  void on_start() override {
    for (std::uint64_t i = 0; i < count_; ++i) {
      const auto seq = static_cast<std::uint32_t>(i);
      send(to_, Item{seq, seq * 2654435761u});
    }
  }

 private:
  ActorRef to_;
  std::uint64_t count_;
};

class Ponger : public Reactor {
 public:
  Ponger() { handle<&Ponger::on_ping>(); }
  void on_ping(const Ping& p) { send(sender(), p); }
};

class Pinger : public Reactor {
 public:
  explicit Pinger(ActorRef ponger) : ponger_(ponger) { handle<&Pinger::on_pong>(); }
  void on_start() override { send(ponger_, Ping{0}); }
  void on_pong(const Ping& p) {
    const std::int64_t t = now_ns();
    const std::int64_t last = g_last_pong_ns.exchange(t);
    if (last != 0 && t - last > g_max_gap_ns.load()) g_max_gap_ns.store(t - last);
    if (g_pinging.load()) send(ponger_, Ping{p.n + 1});
  }

 private:
  ActorRef ponger_;
};

struct RestartSample {
  double restart_ms = 0;
  double gap_during_ms = 0;
  double gap_before_ms = 0;
};

RestartSample restart_once(reheap::RecordingMode mode, const std::filesystem::path& dir, std::uint64_t events) {
  g_failed_ns = 0;
  g_back_ns = 0;
  g_last_pong_ns = 0;
  g_max_gap_ns = 0;
  g_pinging = true;
  reheap::RuntimeConfig config;
  config.workers = 2;
  config.on_failure = [](const reheap::ReactorFailed& f) {
    g_failed_ns.store(now_ns());
    if (f.restart.rfind("exact", 0) != 0 && f.restart.find("not recorded") == std::string::npos) {
      std::fprintf(stderr, "restart_bench: %s\n", reheap::to_string(f).c_str());
    }
  };
  reheap::Runtime rt(config);
  reheap::SpawnOptions options;
  options.worker = 0;
  options.policy = reheap::SupervisionPolicy::kRestart;
  options.recording.mode = mode;
  options.recording.directory = dir;
  options.recording.outputs = reheap::RecordedOutputs::kDigests;
  const ActorRef counter = rt.spawn<Counter>(options);
  reheap::SpawnOptions on1;
  on1.worker = 1;
  rt.spawn<Feeder>(on1, counter, events);
  if (!rt.wait_idle(600s)) throw std::runtime_error("the Items did not arrive");
  reheap::SpawnOptions on0;
  on0.worker = 0;
  const ActorRef ponger = rt.spawn<Ponger>(on0);
  rt.spawn<Pinger>(on0, ponger);
  std::this_thread::sleep_for(200ms);  // the pair's gaps with nothing else on the worker
  RestartSample s;
  s.gap_before_ms = static_cast<double>(g_max_gap_ns.exchange(0)) / 1e6;
  rt.send(counter, Boom{});
  rt.send(counter, Query{});
  const Clock::time_point deadline = Clock::now() + 600s;
  while (g_back_ns.load() == 0 && Clock::now() < deadline) std::this_thread::sleep_for(100us);
  s.gap_during_ms = static_cast<double>(g_max_gap_ns.load()) / 1e6;
  g_pinging = false;
  if (g_back_ns.load() == 0) throw std::runtime_error("the Counter did not come back");
  s.restart_ms = static_cast<double>(g_back_ns.load() - g_failed_ns.load()) / 1e6;
  rt.wait_idle(60s);
  return s;
}

// ---- part 2 ---------------------------------------------------------------------------------------

struct Tick {
  std::uint64_t n;
};
std::atomic<std::uint64_t> g_received{0};

class Sink : public Reactor {
 public:
  Sink() { handle<&Sink::on_tick>(); }
  void on_tick(const Tick& t) {
    sum_ += t.n;
    g_received.fetch_add(1, std::memory_order_relaxed);
  }

 private:
  std::uint64_t sum_ = 0;
};

struct Go {
  int unused;
};
class Source : public Reactor {
 public:
  Source(ActorRef to, std::uint64_t count) : to_(to), count_(count) { handle<&Source::on_go>(); }
  // In rounds, so that the sinks' events are spread over the run rather than queued at once.
  void on_go(const Go&) {
    for (std::uint64_t i = 0; i < 256 && sent_ < count_; ++i) send(to_, Tick{sent_++});
    if (sent_ < count_) send(self(), Go{});
  }

 private:
  ActorRef to_;
  std::uint64_t count_;
  std::uint64_t sent_ = 0;
};

double flush_rate(const std::filesystem::path& dir, std::chrono::milliseconds interval, std::uint64_t messages) {
  constexpr int kSinks = 16;
  g_received = 0;
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2});
  reheap::SpawnOptions sink;
  sink.worker = 0;
  sink.recording.mode = reheap::RecordingMode::kFile;
  sink.recording.directory = dir;
  sink.recording.flush_interval = interval;
  std::vector<ActorRef> sources;
  for (int i = 0; i < kSinks; ++i) {
    const ActorRef s = rt.spawn<Sink>(sink);
    reheap::SpawnOptions source;
    source.worker = 1;
    sources.push_back(rt.spawn<Source>(source, s, messages));
  }
  const Clock::time_point start = Clock::now();
  for (const ActorRef s : sources) rt.send(s, Go{});
  while (g_received.load() < kSinks * messages) std::this_thread::sleep_for(100us);
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return static_cast<double>(kSinks * messages) / seconds;
}

// ---- driver ---------------------------------------------------------------------------------------

class ScratchDir {
 public:
  ScratchDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "restart_bench.XXXXXX").string();
    if (::mkdtemp(pattern.data()) == nullptr) throw std::system_error(errno, std::generic_category(), "mkdtemp");
    path_ = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_;
};

struct Spread {
  double median, min, max;
};
Spread spread(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

std::uint64_t arg(int argc, char** argv, const char* name, std::uint64_t fallback) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::stoull(argv[i + 1]);
  }
  return fallback;
}

}  // namespace

int main(int argc, char** argv) {
  const std::uint64_t events = arg(argc, argv, "--events", 100'000);
  const std::uint64_t reps = std::max<std::uint64_t>(1, arg(argc, argv, "--reps", 3));
  const std::uint64_t messages = arg(argc, argv, "--messages", 20'000);
  try {
    std::printf("restart_bench: %llu events before the failure, %llu runs each (median [min, max])\n",
                static_cast<unsigned long long>(events), static_cast<unsigned long long>(reps));
    struct Mode {
      const char* name;
      reheap::RecordingMode mode;
    };
    for (const Mode m : {Mode{"kFile (exact)", reheap::RecordingMode::kFile}, Mode{"kRing (exact)", reheap::RecordingMode::kRing},
                         Mode{"unrecorded (from its checkpoint, loses them)", reheap::RecordingMode::kOff}}) {
      std::vector<double> restart, during, before;
      for (std::uint64_t r = 0; r < reps; ++r) {
        ScratchDir dir;
        const RestartSample s = restart_once(m.mode, dir.path(), events);
        restart.push_back(s.restart_ms);
        during.push_back(s.gap_during_ms);
        before.push_back(s.gap_before_ms);
      }
      const Spread t = spread(restart), d = spread(during), b = spread(before);
      // An unrecorded restart replays nothing: no rate.
      const std::string rate = m.mode == reheap::RecordingMode::kOff
                                   ? std::string("-")
                                   : std::to_string(static_cast<std::uint64_t>(static_cast<double>(events) / (t.median / 1e3)));
      std::printf("  %-46s restart %8.1f ms [%.1f, %.1f]  %9s events/s  longest pong gap: during %.2f ms [%.2f, %.2f], "
                  "before %.2f ms [%.2f, %.2f]\n",
                  m.name, t.median, t.min, t.max, rate.c_str(), d.median, d.min, d.max, b.median, b.min, b.max);
    }
    std::printf("restart_bench: flush interval, 16 recorded sinks x %llu messages, %llu alternating runs\n",
                static_cast<unsigned long long>(messages), static_cast<unsigned long long>(reps));
    const std::chrono::milliseconds intervals[] = {0ms, 1000ms, 100ms, 10ms};
    std::map<std::int64_t, std::vector<double>> rates;
    for (std::uint64_t r = 0; r < reps; ++r) {
      for (const auto interval : intervals) {
        ScratchDir dir;
        rates[interval.count()].push_back(flush_rate(dir.path(), interval, messages));
      }
    }
    const double base = spread(rates[0]).median;
    for (const auto interval : intervals) {
      const Spread s = spread(rates[interval.count()]);
      std::printf("  flush_interval %5lld ms: %10.0f msgs/s [%.0f, %.0f]  %.3fx of 0 ms\n",
                  static_cast<long long>(interval.count()), s.median, s.min, s.max, s.median / base);
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "restart_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
