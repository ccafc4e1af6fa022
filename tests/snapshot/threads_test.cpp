// Threads: heaps used on different threads are saved on their own threads at the same time - full
// snapshots and increments, while the other heaps keep allocating - and each chain restores to
// its own heap's state. Write tracking of one heap never loses or invents a write of another.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

TEST(SnapshotThreads, HeapsOnSeveralThreadsSaveConcurrently) {
  constexpr int kThreads = 3;
  constexpr std::uint64_t kSteps = kSlowBuild ? 6 : 12;
  const Case& c = find_case("gens");
  TempDir dir;
  std::vector<std::uint64_t> digests(kThreads);
  std::vector<std::string> errors(kThreads);
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      try {
        HeapPtr heap = Heap::create();
        build_in(*heap, c, 80 + static_cast<std::uint64_t>(t));
        Snapshotter snapshotter(*heap);
        ready.fetch_add(1);
        while (ready.load() < kThreads) std::this_thread::yield();
        const std::string prefix = "t" + std::to_string(t) + "-";
        snapshotter.save(dir / (prefix + "0.snap"));
        for (std::uint64_t g = 1; g <= kSteps; ++g) {
          mutate_in(*heap, c, g * 10 + static_cast<std::uint64_t>(t));
          snapshotter.save_increment(dir / (prefix + std::to_string(g) + ".snap"));
        }
        digests[static_cast<std::size_t>(t)] = digest_of(*heap, c);
      } catch (const std::exception& e) {
        errors[static_cast<std::size_t>(t)] = e.what();
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < kThreads; ++t) {
    SCOPED_TRACE("thread " + std::to_string(t));
    ASSERT_EQ(errors[static_cast<std::size_t>(t)], "");
    const auto latest = dir / ("t" + std::to_string(t) + "-" + std::to_string(kSteps) + ".snap");
    HeapPtr heap = restore(latest);
    EXPECT_EQ(digest_of(*heap, c), digests[static_cast<std::size_t>(t)]);
  }
}

}  // namespace
}  // namespace reheap::snaptest
