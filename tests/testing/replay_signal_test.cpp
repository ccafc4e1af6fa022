// A crash that ended the process with a signal, turned into a test: the recording process (this
// binary, run again with one test selected) dies of SIGSEGV in a recorded reactor's event; the
// test opens the bundle it left, replays up to the event before, reads the reactor's state there,
// and sees the crash recur in a death test.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "reheap/testing/replay.h"
#include "replay_support.h"

namespace replay_test {
namespace {

using reheap::testing::Replay;

constexpr const char* kRecordInto = "REHEAP_TEST_RECORD_SIGNAL_INTO";

struct Trade {
  std::uint32_t n;
};

// Keeps trades; a trade of 0 writes to a field of a null pointer, at address 16 (the bug).
class Blotter : public Reactor {
 public:
  Blotter() { handle<&Blotter::on_trade>(); }
  void on_trade(const Trade& t) {
    if (t.n == 0) {
      // Unknown to the compiler, which keeps the store; not null, which UBSan would stop first.
      volatile std::uintptr_t address = 16;
      *reinterpret_cast<volatile int*>(address) = 1;
    }
    trades_.push_back(t.n * 10);
  }
  const std::vector<std::uint32_t>& trades() const { return trades_; }

 private:
  std::vector<std::uint32_t> trades_;
};

// The recording process's part: runs only when the test below starts this binary to record.
TEST(ReplayFatalSignalChildProcess, Records) {
  const char* directory = std::getenv(kRecordInto);
  if (directory == nullptr) GTEST_SKIP() << "run by ACrashBySignalReplaysUpToItsEventAndRecurs";
  reheap::Runtime rt(reheap::RuntimeConfig{.workers = 2});
  reheap::SpawnOptions options;
  options.recording = file_recording(directory);
  const ActorRef r = rt.spawn<Blotter>(options);
  for (std::uint32_t n : {1u, 2u, 3u, 0u}) rt.send(r, Trade{n});
  rt.wait_idle();
  FAIL() << "the fifth event did not end the process";
}

TEST(ReplayFatalSignal, ACrashBySignalReplaysUpToItsEventAndRecurs) {
  TempDir dir;
  const std::string command = std::string(kRecordInto) + "=" + dir.path().string() +
                              " " + std::filesystem::read_symlink("/proc/self/exe").string() + " --gtest_filter=ReplayFatalSignalChildProcess.Records 2>&1";
  FILE* child = ::popen(command.c_str(), "r");
  ASSERT_NE(child, nullptr);
  std::string out;
  char buffer[4096];
  for (std::size_t n; (n = std::fread(buffer, 1, sizeof buffer, child)) > 0;) out.append(buffer, n);
  EXPECT_NE(::pclose(child), 0) << out;

  std::filesystem::path bundle;
  for (const auto& entry : std::filesystem::directory_iterator(dir.path())) bundle = entry.path() / "crash-5";
  ASSERT_TRUE(std::filesystem::exists(bundle / "manifest.json")) << out;

  Replay replay = Replay::open(bundle);
  ASSERT_EQ(replay.failing_event(), std::optional<std::uint64_t>(5));
  EXPECT_TRUE(replay.events().back().failed);
  replay.run_to(4);
  EXPECT_EQ(replay.reactor<Blotter>().trades(), (std::vector<std::uint32_t>{10, 20, 30}));
  // The crash itself, in a death test (not under the sanitizers, whose own reports of the fault
  // and threads make the forked child's end another matter).
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(replay.step(), "");
#endif
}

}  // namespace
}  // namespace replay_test
