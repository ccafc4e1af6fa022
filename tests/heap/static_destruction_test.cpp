// Process exit: static and thread-local objects are destroyed after every heap may be gone. A
// static holding system memory frees it normally at exit, however many heaps came and went; a
// static holding a block of a heap that was destroyed before exit is reported (checked builds) or
// ignored and counted (other builds), never a silent corruption.
//
// Each case runs in a child process (EXPECT_EXIT / EXPECT_DEATH) that calls std::exit, so that the
// static destructors really run.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/zone.h"
#include "misuse_support.h"

namespace reheap {
namespace {


const std::string& expected_greeting() {
  static const std::string text(200, 'g');
  return text;
}

// Constructed on first use, while no heap is current: its string lives in system memory.
struct Greeting {
  std::string text = expected_greeting();
  ~Greeting() {
    // A corrupted string would make the test pass silently if we did not look.
    if (text != expected_greeting()) std::_Exit(3);
  }
};

Greeting& greeting() {
  static Greeting instance;
  return instance;
}

void use_and_destroy_some_heaps() {
  for (int round = 0; round < 3; ++round) {
    HeapPtr heap = Heap::create();
    HeapScope scope(*heap);
    std::vector<std::string> words(100, std::string(50, 'w'));
    words.push_back(greeting().text);
  }
}

[[noreturn]] void exit_after_heaps_with_a_system_string_in_a_static() {
  greeting();
  use_and_destroy_some_heaps();
  std::exit(0);
}

[[noreturn]] void exit_after_heaps_with_a_system_string_in_a_thread_local() {
  std::thread worker([] {
    // Constructed in the worker while no heap is current: system memory, destroyed when the
    // worker exits, after its heap is gone.
    thread_local std::string label(150, 'l');
    HeapPtr heap = Heap::create();
    {
      HeapScope scope(*heap);
      // Abandoned: destroying the heap reclaims it.
      auto* words = new std::vector<std::string>(100, label);
      if (words->back() != label) std::_Exit(4);
    }
    heap.reset();
  });
  worker.join();
  greeting();
  use_and_destroy_some_heaps();
  std::exit(0);
}

// A static that outlives the heap its block came from and deletes the block at exit.
struct Keeper {
  int* block = nullptr;
  std::size_t ignored_frees_before = 0;
  ~Keeper() {
    delete block;
    std::fprintf(stderr, "keeper ignored frees: %zu\n",
                 Zone::stats().ignored_frees - ignored_frees_before);
  }
};

Keeper& keeper() {
  static Keeper instance;
  return instance;
}

[[noreturn]] void exit_with_a_static_holding_a_block_of_a_destroyed_heap() {
  Keeper& k = keeper();
  HeapPtr heap = Heap::create();
  {
    HeapScope scope(*heap);
    k.block = new int(42);
  }
  heap.reset();
  k.ignored_frees_before = Zone::stats().ignored_frees;
  std::exit(0);
}

class StaticDestructionDeathTest : public testing::Test {
 protected:
  void SetUp() override { testing::FLAGS_gtest_death_test_style = "threadsafe"; }
};

TEST_F(StaticDestructionDeathTest, AStaticHoldingSystemMemoryIsDestroyedCleanlyAfterHeapsAreGone) {
  EXPECT_EXIT(exit_after_heaps_with_a_system_string_in_a_static(), testing::ExitedWithCode(0),
              "");
}

TEST_F(StaticDestructionDeathTest,
       AThreadLocalHoldingSystemMemoryIsDestroyedCleanlyAfterItsThreadsHeapIsGone) {
  EXPECT_EXIT(exit_after_heaps_with_a_system_string_in_a_thread_local(),
              testing::ExitedWithCode(0), "");
}

// Checked builds only: release builds ignore and count it (the test below).
#if defined(REHEAP_TEST_CHECKS)
TEST_F(StaticDestructionDeathTest, AStaticDeletingABlockOfADestroyedHeapAtExitIsReported) {
  EXPECT_DEATH(exit_with_a_static_holding_a_block_of_a_destroyed_heap(), "no live heap");
}
#endif  // defined(REHEAP_TEST_CHECKS)

// Release builds only: checked builds report it instead (the test above).
#if !defined(REHEAP_TEST_CHECKS)
TEST_F(StaticDestructionDeathTest, AStaticDeletingABlockOfADestroyedHeapAtExitIsIgnored) {
  EXPECT_EXIT(exit_with_a_static_holding_a_block_of_a_destroyed_heap(),
              testing::ExitedWithCode(0), "keeper ignored frees: 1");
}
#endif  // !defined(REHEAP_TEST_CHECKS)

}  // namespace
}  // namespace reheap
