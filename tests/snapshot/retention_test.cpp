// Retention and snapshots (zone.h, "Retention"): a freed huge block the heap keeps is no part of
// its state. A snapshot holds only the kept run's header, restores with the run still kept (its
// pages zero), and the restored heap's next huge block takes that run, as the saved heap's would.
#include <gtest/gtest.h>

#include <cstring>

#include "reheap/heap.h"
#include "reheap/heap_digest.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest::retention {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;

TEST(RetentionSnapshot, AKeptBlockIsNotSavedAndTheRestoredHeapStillKeepsItsRun) {
  const RetainConfig before = Zone::set_retention(RetainConfig{64 * MiB, 256 * MiB, 60'000});
  TempDir dir;
  HeapPtr heap = Heap::create();
  auto* live = static_cast<char*>(heap->allocate(3 * MiB));
  auto* kept = static_cast<char*>(heap->allocate(8 * MiB));
  ASSERT_NE(live, nullptr);
  ASSERT_NE(kept, nullptr);
  std::memset(live, 5, 3 * MiB);
  std::memset(kept, 9, 8 * MiB);
  heap->deallocate(kept);
  const HeapStats saved_stats = heap->stats();
  ASSERT_EQ(saved_stats.huge_retained_blocks, 1u);
  const std::uint64_t digest = used_pages_digest(*heap);

  Snapshotter snapshotter(*heap, WriteTracking::kOff);
  const SnapshotInfo info = snapshotter.save(dir / "kept.snap");
  EXPECT_LT(info.bytes_written, 4 * MiB) << "the kept 8 MiB block is not written";
  heap.reset();

  HeapPtr restored = restore(dir / "kept.snap");
  EXPECT_EQ(used_pages_digest(*restored), digest);
  const HeapStats s = restored->stats();
  EXPECT_EQ(s.huge_retained_blocks, 1u);
  EXPECT_EQ(s.huge_retained_bytes, saved_stats.huge_retained_bytes);
  EXPECT_EQ(s.committed_bytes, saved_stats.committed_bytes);
  EXPECT_EQ(s.retained_resident_bytes, 0u) << "a restored kept run holds no pages";
  EXPECT_EQ(live[0], 5);
  auto* again = static_cast<char*>(restored->allocate(6 * MiB));
  EXPECT_EQ(again, kept) << "the next huge block goes where the saved heap's would";
  EXPECT_EQ(again[0], 0);
  restored->deallocate(again);
  Zone::set_retention(before);
}

}  // namespace
}  // namespace reheap::snaptest::retention
