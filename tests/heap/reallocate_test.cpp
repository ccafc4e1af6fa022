// reallocate(): like realloc(3). The contents up to the smaller of the two sizes survive every
// move between classes, page runs and huge blocks; a block whose class already fits keeps its
// address, and a page run grows in place when the pages after it are free.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "block_pattern.h"
#include "reheap/heap.h"
#include "reheap/size_class.h"

namespace reheap {
namespace {

using namespace reheap::testing;

TEST(Reallocate, OfANullPointerAllocates) {
  HeapPtr heap = Heap::create();
  void* p = heap->reallocate(nullptr, 100);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(heap->owns(p));
  EXPECT_EQ(heap->usable_size(p), 128u);
  EXPECT_EQ(heap->stats().live_blocks, 1u);
  heap->deallocate(p);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(Reallocate, WithinTheSameClassKeepsTheBlock) {
  HeapPtr heap = Heap::create();
  for (unsigned c = 1; c < kNumClasses; ++c) {
    const std::size_t smallest = kClassSize[c - 1] + 1;
    const std::size_t largest = kClassSize[c];
    void* p = heap->allocate(smallest);
    ASSERT_NE(p, nullptr);
    fill(p, smallest, c);
    EXPECT_EQ(heap->reallocate(p, largest), p) << "growing within class " << c;
    EXPECT_EQ(intact_prefix(p, smallest, c), smallest) << "class " << c;
    fill(p, largest, c);
    EXPECT_EQ(heap->reallocate(p, smallest), p) << "shrinking within class " << c;
    EXPECT_EQ(intact_prefix(p, smallest, c), smallest) << "class " << c;
    EXPECT_EQ(heap->usable_size(p), largest);
    heap->deallocate(p);
  }
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(Reallocate, BetweenAnyTwoClassesKeepsTheCommonPrefix) {
  HeapPtr heap = Heap::create();
  for (unsigned from = 0; from < kNumClasses; ++from) {
    for (unsigned to = 0; to < kNumClasses; ++to) {
      const std::size_t old_size = kClassSize[from];
      const std::size_t new_size = kClassSize[to];
      const std::uint64_t seed = from * kNumClasses + to;
      void* p = heap->allocate(old_size);
      ASSERT_NE(p, nullptr);
      fill(p, old_size, seed);
      void* q = heap->reallocate(p, new_size);
      ASSERT_NE(q, nullptr) << old_size << " -> " << new_size;
      const std::size_t kept = std::min(old_size, new_size);
      EXPECT_EQ(intact_prefix(q, kept, seed), kept) << old_size << " -> " << new_size;
      // Either the block stays as it is (it is big enough) or it moves to a block of the new
      // class.
      if (q == p) {
        EXPECT_LE(new_size, old_size) << "a block grew in place past its class";
        EXPECT_EQ(heap->usable_size(q), old_size) << old_size << " -> " << new_size;
      } else {
        EXPECT_EQ(heap->usable_size(q), new_size) << old_size << " -> " << new_size;
      }
      EXPECT_EQ(heap->stats().live_blocks, 1u) << old_size << " -> " << new_size;
      heap->deallocate(q);
    }
  }
  EXPECT_EQ(heap->stats().live_blocks, 0u);
  EXPECT_EQ(heap->stats().live_bytes, 0u);
}

enum class Kind { kClass, kLarge, kHuge };

Kind kind_of(std::size_t size) {
  if (size <= kMaxClassSize) return Kind::kClass;
  return size <= kMaxLargeSize ? Kind::kLarge : Kind::kHuge;
}

TEST(Reallocate, AcrossSmallLargeAndHugeBlocksKeepsTheCommonPrefix) {
  HeapPtr heap = Heap::create();
  // Up from a small block to a huge one, and back down, with every kind of step.
  const std::vector<std::size_t> sizes = {100,       5000,   20 * KiB,      300 * KiB,
                                          1 * MiB,   3 * MiB, 5 * MiB + 7,  2 * MiB,
                                          900 * KiB, 60 * KiB, 12 * KiB,    40,
                                          3 * MiB,   8,       640 * KiB};
  std::uint64_t seed = 1;
  void* p = heap->allocate(sizes.front());
  ASSERT_NE(p, nullptr);
  fill(p, sizes.front(), seed);
  Kind kind = kind_of(sizes.front());
  for (std::size_t i = 1; i < sizes.size(); ++i) {
    const std::size_t old_size = sizes[i - 1];
    const std::size_t new_size = sizes[i];
    void* q = heap->reallocate(p, new_size);
    ASSERT_NE(q, nullptr) << old_size << " -> " << new_size;
    const std::size_t kept = std::min(old_size, new_size);
    EXPECT_EQ(intact_prefix(q, kept, seed), kept) << old_size << " -> " << new_size;
    EXPECT_GE(heap->usable_size(q), new_size);
    // A block resized in place keeps its kind; a moved one is of the kind of its new size.
    if (q != p) kind = kind_of(new_size);
    const HeapStats stats = heap->stats();
    EXPECT_EQ(stats.live_blocks, 1u) << old_size << " -> " << new_size;
    EXPECT_EQ(stats.live_bytes, heap->usable_size(q)) << old_size << " -> " << new_size;
    EXPECT_EQ(stats.large_live_blocks, kind == Kind::kLarge ? 1u : 0u)
        << old_size << " -> " << new_size;
    EXPECT_EQ(stats.huge_live_blocks, kind == Kind::kHuge ? 1u : 0u)
        << old_size << " -> " << new_size;
    p = q;
    fill(p, new_size, ++seed);
  }
  heap->deallocate(p);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(Reallocate, APageRunGrowsInPlaceWhenThePagesAfterItAreFree) {
  HeapPtr heap = Heap::create();
  void* a = heap->allocate(40 * KiB);
  ASSERT_NE(a, nullptr);
  fill(a, 40 * KiB, 7);
  void* b = heap->reallocate(a, 80 * KiB);
  EXPECT_EQ(b, a);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(heap->usable_size(b), 80 * KiB);
  EXPECT_EQ(intact_prefix(b, 40 * KiB, 7), 40 * KiB);
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.large_live_blocks, 1u);
  EXPECT_EQ(stats.large_live_bytes, 80 * KiB);
  heap->deallocate(b);
}

TEST(Reallocate, APageRunGrowsInPlaceIntoTheFreedRunAfterIt) {
  HeapPtr heap = Heap::create();
  void* a = heap->allocate(40 * KiB);
  void* b = heap->allocate(40 * KiB);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  ASSERT_EQ(static_cast<char*>(a) + 40 * KiB, b)
      << "a fresh heap no longer places two runs side by side";
  fill(a, 40 * KiB, 5);
  heap->deallocate(b);
  void* grown = heap->reallocate(a, 72 * KiB);
  EXPECT_EQ(grown, a);
  ASSERT_NE(grown, nullptr);
  EXPECT_EQ(heap->usable_size(grown), 72 * KiB);
  EXPECT_EQ(intact_prefix(grown, 40 * KiB, 5), 40 * KiB);
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.large_live_blocks, 1u);
  EXPECT_EQ(stats.large_live_bytes, 72 * KiB);
  heap->deallocate(grown);
}

TEST(Reallocate, AShrunkPageRunKeepsItsPrefix) {
  HeapPtr heap = Heap::create();
  void* a = heap->allocate(200 * KiB);
  ASSERT_NE(a, nullptr);
  fill(a, 200 * KiB, 6);
  void* b = heap->reallocate(a, 100 * KiB);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(intact_prefix(b, 100 * KiB, 6), 100 * KiB);
  EXPECT_GE(heap->usable_size(b), 100 * KiB);
  EXPECT_EQ(heap->stats().large_live_bytes, heap->usable_size(b));
  heap->deallocate(b);
}

TEST(Reallocate, APageRunBlockedByANeighbourMovesAndKeepsItsContents) {
  HeapPtr heap = Heap::create();
  void* a = heap->allocate(40 * KiB);
  void* neighbour = heap->allocate(40 * KiB);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(neighbour, nullptr);
  fill(a, 40 * KiB, 1);
  fill(neighbour, 40 * KiB, 2);
  void* b = heap->reallocate(a, 200 * KiB);
  ASSERT_NE(b, nullptr);
  EXPECT_EQ(intact_prefix(b, 40 * KiB, 1), 40 * KiB);
  EXPECT_EQ(intact_prefix(neighbour, 40 * KiB, 2), 40 * KiB);
  EXPECT_EQ(heap->usable_size(b), 200 * KiB);
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.large_live_blocks, 2u);
  EXPECT_EQ(stats.large_live_bytes, 240 * KiB);
  heap->deallocate(b);
  heap->deallocate(neighbour);
}

TEST(Reallocate, AHugeBlockGrowsAndShrinksKeepingItsContents) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(2 * MiB);
  ASSERT_NE(p, nullptr);
  fill(p, 2 * MiB, 3);
  void* q = heap->reallocate(p, 6 * MiB);
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(intact_prefix(q, 2 * MiB, 3), 2 * MiB);
  EXPECT_GE(heap->usable_size(q), 6 * MiB);
  fill(q, 6 * MiB, 4);
  void* r = heap->reallocate(q, 1536 * KiB);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(intact_prefix(r, 1536 * KiB, 4), 1536 * KiB);
  EXPECT_GE(heap->usable_size(r), 1536 * KiB);
  EXPECT_EQ(heap->stats().huge_live_blocks, 1u);
  heap->deallocate(r);
  EXPECT_EQ(heap->stats().huge_live_blocks, 0u);
  EXPECT_EQ(heap->stats().huge_live_bytes, 0u);
}

}  // namespace
}  // namespace reheap
