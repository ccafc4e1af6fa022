// burst_rss: does a runtime's RSS come back after a burst? (The goal: RSS after a burst returns
// to within 10% of the live data within a second of idle.)
//
// One reactor, default RuntimeConfig, keeps a live set of 16 MiB (small objects and page runs),
// then, for each kind of burst, allocates 256 MiB of that kind, writes every page, frees it all,
// and goes idle. The process's RSS is sampled every 100 ms for 2 s after the burst; the table
// gives it above the baseline taken before the first burst (the live set's and the runtime's
// own memory) and the time it took to come back within 10% of the live set.
//
//   build/release/tools/bench/burst_rss [--kind huge|large|small|all]
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "process_memory.h"
#include "reheap/runtime.h"

namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t kLive = 16 * MiB;
constexpr std::size_t kBurst = 256 * MiB;

struct Burst {
  int kind;  // 0 huge (8 MiB blocks), 1 large (64 KiB page runs), 2 small (100 B blocks)
};
struct Done {};

std::size_t block_size(int kind) {
  switch (kind) {
    case 0: return 8 * MiB;
    case 1: return 64 * 1024;
    default: return 100;
  }
}

class Burster : public reheap::Reactor {
 public:
  explicit Burster(std::atomic<int>* finished) : finished_(finished) { handle<&Burster::on_burst>(); }
  void on_start() override {
    // The live set: half small blocks, half page runs, kept for the whole run.
    for (std::size_t b = 0; b < kLive / 2; b += 100) live_.push_back(fill(new char[100], 100));
    for (std::size_t b = 0; b < kLive / 2; b += 64 * 1024) live_.push_back(fill(new char[64 * 1024], 64 * 1024));
    finished_->fetch_add(1);
  }

 private:
  static char* fill(char* p, std::size_t n) {
    for (std::size_t i = 0; i < n; i += 64) p[i] = 1;
    return p;
  }
  void on_burst(const Burst& b) {
    const std::size_t size = block_size(b.kind);
    std::vector<char*> blocks;
    blocks.reserve(kBurst / size);
    for (std::size_t total = 0; total < kBurst; total += size) blocks.push_back(fill(new char[size], size));
    for (char* p : blocks) delete[] p;
    finished_->fetch_add(1);
  }
  std::atomic<int>* finished_;
  std::vector<char*> live_;
};

double mib(std::size_t b) { return static_cast<double>(b) / static_cast<double>(MiB); }

}  // namespace

int main(int argc, char** argv) {
  std::string only = "all";
  if (argc == 3 && std::strcmp(argv[1], "--kind") == 0) {
    only = argv[2];
  } else if (argc != 1) {
    std::fprintf(stderr, "usage: %s [--kind huge|large|small|all]\n", argv[0]);
    return 2;
  }
  reheap::Runtime rt(reheap::RuntimeConfig{});
  std::atomic<int> finished{0};
  const reheap::ActorRef burster = rt.spawn<Burster>(&finished);
  while (finished.load() < 1) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // the runtime's own start settles
  const std::size_t baseline = bench::current_rss_bytes();
  std::printf("live set %.0f MiB; baseline RSS %.1f MiB (live set, runtime, program)\n", mib(kLive), mib(baseline));
  const char* names[] = {"huge (8 MiB)", "large (64 KiB)", "small (100 B)"};
  const char* keys[] = {"huge", "large", "small"};
  for (int kind = 0; kind < 3; ++kind) {
    if (only != "all" && only != keys[kind]) continue;
    const int before = finished.load();
    rt.send(burster, Burst{kind});
    while (finished.load() == before) std::this_thread::sleep_for(std::chrono::microseconds(200));
    const auto idle_from = std::chrono::steady_clock::now();
    const std::size_t after_burst = bench::current_rss_bytes();
    double back_ms = -1;
    std::size_t at_1s = 0;
    std::size_t at_2s = 0;
    for (int step = 1; step <= 20; ++step) {
      std::this_thread::sleep_until(idle_from + std::chrono::milliseconds(100 * step));
      const std::size_t rss = bench::current_rss_bytes();
      const double excess = rss > baseline ? static_cast<double>(rss - baseline) : 0.0;
      if (back_ms < 0 && excess <= 0.10 * static_cast<double>(kLive)) back_ms = 100.0 * step;
      if (step == 10) at_1s = rss;
      if (step == 20) at_2s = rss;
    }
    const auto above = [baseline](std::size_t rss) { return rss > baseline ? mib(rss - baseline) : 0.0; };
    std::printf("%-15s burst %3.0f MiB: RSS above baseline right after %6.1f MiB, after 1 s idle %6.1f MiB, "
                "after 2 s %6.1f MiB; within 10%% of the live set after %s\n",
                names[kind], mib(kBurst), above(after_burst), above(at_1s), above(at_2s),
                back_ms < 0 ? "more than 2 s" : (std::to_string(static_cast<int>(back_ms)) + " ms").c_str());
    std::printf("RESULT test=burst_rss kind=%s after_mib=%.1f at_1s_mib=%.1f at_2s_mib=%.1f back_ms=%.0f\n",
                keys[kind], above(after_burst), above(at_1s), above(at_2s), back_ms);
  }
  rt.stop(burster);
  return 0;
}
