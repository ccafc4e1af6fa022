// Retention (zone.h, "Retention"): a freed huge block's run is kept for the heap's next huge
// block, within the heap's retain limit and count; what is kept counts in committed bytes and
// gives way to the heap's limit; purging discards its pages without changing where later blocks
// go; a second free of a kept block is still a double free.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_digest.h"
#include "reheap/zone.h"
#include "misuse_support.h"

namespace reheap::retention_test {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

// Turns retention on for the test (checked builds start with it off) and restores the settings.
class Retention : public ::testing::Test {
 protected:
  void SetUp() override {
    before_ = Zone::set_retention(RetainConfig{64 * MiB, 256 * MiB, 60'000});
  }
  void TearDown() override { Zone::set_retention(before_); }

 private:
  RetainConfig before_;
};

TEST_F(Retention, AFreedHugeBlockIsKeptAndServesTheNextOneWithoutGivingPagesBack) {
  HeapPtr heap = Heap::create();
  ASSERT_EQ(heap->retain_limit(), 64 * MiB);
  auto* p = static_cast<char*>(heap->allocate(8 * MiB));
  ASSERT_NE(p, nullptr);
  std::memset(p, 7, 8 * MiB);
  const HeapStats live = heap->stats();
  heap->deallocate(p);
  HeapStats s = heap->stats();
  EXPECT_EQ(s.huge_live_blocks, 0u);
  EXPECT_EQ(s.huge_retained_blocks, 1u);
  EXPECT_EQ(s.huge_retained_bytes, 8 * MiB + 4096);
  EXPECT_EQ(s.retained_resident_bytes, 8 * MiB);
  EXPECT_EQ(s.committed_bytes, live.committed_bytes) << "what is kept stays counted";
  EXPECT_EQ(s.os.madvise, live.os.madvise) << "a kept block is not given back";
  EXPECT_GE(Zone::retained_resident_bytes(), 8 * MiB);

  // A huge block of up to four times less takes the run whole: its pages stay in use.
  auto* q = static_cast<char*>(heap->allocate(4 * MiB));
  EXPECT_EQ(q, p);
  s = heap->stats();
  EXPECT_EQ(s.huge_live_blocks, 1u);
  EXPECT_EQ(s.huge_retained_blocks, 0u);
  EXPECT_EQ(s.retained_resident_bytes, 0u);
  EXPECT_EQ(s.committed_bytes, live.committed_bytes);
  EXPECT_EQ(heap->usable_size(q), 8 * MiB);
  EXPECT_EQ(s.huge_live_bytes, 8 * MiB) << "live bytes are the block's usable size";
  heap->deallocate(q);
  // A much smaller one takes it too, and the pages past it are given back.
  auto* small = static_cast<char*>(heap->allocate(3 * MiB / 2));
  EXPECT_EQ(small, p);
  EXPECT_EQ(heap->usable_size(small), 3 * MiB / 2);
  EXPECT_EQ(heap->stats().committed_bytes, live.committed_bytes - 8 * MiB + 3 * MiB / 2);
  heap->deallocate(small);
  // And a bigger one grows the run again.
  auto* r = static_cast<char*>(heap->allocate(16 * MiB));
  EXPECT_EQ(r, p);
  std::memset(r, 1, 16 * MiB);
  EXPECT_EQ(heap->stats().committed_bytes, live.committed_bytes + 8 * MiB);
  heap->deallocate(r);
}

TEST_F(Retention, TheRetainLimitAndTheRunCountBoundWhatIsKept) {
  HeapPtr heap = Heap::create();
  const std::size_t empty = heap->stats().committed_bytes;
  heap->set_retain_limit(10 * MiB);
  void* big = heap->allocate(12 * MiB);  // more than the limit: given back on free
  ASSERT_NE(big, nullptr);
  heap->deallocate(big);
  EXPECT_EQ(heap->stats().huge_retained_blocks, 0u);

  std::vector<void*> blocks;
  for (int i = 0; i < 12; ++i) blocks.push_back(heap->allocate(2 * MiB));
  for (void* b : blocks) heap->deallocate(b);
  HeapStats s = heap->stats();
  EXPECT_EQ(s.huge_retained_blocks, 4u) << "10 MiB holds four runs of 2 MiB and a header page";
  EXPECT_LE(s.huge_retained_bytes, 10 * MiB);

  heap->set_retain_limit(64 * MiB);
  blocks.clear();
  for (int i = 0; i < 12; ++i) blocks.push_back(heap->allocate(1 * MiB + 4096));
  for (void* b : blocks) heap->deallocate(b);
  EXPECT_EQ(heap->stats().huge_retained_blocks, 8u) << "eight runs at most";

  heap->set_retain_limit(0);
  s = heap->stats();
  EXPECT_EQ(s.huge_retained_blocks, 0u);
  EXPECT_EQ(s.huge_retained_bytes, 0u);
  EXPECT_EQ(s.committed_bytes, empty) << "everything kept went back";
}

TEST_F(Retention, PurgingGivesThePagesBackButNotTheRunsSoAddressesAndDigestsStay) {
  HeapPtr purged = Heap::create();
  HeapPtr kept = Heap::create();
  for (Heap* h : {purged.get(), kept.get()}) {
    auto* p = static_cast<char*>(h->allocate(6 * MiB));
    ASSERT_NE(p, nullptr);
    std::memset(p, 3, 6 * MiB);
    h->deallocate(p);
  }
  const std::uint64_t digest_before = used_pages_digest(*purged);
  const std::size_t zone_before = Zone::retained_resident_bytes();
  EXPECT_EQ(purged->purge_retained(), 6 * MiB);
  EXPECT_EQ(purged->purge_retained(), 0u) << "nothing left to purge";
  EXPECT_EQ(Zone::retained_resident_bytes(), zone_before - 6 * MiB);
  HeapStats s = purged->stats();
  EXPECT_EQ(s.huge_retained_blocks, 1u);
  EXPECT_EQ(s.retained_resident_bytes, 0u);
  EXPECT_EQ(used_pages_digest(*purged), digest_before) << "a kept block is no part of the state";

  // Where the next huge block goes does not depend on whether the pages were purged: the same
  // offset in the heap's own run in both heaps.
  auto* a = static_cast<char*>(purged->allocate(5 * MiB));
  auto* b = static_cast<char*>(kept->allocate(5 * MiB));
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(purged->stats().huge_retained_blocks, 0u);
  EXPECT_EQ(kept->stats().huge_retained_blocks, 0u);
  EXPECT_EQ(a[0], 0) << "purged pages read as zero";
  EXPECT_EQ(purged->stats().committed_bytes, kept->stats().committed_bytes);
  purged->deallocate(a);
  kept->deallocate(b);
}

TEST_F(Retention, TheZoneWideResidentBoundAndTheDelayPurgeAtOnce) {
  Zone::set_retention(RetainConfig{64 * MiB, 0, 60'000});  // nothing may stay resident
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(3 * MiB);
  ASSERT_NE(p, nullptr);
  heap->deallocate(p);
  HeapStats s = heap->stats();
  EXPECT_EQ(s.huge_retained_blocks, 1u);
  EXPECT_EQ(s.retained_resident_bytes, 0u);

  Zone::set_retention(RetainConfig{64 * MiB, 256 * MiB, 0});  // no delay
  p = heap->allocate(3 * MiB);
  heap->deallocate(p);
  s = heap->stats();
  EXPECT_EQ(s.huge_retained_blocks, 1u);
  EXPECT_EQ(s.retained_resident_bytes, 0u);
}

TEST_F(Retention, TheHeapLimitTakesBackWhatIsKeptBeforeRefusing) {
  HeapPtr heap = Heap::create(HeapConfig{24 * MiB});
  void* p = heap->allocate(20 * MiB);
  ASSERT_NE(p, nullptr);
  heap->deallocate(p);
  EXPECT_EQ(heap->stats().huge_retained_blocks, 1u);
  // 8 MiB of page runs do not fit beside the kept 20 MiB: the heap gives the run back.
  std::vector<void*> runs;
  for (int i = 0; i < 8; ++i) {
    runs.push_back(heap->allocate(1 * MiB));
    ASSERT_NE(runs.back(), nullptr) << i;
  }
  const HeapStats s = heap->stats();
  EXPECT_EQ(s.huge_retained_blocks, 0u);
  EXPECT_EQ(s.failed_allocations, 0u);
  EXPECT_LE(s.committed_bytes, 24 * MiB);
  for (void* r : runs) heap->deallocate(r);
}

TEST_F(Retention, DestroyingAHeapEndsWhatItKept) {
  const std::size_t before = Zone::retained_resident_bytes();
  {
    HeapPtr heap = Heap::create();
    void* p = heap->allocate(5 * MiB);
    heap->deallocate(p);
    EXPECT_EQ(Zone::retained_resident_bytes(), before + 5 * MiB);
  }
  EXPECT_EQ(Zone::retained_resident_bytes(), before);
}

TEST_F(Retention, FreeingAKeptBlockAgainIsADoubleFree) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(2 * MiB);
  ASSERT_NE(p, nullptr);
  heap->deallocate(p);
  ASSERT_EQ(heap->stats().huge_retained_blocks, 1u);
  void* same = testsupport::launder(p);
  if (testsupport::kChecked) {
    testing::FLAGS_gtest_death_test_style = "threadsafe";
    EXPECT_DEATH(heap->deallocate(same), "double free");
  } else {
    const std::size_t ignored = Zone::stats().ignored_frees;
    heap->deallocate(same);
    EXPECT_EQ(Zone::stats().ignored_frees, ignored + 1);
    EXPECT_EQ(heap->stats().huge_retained_blocks, 1u) << "the kept run is untouched";
  }
}

TEST(RetentionDefaults, CheckedBuildsStartWithoutRetention) {
  if (!testsupport::kChecked) {
    EXPECT_EQ(Zone::retention().heap_bytes, RetainConfig{}.heap_bytes);
    return;
  }
  EXPECT_EQ(Zone::retention().heap_bytes, 0u);
  HeapPtr heap = Heap::create();
  EXPECT_EQ(heap->retain_limit(), 0u);
  void* p = heap->allocate(2 * MiB);
  heap->deallocate(p);
  EXPECT_EQ(heap->stats().huge_retained_blocks, 0u);
}

}  // namespace
}  // namespace reheap::retention_test

namespace reheap::retention_test {
namespace {

TEST(PurgeFreeRuns, GivesBackTheFreePagesOfPageRunsButKeepsTheRunsWhereTheyAre) {
  HeapPtr heap = Heap::create();
  std::vector<char*> runs;
  for (int i = 0; i < 16; ++i) {
    auto* p = static_cast<char*>(heap->allocate(256 * 1024));
    std::memset(p, 0x5a, 256 * 1024);
    runs.push_back(p);
  }
  for (int i = 0; i < 16; i += 2) heap->deallocate(runs[static_cast<std::size_t>(i)]);  // 8 free runs
  const HeapStats before = heap->stats();
  EXPECT_EQ(heap->purge_free_runs(), 8 * (256 * 1024 - 4096)) << "all but each run's first page";
  EXPECT_EQ(heap->purge_free_runs(), 0u) << "a purged run is not purged again";
  const HeapStats after = heap->stats();
  EXPECT_EQ(after.committed_bytes, before.committed_bytes);
  EXPECT_EQ(after.large_free_bytes, before.large_free_bytes);
  EXPECT_EQ(after.os.madvise, before.os.madvise + 8);
  EXPECT_EQ(runs[0][4096], 0) << "purged pages read as zero";
  EXPECT_EQ(runs[1][4096], 0x5a) << "live runs are untouched";

  // Freeing a neighbour merges it into a purged run, which has resident pages again.
  heap->deallocate(runs[1]);
  EXPECT_EQ(heap->purge_free_runs(), 3 * 256 * 1024 - 4096);
  // And the runs serve the same blocks as before: where they were.
  auto* again = static_cast<char*>(heap->allocate(256 * 1024));
  EXPECT_NE(again, nullptr);
  EXPECT_EQ(Heap::owner_of(again), heap.get());
  heap->deallocate(again);
  for (int i = 3; i < 16; i += 2) heap->deallocate(runs[static_cast<std::size_t>(i)]);
}

}  // namespace
}  // namespace reheap::retention_test
