// Sized delete (`operator delete(p, size)`, which the compiler calls for most deletes and
// std::allocator for every deallocation): the address says all, so whatever the size says, the
// block goes back to the class its address names, and misuse is caught or ignored exactly as for
// an unsized delete.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <new>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/size_class.h"
#include "reheap/zone.h"
#include "misuse_support.h"

namespace reheap {
namespace {

using testsupport::launder;

TEST(SizedDelete, ABlockOfEveryClassGoesBackToItsClass) {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  for (unsigned c = 0; c < kNumClasses; ++c) {
    const std::size_t size = kClassSize[c];
    void* p = ::operator new(size);
    std::memset(p, 0x3c, size);
    ::operator delete(p, size);
    EXPECT_EQ(heap->stats().live_blocks, 0u) << size;
    EXPECT_EQ(::operator new(size), p) << "the class's free list hands the block back first";
    ::operator delete(p, size);
  }
}

TEST(SizedDelete, ASizeNamingAnotherClassStillFreesTheBlockIntoItsOwnClass) {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  void* p = ::operator new(256);
  void* q = ::operator new(16);
  ::operator delete(launder(p), 16);  // a wrong size: the address says 256
  EXPECT_EQ(heap->stats().live_blocks, 1u);
  EXPECT_EQ(::operator new(256), p);
  void* r = ::operator new(16);
  EXPECT_NE(r, p) << "the 16-byte class never hands out the 256-byte block";
  ::operator delete(r, 16);
  ::operator delete(q, 16);
  ::operator delete(p, 256);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(SizedDelete, PageRunsAndHugeBlocksGoByTheirAddress) {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  for (std::size_t size : {std::size_t{40} << 10, std::size_t{1} << 20, std::size_t{8} << 20}) {
    void* p = ::operator new(size);
    std::memset(p, 1, size);
    ::operator delete(p, size);
    EXPECT_EQ(heap->stats().live_blocks, 0u) << size;
  }
  // A class-sized size for a page run: the address is in no class lane.
  void* run = ::operator new(std::size_t{64} << 10);
  ::operator delete(launder(run), 64);
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

TEST(SizedDelete, ContainersFreeThroughIt) {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  {
    std::vector<std::vector<int>> rows(1000);
    for (std::size_t i = 0; i < rows.size(); ++i) rows[i].assign(i % 97, static_cast<int>(i));
  }
  EXPECT_EQ(heap->stats().live_blocks, 0u);
}

// Release builds only: checked builds abort instead (SizedDeleteDeathTest).
#if !defined(REHEAP_TEST_CHECKS)
TEST(SizedDelete, ABlockOfAnotherHeapIsIgnoredAndCountedInReleaseBuilds) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  void* p = a->allocate(64);
  const std::size_t ignored_before = Zone::stats().ignored_frees;
  {
    HeapScope scope(*b);
    ::operator delete(launder(p), 64);
  }
  EXPECT_EQ(Zone::stats().ignored_frees, ignored_before + 1);
  EXPECT_EQ(a->stats().live_blocks, 1u);
  EXPECT_EQ(b->stats().live_blocks, 0u);
  a->deallocate(p);
}
#endif  // !defined(REHEAP_TEST_CHECKS)

// Checked builds only: release builds ignore and count these frees.
#if defined(REHEAP_TEST_CHECKS)
class SizedDeleteDeathTest : public testsupport::CheckedDeathTest {};

TEST_F(SizedDeleteDeathTest, DeletingABlockTwiceAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        void* p = ::operator new(64);
        void* same = launder(p);
        void* other = ::operator new(64);
        ::operator delete(p, 64);
        ::operator delete(other, 64);
        ::operator delete(same, 64);  // not at the list's head: only the checks see it
      },
      "double free");
}

TEST_F(SizedDeleteDeathTest, DeletingAnAddressInsideABlockAborts) {
  HeapPtr heap = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*heap);
        char* p = static_cast<char*>(::operator new(64));
        ::operator delete(launder(p + 16), 48);
      },
      "never handed out");
}

TEST_F(SizedDeleteDeathTest, DeletingABlockWhileAnotherHeapIsCurrentAborts) {
  HeapPtr a = Heap::create();
  HeapPtr b = Heap::create();
  void* p = a->allocate(64);
  EXPECT_DEATH(
      {
        HeapScope scope(*b);
        ::operator delete(launder(p), 64);
      },
      "");
}

#endif  // defined(REHEAP_TEST_CHECKS)
}  // namespace
}  // namespace reheap
