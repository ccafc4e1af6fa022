// Heap recycling (zone.h, "Recycling"): a destroyed heap waits in the zone's heap cache and
// serves a later Heap::create, on any thread, and nothing of its previous life shows through: not
// in the new heap's blocks, not in a snapshot of it, not in its statistics. The cache keeps its
// bounds, gives its heaps back on purge, and yields a chunk to a restore that needs it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <thread>
#include <vector>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"

namespace reheap {
namespace {

// The cache's settings for a test, on an empty cache (checked builds start with it off). The
// tests run one at a time, so the cache holds only what a test put there.
struct CacheSettings {
  HeapCacheConfig before;
  explicit CacheSettings(HeapCacheConfig c) {
    Zone::purge_heap_cache();
    before = Zone::set_heap_cache(c);
  }
  ~CacheSettings() {
    Zone::purge_heap_cache();
    Zone::set_heap_cache(before);
  }
  CacheSettings(const CacheSettings&) = delete;
  CacheSettings& operator=(const CacheSettings&) = delete;
};

HeapCacheConfig with_delay(std::size_t delay) {
  HeapCacheConfig c;
  c.delay = delay;
  return c;
}

constexpr unsigned char kOld = 0xab;
constexpr char kMarker[] = "previous-life-marker-0123456789";

// A heap whose blocks of several classes (and a page run) are full of the old life's bytes.
HeapPtr dirty_heap() {
  HeapPtr heap = Heap::create();
  HeapScope scope(*heap);
  for (std::size_t size : {24, 64, 240, 3000}) {
    for (int i = 0; i < 200; ++i) {
      auto* p = static_cast<char*>(::operator new(size));
      std::memset(p, kOld, size);
      std::memcpy(p, kMarker, std::min(size, sizeof kMarker));
      if (i % 3 == 0) ::operator delete(p);  // some on the free lists, with their links
    }
  }
  std::memset(::operator new(40000), kOld, 40000);
  return heap;
}

bool contains(const std::vector<unsigned char>& bytes, const char* what, std::size_t n) {
  return std::search(bytes.begin(), bytes.end(), what, what + n) != bytes.end();
}

TEST(HeapCache, ADestroyedHeapIsReusedOnlyAfterDelayMoreHeapsDied) {
  CacheSettings settings(with_delay(4));
  HeapPtr old = Heap::create();
  const void* old_state = old.get();
  const std::uint64_t old_id = old->id();
  void* stale = old->allocate(64);
  old.reset();
  EXPECT_EQ(Heap::owner_of(stale), nullptr) << "a cached heap's chunk is owned by no live heap";
  for (int i = 0; i < 4; ++i) {
    HeapPtr other = Heap::create();
    EXPECT_NE(static_cast<const void*>(other.get()), old_state) << "heap " << i << " came too early";
  }
  HeapPtr next = Heap::create();
  ASSERT_EQ(static_cast<const void*>(next.get()), old_state) << "the oldest cached heap";
  EXPECT_NE(next->id(), old_id);
  EXPECT_EQ(static_cast<std::uint32_t>(next->id()), static_cast<std::uint32_t>(old_id));
  EXPECT_GT(next->id() >> 32, old_id >> 32) << "a later generation";
  EXPECT_EQ(Heap::owner_of(stale), next.get()) << "past the delay, as with any allocator";
}

TEST(HeapCache, ARecycledHeapHandsOutZeroedBlocksAndFreshStatistics) {
  CacheSettings settings(with_delay(0));
  const void* old_state = nullptr;
  {
    HeapPtr old = dirty_heap();
    old_state = old.get();
  }
  HeapPtr heap = Heap::create(HeapConfig{64 * 1024});
  ASSERT_EQ(static_cast<const void*>(heap.get()), old_state);
  const HeapStats fresh = heap->stats();
  EXPECT_EQ(fresh.committed_bytes, 4096u) << "one page: the header, as for a new heap";
  EXPECT_EQ(fresh.live_blocks, 0u);
  EXPECT_EQ(fresh.class_chunks, 1u);
  EXPECT_EQ(fresh.large_chunks, 0u);
  EXPECT_EQ(heap->root(), nullptr);
  // Counted in the heap's scope, checked outside it: a failure recorded while the heap is current
  // would be recorded in the heap, and go with it.
  std::size_t dirty_bytes = 0;
  std::size_t got = 0;
  {
    HeapScope scope(*heap);
    for (std::size_t size : {24, 64, 240, 3000}) {
      for (int i = 0; i < 10; ++i) {
        const auto* p = static_cast<const unsigned char*>(::operator new(size));
        dirty_bytes += static_cast<std::size_t>(std::count_if(p, p + size, [](unsigned char b) { return b != 0; }));
      }
    }
    // The limit holds as for a new heap: the old heap's committed pages are not the new one's.
    while (got < (std::size_t{1} << 20)) {
      void* p = heap->allocate(240);
      if (p == nullptr) break;
      std::memset(p, 1, 240);
      got += 240;
    }
  }
  EXPECT_EQ(dirty_bytes, 0u) << "the old heap's bytes showed through";
  EXPECT_LT(got, std::size_t{1} << 20);
  const HeapStats full = heap->stats();
  EXPECT_LE(full.committed_bytes, 64u * 1024);
  EXPECT_GE(full.failed_allocations, 1u);
}

TEST(HeapCache, ALifeThatCarvesLessKeepsTheRestOfAnOlderLifeCleared) {
  // The second life carves one class a little and the others not at all; the third life must not
  // see what the first left beyond the second's reach.
  CacheSettings settings(with_delay(0));
  const void* old_state = nullptr;
  {
    HeapPtr old = Heap::create();
    old_state = old.get();
    HeapScope scope(*old);
    for (std::size_t size : {24, 64, 240}) {
      for (int i = 0; i < 50; ++i) std::memset(::operator new(size), kOld, size);
    }
  }
  {
    HeapPtr second = Heap::create();
    ASSERT_EQ(static_cast<const void*>(second.get()), old_state);
    HeapScope scope(*second);
    static_cast<char*>(::operator new(24))[0] = 1;
  }
  HeapPtr third = Heap::create();
  ASSERT_EQ(static_cast<const void*>(third.get()), old_state);
  std::size_t dirty_bytes = 0;  // counted in the heap's scope, reported outside it
  {
    HeapScope scope(*third);
    for (std::size_t size : {24, 64, 240}) {
      for (int i = 0; i < 50; ++i) {
        const auto* p = static_cast<const unsigned char*>(::operator new(size));
        dirty_bytes += static_cast<std::size_t>(std::count_if(p, p + size, [](unsigned char b) { return b != 0; }));
      }
    }
  }
  EXPECT_EQ(dirty_bytes, 0u) << "the first life's bytes showed through the third";
}

TEST(HeapCache, ARecycledHeapKeepsNoFreePageRunOrCountOfThePreviousOne) {
  // The old heap leaves free page runs in its bins, live runs, a huge block and a refused
  // allocation behind; none of it may be the new heap's.
  CacheSettings settings(with_delay(0));
  const void* old_state = nullptr;
  {
    HeapPtr old = Heap::create(HeapConfig{std::size_t{64} << 20});
    old_state = old.get();
    std::vector<void*> runs;
    for (std::size_t pages : {3, 5, 9, 17, 40}) {
      for (int i = 0; i < 4; ++i) runs.push_back(old->allocate(pages * 4096));
    }
    for (std::size_t i = 0; i < runs.size(); i += 2) old->deallocate(runs[i]);
    ASSERT_NE(old->allocate(std::size_t{8} << 20), nullptr);
    EXPECT_EQ(old->allocate(std::size_t{128} << 20), nullptr);
    const HeapStats dirty = old->stats();
    ASSERT_GT(dirty.large_free_bytes, 0u);
    ASSERT_GT(dirty.failed_allocations, 0u);
  }
  HeapPtr heap = Heap::create();
  ASSERT_EQ(static_cast<const void*>(heap.get()), old_state);
  const HeapStats fresh = heap->stats();
  EXPECT_EQ(fresh.large_chunks, 0u);
  EXPECT_EQ(fresh.large_free_bytes, 0u);
  EXPECT_EQ(fresh.large_live_blocks, 0u);
  EXPECT_EQ(fresh.huge_live_blocks, 0u);
  EXPECT_EQ(fresh.failed_allocations, 0u);
  EXPECT_EQ(fresh.limit_bytes, kUnlimited);
  EXPECT_EQ(fresh.committed_bytes, 4096u);
  // Each bin takes a freed run and hands out runs again: an old list head would come back.
  for (std::size_t pages : {3, 5, 9, 17, 40}) {
    void* kept = heap->allocate(pages * 4096);
    void* freed = heap->allocate(pages * 4096);
    ASSERT_NE(kept, nullptr);
    ASSERT_NE(freed, nullptr);
    heap->deallocate(freed);
    for (int i = 0; i < 3; ++i) {
      void* p = heap->allocate(pages * 4096);
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(Heap::owner_of(p), heap.get()) << pages << " pages: a run of a released chunk";
    }
  }
  EXPECT_EQ(heap->stats().large_chunks, 1u);
}

TEST(HeapCache, ASnapshotOfARecycledHeapHoldsNothingOfThePreviousOne) {
  CacheSettings settings(with_delay(0));
  const void* old_state = nullptr;
  {
    HeapPtr old = dirty_heap();
    old_state = old.get();
  }
  HeapPtr heap = Heap::create();
  ASSERT_EQ(static_cast<const void*>(heap.get()), old_state);
  {
    HeapScope scope(*heap);
    for (std::size_t size : {24, 64, 240}) {
      for (int i = 0; i < 50; ++i) static_cast<char*>(::operator new(size))[0] = 1;  // pages reused
    }
  }
  std::vector<unsigned char> file;
  VectorSink sink(file);
  Snapshotter(*heap, WriteTracking::kOff).write(sink);
  EXPECT_FALSE(contains(file, kMarker, sizeof kMarker - 1)) << "the old heap's bytes reached the snapshot";
  const unsigned char run[16] = {kOld, kOld, kOld, kOld, kOld, kOld, kOld, kOld,
                                 kOld, kOld, kOld, kOld, kOld, kOld, kOld, kOld};
  EXPECT_FALSE(contains(file, reinterpret_cast<const char*>(run), sizeof run));
  MemorySource source(file.data(), file.size());
  heap.reset();
  HeapPtr back = restore(source, RestoreOptions{LayoutCheck::kNone});
  EXPECT_EQ(back->stats().live_blocks, 150u);
}

TEST(HeapCache, KeepsItsBoundsAndGivesEverythingBackOnPurge) {
  HeapCacheConfig c;
  c.heaps = 8;
  c.delay = 1000;  // nothing is reused: the cache only fills
  CacheSettings settings(c);
  const ZoneStats before = Zone::stats();
  for (int i = 0; i < 20; ++i) dirty_heap();
  const ZoneStats full = Zone::stats();
  EXPECT_LE(full.cached_heaps, 8u);
  EXPECT_GE(full.cached_heaps, 7u) << "trimmed by an eighth at a time";
  EXPECT_GT(full.retained_bytes, before.retained_bytes);
  EXPECT_GT(Zone::purge_heap_cache(), 0u);
  const ZoneStats purged = Zone::stats();
  EXPECT_EQ(purged.cached_heaps, before.cached_heaps);
  EXPECT_EQ(purged.retained_bytes, before.retained_bytes);
  EXPECT_EQ(Zone::purge_heap_cache(), 0u);
}

TEST(HeapCache, AHeapOverTheByteBoundIsReleasedNotCached) {
  HeapCacheConfig c;
  c.max_heap_bytes = 16 * 1024;
  CacheSettings settings(c);
  const std::size_t cached = Zone::stats().cached_heaps;
  dirty_heap();  // commits far more than 16 KiB in its first chunk
  EXPECT_EQ(Zone::stats().cached_heaps, cached);
  Heap::create();  // one page
  EXPECT_EQ(Zone::stats().cached_heaps, cached + 1);
}

TEST(HeapCache, ARestoreTakesTheChunkOfACachedHeap) {
  CacheSettings settings(with_delay(1000));
  std::vector<unsigned char> file;
  {
    HeapPtr heap = Heap::create();
    std::memcpy(heap->allocate(100), kMarker, sizeof kMarker);
    VectorSink sink(file);
    Snapshotter(*heap, WriteTracking::kOff).write(sink);
  }  // cached, its chunk still the zone's "used"
  const std::size_t cached = Zone::stats().cached_heaps;
  MemorySource source(file.data(), file.size());
  HeapPtr back = restore(source, RestoreOptions{LayoutCheck::kNone});
  EXPECT_EQ(Zone::stats().cached_heaps, cached - 1);
  EXPECT_EQ(back->stats().live_blocks, 1u);
  // The cache's entry is dropped, not handed out: the restored heap keeps its chunk.
  Zone::set_heap_cache(with_delay(0));
  for (int i = 0; i < 4; ++i) EXPECT_NE(Heap::create().get(), back.get());
  EXPECT_EQ(back->stats().live_blocks, 1u);
}

TEST(HeapCache, AHeapDestroyedOnOneThreadServesACreateOnAnother) {
  CacheSettings settings(with_delay(0));
  const void* state = nullptr;
  std::thread([&state] {
    HeapPtr heap = dirty_heap();
    state = heap.get();
  }).join();
  HeapPtr heap = Heap::create();
  EXPECT_EQ(static_cast<const void*>(heap.get()), state) << "a runtime destroys on the worker";
  HeapScope scope(*heap);
  const auto* p = static_cast<const unsigned char*>(::operator new(64));
  for (int k = 0; k < 64; ++k) EXPECT_EQ(p[k], 0);
}

TEST(HeapCache, AHeapDestroyedDuringAThreadsExitIsCachedLikeAnyOther) {
  CacheSettings settings(with_delay(1000));
  const std::size_t cached = Zone::stats().cached_heaps;
  std::thread([] {
    thread_local HeapPtr kept = Heap::create();  // destroyed with the thread's thread_locals
  }).join();
  EXPECT_EQ(Zone::stats().cached_heaps, cached + 1);
  EXPECT_GT(Zone::purge_heap_cache(), 0u);
}

TEST(HeapCache, CheckedBuildsStartWithTheCacheOff) {
#ifdef REHEAP_TEST_CHECKS
  EXPECT_EQ(Zone::heap_cache().heaps, 0u) << "every destroyed heap goes to the quarantine";
#else
  EXPECT_EQ(Zone::heap_cache().heaps, HeapCacheConfig{}.heaps);
#endif
}

}  // namespace
}  // namespace reheap
