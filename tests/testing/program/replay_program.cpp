// A recording program for the replay tests that need another process: `replay_program DIR`
// records a reactor whose fourth order throws, under a real runtime, leaving a crash bundle in
// DIR/reactor-<ref>/crash-5/, and prints the bundle's path (with REPLAY_PROGRAM_SEGV=1 in the
// environment, the fourth order writes to a field of a null pointer instead, and the process dies
// leaving the same bundle; the replaying process, given the same environment, dies too); started by `reheap-snap replay` (with
// REHEAP_REPLAY set), it replays the bundle instead, through replay_main_if_asked, as a user's
// program would.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "reheap/reactor.h"
#include "reheap/recording.h"
#include "reheap/runtime.h"
#include "reheap/testing/replay.h"

namespace {

struct Order {
  std::uint32_t n;
};

bool g_segv = false;  // order 0 writes to a field of a null pointer (address 16) rather than throwing

class OrderBook : public reheap::Reactor {
 public:
  OrderBook() { handle<&OrderBook::on_order>(); }
  void on_order(const Order& o) {
    if (o.n == 0 && g_segv) {
      // Unknown to the compiler, which keeps the store; not null, which UBSan would stop first.
      volatile std::uintptr_t address = 16;
      *reinterpret_cast<volatile int*>(address) = 1;
    }
    if (o.n == 0) throw std::runtime_error("order 0 is not allowed");
    orders_.push_back(o.n);
  }

 private:
  std::vector<std::uint32_t> orders_;
};

}  // namespace

int main(int argc, char** argv) {
  const char* segv = std::getenv("REPLAY_PROGRAM_SEGV");
  g_segv = segv != nullptr && std::string(segv) == "1";
  if (auto status = reheap::testing::replay_main_if_asked(argc, argv)) return *status;
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DIRECTORY (records a crash bundle there)\n", argv[0]);
    return 2;
  }
  reheap::RuntimeConfig config;
  config.workers = 2;
  reheap::Runtime rt(config);
  reheap::SpawnOptions options;
  options.recording.mode = reheap::RecordingMode::kFile;
  options.recording.directory = argv[1];
  options.recording.state_hash_every = 1;
  const reheap::ActorRef book = rt.spawn<OrderBook>(options);
  for (std::uint32_t n : {1u, 2u, 3u, 0u}) rt.send(book, Order{n});
  if (!rt.wait_idle()) return 1;
  const std::filesystem::path bundle =
      std::filesystem::path(argv[1]) / ("reactor-" + std::to_string(book.value())) / "crash-5";
  if (!std::filesystem::exists(bundle / "manifest.json")) return 1;
  std::printf("%s\n", bundle.c_str());
  return 0;
}
