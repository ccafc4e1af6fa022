// Whole-lane commits and snapshots (class_lanes.cpp): a class past eight lanes commits each new lane
// whole with MADV_POPULATE_WRITE. Under write tracking that populate must not block and must
// leave the lane's pages in the next increment; the restored heap has the saved one's bytes,
// committed bytes and next blocks.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_digest.h"
#include "reheap/snapshot.h"
#include "support.h"
#include "write_tracking_support.h"

namespace reheap::snaptest::whole_lane {
namespace {

constexpr std::size_t kSize = 64;
constexpr std::size_t kPerLane = 64 * 1024 / kSize;

std::vector<char*> carve(Heap& heap, std::size_t n, int pattern) {
  std::vector<char*> out;
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(static_cast<char*>(heap.allocate(kSize)));
    std::memset(out.back(), pattern, kSize);
  }
  return out;
}

TEST(WholeLaneSnapshot, LanesCommittedWholeUnderWriteTrackingRestoreFromTheIncrement) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  carve(*heap, 4 * kPerLane, 0x11);  // under the eight lanes
  Snapshotter snapshotter(*heap);
  REQUIRE_TRACKING_BY(snapshotter);
  snapshotter.save(dir / "full.snap");
  // Past eight lanes while tracked: lanes 9..20 are populated whole, and the last one partly used.
  carve(*heap, 16 * kPerLane + kPerLane / 2, 0x22);
  const SnapshotInfo inc = snapshotter.save_increment(dir / "inc.snap");
  EXPECT_EQ(inc.kind, SnapshotKind::kIncremental);
  const std::uint64_t digest = used_pages_digest(*heap);
  const HeapStats saved = heap->stats();
  const std::vector<char*> expected = carve(*heap, kPerLane, 0x33);
  heap.reset();

  HeapPtr restored = restore(dir / "inc.snap");
  EXPECT_EQ(used_pages_digest(*restored), digest);
  EXPECT_EQ(restored->stats().committed_bytes, saved.committed_bytes);
  EXPECT_EQ(carve(*restored, kPerLane, 0x33), expected) << "the restored heap carves as the saved one would";
}

}  // namespace
}  // namespace reheap::snaptest::whole_lane
