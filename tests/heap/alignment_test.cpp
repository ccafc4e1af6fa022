// Alignment: every block of 16 bytes or more is 16-byte aligned, and allocate(size, alignment)
// honours every power-of-two alignment up to 1 MiB for requests of every class, of page runs and
// of huge blocks.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "reheap/heap.h"
#include "reheap/size_class.h"

namespace reheap {
namespace {

std::uintptr_t address_of(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

bool aligned_to(const void* p, std::size_t alignment) { return address_of(p) % alignment == 0; }

// One request of every class (its largest and its smallest size), of page runs and of huge blocks.
std::vector<std::size_t> sizes_of_every_kind() {
  std::vector<std::size_t> sizes = {1};
  for (unsigned c = 0; c < kNumClasses; ++c) {
    sizes.push_back(kClassSize[c]);
    if (c > 0) sizes.push_back(kClassSize[c - 1] + 1);
  }
  for (std::size_t size : {kMaxClassSize + 1, std::size_t{40000}, kMaxLargeSize,
                           kMaxLargeSize + 1, (std::size_t{2} << 20) + 123}) {
    sizes.push_back(size);
  }
  return sizes;
}

// Whether the ranges [p, p + usable) of `blocks` are pairwise disjoint.
bool disjoint(const Heap& heap, std::vector<void*> blocks) {
  std::sort(blocks.begin(), blocks.end(),
            [](void* a, void* b) { return address_of(a) < address_of(b); });
  for (std::size_t i = 1; i < blocks.size(); ++i) {
    if (address_of(blocks[i - 1]) + heap.usable_size(blocks[i - 1]) > address_of(blocks[i])) {
      return false;
    }
  }
  return true;
}

TEST(Alignment, EightByteBlocksAreEightByteAligned) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks;
  for (std::size_t size = 1; size <= 8; ++size) {
    for (int i = 0; i < 16; ++i) blocks.push_back(heap->allocate(size));
  }
  for (void* p : blocks) {
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned_to(p, 8)) << p;
  }
  for (void* p : blocks) heap->deallocate(p);
}

TEST(Alignment, EveryBlockOfSixteenBytesOrMoreIsSixteenByteAligned) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks;
  // Several blocks of every request size that gets a block of 16 bytes or more, so that blocks
  // beyond the first of each class are checked too.
  for (std::size_t size = 9; size <= kMaxClassSize; size += (size < 1024 ? 1 : 61)) {
    for (int i = 0; i < 3; ++i) blocks.push_back(heap->allocate(size));
  }
  for (std::size_t size : {kMaxClassSize + 1, std::size_t{100000}, kMaxLargeSize + 1}) {
    blocks.push_back(heap->allocate(size));
  }
  std::size_t misaligned = 0;
  for (void* p : blocks) {
    ASSERT_NE(p, nullptr);
    if (!aligned_to(p, 16)) ++misaligned;
  }
  EXPECT_EQ(misaligned, 0u) << "of " << blocks.size() << " blocks";
  for (void* p : blocks) heap->deallocate(p);
}

TEST(Alignment, ASixteenByteAlignmentIsHonouredForRequestsOfEightBytesOrLess) {
  HeapPtr heap = Heap::create();
  std::vector<void*> blocks;
  for (std::size_t size = 0; size <= 8; ++size) {
    for (int i = 0; i < 4; ++i) {
      void* p = heap->allocate(size, 16);
      ASSERT_NE(p, nullptr);
      EXPECT_TRUE(aligned_to(p, 16)) << "size " << size << ": " << p;
      blocks.push_back(p);
    }
  }
  for (void* p : blocks) heap->deallocate(p);
}

TEST(Alignment, EveryPowerOfTwoAlignmentUpToOneMebibyteIsHonouredForEveryKindOfBlock) {
  HeapPtr heap = Heap::create();
  for (std::size_t alignment = 1; alignment <= (std::size_t{1} << 20); alignment *= 2) {
    std::vector<void*> blocks;
    for (std::size_t size : sizes_of_every_kind()) {
      void* p = heap->allocate(size, alignment);
      ASSERT_NE(p, nullptr) << "size " << size << ", alignment " << alignment;
      EXPECT_TRUE(aligned_to(p, alignment)) << "size " << size << ", alignment " << alignment;
      EXPECT_GE(heap->usable_size(p), size) << "size " << size << ", alignment " << alignment;
      EXPECT_TRUE(heap->owns(p));
      std::memset(p, 0xA5, size);
      blocks.push_back(p);
    }
    EXPECT_TRUE(disjoint(*heap, blocks)) << "alignment " << alignment;
    EXPECT_EQ(heap->stats().live_blocks, blocks.size()) << "alignment " << alignment;
    for (void* p : blocks) heap->deallocate(p);
    EXPECT_EQ(heap->stats().live_blocks, 0u) << "alignment " << alignment;
  }
}

TEST(Alignment, ManyBlocksWithTheSameLargeAlignmentAreAllAlignedAndDisjoint) {
  HeapPtr heap = Heap::create();
  for (std::size_t alignment : {std::size_t{64}, std::size_t{4096}, std::size_t{65536}}) {
    std::vector<void*> blocks;
    for (int i = 0; i < 64; ++i) {
      void* p = heap->allocate(48, alignment);
      ASSERT_NE(p, nullptr) << "alignment " << alignment;
      EXPECT_TRUE(aligned_to(p, alignment)) << "alignment " << alignment;
      blocks.push_back(p);
    }
    EXPECT_TRUE(disjoint(*heap, blocks)) << "alignment " << alignment;
    for (void* p : blocks) heap->deallocate(p);
  }
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(Alignment, AnAlignmentThatIsNotAPowerOfTwoIsRefused) {
  HeapPtr heap = Heap::create();
  EXPECT_EQ(heap->allocate(64, 24), nullptr);
  EXPECT_EQ(heap->allocate(64, 48), nullptr);
  EXPECT_EQ(heap->allocate(100000, 3 * 4096), nullptr);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

}  // namespace
}  // namespace reheap
