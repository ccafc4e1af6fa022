// Whole-lane commits (class_lanes.cpp): a size class that has carved eight lanes commits each new
// lane whole, in one call, instead of a page at a time; a lighter class, and any class whose
// limit has no room for a whole lane, still grows a page at a time, and neither way counts a
// refusal. Committed bytes stay exact either way: they are what the state check of a snapshot
// recomputes from the cursors.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "reheap/heap.h"
#include "reheap/size_class.h"

namespace reheap::whole_lane_commit_test {
namespace {

constexpr std::size_t kLane = 64 * 1024;
constexpr std::size_t kPage = 4096;
constexpr std::size_t kSize = 64;
constexpr std::size_t kPerLane = kLane / kSize;

bool resident(std::uintptr_t page) {
  unsigned char v = 0;
  EXPECT_EQ(mincore(reinterpret_cast<void*>(page), kPage, &v), 0);
  return (v & 1) != 0;
}

// Carves `lanes` whole lanes of kSize blocks, each block written.
std::vector<void*> carve_lanes(Heap& heap, std::size_t lanes) {
  std::vector<void*> blocks;
  for (std::size_t i = 0; i < lanes * kPerLane; ++i) {
    void* p = heap.allocate(kSize);
    EXPECT_NE(p, nullptr);
    std::memset(p, 0x5a, kSize);
    blocks.push_back(p);
  }
  return blocks;
}

TEST(WholeLaneCommit, AClassPastEightLanesCommitsItsNextLaneWholeAndResident) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks = carve_lanes(*heap, 8);
  const std::size_t before = heap->stats().committed_bytes;
  void* first = heap->allocate(kSize);
  ASSERT_NE(first, nullptr);
  const auto lane = reinterpret_cast<std::uintptr_t>(first);
  ASSERT_EQ(lane % kLane, 0u) << "the ninth lane's first block";
  EXPECT_EQ(heap->stats().committed_bytes - before, kLane) << "the whole lane, charged at once";
  EXPECT_TRUE(resident(lane + kLane - kPage)) << "its last page is in memory before it is touched";
  // The rest of the lane costs no further charge.
  for (std::size_t i = 1; i < kPerLane; ++i) ASSERT_NE(heap->allocate(kSize), nullptr);
  EXPECT_EQ(heap->stats().committed_bytes - before, kLane);
  EXPECT_EQ(heap->stats().failed_allocations, 0u);
}

TEST(WholeLaneCommit, ALightClassGrowsAPageAtATime) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks = carve_lanes(*heap, 7);  // under the eight lanes
  const std::size_t before = heap->stats().committed_bytes;
  void* first = heap->allocate(kSize);
  ASSERT_NE(first, nullptr);
  ASSERT_EQ(reinterpret_cast<std::uintptr_t>(first) % kLane, 0u) << "the eighth lane's first block";
  EXPECT_EQ(heap->stats().committed_bytes - before, kPage);
  EXPECT_FALSE(resident(reinterpret_cast<std::uintptr_t>(first) + kLane - kPage));
  // Another class's first block: one page.
  const std::size_t other_before = heap->stats().committed_bytes;
  ASSERT_NE(heap->allocate(256), nullptr);
  EXPECT_EQ(heap->stats().committed_bytes - other_before, kPage);
}

TEST(WholeLaneCommit, NearItsLimitAHeavyClassGrowsAPageAtATimeAndCountsNoRefusal) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks = carve_lanes(*heap, 8);
  // Room for two pages, not for a whole lane.
  heap->set_limit(heap->stats().committed_bytes + 2 * kPage);
  const std::size_t before = heap->stats().committed_bytes;
  std::size_t made = 0;
  while (made < kPerLane && heap->allocate(kSize) != nullptr) ++made;
  const HeapStats s = heap->stats();
  EXPECT_EQ(made, 2 * kPage / kSize) << "the two pages under the limit were carved";
  EXPECT_EQ(s.committed_bytes - before, 2 * kPage);
  EXPECT_EQ(s.failed_allocations, 1u) << "only the allocation past the two pages is refused";
}

}  // namespace
}  // namespace reheap::whole_lane_commit_test
