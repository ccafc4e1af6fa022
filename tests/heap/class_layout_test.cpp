// Where a heap puts its class blocks (heap/src/layout.h), seen from outside: every class's first
// blocks share one 2 MiB region, so an idle heap costs one page-table page; a class that keeps
// growing carves the rest of each chunk's share in one range, so that many blocks of one size
// lie packed in few 2 MiB regions (a hash table's nodes, reached at random, then take shorter
// page-table walks on TLB misses: tools/bench/lane_locality, seed 003 in docs/benchmarks.md).
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <set>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/size_class.h"

namespace reheap {
namespace {

constexpr std::uintptr_t kRegion = std::uintptr_t{2} << 20;

std::uintptr_t region_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p) / kRegion; }

TEST(ClassLayout, AHeapsFirstBlockOfEveryClassLiesInOneRegion) {
  HeapPtr heap = Heap::create();
  std::set<std::uintptr_t> regions;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    void* p = heap->allocate(kClassSize[c]);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5a, kClassSize[c]);
    regions.insert(region_of(p));
  }
  EXPECT_EQ(regions.size(), 1u) << "the first lane of every class lies in the chunk's first 2 MiB";
}

TEST(ClassLayout, ManyBlocksOfOneSizeLiePackedInFewRegions) {
  HeapPtr heap = Heap::create();
  constexpr std::size_t kBlocks = std::size_t{1} << 20;  // 16 MiB of 16-byte blocks
  std::vector<void*> blocks(kBlocks);
  {
    HeapScope scope(*heap);
    for (auto& p : blocks) p = ::operator new(16);
  }
  std::set<std::uintptr_t> regions;
  for (void* p : blocks) regions.insert(region_of(p));
  // A chunk holds 2 MiB of each class: its first lane in the chunk's first region, the other 31
  // packed in a region of their own. So 16 MiB lie in 8 chunks' 16 regions, where a lane per
  // 2 MiB would spread them over 256.
  EXPECT_LE(regions.size(), 2 * (kBlocks * 16 / kRegion) + 2);
  std::set<void*> distinct(blocks.begin(), blocks.end());
  EXPECT_EQ(distinct.size(), kBlocks);
  {
    HeapScope scope(*heap);
    for (void* p : blocks) ::operator delete(p);
  }
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

}  // namespace
}  // namespace reheap
