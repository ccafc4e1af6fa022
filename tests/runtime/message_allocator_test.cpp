// MessageAllocator, one thread at a time: sizes and alignment, large blocks, failure, reuse,
// statistics, trim, independence from the current reactor heap, and misuse.
//
// The allocator is process-wide, so every test compares statistics before and after what it
// does, and calls trim() first where it needs exact figures.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <set>
#include <thread>
#include <vector>

#include "message_test_support.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/message_allocator.h"

namespace reheap {
namespace {

using test::fill_pattern;
using test::has_pattern;

constexpr std::size_t kMaxClass = MessageAllocator::kMaxClassSize;

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

// The promise for class sizes: 16-byte steps up to 128 bytes, then less than 20% rounding.
bool usable_size_is_tight(std::size_t size, std::size_t usable) {
  if (size <= 128) return usable == (size == 0 ? 16 : (size + 15) / 16 * 16);
  return usable >= size && (usable - size) * 5 < usable;
}

TEST(MessageAllocator, GivesSixteenByteAlignedBlocksOfAtLeastTheSizeAskedForInEveryClass) {
  std::set<std::size_t> classes;
  for (std::size_t size = 0; size <= kMaxClass; ++size) {
    void* p = MessageAllocator::allocate(size);
    ASSERT_NE(p, nullptr) << size;
    const std::size_t usable = MessageAllocator::usable_size(p);
    ASSERT_EQ(address(p) % 16, 0u) << size;
    ASSERT_TRUE(usable_size_is_tight(size, usable)) << size << " -> " << usable;
    ASSERT_EQ(usable % 16, 0u);
    std::memset(p, 0xab, usable);  // every usable byte may be written (ASan checks it)
    classes.insert(usable);
    MessageAllocator::deallocate(p);
  }
  EXPECT_EQ(classes.size(), 40u);
  EXPECT_EQ(*classes.rbegin(), kMaxClass);
  // A block of exactly a class's size stays in that class.
  for (std::size_t usable : classes) {
    void* p = MessageAllocator::allocate(usable);
    EXPECT_EQ(MessageAllocator::usable_size(p), usable);
    MessageAllocator::deallocate(p);
  }
}

TEST(MessageAllocator, LiveBlocksDoNotOverlapAndKeepTheirContents) {
  std::vector<test::Sent> live;
  for (std::uint64_t i = 0; i < 4000; ++i) {
    live.push_back(test::make_message(1 + (i * 7919) % 3000, i));
    ASSERT_NE(live.back().block, nullptr);
  }
  for (const test::Sent& m : live) EXPECT_TRUE(has_pattern(m.block, m.size, m.seed));
  for (const test::Sent& m : live) MessageAllocator::deallocate(m.block);
}

TEST(MessageAllocator, ServesRequestsAboveTheLargestClassWithAMappingOfTheirOwn) {
  const MessageAllocatorStats before = MessageAllocator::stats();
  std::vector<void*> blocks;
  std::size_t mapped = 0;
  for (std::size_t size : {kMaxClass + 1, std::size_t{100'000}, std::size_t{1} << 20,
                           std::size_t{16} << 20}) {
    void* p = MessageAllocator::allocate(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(address(p) % 4096, 0u) << "large blocks are page-aligned";
    const std::size_t usable = MessageAllocator::usable_size(p);
    EXPECT_GE(usable, size);
    EXPECT_LT(usable, size + 4096);
    static_cast<char*>(p)[0] = 1;
    static_cast<char*>(p)[usable - 1] = 2;
    mapped += usable;
    blocks.push_back(p);
  }
  const MessageAllocatorStats during = MessageAllocator::stats();
  EXPECT_EQ(during.large_blocks, before.large_blocks + 4);
  EXPECT_EQ(during.large_bytes, before.large_bytes + mapped);
  EXPECT_EQ(during.bytes_mapped, before.bytes_mapped + mapped);
  for (void* p : blocks) MessageAllocator::deallocate(p);
  const MessageAllocatorStats after = MessageAllocator::stats();
  EXPECT_EQ(after.large_blocks, before.large_blocks);
  EXPECT_EQ(after.large_bytes, before.large_bytes);
}

TEST(MessageAllocator, ReturnsNullForAbsurdSizesWithoutThrowingAndCountsTheFailures) {
  const std::uint64_t failed_before = MessageAllocator::stats().failed_allocations;
  const std::size_t absurd[] = {std::numeric_limits<std::size_t>::max(),
                                std::numeric_limits<std::size_t>::max() / 2,
                                MessageAllocator::kMaxSize + 1};
  for (std::size_t size : absurd) EXPECT_EQ(MessageAllocator::allocate(size), nullptr) << size;
  EXPECT_EQ(MessageAllocator::stats().failed_allocations, failed_before + 3);
  // Still usable afterwards.
  void* p = MessageAllocator::allocate(64);
  ASSERT_NE(p, nullptr);
  MessageAllocator::deallocate(p);
}

TEST(MessageAllocator, IgnoresNull) {
  MessageAllocator::deallocate(nullptr);
  EXPECT_EQ(MessageAllocator::usable_size(nullptr), 0u);
}

TEST(MessageAllocator, ReusesTheBlocksAThreadFreesWithoutTakingMoreMemory) {
  void* first = MessageAllocator::allocate(64);
  MessageAllocator::deallocate(first);
  const MessageAllocatorStats before = MessageAllocator::stats();
  for (int i = 0; i < 100'000; ++i) {
    void* p = MessageAllocator::allocate(64);
    ASSERT_NE(p, nullptr);
    MessageAllocator::deallocate(p);
  }
  const MessageAllocatorStats after = MessageAllocator::stats();
  EXPECT_EQ(after.bytes_mapped, before.bytes_mapped);
  EXPECT_EQ(after.slabs, before.slabs);
}

TEST(MessageAllocator, CountsBytesInUseExactlyOnceTrimmed) {
  MessageAllocator::trim();
  const MessageAllocatorStats before = MessageAllocator::stats();
  std::vector<void*> blocks;
  for (int i = 0; i < 1000; ++i) blocks.push_back(MessageAllocator::allocate(100));  // 112 B
  MessageAllocator::trim();
  EXPECT_EQ(MessageAllocator::stats().bytes_in_use, before.bytes_in_use + 1000 * 112);
  for (void* p : blocks) MessageAllocator::deallocate(p);
  MessageAllocator::trim();
  EXPECT_EQ(MessageAllocator::stats().bytes_in_use, before.bytes_in_use);
}

TEST(MessageAllocator, TrimGivesEntirelyFreeSlabsBackToTheOs) {
  MessageAllocator::trim();
  const MessageAllocatorStats before = MessageAllocator::stats();
  std::vector<void*> blocks;
  constexpr std::size_t kBlocks = 40 * 1024 * 1024 / 256;
  for (std::size_t i = 0; i < kBlocks; ++i) {
    void* p = MessageAllocator::allocate(256);
    ASSERT_NE(p, nullptr);
    static_cast<char*>(p)[0] = 1;
    blocks.push_back(p);
  }
  const MessageAllocatorStats full = MessageAllocator::stats();
  EXPECT_GE(full.slabs, before.slabs + 160);
  EXPECT_GE(full.bytes_mapped, before.bytes_mapped + 40 * 1024 * 1024);
  for (void* p : blocks) MessageAllocator::deallocate(p);
  MessageAllocator::trim();
  const MessageAllocatorStats after = MessageAllocator::stats();
  EXPECT_LE(after.slabs, before.slabs);
  EXPECT_LE(after.bytes_mapped, before.bytes_mapped);
  EXPECT_EQ(after.cached_slabs, 0u);
  // The slabs released before were taken again first; now at least the 160 are released.
  EXPECT_GE(after.released_slabs, std::max<std::size_t>(before.released_slabs, 160));
  // Memory given back is taken again before the arena grows: a slab's worth of blocks and more
  // needs at least one slab, and it comes from the released ones.
  blocks.clear();
  for (int i = 0; i < 1100; ++i) blocks.push_back(MessageAllocator::allocate(256));
  EXPECT_LT(MessageAllocator::stats().released_slabs, after.released_slabs);
  for (void* p : blocks) MessageAllocator::deallocate(p);
}

// Everything in the test body below runs on a thread whose current heap is `heap`, including
// the thread's first message allocation (which sets up its pool).
TEST(MessageAllocator, UsesNoReactorHeapWhileAHeapIsCurrent) {
  HeapPtr heap = Heap::create();
  HeapStats inside_before{};
  HeapStats inside_after{};
  int owned_by_a_heap = 0;
  int allocated = 0;
  std::thread worker([&] {
    HeapScope scope(*heap);
    inside_before = heap->stats();
    void* blocks[64];
    for (int i = 0; i < 64; ++i) {
      blocks[i] = MessageAllocator::allocate(i == 63 ? 300'000 : std::size_t(16 << (i % 11)));
      if (blocks[i] != nullptr) ++allocated;
      if (Heap::owner_of(blocks[i]) != nullptr) ++owned_by_a_heap;
    }
    for (void* p : blocks) MessageAllocator::deallocate(p);
    MessageAllocator::trim();
    inside_after = heap->stats();
  });
  worker.join();
  EXPECT_EQ(allocated, 64);
  EXPECT_EQ(owned_by_a_heap, 0);
  EXPECT_EQ(inside_after.live_bytes, inside_before.live_bytes);
  EXPECT_EQ(inside_after.live_blocks, inside_before.live_blocks);
  EXPECT_EQ(inside_after.committed_bytes, inside_before.committed_bytes);
  EXPECT_EQ(inside_after.large_live_blocks, inside_before.large_live_blocks);
}

TEST(MessageAllocator, WorksDuringStaticDestruction) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(
      {
        struct FreesAtExit {
          void* kept = MessageAllocator::allocate(200);
          ~FreesAtExit() {
            MessageAllocator::deallocate(kept);
            void* late = MessageAllocator::allocate(5000);
            std::memset(late, 1, 5000);
            MessageAllocator::deallocate(late);
            std::fputs("freed at exit\n", stderr);
          }
        };
        static FreesAtExit at_exit;
        std::exit(0);
      },
      testing::ExitedWithCode(0), "freed at exit");
}

TEST(MessageAllocator, AbortsOnAFreeOfMemoryItNeverHandedOut) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  int on_the_stack = 0;
  EXPECT_DEATH(MessageAllocator::deallocate(&on_the_stack), "not a block of the message allocator");
  void* from_malloc = std::malloc(64);
  EXPECT_DEATH(MessageAllocator::deallocate(from_malloc), "not a block of the message allocator");
  std::free(from_malloc);
  void* large = MessageAllocator::allocate(100'000);
  MessageAllocator::deallocate(large);
  EXPECT_DEATH(MessageAllocator::deallocate(large), "not a block of the message allocator");
}

#if defined(__SANITIZE_ADDRESS__)
TEST(MessageAllocator, AddressSanitizerReportsAUseOfAFreedMessage) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  auto* p = static_cast<volatile char*>(MessageAllocator::allocate(64));
  p[40] = 1;
  MessageAllocator::deallocate(const_cast<char*>(p));
  EXPECT_DEATH(p[40] = 2, "use-after-poison");
}
#endif

#if defined(REHEAP_TEST_CHECKS)
TEST(MessageAllocator, CheckedBuildsAbortOnAPointerIntoABlock) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  void* p = MessageAllocator::allocate(64);
  EXPECT_DEATH(MessageAllocator::deallocate(static_cast<char*>(p) + 16), "not the start of a block");
  MessageAllocator::deallocate(p);
}
#endif

}  // namespace
}  // namespace reheap
