// Purged lanes and snapshots (Heap::purge_free_lanes): a heap whose freed burst was purged saves
// and restores with its lanes still purged (the restored heap takes them back as the saved one
// would), and an increment taken after a purge restores to the purged heap's bytes. The held page
// run restores held.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_digest.h"
#include "reheap/snapshot.h"
#include "support.h"
#include "write_tracking_support.h"

namespace reheap::snaptest::lane_purge {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t kSize = 96;

// 2 MiB live, then a 16 MiB burst of the same class, freed.
std::vector<char*> live_after_freed_burst(Heap& heap) {
  std::vector<char*> live;
  std::vector<char*> burst;
  for (std::size_t i = 0; i < 2 * MiB / kSize; ++i) {
    live.push_back(static_cast<char*>(heap.allocate(kSize)));
    std::memset(live.back(), 0x11, kSize);
  }
  for (std::size_t i = 0; i < 16 * MiB / kSize; ++i) {
    burst.push_back(static_cast<char*>(heap.allocate(kSize)));
    std::memset(burst.back(), 0x22, kSize);
  }
  for (char* p : burst) heap.deallocate(p);
  return live;
}

std::vector<void*> allocate_n(Heap& heap, std::size_t n) {
  std::vector<void*> out;
  for (std::size_t i = 0; i < n; ++i) out.push_back(heap.allocate(kSize));
  return out;
}

TEST(LanePurgeSnapshot, APurgedHeapRestoresWithItsLanesPurgedAndTakesThemBackAsTheSavedOneWould) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  const std::vector<char*> live = live_after_freed_burst(*heap);
  ASSERT_GT(heap->purge_free_lanes(), 12 * MiB);
  const HeapStats saved = heap->stats();
  const std::uint64_t digest = used_pages_digest(*heap);
  {
    Snapshotter snapshotter(*heap, WriteTracking::kOff);
    const SnapshotInfo info = snapshotter.save(dir / "purged.snap");
    EXPECT_LT(info.bytes_written, 4 * MiB) << "purged lanes are zero pages, not written";
  }
  // What the saved heap does next, to compare with the restored heap's.
  const std::vector<void*> expected = allocate_n(*heap, 16 * MiB / kSize);
  heap.reset();

  HeapPtr restored = restore(dir / "purged.snap");
  EXPECT_EQ(used_pages_digest(*restored), digest);
  const HeapStats s = restored->stats();
  const unsigned cls = size_class(kSize);
  EXPECT_EQ(s.classes[cls].purged_blocks, saved.classes[cls].purged_blocks);
  EXPECT_EQ(s.classes[cls].live_blocks, live.size());
  EXPECT_EQ(s.committed_bytes, saved.committed_bytes);
  for (char* p : live) ASSERT_EQ(p[kSize - 1], 0x11);
  EXPECT_EQ(allocate_n(*restored, expected.size()), expected)
      << "the restored heap hands out blocks where the saved one did";
  EXPECT_EQ(restored->stats().classes[cls].purged_blocks, 0u);
}

TEST(LanePurgeSnapshot, AnIncrementAfterAPurgeRestoresThePurgedHeap) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  live_after_freed_burst(*heap);
  Snapshotter snapshotter(*heap);
  REQUIRE_TRACKING_BY(snapshotter);
  snapshotter.save(dir / "full.snap");
  ASSERT_GT(heap->purge_free_lanes(), 12 * MiB);
  const SnapshotInfo inc = snapshotter.save_increment(dir / "inc.snap");
  EXPECT_EQ(inc.kind, SnapshotKind::kIncremental);
  const std::uint64_t digest = used_pages_digest(*heap);
  const HeapStats saved = heap->stats();
  const std::vector<void*> expected = allocate_n(*heap, 16 * MiB / kSize);
  heap.reset();

  HeapPtr restored = restore(dir / "inc.snap");
  EXPECT_EQ(used_pages_digest(*restored), digest) << "the chain restores the purged lanes as zero";
  EXPECT_EQ(restored->stats().committed_bytes, saved.committed_bytes);
  EXPECT_EQ(allocate_n(*restored, expected.size()), expected);
}

// The held page run (page_runs.cpp) is state like any other: the restored heap hands it to the
// next request of its length, as the saved heap would.
TEST(HeldRunSnapshot, TheRestoredHeapHandsTheHeldRunOutAsTheSavedOneWould) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  void* keep = heap->allocate(40 * 1024);
  std::memset(keep, 3, 40 * 1024);
  void* held = heap->allocate(64 * 1024);
  heap->deallocate(held);
  {
    Snapshotter snapshotter(*heap, WriteTracking::kOff);
    snapshotter.save(dir / "held.snap");
  }
  heap.reset();
  HeapPtr restored = restore(dir / "held.snap");
  EXPECT_EQ(restored->stats().large_free_bytes, 64u * 1024);
  EXPECT_EQ(restored->allocate(64 * 1024), held);
  EXPECT_EQ(static_cast<char*>(keep)[40 * 1024 - 1], 3);
}

}  // namespace
}  // namespace reheap::snaptest::lane_purge
