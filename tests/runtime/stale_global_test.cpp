// A handler that grows a global container moves the container's buffer into the reactor's heap
// (plain `new` in a hook allocates there). When the reactor stops, its heap goes with it, and the
// global points into memory no heap owns. Checked builds report the next access naming the
// destroyed heap, before any sanitizer's handler; release builds cannot (docs/runtime.md).
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "misuse_support.h"
#include "reheap/heap_scope.h"
#include "reheap/runtime.h"

namespace reheap {
namespace {

// Grown only inside the death tests' child processes: the parent's stays empty, so that its
// destructor at exit frees nothing.
std::vector<std::string> g_names;
std::vector<std::string> g_names_safe;

// The mistake: push_back from a hook reallocates g_names' buffer in this reactor's heap.
class GrowsAGlobal : public Reactor {
 public:
  void on_start() override {
    for (int i = 0; i < 8; ++i) g_names.push_back("a name longer than the small-string buffer");
    stop();
  }
};

// The fix: the growth happens with no heap current, in the system allocator.
class GrowsAGlobalOutsideItsHeap : public Reactor {
 public:
  void on_start() override {
    {
      HeapScope system(nullptr);
      for (int i = 0; i < 8; ++i) g_names_safe.push_back("a name longer than the small-string buffer");
    }
    stop();
  }
};

// Checked builds only: only they make a destroyed heap's chunk inaccessible.
#if defined(REHEAP_TEST_CHECKS)
class StaleGlobalDeathTest : public testsupport::CheckedDeathTest {};

TEST_F(StaleGlobalDeathTest, ReadingAGlobalGrownByAStoppedReactorIsReportedNamingItsHeap) {
  EXPECT_DEATH(
      {
        Runtime rt(RuntimeConfig{.workers = 1});
        const ActorRef r = rt.spawn<GrowsAGlobal>();
        rt.wait_stopped(r, std::chrono::seconds(10));
        // The runtime runs on; main reads the global, as a program reporting its results would.
        std::fprintf(stderr, "%zu\n", g_names[0].size());
      },
      "reheap: access to 0x[0-9a-f]+ through a stale pointer: the address belongs to heap "
      "[0-9]+ \\(first chunk [0-9]+, generation [0-9]+\\)");
}
#endif  // defined(REHEAP_TEST_CHECKS)

TEST(StaleGlobal, GrowingAGlobalWithNoHeapCurrentOutlivesTheReactor) {
  {
    Runtime rt(RuntimeConfig{.workers = 1});
    const ActorRef r = rt.spawn<GrowsAGlobalOutsideItsHeap>();
    ASSERT_TRUE(rt.wait_stopped(r, std::chrono::seconds(10)));
  }
  ASSERT_EQ(g_names_safe.size(), 8u);
  EXPECT_EQ(g_names_safe[7], "a name longer than the small-string buffer");
  HeapScope system(nullptr);  // freed where it was allocated
  g_names_safe.clear();
  g_names_safe.shrink_to_fit();
}

}  // namespace
}  // namespace reheap
