// Purged lanes (Heap::purge_free_lanes): a freed burst of small objects gives its pages back to
// the OS while the class's live blocks stay where they are, and the class takes the lanes back,
// lowest first, before it takes new address space.
#include <gtest/gtest.h>

#include <sys/mman.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_digest.h"

namespace reheap::lane_purge_test {
namespace {

constexpr std::size_t MiB = std::size_t{1} << 20;
constexpr std::size_t kSize = 96;  // a class of its own
constexpr std::size_t kLane = 64 * 1024;

constexpr std::size_t kPerLane = kLane / kSize;
constexpr std::size_t kWholeLane = (kPerLane * kSize + 4095) / 4096 * 4096;  // a lane's pages

unsigned class_of(std::size_t size) { return size_class(size); }

bool resident(const void* p) {
  unsigned char v = 0;
  void* page = reinterpret_cast<void*>(reinterpret_cast<std::uintptr_t>(p) & ~std::uintptr_t{4095});
  EXPECT_EQ(mincore(page, 4096, &v), 0);
  return (v & 1) != 0;
}

std::vector<char*> fill(Heap& heap, std::size_t count, int pattern) {
  std::vector<char*> blocks;
  blocks.reserve(count);
  for (std::size_t i = 0; i < count; ++i) {
    auto* p = static_cast<char*>(heap.allocate(kSize));
    EXPECT_NE(p, nullptr);
    std::memset(p, pattern, kSize);
    blocks.push_back(p);
  }
  return blocks;
}

// A live set, then a burst of 64 MiB of the same class after it, the burst freed.
struct Burst {
  HeapPtr heap = Heap::create();
  std::vector<char*> live = fill(*heap, 20'000, 0x11);
  std::vector<char*> burst = fill(*heap, 64 * MiB / kSize, 0x22);
  Burst() {
    for (char* p : burst) heap->deallocate(p);
  }
  bool live_intact() const {
    for (char* p : live) {
      for (std::size_t i = 0; i < kSize; ++i) {
        if (p[i] != 0x11) return false;
      }
    }
    return true;
  }
};

TEST(LanePurge, AFreedBurstGivesItsPagesBackAndTheLiveBlocksStay) {
  Burst b;
  const HeapStats before = b.heap->stats();
  const unsigned cls = class_of(kSize);
  ASSERT_EQ(before.classes[cls].live_blocks, b.live.size());

  const std::size_t purged = b.heap->purge_free_lanes();
  const HeapStats after = b.heap->stats();
  EXPECT_GT(purged, 60 * MiB) << "almost the whole burst";
  EXPECT_LE(purged, 64 * MiB + kLane);
  EXPECT_EQ(after.classes[cls].live_blocks, b.live.size()) << "no live block is purged";
  EXPECT_EQ(after.live_bytes, before.live_bytes);
  EXPECT_GT(after.classes[cls].purged_blocks, 0u);
  EXPECT_EQ(after.classes[cls].free_blocks + after.classes[cls].purged_blocks,
            before.classes[cls].free_blocks);
  EXPECT_EQ(after.classes[cls].purged_blocks * kSize / kLane * kLane, after.classes[cls].purged_blocks * kSize)
      << "whole lanes only";
  EXPECT_LE(after.committed_bytes + purged, before.committed_bytes + 4096)
      << "purged lanes leave committed bytes (the purge map takes a page)";
  EXPECT_EQ(after.reserved_bytes, before.reserved_bytes) << "the lanes stay the heap's";
  EXPECT_GT(after.os.madvise, before.os.madvise);
  EXPECT_TRUE(b.live_intact());
  EXPECT_TRUE(resident(b.live.front()));
  EXPECT_FALSE(resident(b.burst[b.burst.size() / 2])) << "a burst page is still resident";

  EXPECT_EQ(b.heap->purge_free_lanes(), 0u) << "nothing is purged twice";
}

TEST(LanePurge, TheClassTakesThePurgedLanesBackBeforeNewAddressSpace) {
  Burst b;
  const std::uintptr_t lowest = reinterpret_cast<std::uintptr_t>(
      *std::min_element(b.burst.begin(), b.burst.end()));
  const std::uintptr_t highest = reinterpret_cast<std::uintptr_t>(
      *std::max_element(b.burst.begin(), b.burst.end()));
  ASSERT_GT(b.heap->purge_free_lanes(), 0u);
  const HeapStats purged = b.heap->stats();
  const unsigned cls = class_of(kSize);

  std::vector<char*> again = fill(*b.heap, b.burst.size(), 0x33);
  const HeapStats s = b.heap->stats();
  // The class committed the lane its cursor is in whole during the burst (class_lanes.cpp), so
  // that lane's never-used blocks serve first, costing no fault; the purged lanes serve the rest,
  // all but at most the last.
  EXPECT_LT(s.classes[cls].purged_blocks, kPerLane + 1) << "at most one purged lane is left";
  EXPECT_EQ(s.class_chunks, purged.class_chunks) << "no new address space";
  std::set<char*> distinct(again.begin(), again.end());
  EXPECT_EQ(distinct.size(), again.size()) << "a block was handed out twice";
  for (char* p : b.live) EXPECT_EQ(distinct.count(p), 0u);
  const std::uintptr_t cursor_lane_end = (highest / kLane + 1) * kLane;
  for (char* p : again) {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    ASSERT_TRUE(a >= lowest && a < cursor_lane_end)
        << "block at " << static_cast<void*>(p) << " lies outside the burst's lanes";
  }
  EXPECT_TRUE(b.live_intact());
  for (char* p : again) {
    for (std::size_t i = 0; i < kSize; ++i) ASSERT_EQ(p[i], 0x33);
  }
  const std::size_t lanes = (purged.classes[cls].purged_blocks - s.classes[cls].purged_blocks) / kPerLane;
  EXPECT_GT(lanes, 0u);
  EXPECT_EQ(s.committed_bytes, purged.committed_bytes + lanes * kWholeLane) << "each lane taken back is charged again";
}

TEST(LanePurge, OnlyLanesWithNoLiveBlockArePurged) {
  HeapPtr heap = Heap::create();
  // Eight whole lanes and a few blocks of a ninth, where the cursor is.
  std::vector<char*> blocks = fill(*heap, 8 * kPerLane + 5, 0x44);
  // Lanes in carving order; keep one block in each even one.
  std::vector<std::uintptr_t> lanes;
  std::vector<char*> kept;
  for (char* p : blocks) {
    const std::uintptr_t lane = reinterpret_cast<std::uintptr_t>(p) / kLane;
    if (lanes.empty() || lanes.back() != lane) {
      lanes.push_back(lane);
      if (lanes.size() % 2 == 1) {
        kept.push_back(p);
        continue;
      }
    }
    heap->deallocate(p);
  }
  ASSERT_EQ(lanes.size(), 9u);
  const std::size_t purged = heap->purge_free_lanes();
  const HeapStats s = heap->stats();
  const unsigned cls = class_of(kSize);
  EXPECT_EQ(s.classes[cls].live_blocks, kept.size());
  EXPECT_EQ(purged, 4 * kWholeLane) << "the four odd lanes; the cursor's lane is never purged";
  EXPECT_EQ(s.classes[cls].purged_blocks, 4 * kPerLane);
  for (char* p : kept) EXPECT_TRUE(resident(p)) << "a lane with a live block lost its pages";
}

TEST(LanePurge, NearItsLimitTheHeapCarvesAPageRatherThanCountARefusedLane) {
  Burst b;
  ASSERT_GT(b.heap->purge_free_lanes(), 0u);
  const HeapStats purged = b.heap->stats();
  // Room for a few pages, not for a whole lane: the class carves where its cursor is.
  b.heap->set_limit(purged.committed_bytes + 4 * 4096);
  std::size_t made = 0;
  while (made < 100'000 && b.heap->allocate(kSize) != nullptr) ++made;
  const HeapStats s = b.heap->stats();
  EXPECT_GE(made, 4 * 4096 / kSize - 1) << "the pages under the limit were carved";
  EXPECT_LT(made, 100'000u);
  EXPECT_EQ(s.failed_allocations, 1u) << "one refusal, the last allocation's, counted once";
  EXPECT_EQ(s.classes[class_of(kSize)].purged_blocks, purged.classes[class_of(kSize)].purged_blocks);
  EXPECT_LE(s.committed_bytes, s.limit_bytes);
}

TEST(LanePurge, AClassWithPurgedLanesIsResetWhenTheLimitNeedsItsPages) {
  Burst b;
  ASSERT_GT(b.heap->purge_free_lanes(), 0u);
  for (char* p : b.live) b.heap->deallocate(p);
  const HeapStats idle = b.heap->stats();
  const unsigned cls = class_of(kSize);
  ASSERT_EQ(idle.classes[cls].live_blocks, 0u);
  // At its limit, the heap gives back the idle class (lanes, purged ones included) to serve another.
  b.heap->set_limit(idle.committed_bytes + 64 * 1024);
  std::vector<void*> other;
  for (int i = 0; i < 1000; ++i) {
    void* p = b.heap->allocate(1024);
    ASSERT_NE(p, nullptr) << "block " << i << ": the idle class was not given back";
    other.push_back(p);
  }
  const HeapStats s = b.heap->stats();
  EXPECT_EQ(s.classes[cls].purged_blocks, 0u);
  EXPECT_EQ(s.classes[cls].free_blocks, 0u);
  EXPECT_LE(s.committed_bytes, s.limit_bytes);
  // The class carves from its start again; its few blocks lie in its cursor's lane, which a purge
  // leaves alone (the other class's freed lanes go).
  std::vector<char*> again = fill(*b.heap, 10, 0x55);
  EXPECT_EQ(again.front(), b.live.front());
  for (void* p : other) b.heap->deallocate(p);
  EXPECT_GT(b.heap->purge_free_lanes(), 0u);
  EXPECT_EQ(b.heap->stats().classes[cls].purged_blocks, 0u);
  EXPECT_EQ(b.heap->stats().classes[cls].live_blocks, again.size());
}

}  // namespace
}  // namespace reheap::lane_purge_test
