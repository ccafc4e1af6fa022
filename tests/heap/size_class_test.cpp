// Size classes: every request up to 16 KiB is served by the smallest class block that holds it,
// and the heap hands out exactly that block size; larger requests become whole-page runs (up to
// 1 MiB) or huge blocks.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/size_class.h"

namespace reheap {
namespace {

// The specification of size_class(), written the slow and obvious way.
unsigned smallest_class_holding(std::size_t size) {
  for (unsigned c = 0; c < kNumClasses; ++c) {
    if (kClassSize[c] >= size) return c;
  }
  return kNumClasses;
}

std::size_t round_up_to_pages(std::size_t size) {
  return (size + kPageSize - 1) / kPageSize * kPageSize;
}

TEST(SizeClass, ClassSizesAscendFromEightToSixteenKibibytes) {
  EXPECT_EQ(kClassSize.front(), 8u);
  EXPECT_EQ(kClassSize.back(), kMaxClassSize);
  for (unsigned c = 1; c < kNumClasses; ++c) {
    EXPECT_GT(kClassSize[c], kClassSize[c - 1]) << "class " << c;
  }
}

TEST(SizeClass, EveryClassFromSixteenBytesUpIsAMultipleOfSixteen) {
  for (unsigned c = 1; c < kNumClasses; ++c) {
    EXPECT_EQ(kClassSize[c] % 16, 0u) << "class " << c << " (" << kClassSize[c] << " bytes)";
  }
}

TEST(SizeClass, SmallClassesEndAtOnePageAndMediumClassesSpanSeveralPages) {
  EXPECT_EQ(kClassSize[kNumSmallClasses - 1], kPageSize);
  for (unsigned c = kNumSmallClasses; c < kNumClasses; ++c) {
    EXPECT_GT(kClassSize[c], kPageSize) << "class " << c;
  }
}

TEST(SizeClass, EverySizeUpToTheLargestClassMapsToTheSmallestClassHoldingIt) {
  EXPECT_EQ(size_class(0), 0u);
  std::size_t mismatches = 0;
  for (std::size_t size = 1; size <= kMaxClassSize; ++size) {
    const unsigned expected = smallest_class_holding(size);
    if (size_class(size) != expected) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "size_class(" << size << ") = " << size_class(size) << ", expected "
                      << expected;
      }
    }
  }
  EXPECT_EQ(mismatches, 0u);
}

TEST(SizeClass, EveryBlockUpToTheLargestClassHasExactlyItsClassSizeUsable) {
  HeapPtr heap = Heap::create();
  std::size_t mismatches = 0;
  for (std::size_t size = 1; size <= kMaxClassSize; ++size) {
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr) << "size " << size;
    const std::size_t expected = kClassSize[smallest_class_holding(size)];
    if (heap->usable_size(p) != expected) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "usable_size of a " << size << "-byte request is "
                      << heap->usable_size(p) << ", expected " << expected;
      }
    }
    heap->deallocate(p);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

// Plain `new` takes the class from the fast path's table (heap/src/class_table.h), not from
// size_class: the same promise, through the other road.
TEST(SizeClass, EveryPlainNewUpToTheLargestClassGetsExactlyItsClassSizeUsable) {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  std::size_t mismatches = 0;
  for (std::size_t size = 0; size <= kMaxClassSize; ++size) {
    void* p = ::operator new(size);
    const std::size_t expected = kClassSize[size == 0 ? 0 : smallest_class_holding(size)];
    if (Heap::owner_of(p) != heap.get() || heap->usable_size(p) != expected) {
      if (++mismatches <= 10) {
        ADD_FAILURE() << "new of " << size << " bytes: usable_size " << heap->usable_size(p)
                      << ", expected " << expected;
      }
    }
    ::operator delete(p);
  }
  EXPECT_EQ(mismatches, 0u);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(SizeClass, StatsNameEachClassBlockSizeAndCountItsLiveBlocks) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks;
  std::size_t class_bytes = 0;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    // Two blocks in class c: its largest and its smallest request.
    const std::size_t smallest_request = c == 0 ? 1 : kClassSize[c - 1] + 1;
    blocks.push_back(heap->allocate(kClassSize[c]));
    blocks.push_back(heap->allocate(smallest_request));
    class_bytes += 2 * std::size_t{kClassSize[c]};
  }
  for (void* p : blocks) ASSERT_NE(p, nullptr);

  HeapStats stats = heap->stats();
  for (unsigned c = 0; c < kNumClasses; ++c) {
    EXPECT_EQ(stats.classes[c].block_size, kClassSize[c]) << "class " << c;
    EXPECT_EQ(stats.classes[c].live_blocks, 2u) << "class " << c;
  }
  EXPECT_EQ(stats.live_blocks, 2u * kNumClasses);
  EXPECT_EQ(stats.live_bytes, class_bytes);
  EXPECT_EQ(stats.large_live_blocks, 0u);
  EXPECT_EQ(stats.huge_live_blocks, 0u);

  for (void* p : blocks) heap->deallocate(p);
  stats = heap->stats();
  for (unsigned c = 0; c < kNumClasses; ++c) {
    EXPECT_EQ(stats.classes[c].live_blocks, 0u) << "class " << c;
    EXPECT_GE(stats.classes[c].free_blocks, 2u) << "the freed blocks of class " << c
                                                << " are kept on its free list";
  }
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
}

TEST(SizeClass, RequestsAboveTheLargestClassUpToOneMebibyteAreRoundedUpToWholePages) {
  HeapPtr heap = Heap::create();
  const std::vector<std::size_t> sizes = {kMaxClassSize + 1, 20480,  20481,  65536,
                                          65537,             300000, kMaxLargeSize - 1,
                                          kMaxLargeSize};
  std::vector<void*> blocks;
  std::size_t large_bytes = 0;
  for (std::size_t size : sizes) {
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr) << "size " << size;
    EXPECT_EQ(heap->usable_size(p), round_up_to_pages(size)) << "size " << size;
    large_bytes += round_up_to_pages(size);
    blocks.push_back(p);
  }
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.large_live_blocks, sizes.size());
  EXPECT_EQ(stats.large_live_bytes, large_bytes);
  EXPECT_EQ(stats.huge_live_blocks, 0u);
  EXPECT_EQ(stats.live_blocks, sizes.size());
  EXPECT_EQ(stats.live_bytes, large_bytes);
  for (void* p : blocks) heap->deallocate(p);
  EXPECT_EQ(heap->stats().large_live_blocks, 0u);
  EXPECT_EQ(heap->stats().large_live_bytes, 0u);
}

TEST(SizeClass, RequestsAboveOneMebibyteAreHugeBlocksOfAtLeastTheRequestedSize) {
  HeapPtr heap = Heap::create();
  const std::vector<std::size_t> sizes = {kMaxLargeSize + 1, 2u << 20, (3u << 20) + 5};
  std::vector<void*> blocks;
  std::size_t huge_bytes = 0;
  for (std::size_t size : sizes) {
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr) << "size " << size;
    EXPECT_GE(heap->usable_size(p), size);
    huge_bytes += heap->usable_size(p);
    blocks.push_back(p);
  }
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.huge_live_blocks, sizes.size());
  EXPECT_EQ(stats.huge_live_bytes, huge_bytes);
  EXPECT_EQ(stats.large_live_blocks, 0u);
  EXPECT_EQ(stats.live_blocks, sizes.size());
  EXPECT_EQ(stats.live_bytes, huge_bytes);
  for (void* p : blocks) heap->deallocate(p);
  EXPECT_EQ(heap->stats().huge_live_blocks, 0u);
  EXPECT_EQ(heap->stats().huge_live_bytes, 0u);
}

TEST(SizeClass, ZeroByteRequestsGetDistinctLiveBlocksOfTheSmallestClass) {
  HeapPtr heap = Heap::create();
  void* a = heap->allocate(0);
  void* b = heap->allocate(0);
  ASSERT_NE(a, nullptr);
  ASSERT_NE(b, nullptr);
  EXPECT_NE(a, b);
  EXPECT_TRUE(heap->owns(a));
  EXPECT_TRUE(heap->owns(b));
  EXPECT_EQ(heap->usable_size(a), kClassSize[0]);
  EXPECT_EQ(heap->stats().live_blocks, 2u);
  heap->deallocate(a);
  heap->deallocate(b);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

}  // namespace
}  // namespace reheap
