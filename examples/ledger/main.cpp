// The ledger service, run under load until it fails, recorded so that the failure can be
// replayed in a test.
//
//   ledger --record DIR [--seconds N] [--tellers N] [--workers N] [--seed N] [--dormant-ms N]
//
// A Ledger (ledger.h) and --tellers Tellers (teller.h, default 3) run on a reheap::Runtime with
// --workers worker threads (default 2), the tellers spread over the workers so that their
// transfers reach the ledger concurrently, in an order no run repeats. The ledger is recorded
// (RecordingMode::kFile) into DIR: its anchor, then every event it handles and every answer the
// runtime gives it. The program prints its progress every second and stops when the ledger fails
// or after --seconds (default 120).
//
// When the ledger's hook throws, the runtime writes a crash bundle - the anchor, the log up to and
// including the failing event, and manifest.json - into DIR/reactor-<ref>/crash-<event>/; the
// program prints the failure and the bundle's path and exits with status 1. Without a failure it
// exits with 0. `ledger` is built with the shipped settlement (settlement_v1.cpp) and fails after
// a while; `ledger_fixed`, built from the same sources with settlement_v2.cpp, does not.
//
// --dormant-ms N sets how long an account may stay idle before it is escheated (default 3000).
// Nothing can fail before the first accounts turn dormant, and then it takes an account that
// turns dormant in the very cycle in which a transfer names it: with the defaults, in six runs,
// that happened 3 to 9 seconds in, after 570 to 1,700 settlements and 190,000 to 590,000
// transfers. It is a matter of chance, so a run may take longer. A test that wants a bundle
// sooner asks for a shorter dormancy.
//
// --seed N makes the reactors' random() sequences the same in every run (the order in which
// transfers from different tellers interleave still differs): without it they come from
// getrandom(2).
//
// `reheap-snap replay BUNDLE` replays a bundle by starting the program that recorded it (or the
// one given with --program, e.g. ledger_fixed) with REHEAP_REPLAY set: main then replays the
// bundle in place of its usual work (reheap::testing::replay_main_if_asked). Built only when the
// test kit is (it needs GoogleTest).
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include "ledger.h"
#include "reheap/runtime.h"
#if LEDGER_REPLAY_MAIN
#include "reheap/testing/replay.h"
#endif
#include "settlement.h"
#include "teller.h"

namespace {

// ---- what main learns while the runtime runs --------------------------------------------------

// Written by the Monitor and the failure callback on worker threads, read by main.
std::atomic<std::uint64_t> g_cycles{0};
std::atomic<std::uint64_t> g_posted{0};
std::atomic<std::uint64_t> g_escheated{0};
std::atomic<bool> g_failed{false};
std::mutex g_failure_mutex;
reheap::ReactorFailed g_failure;

// Subscribes to the ledger's statements and publishes their totals for main's progress lines.
class Monitor final : public reheap::Reactor {
 public:
  explicit Monitor(reheap::ActorRef ledger) : ledger_(ledger) { handle<&Monitor::on_statement>(); }
  void on_start() override { send(ledger_, ledger::Subscribe{0}); }

 private:
  void on_statement(const ledger::Statement& s) {
    g_cycles.store(s.cycle, std::memory_order_relaxed);
    g_posted.fetch_add(s.posted, std::memory_order_relaxed);
    g_escheated.fetch_add(s.escheated.size(), std::memory_order_relaxed);
  }

  reheap::ActorRef ledger_;
};

// ---- main ---------------------------------------------------------------------------------------

[[noreturn]] void usage(int status) {
  std::fprintf(status == 0 ? stdout : stderr,
               "usage: %s --record DIR [--seconds N] [--tellers N] [--workers N] [--seed N]\n"
               "       [--dormant-ms N]\n",
               ledger::settlement_version()[1] == '1' ? "ledger" : "ledger_fixed");
  std::exit(status);
}

std::uint64_t number(const char* text) {
  char* end = nullptr;
  const std::uint64_t n = std::strtoull(text, &end, 10);
  if (end == text || *end != '\0') usage(2);
  return n;
}

// The bundle the runtime wrote for the failed ledger (the newest, should there be several).
std::filesystem::path find_bundle(const std::filesystem::path& dir, reheap::ActorRef ledger) {
  std::filesystem::path found;
  const std::filesystem::path reactor = dir / ("reactor-" + std::to_string(ledger.value()));
  std::error_code error;
  for (const auto& entry : std::filesystem::directory_iterator(reactor, error)) {
    if (entry.path().filename().string().starts_with("crash-") && entry.path() > found) found = entry.path();
  }
  return found;
}

}  // namespace

int main(int argc, char** argv) {
#if LEDGER_REPLAY_MAIN
  if (const std::optional<int> status = reheap::testing::replay_main_if_asked(argc, argv)) return *status;
#endif
  std::filesystem::path record;
  std::uint64_t seconds = 120;
  std::uint64_t tellers = 3;
  std::uint64_t workers = 2;
  std::uint64_t seed = 0;
  bool seeded = false;
  ledger::LedgerConfig ledger_config;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--record") == 0 && has_value) {
      record = argv[++i];
    } else if (std::strcmp(argv[i], "--seconds") == 0 && has_value) {
      seconds = number(argv[++i]);
    } else if (std::strcmp(argv[i], "--tellers") == 0 && has_value) {
      tellers = number(argv[++i]);
    } else if (std::strcmp(argv[i], "--workers") == 0 && has_value) {
      workers = number(argv[++i]);
    } else if (std::strcmp(argv[i], "--seed") == 0 && has_value) {
      seed = number(argv[++i]);
      seeded = true;
    } else if (std::strcmp(argv[i], "--dormant-ms") == 0 && has_value) {
      ledger_config.dormant_after = std::chrono::milliseconds(number(argv[++i]));
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      usage(0);
    } else {
      usage(2);
    }
  }
  if (record.empty() || tellers == 0 || workers == 0 || workers > 64) usage(2);

  reheap::RuntimeConfig config;
  config.workers = static_cast<int>(workers);
  if (seeded) config.entropy = reheap::EntropySource::seeded(seed);
  config.on_failure = [](const reheap::ReactorFailed& f) {
    {
      const std::lock_guard<std::mutex> lock(g_failure_mutex);
      g_failure = f;
    }
    g_failed.store(true, std::memory_order_release);
    g_failed.notify_all();
  };
  reheap::Runtime rt(config);

  reheap::SpawnOptions ledger_options;
  ledger_options.name = "ledger";
  ledger_options.worker = 0;
  ledger_options.recording.mode = reheap::RecordingMode::kFile;
  ledger_options.recording.directory = record;
  const reheap::ActorRef bank = rt.spawn<ledger::Ledger>(ledger_options, ledger_config);
  rt.spawn<Monitor>(reheap::SpawnOptions{}, bank);
  for (std::uint64_t i = 0; i < tellers; ++i) {
    reheap::SpawnOptions options;
    options.name = "teller";
    options.worker = static_cast<int>((i + 1) % workers);
    rt.spawn<ledger::Teller>(options, bank, ledger::TellerConfig{});
  }
  std::printf("ledger (settlement %s, reactor %llu) and %llu tellers on %llu workers; recording "
              "the ledger into %s\n",
              ledger::settlement_version(), static_cast<unsigned long long>(bank.value()),
              static_cast<unsigned long long>(tellers), static_cast<unsigned long long>(workers),
              record.c_str());

  const auto start = std::chrono::steady_clock::now();
  const auto deadline = start + std::chrono::seconds(seconds);
  auto next_report = start + std::chrono::seconds(1);
  while (!g_failed.load(std::memory_order_acquire) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (std::chrono::steady_clock::now() < next_report) continue;
    next_report += std::chrono::seconds(1);
    std::printf("  %3llds: %llu settlements, %llu transfers posted, %llu dormant accounts escheated\n",
                static_cast<long long>(
                    std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now() - start).count()),
                static_cast<unsigned long long>(g_cycles.load()), static_cast<unsigned long long>(g_posted.load()),
                static_cast<unsigned long long>(g_escheated.load()));
    std::fflush(stdout);
  }
  rt.shutdown();

  if (!g_failed.load(std::memory_order_acquire)) {
    std::printf("no failure in %llu s: %llu settlements, %llu transfers posted\n",
                static_cast<unsigned long long>(seconds), static_cast<unsigned long long>(g_cycles.load()),
                static_cast<unsigned long long>(g_posted.load()));
    return 0;
  }
  std::string what, hook;
  {
    const std::lock_guard<std::mutex> lock(g_failure_mutex);
    what = g_failure.what;
    hook = g_failure.handler;
  }
  std::printf("the ledger failed in %s after %llu settlements and %llu transfers: %s\n", hook.c_str(),
              static_cast<unsigned long long>(g_cycles.load()), static_cast<unsigned long long>(g_posted.load()),
              what.c_str());
  const std::filesystem::path bundle = find_bundle(record, bank);
  if (bundle.empty()) {
    std::printf("no crash bundle was written (see the runtime's messages above)\n");
    return 1;
  }
  std::cout << std::ifstream(bundle / "manifest.json").rdbuf();
  std::printf("crash bundle: %s\n", bundle.c_str());
  return 1;
}
