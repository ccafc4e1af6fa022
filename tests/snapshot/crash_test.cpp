// Crash safety: Snapshotter::save() replaces its file atomically. A process killed with SIGKILL at
// any moment - while it writes, fsyncs, renames, or between saves - leaves the file either the
// complete old snapshot or the complete new one: it verifies, and it restores to a consistent
// state no older than the last one seen. Temporary files do not pile up across crashes. Saves
// racing to one path from two threads never expose anything but a complete snapshot either.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <cstdio>
#include <random>
#include <set>
#include <string>
#include <thread>

#include "helper_modes.h"
#include "cases.h"
#include "reheap/snapshot.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

// Reads the child's output until it says "ready"; false if it ended first.
bool wait_ready(Child& child, std::string& output) {
  char buffer[256];
  while (output.find("ready") == std::string::npos) {
    const ssize_t n = ::read(child.output_fd, buffer, sizeof buffer);
    if (n == 0) return false;
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    output.append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

TEST(SnapshotCrash, KilledWhileSavingLeavesACompleteOldOrNewFile) {
  REQUIRE_LAYOUT_STABLE();
  TempDir dir;
  const auto file = dir / "state.snap";
  const int kills = kSlowBuild ? 15 : 40;
  const auto seed = static_cast<std::uint64_t>(
      std::chrono::steady_clock::now().time_since_epoch().count());
  std::mt19937_64 rng(seed);
  RecordProperty("seed", std::to_string(seed));
  std::uint64_t last_step = 0, max_step = 0;
  std::set<std::string> temporaries;
  int before_first_save = 0;
  for (int k = 0; k < kills; ++k) {
    SCOPED_TRACE("kill " + std::to_string(k) + " (seed " + std::to_string(seed) + ")");
    Child child = spawn_self({"--save-loop", file.string()});
    std::string output;
    // Mostly kill during the saves that follow the first one; now and then without waiting,
    // which may hit the restore at start-up or the first save - sometimes with no file yet.
    const bool wait = k % 4 != 3;
    if (k % 8 == 7) {
      std::filesystem::remove(file);
      last_step = 0;
    }
    if (wait && !wait_ready(child, output)) {
      const ChildResult r = finish(child);
      FAIL() << "the saving helper ended before its first save: " << r.describe() << output;
    }
    std::this_thread::sleep_for(std::chrono::microseconds(rng() % 20000));
    ::kill(child.pid, SIGKILL);
    const ChildResult r = finish(child);
    if (!(WIFSIGNALED(r.wait_status) && WTERMSIG(r.wait_status) == SIGKILL)) {
      ADD_FAILURE() << "the helper failed before it was killed: " << r.describe() << output;
      break;
    }
    if (!std::filesystem::exists(file)) {
      EXPECT_FALSE(wait) << "the helper said ready, yet there is no file";
      ++before_first_save;
      continue;
    }
    const Outcome verified = attempt([&] { verify_snapshot(file); });
    ASSERT_EQ(verified.kind, Outcome::Kind::kReturned) << verified.describe();
    {
      HeapPtr heap = restore(file);
      ASSERT_EQ(check_loop_root(*heap), "");
      const std::uint64_t step = static_cast<const LoopRoot*>(heap->root())->step;
      EXPECT_GE(step, last_step) << "the file went back to an older state";
      last_step = step;
      max_step = std::max(max_step, step);
    }
    std::size_t others = 0;
    for (const std::string& name : dir.entries()) {
      if (name == "state.snap") continue;
      ++others;
      temporaries.insert(name);
    }
    EXPECT_LE(others, 1u) << "temporary files pile up across crashes";
  }
  std::string seen;
  for (const std::string& name : temporaries) seen += " " + name;
  std::printf("%d kills, highest step %llu, killed before the first save %d times; temporary "
              "files seen:%s\n",
              kills, static_cast<unsigned long long>(max_step), before_first_save,
              seen.empty() ? " none" : seen.c_str());
  EXPECT_GT(max_step, 0u) << "no kill came after a save";
}

// Two threads saving two heaps to one path: each rename replaces the file atomically, so a
// reader always finds one complete snapshot or the other, and no save fails for the other's sake.
TEST(SnapshotCrash, ConcurrentSavesToOnePathNeverExposeAnIncompleteFile) {
  TempDir dir;
  const auto file = dir / "shared.snap";
  {
    HeapPtr heap = Heap::create();
    Snapshotter(*heap).save(file);
  }
  std::atomic<bool> stop{false};
  std::atomic<int> saves{0};
  std::vector<std::string> failures;
  std::mutex failures_mutex;
  auto note = [&](const std::string& what) {
    std::lock_guard<std::mutex> lock(failures_mutex);
    if (failures.size() < 5) failures.push_back(what);
  };
  auto writer = [&](std::uint64_t seed) {
    HeapPtr heap = Heap::create();
    auto* block = static_cast<unsigned char*>(heap->allocate(std::size_t{2} << 20));
    fill_words(block, std::size_t{2} << 20, seed);
    Snapshotter snapshotter(*heap);
    for (int i = 0; i < 20; ++i) {
      const Outcome o = attempt([&] { snapshotter.save(file); });
      if (o.kind != Outcome::Kind::kReturned) note("save: " + o.describe());
      ++saves;
    }
  };
  std::thread reader([&] {
    while (!stop.load()) {
      const Outcome o = attempt([&] { verify_snapshot(file); });
      if (o.kind != Outcome::Kind::kReturned) note("verify: " + o.describe());
    }
  });
  std::thread a(writer, 1), b(writer, 2);
  a.join();
  b.join();
  stop = true;
  reader.join();
  EXPECT_EQ(saves.load(), 40);
  for (const std::string& f : failures) ADD_FAILURE() << f;
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"shared.snap"});
}

}  // namespace
}  // namespace reheap::snaptest
