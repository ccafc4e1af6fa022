// The held run (HeapState::held_run, page_runs.cpp): the page run of at most 64 pages freed last
// waits outside the bins, still marked allocated, and the next request of its length takes it
// back at once; freeing another run, a purge or the limit frees it for real, merged with its free
// neighbours. A second free of it is a double free.
#include <gtest/gtest.h>

#include <cstring>

#include "reheap/heap.h"
#include "reheap/zone.h"
#include "misuse_support.h"

namespace reheap::held_run_test {
namespace {

constexpr std::size_t KiB = 1024;

TEST(HeldRun, AFreedRunServesTheNextRequestOfItsLength) {
  HeapPtr heap = Heap::create();
  void* keep = heap->allocate(40 * KiB);  // so that the run is not alone in its chunk
  void* p = heap->allocate(64 * KiB);
  std::memset(p, 1, 64 * KiB);
  heap->deallocate(p);
  HeapStats s = heap->stats();
  EXPECT_EQ(s.large_live_blocks, 1u);
  EXPECT_EQ(s.large_live_bytes, 40 * KiB);
  EXPECT_EQ(s.large_free_bytes, 64 * KiB) << "the held run is free memory kept for reuse";
  void* other = heap->allocate(32 * KiB);
  EXPECT_NE(other, p) << "a request of another length leaves the held run";
  EXPECT_EQ(heap->allocate(64 * KiB), p);
  s = heap->stats();
  EXPECT_EQ(s.large_live_blocks, 3u);
  EXPECT_EQ(s.large_live_bytes, (40 + 64 + 32) * KiB);
  heap->deallocate(other);
  heap->deallocate(p);
  heap->deallocate(keep);
}

TEST(HeldRun, FreeingAnotherRunOrAPurgeFreesItForRealMergedWithItsNeighbours) {
  HeapPtr heap = Heap::create();
  auto* a = static_cast<char*>(heap->allocate(64 * KiB));
  auto* b = static_cast<char*>(heap->allocate(64 * KiB));
  void* fence = heap->allocate(64 * KiB);  // keeps the two runs from the chunk's unused tail
  ASSERT_EQ(a + 64 * KiB, b) << "a fresh heap no longer places two runs side by side";
  heap->deallocate(a);  // held
  heap->deallocate(b);  // held instead; a goes to the bins
  EXPECT_EQ(heap->stats().large_free_bytes, 128 * KiB);
  heap->purge_free_runs();  // frees b for real: it merges with a
  EXPECT_EQ(heap->stats().large_free_bytes, 128 * KiB);
  EXPECT_EQ(heap->allocate(128 * KiB), a) << "a and b were merged into one free run";
  heap->deallocate(fence);
}

TEST(HeldRun, RunsLongerThan64PagesAreNotHeld) {
  HeapPtr heap = Heap::create();
  void* keep = heap->allocate(40 * KiB);
  void* p = heap->allocate(512 * KiB);
  heap->deallocate(p);
  // A request of one page less splits the freed run in the bins, which a held run never is.
  auto* q = static_cast<char*>(heap->allocate(508 * KiB));
  EXPECT_GE(q, static_cast<char*>(p));
  EXPECT_LT(q, static_cast<char*>(p) + 512 * KiB);
  heap->deallocate(q);
  heap->deallocate(keep);
}

// Release builds only: checked builds abort on it (MisuseDeathTest.DeletingAPageRunTwiceAborts).
#if !defined(REHEAP_TEST_CHECKS)
TEST(HeldRun, ReleaseBuildsIgnoreAndCountASecondFreeOfTheHeldRun) {
  HeapPtr heap = Heap::create();
  void* keep = heap->allocate(40 * KiB);
  void* p = heap->allocate(64 * KiB);
  heap->deallocate(p);
  const std::size_t ignored = Zone::stats().ignored_frees;
  heap->deallocate(p);
  EXPECT_EQ(Zone::stats().ignored_frees, ignored + 1);
  void* first = heap->allocate(64 * KiB);
  void* second = heap->allocate(64 * KiB);
  EXPECT_EQ(first, p);
  EXPECT_NE(second, p) << "the run was handed out twice";
  heap->deallocate(first);
  heap->deallocate(second);
  heap->deallocate(keep);
}
#endif  // !defined(REHEAP_TEST_CHECKS)

}  // namespace
}  // namespace reheap::held_run_test
