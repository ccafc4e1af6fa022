// The limit: HeapConfig::limit_bytes bounds what the heap commits. A request that would go past it
// fails (allocate() and reallocate() return null, `new` throws std::bad_alloc), is counted in
// failed_allocations, and leaves the heap consistent and usable: its live blocks keep their
// contents, freed memory can be allocated again, and requests that fit still succeed.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#include "block_pattern.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"

namespace reheap {
namespace {

using namespace reheap::testing;

// Allocates `size`-byte blocks, each filled with its own pattern, until the heap refuses one.
std::vector<void*> allocate_until_refused(Heap& heap, std::size_t size, std::size_t at_most) {
  std::vector<void*> blocks;
  blocks.reserve(at_most);
  while (blocks.size() < at_most) {
    void* p = heap.allocate(size);
    if (p == nullptr) break;
    fill(p, size, blocks.size());
    blocks.push_back(p);
  }
  return blocks;
}

std::size_t blocks_holding_their_pattern(const std::vector<void*>& blocks, std::size_t size) {
  std::size_t intact = 0;
  for (std::size_t i = 0; i < blocks.size(); ++i) {
    if (holds_pattern(blocks[i], size, i)) ++intact;
  }
  return intact;
}

TEST(HeapLimit, IsReportedByTheHeapAndItsStats) {
  HeapPtr heap = Heap::create(HeapConfig{3 * MiB});
  EXPECT_EQ(heap->limit(), 3 * MiB);
  EXPECT_EQ(heap->stats().limit_bytes, 3 * MiB);
  HeapPtr unlimited = Heap::create();
  EXPECT_EQ(unlimited->limit(), kUnlimited);
  EXPECT_EQ(unlimited->stats().limit_bytes, kUnlimited);
}

TEST(HeapLimit, SmallBlocksStopAtTheLimitAndTheHeapStaysUsable) {
  constexpr std::size_t kLimit = 1 * MiB;
  constexpr std::size_t kSize = 64;
  HeapPtr heap = Heap::create(HeapConfig{kLimit});
  // More blocks than the limit can hold: the loop must end because the heap refuses.
  std::vector<void*> blocks = allocate_until_refused(*heap, kSize, kLimit / kSize + 1);
  ASSERT_LT(blocks.size(), kLimit / kSize);

  HeapStats stats = heap->stats();
  EXPECT_LE(stats.committed_bytes, kLimit);
  EXPECT_EQ(stats.failed_allocations, 1u);
  EXPECT_EQ(stats.live_blocks, blocks.size());
  EXPECT_EQ(stats.live_bytes, blocks.size() * kSize);
  EXPECT_GE(blocks.size() * kSize, kLimit / 2) << "most of the limit goes to blocks";

  // Refused again, and counted again; nothing else changes.
  EXPECT_EQ(heap->allocate(kSize), nullptr);
  stats = heap->stats();
  EXPECT_EQ(stats.failed_allocations, 2u);
  EXPECT_EQ(stats.live_blocks, blocks.size());
  EXPECT_EQ(blocks_holding_their_pattern(blocks, kSize), blocks.size());

  // A freed block can be allocated again without going past the limit.
  heap->deallocate(blocks.back());
  blocks.pop_back();
  void* again = heap->allocate(kSize);
  ASSERT_NE(again, nullptr);
  fill(again, kSize, blocks.size());
  blocks.push_back(again);
  EXPECT_EQ(heap->stats().failed_allocations, 2u);
  EXPECT_LE(heap->stats().committed_bytes, kLimit);
  EXPECT_EQ(blocks_holding_their_pattern(blocks, kSize), blocks.size());

  for (void* p : blocks) heap->deallocate(p);
  stats = heap->stats();
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.classes[size_class(kSize)].free_blocks, blocks.size());
}

TEST(HeapLimit, PageRunsStopAtTheLimitAndTheHeapStaysUsable) {
  constexpr std::size_t kLimit = 4 * MiB;
  constexpr std::size_t kSize = 256 * KiB;
  HeapPtr heap = Heap::create(HeapConfig{kLimit});
  // A small block allocated first: its page is committed, so requests of its class can still be
  // served once the page runs have taken the rest of the limit.
  void* small = heap->allocate(64);
  ASSERT_NE(small, nullptr);

  std::vector<void*> blocks = allocate_until_refused(*heap, kSize, kLimit / kSize + 1);
  ASSERT_LT(blocks.size(), kLimit / kSize);
  EXPECT_GE(blocks.size(), kLimit / kSize / 2) << "most of the limit goes to blocks";

  HeapStats stats = heap->stats();
  EXPECT_LE(stats.committed_bytes, kLimit);
  EXPECT_EQ(stats.failed_allocations, 1u);
  EXPECT_EQ(stats.large_live_blocks, blocks.size());
  EXPECT_EQ(stats.large_live_bytes, blocks.size() * kSize);
  EXPECT_EQ(stats.live_blocks, blocks.size() + 1);

  // A smaller request still succeeds.
  void* small_again = heap->allocate(64);
  EXPECT_NE(small_again, nullptr);

  // A freed page run can be allocated again.
  heap->deallocate(blocks.back());
  blocks.pop_back();
  void* again = heap->allocate(kSize);
  ASSERT_NE(again, nullptr);
  fill(again, kSize, blocks.size());
  blocks.push_back(again);
  stats = heap->stats();
  EXPECT_EQ(stats.failed_allocations, 1u);
  EXPECT_LE(stats.committed_bytes, kLimit);
  EXPECT_EQ(blocks_holding_their_pattern(blocks, kSize), blocks.size());

  for (void* p : blocks) heap->deallocate(p);
  heap->deallocate(small);
  heap->deallocate(small_again);
  stats = heap->stats();
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.large_live_blocks, 0u);
  EXPECT_EQ(stats.large_live_bytes, 0u);
}

TEST(HeapLimit, AHugeRequestPastTheLimitFailsWhileASmallerHugeRequestSucceeds) {
  constexpr std::size_t kLimit = 8 * MiB;
  HeapPtr heap = Heap::create(HeapConfig{kLimit});
  const std::size_t committed_before = heap->stats().committed_bytes;

  EXPECT_EQ(heap->allocate(16 * MiB), nullptr);
  HeapStats stats = heap->stats();
  EXPECT_EQ(stats.failed_allocations, 1u);
  EXPECT_EQ(stats.committed_bytes, committed_before) << "a refused request commits nothing";
  EXPECT_EQ(stats.huge_live_blocks, 0u);

  void* p = heap->allocate(2 * MiB);
  ASSERT_NE(p, nullptr);
  fill(p, 2 * MiB, 1);
  stats = heap->stats();
  EXPECT_LE(stats.committed_bytes, kLimit);
  EXPECT_EQ(stats.huge_live_blocks, 1u);
  EXPECT_EQ(stats.failed_allocations, 1u);

  // Growing past the limit fails and leaves the block as it was.
  EXPECT_EQ(heap->reallocate(p, 16 * MiB), nullptr);
  stats = heap->stats();
  EXPECT_EQ(stats.failed_allocations, 2u);
  EXPECT_EQ(stats.huge_live_blocks, 1u);
  EXPECT_GE(heap->usable_size(p), 2 * MiB);
  EXPECT_TRUE(holds_pattern(p, 2 * MiB, 1));

  // The freed huge block is kept for reuse (zone.h, "Retention"), still counted against the
  // limit; a bigger block takes its run again, growing it within the limit.
  const std::uint64_t madvise_before = stats.os.madvise;
  const std::size_t committed_with_block = stats.committed_bytes;
  heap->deallocate(p);
  stats = heap->stats();
  EXPECT_EQ(stats.huge_live_blocks, 0u);
  if (heap->retain_limit() != 0) {
    EXPECT_EQ(stats.huge_retained_blocks, 1u);
    EXPECT_EQ(stats.committed_bytes, committed_with_block);
  } else {
    EXPECT_LE(stats.committed_bytes + 2 * MiB, committed_with_block);
    EXPECT_GT(stats.os.madvise, madvise_before);
  }
  void* bigger = heap->allocate(6 * MiB);
  ASSERT_NE(bigger, nullptr);
  fill(bigger, 6 * MiB, 2);
  EXPECT_TRUE(holds_pattern(bigger, 6 * MiB, 2));
  stats = heap->stats();
  EXPECT_EQ(stats.huge_retained_blocks, 0u);
  EXPECT_LE(stats.committed_bytes, kLimit);
  EXPECT_EQ(stats.failed_allocations, 2u);
  heap->deallocate(bigger);
}

TEST(HeapLimit, RaisingTheLimitLetsARefusedRequestSucceed) {
  HeapPtr heap = Heap::create(HeapConfig{1 * MiB});
  EXPECT_EQ(heap->allocate(2 * MiB), nullptr);
  heap->set_limit(kUnlimited);
  EXPECT_EQ(heap->limit(), kUnlimited);
  void* p = heap->allocate(2 * MiB);
  ASSERT_NE(p, nullptr);
  heap->deallocate(p);
  EXPECT_EQ(heap->stats().failed_allocations, 1u);
}

TEST(HeapLimit, LoweringTheLimitBelowWhatIsCommittedRefusesNewPages) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  ASSERT_NE(p, nullptr);
  heap->set_limit(heap->stats().committed_bytes);
  EXPECT_EQ(heap->allocate(200 * KiB), nullptr);
  EXPECT_EQ(heap->allocate(2 * MiB), nullptr);
  EXPECT_EQ(heap->stats().failed_allocations, 2u);
  // The committed page of the 64-byte class still has room.
  void* q = heap->allocate(64);
  EXPECT_NE(q, nullptr);
  heap->deallocate(q);
  heap->deallocate(p);
}

// Makes `p` escape, so that the compiler cannot drop a new-expression whose result is unused.
[[gnu::noinline]] void keep(const void* p) { asm volatile("" : : "r"(p) : "memory"); }

// What `new` did inside a scope of a limited heap. The test asserts outside the scope, so that
// nothing GoogleTest allocates lands in the heap.
struct NewOutcome {
  bool plain_new_threw_bad_alloc = false;
  bool array_new_threw_bad_alloc = false;
  bool nothrow_new_returned_null = false;
  bool vector_threw_bad_alloc = false;
  bool small_new_succeeded = false;
};

TEST(HeapLimit, NewInAScopeOfALimitedHeapThrowsBadAllocAndTheHeapStaysUsable) {
  HeapPtr heap = Heap::create(HeapConfig{4 * MiB});
  NewOutcome outcome;
  {
    HeapScope scope(*heap);
    try {
      void* p = ::operator new(16 * MiB);
      ::operator delete(p);
    } catch (const std::bad_alloc&) {
      outcome.plain_new_threw_bad_alloc = true;
    }
    try {
      char* p = new char[8 * MiB];
      keep(p);
      delete[] p;
    } catch (const std::bad_alloc&) {
      outcome.array_new_threw_bad_alloc = true;
    }
    char* q = new (std::nothrow) char[32 * MiB];
    keep(q);
    outcome.nothrow_new_returned_null = q == nullptr;
    delete[] q;
    try {
      std::vector<char> v;
      v.resize(5 * MiB);
      keep(v.data());
    } catch (const std::bad_alloc&) {
      outcome.vector_threw_bad_alloc = true;
    }
    int* small = new int(42);
    keep(small);
    outcome.small_new_succeeded = heap->owns(small) && *small == 42;
    delete small;
  }
  EXPECT_TRUE(outcome.plain_new_threw_bad_alloc);
  EXPECT_TRUE(outcome.array_new_threw_bad_alloc);
  EXPECT_TRUE(outcome.nothrow_new_returned_null);
  EXPECT_TRUE(outcome.vector_threw_bad_alloc);
  EXPECT_TRUE(outcome.small_new_succeeded);
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.failed_allocations, 4u);
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_LE(stats.committed_bytes, 4 * MiB);
}

}  // namespace
}  // namespace reheap
