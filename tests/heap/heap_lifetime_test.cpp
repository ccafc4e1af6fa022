// Heap lifetime: a heap takes chunks from the zone when it is created and gives all of them back
// when it is destroyed, whatever objects are still live in it (region semantics). Afterwards no
// address of it belongs to any heap, and new heaps work as if it had never been.
#include <gtest/gtest.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <thread>
#include <set>
#include <string>
#include <vector>

#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/size_class.h"
#include "reheap/zone.h"

namespace reheap {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * 1024;

#if defined(__SANITIZE_THREAD__)
// The ThreadSanitizer zone has room for a few thousand class chunks only.
constexpr std::size_t kManyHeaps = 2000;
#else
constexpr std::size_t kManyHeaps = 10000;
#endif

TEST(HeapLifetime, ANewHeapIsEmptyAndCommitsLittle) {
  HeapPtr heap = Heap::create();
  const HeapStats stats = heap->stats();
  EXPECT_EQ(stats.live_blocks, 0u);
  EXPECT_EQ(stats.live_bytes, 0u);
  EXPECT_EQ(stats.failed_allocations, 0u);
  EXPECT_LE(stats.committed_bytes, 32 * KiB);
  EXPECT_GE(stats.reserved_bytes, Zone::stats().chunk_size);
  EXPECT_EQ(stats.reserved_bytes,
            (stats.class_chunks + stats.large_chunks) * Zone::stats().chunk_size);
}

TEST(HeapLifetime, LiveHeapsHaveDistinctIds) {
  std::vector<HeapPtr> heaps;
  std::set<std::uint64_t> ids;
  for (int i = 0; i < 100; ++i) {
    heaps.push_back(Heap::create());
    ids.insert(heaps.back()->id());
  }
  EXPECT_EQ(ids.size(), heaps.size());
}

TEST(HeapLifetime, TheRootPointerIsKeptByTheHeap) {
  HeapPtr heap = Heap::create();
  EXPECT_EQ(heap->root(), nullptr);
  void* root = heap->allocate(100);
  heap->set_root(root);
  EXPECT_EQ(heap->root(), root);
  heap->set_root(nullptr);
  EXPECT_EQ(heap->root(), nullptr);
  heap->deallocate(root);
}

TEST(HeapLifetime, CreatingAHeapTakesZoneChunksAndDestroyingItGivesThemBack) {
  const ZoneStats before = Zone::stats();
  HeapPtr heap = Heap::create();
  const ZoneStats during = Zone::stats();
  EXPECT_EQ(during.live_heaps, before.live_heaps + 1);
  EXPECT_GE(during.class_chunks_in_use + during.large_chunks_in_use,
            before.class_chunks_in_use + before.large_chunks_in_use + 1);
  heap.reset();
  const ZoneStats after = Zone::stats();
  EXPECT_EQ(after.live_heaps, before.live_heaps);
  EXPECT_EQ(after.class_chunks_in_use, before.class_chunks_in_use);
  EXPECT_EQ(after.large_chunks_in_use, before.large_chunks_in_use);
}

TEST(HeapLifetime, DestroyingAHeapReleasesAllItsLiveObjectsOfEveryKindAtOnce) {
  const ZoneStats zone_before = Zone::stats();
  HeapPtr heap = Heap::create();
  Heap* const old_heap = heap.get();
  std::vector<void*> blocks;
  std::size_t live_bytes = 0;
  for (unsigned c = 0; c < kNumClasses; ++c) {
    for (int i = 0; i < 200; ++i) {
      void* p = heap->allocate(kClassSize[c]);
      ASSERT_NE(p, nullptr);
      std::memset(p, 0x5A, kClassSize[c]);
      blocks.push_back(p);
      live_bytes += kClassSize[c];
    }
  }
  for (std::size_t size : {20 * KiB, 64 * KiB, 300 * KiB, 1 * MiB}) {
    for (int i = 0; i < 4; ++i) {
      void* p = heap->allocate(size);
      ASSERT_NE(p, nullptr);
      std::memset(p, 0x5A, size);
      blocks.push_back(p);
      live_bytes += size;
    }
  }
  for (std::size_t size : {2 * MiB, 5 * MiB}) {
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr);
    std::memset(p, 0x5A, size);
    blocks.push_back(p);
    live_bytes += heap->usable_size(p);
  }
  const HeapStats stats = heap->stats();
  ASSERT_EQ(stats.live_blocks, blocks.size());
  ASSERT_EQ(stats.live_bytes, live_bytes);
  for (void* p : blocks) ASSERT_EQ(Heap::owner_of(p), old_heap);

  heap.reset();

  std::size_t still_owned = 0;
  for (void* p : blocks) {
    if (Heap::owner_of(p) != nullptr) ++still_owned;
  }
  EXPECT_EQ(still_owned, 0u) << "no address of a destroyed heap belongs to a heap";
  const ZoneStats zone_after = Zone::stats();
  EXPECT_EQ(zone_after.live_heaps, zone_before.live_heaps);
  EXPECT_EQ(zone_after.class_chunks_in_use, zone_before.class_chunks_in_use);
  EXPECT_EQ(zone_after.large_chunks_in_use, zone_before.large_chunks_in_use);

  // A heap created afterwards (quite possibly in the same chunks) starts empty and works.
  HeapPtr next = Heap::create();
  HeapStats fresh = next->stats();
  EXPECT_EQ(fresh.live_blocks, 0u);
  EXPECT_EQ(fresh.live_bytes, 0u);
  EXPECT_LE(fresh.committed_bytes, 32 * KiB);
  std::vector<void*> next_blocks;
  for (std::size_t size : {std::size_t{8}, std::size_t{100}, 10 * KiB, 100 * KiB, 3 * MiB}) {
    void* p = next->allocate(size);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(Heap::owner_of(p), next.get());
    std::memset(p, 0x33, size);
    next_blocks.push_back(p);
  }
  EXPECT_EQ(next->stats().live_blocks, next_blocks.size());
  for (void* p : next_blocks) next->deallocate(p);
  EXPECT_EQ(next->stats().live_blocks, 0u);
}

TEST(HeapLifetime, ObjectsAbandonedInADestroyedHeapNeedNoDestruction) {
  HeapPtr heap = Heap::create();
  {
    HeapScope scope(*heap);
    // Never deleted: destroying the heap reclaims them.
    auto* names = new std::vector<std::string>();
    for (int i = 0; i < 1000; ++i) names->push_back("abandoned name number " + std::to_string(i));
    new std::string(5000, 'z');
  }
  heap.reset();
  EXPECT_EQ(current_heap(), nullptr);
  HeapPtr next = Heap::create();
  EXPECT_EQ(next->stats().live_blocks, 0u);
}

TEST(HeapLifetime, DestroyingTheCurrentHeapFallsBackToTheSystemAllocator) {
  HeapPtr heap = Heap::create();
  Heap* current_after_destroy = heap.get();
  Heap* owner_of_new_block = heap.get();
  {
    HeapScope scope(*heap);
    heap.reset();
    current_after_destroy = current_heap();
    void* p = ::operator new(64);
    owner_of_new_block = Heap::owner_of(p);
    ::operator delete(p);
  }
  EXPECT_EQ(current_after_destroy, nullptr);
  EXPECT_EQ(owner_of_new_block, nullptr);
  EXPECT_EQ(current_heap(), nullptr);
}

TEST(HeapLifetime, HeapsCreatedAndDestroyedOnSeveralThreadsAtOnceNeverShareAnAddress) {
  constexpr int kThreads = 4;
  constexpr int kRounds = 300;
  std::atomic<int> misowned{0};
  std::atomic<int> overwritten{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([t, &misowned, &overwritten] {
      for (int round = 0; round < kRounds; ++round) {
        HeapPtr heap = Heap::create();
        const auto mark = static_cast<unsigned char>(t * 64 + round % 64);
        void* blocks[3] = {heap->allocate(64), heap->allocate(50 * KiB), heap->allocate(2 * MiB)};
        const std::size_t sizes[3] = {64, 50 * KiB, 2 * MiB};
        for (int i = 0; i < 3; ++i) {
          if (blocks[i] == nullptr || Heap::owner_of(blocks[i]) != heap.get()) {
            ++misowned;
            return;
          }
          std::memset(blocks[i], mark, sizes[i]);
        }
        std::this_thread::yield();
        for (int i = 0; i < 3; ++i) {
          const auto* bytes = static_cast<const unsigned char*>(blocks[i]);
          if (bytes[0] != mark || bytes[sizes[i] - 1] != mark) ++overwritten;
          if (Heap::owner_of(blocks[i]) != heap.get()) ++misowned;
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  EXPECT_EQ(misowned.load(), 0);
  EXPECT_EQ(overwritten.load(), 0);
  EXPECT_EQ(Zone::stats().live_heaps, 0u);
}

TEST(HeapLifetime, ThousandsOfSmallHeapsLiveAtOnceEachCommittingLittle) {
  const ZoneStats zone_before = Zone::stats();
  std::vector<HeapPtr> heaps;
  heaps.reserve(kManyHeaps);
  std::vector<void*> first_blocks;
  first_blocks.reserve(kManyHeaps);
  std::size_t over_budget = 0;
  std::size_t failed = 0;
  for (std::size_t i = 0; i < kManyHeaps; ++i) {
    HeapPtr heap = Heap::create();
    void* a = heap->allocate(24);
    void* b = heap->allocate(100);
    void* c = heap->allocate(1000);
    if (a == nullptr || b == nullptr || c == nullptr) {
      ++failed;
    } else {
      std::memset(a, 1, 24);
      std::memset(b, 2, 100);
      std::memset(c, 3, 1000);
    }
    if (heap->stats().committed_bytes > 32 * KiB) ++over_budget;
    first_blocks.push_back(a);
    heaps.push_back(std::move(heap));
  }
  EXPECT_EQ(failed, 0u);
  EXPECT_EQ(over_budget, 0u) << "heaps committing more than 32 KiB for three small blocks";
  EXPECT_EQ(Zone::stats().live_heaps, zone_before.live_heaps + kManyHeaps);

  std::set<std::uint64_t> ids;
  std::size_t misowned = 0;
  for (std::size_t i = 0; i < kManyHeaps; ++i) {
    ids.insert(heaps[i]->id());
    if (Heap::owner_of(first_blocks[i]) != heaps[i].get()) ++misowned;
  }
  EXPECT_EQ(ids.size(), kManyHeaps);
  EXPECT_EQ(misowned, 0u);

  heaps.clear();
  const ZoneStats zone_after = Zone::stats();
  EXPECT_EQ(zone_after.live_heaps, 0u);
  EXPECT_EQ(zone_after.class_chunks_in_use, zone_before.class_chunks_in_use);
  EXPECT_EQ(zone_after.large_chunks_in_use, zone_before.large_chunks_in_use);
  std::size_t still_owned = 0;
  for (void* p : first_blocks) {
    if (Heap::owner_of(p) != nullptr) ++still_owned;
  }
  EXPECT_EQ(still_owned, 0u);
}

}  // namespace
}  // namespace reheap
