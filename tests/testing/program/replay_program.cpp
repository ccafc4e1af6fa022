// A recording program for the replay tests that need another process: `replay_program DIR`
// records a reactor whose fourth order throws, under a real runtime, leaving a crash bundle in
// DIR/reactor-<ref>/crash-<event>/, and prints the bundle's path; started by `reheap-snap replay`
// (with REHEAP_REPLAY set), it replays the bundle instead, through replay_main_if_asked, as a
// user's program would. The environment varies it:
// - REPLAY_PROGRAM_SEGV=1: the fourth order writes to a field of a null pointer instead of
//   throwing, and the process dies leaving the same bundle; the replaying process, given the
//   same environment, dies too;
// - REPLAY_PROGRAM_NOTES=N: N notes of 24 KiB go before the orders, so that the log holds many
//   blocks (a block is flushed at 64 KiB) for the tests that cut it at each one;
// - REPLAY_PROGRAM_FIXED=1: order 0 is refused instead of throwing (the fixed build of a test);
// - REPLAY_PROGRAM_CLOCK=1: the reactor recorded is a ClockKeeper (clock_keeper.h) given ticks 1,
//   2, 3 and 0, whose second tick keeps the wall clock's time in its heap, read directly; its
//   bundle is crash-5 as well, and DIR/after-tick-2.snap and after-tick-3.snap hold the reactor after ticks 2 and 3;
//   REPLAY_PROGRAM_CLOCK=still: the same without the clock read;
// - REPLAY_PROGRAM_TRACE=FILE: the program appends a line to FILE as it starts, so that a test
//   can tell whether it ran at all.
// Built twice: replay_program_rebuilt (REPLAY_PROGRAM_REBUILT) is the same program with another
// build id.
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <vector>

#include "clock_keeper.h"
#include "reheap/reactor.h"
#include "reheap/recording.h"
#include "reheap/runtime.h"
#include "reheap/testing/replay.h"

namespace {

struct Order {
  std::uint32_t n;
};

struct Note {
  std::string text;
  MSGPACK_DEFINE(text)
};

bool g_segv = false;   // order 0 writes to a field of a null pointer (address 16) rather than throwing
bool g_fixed = false;  // order 0 is refused

#ifdef REPLAY_PROGRAM_REBUILT
constexpr const char* kBuild = "rebuilt";
#else
constexpr const char* kBuild = "first";
#endif

bool env_is(const char* name, const char* value) {
  const char* set = std::getenv(name);
  return set != nullptr && std::string(set) == value;
}

class OrderBook : public reheap::Reactor {
 public:
  OrderBook() {
    handle<&OrderBook::on_order>();
    handle<&OrderBook::on_note>();
  }
  void on_note(const Note& n) { noted_ += n.text.size(); }
  void on_order(const Order& o) {
    if (o.n == 0 && g_fixed) return;
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
  std::size_t noted_ = 0;
};

}  // namespace

int main(int argc, char** argv) {
  if (const char* trace = std::getenv("REPLAY_PROGRAM_TRACE")) {
    if (std::FILE* out = std::fopen(trace, "a")) {
      std::fprintf(out, "%s ran\n", kBuild);
      std::fclose(out);
    }
  }
  g_segv = env_is("REPLAY_PROGRAM_SEGV", "1");
  g_fixed = env_is("REPLAY_PROGRAM_FIXED", "1");
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
  const bool clock = env_is("REPLAY_PROGRAM_CLOCK", "1") || env_is("REPLAY_PROGRAM_CLOCK", "still");
  replay_test::g_keep_time = !env_is("REPLAY_PROGRAM_CLOCK", "still");
  const reheap::ActorRef book = clock ? rt.spawn<replay_test::ClockKeeper>(options) : rt.spawn<OrderBook>(options);
  const char* notes = std::getenv("REPLAY_PROGRAM_NOTES");
  const unsigned note_count = notes != nullptr ? static_cast<unsigned>(std::strtoul(notes, nullptr, 10)) : 0;
  for (unsigned i = 0; i < note_count; ++i) rt.send(book, Note{std::string(24 * 1024, static_cast<char>('a' + i % 26))});
  for (std::uint32_t n : {1u, 2u, 3u, 0u}) {
    if (!clock) {
      rt.send(book, Order{n});
      continue;
    }
    rt.send(book, replay_test::Tick{n});
    if (n == 2 || n == 3) {
      // The reactor after the clock read and after the tick that follows it, for a replay to
      // list the pages it differs in, and to start from the recorded time.
      if (!rt.wait_idle()) return 1;
      rt.snapshot(book, std::filesystem::path(argv[1]) / ("after-tick-" + std::to_string(n) + ".snap"));
    }
  }
  if (!rt.wait_idle()) return 1;
  const std::filesystem::path bundle = std::filesystem::path(argv[1]) / ("reactor-" + std::to_string(book.value())) /
                                       ("crash-" + std::to_string(5 + note_count));
  if (!std::filesystem::exists(bundle / "manifest.json")) return 1;
  std::printf("%s\n", bundle.c_str());
  return 0;
}
