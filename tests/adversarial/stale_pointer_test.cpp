// Stale pointers: a pointer kept past its heap's destruction must never reach the heap created
// after it. The destroyed heap's chunks wait in the zone's quarantine, tombstoned with its id:
// a delete through the pointer is ignored and counted (release builds) or reported naming the
// destroyed heap (checked builds, where the chunks are also inaccessible, so that a read or a
// write through the pointer is reported too). Heap ids carry a generation: a heap created later
// in the same chunk never has the old id.
//
// Release builds recycle heaps (zone.h, "Recycling"): a destroyed heap's first chunk waits in
// the zone's heap cache, tombstoned as in quarantine, and is reused once HeapCacheConfig::delay
// more heaps were destroyed after it. So there the guarantee holds for the next `delay` heaps; tests of the quarantine itself turn the cache off (CacheOff), as checked builds have it.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <set>
#include <vector>

#include "reheap/byte_stream.h"
#include "reheap/heap.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "misuse_support.h"

namespace reheap {
namespace {

using testsupport::launder;

// Sets the quarantine's length for a scope.
struct Quarantine {
  std::size_t before;
  explicit Quarantine(std::size_t chunks) : before(Zone::set_quarantine(chunks)) {}
  ~Quarantine() { Zone::set_quarantine(before); }
};

// Turns the heap cache off for a scope, emptying it: destroyed heaps go to the quarantine.
struct CacheOff {
  HeapCacheConfig before;
  CacheOff() {
    Zone::purge_heap_cache();
    HeapCacheConfig off;
    off.heaps = 0;
    before = Zone::set_heap_cache(off);
  }
  ~CacheOff() { Zone::set_heap_cache(before); }
  CacheOff(const CacheOff&) = delete;
  CacheOff& operator=(const CacheOff&) = delete;
};

// A live heap whose blocks hold a known pattern, checked after the misuse.
struct Victim {
  HeapPtr heap = Heap::create();
  std::vector<unsigned char*> blocks;
  Victim() {
    HeapScope scope(*heap);
    for (std::size_t size : {16, 64, 64, 64, 3000, 70000}) {
      blocks.push_back(static_cast<unsigned char*>(::operator new(size)));
      std::memset(blocks.back(), 0x3c, size);
    }
  }
  bool intact() const {
    std::size_t i = 0;
    for (std::size_t size : {16, 64, 64, 64, 3000, 70000}) {
      for (std::size_t k = 0; k < size; ++k) {
        if (blocks[i][k] != 0x3c) return false;
      }
      ++i;
    }
    return true;
  }
};

TEST(StalePointer, ANewHeapNeverTakesTheChunksOfOneJustDestroyed) {
  CacheOff quarantine_only;
  HeapPtr old = Heap::create();
  void* p = old->allocate(64);
  const std::uint64_t old_id = old->id();
  old.reset();
  std::set<std::uint64_t> ids;
  for (int i = 0; i < 64; ++i) {
    HeapPtr fresh = Heap::create();
    EXPECT_NE(Heap::owner_of(p), fresh.get()) << "heap " << i << " took a destroyed heap's chunk";
    EXPECT_NE(fresh->id(), old_id);
    ids.insert(fresh->id());
  }
  EXPECT_EQ(ids.size(), 64u) << "no id repeats, though each heap was destroyed before the next";
  EXPECT_EQ(Heap::owner_of(p), nullptr);
}

// With the cache on, the next `delay` heaps created never take the chunks of one destroyed just
// before, and no id repeats after them either.
TEST(StalePointer, ARecycledHeapIsReusedOnlyAfterTheDelay) {
  Zone::purge_heap_cache();
  HeapCacheConfig on;  // the release builds' defaults
  const HeapCacheConfig before = Zone::set_heap_cache(on);
  HeapPtr old = Heap::create();
  void* p = old->allocate(64);
  const std::uint64_t old_id = old->id();
  old.reset();
  std::set<std::uint64_t> ids;
  for (std::size_t i = 0; i < 64; ++i) {
    HeapPtr fresh = Heap::create();
    if (i < on.delay) {
      EXPECT_NE(Heap::owner_of(p), fresh.get()) << "heap " << i << " took a destroyed heap's chunk";
      EXPECT_EQ(Heap::owner_of(p), nullptr);
    }
    EXPECT_NE(fresh->id(), old_id);
    ids.insert(fresh->id());
  }
  EXPECT_EQ(ids.size(), 64u) << "ids never repeat, recycled or not";
  Zone::purge_heap_cache();
  Zone::set_heap_cache(before);
}

TEST(StalePointer, AHeapCreatedLaterInTheSameChunkHasAnotherId) {
  CacheOff quarantine_only;
  Quarantine off(0);  // the chunk is handed out again at once
  HeapPtr first = Heap::create();
  const std::uint64_t first_id = first->id();
  const void* state = first.get();
  first.reset();
  HeapPtr second = Heap::create();
  ASSERT_EQ(static_cast<const void*>(second.get()), state) << "the same chunk, lowest first";
  EXPECT_NE(second->id(), first_id);
  EXPECT_EQ(static_cast<std::uint32_t>(second->id()), static_cast<std::uint32_t>(first_id))
      << "the same first chunk";
  EXPECT_GT(second->id() >> 32, first_id >> 32) << "a later generation";
}

// Release builds only: checked builds abort on these (StalePointerDeathTest, the heap misuse
// tests).
#if !defined(REHEAP_TEST_CHECKS)
TEST(StalePointer, AStaleDeleteIntoTheCurrentHeapIsIgnoredAndTheHeapKeepsItsObjects) {
  HeapPtr old = Heap::create();
  void* stale = old->allocate(64);
  old.reset();
  Victim victim;  // created after the destruction, as a reactor spawned next would be
  const std::size_t ignored = Zone::stats().ignored_frees;
  {
    HeapScope scope(*victim.heap);
    ::operator delete(launder(stale));
    // Before the quarantine, the next block of the class was the stale address itself, aliasing
    // a live object of the new heap.
    void* a = ::operator new(64);
    void* b = ::operator new(64);
    EXPECT_NE(a, stale);
    EXPECT_NE(b, stale);
    for (unsigned char* block : victim.blocks) {
      EXPECT_NE(a, block);
      EXPECT_NE(b, block);
    }
    ::operator delete(a);
    ::operator delete(b);
  }
  EXPECT_EQ(Zone::stats().ignored_frees, ignored + 1);
  EXPECT_TRUE(victim.intact());
}

TEST(StalePointer, AWriteThroughAStalePointerLandsInNoLiveHeap) {
  HeapPtr old = Heap::create();
  auto* stale = static_cast<unsigned char*>(old->allocate(4096));
  old.reset();
  Victim victim;  // created after the destruction
  std::memset(launder(stale), 0xee, 4096);  // lands in the quarantined chunk
  EXPECT_EQ(Heap::owner_of(stale), nullptr);
  EXPECT_TRUE(victim.intact());
}

TEST(StalePointer, ReleaseBuildsIgnoreFreeingTheLastFreedBlockAgain) {
  HeapPtr heap = Heap::create();
  void* p = heap->allocate(64);
  heap->deallocate(p);
  const std::size_t ignored = Zone::stats().ignored_frees;
  heap->deallocate(launder(p));
  EXPECT_EQ(Zone::stats().ignored_frees, ignored + 1);
  void* a = heap->allocate(64);
  void* b = heap->allocate(64);
  EXPECT_NE(a, b) << "the block was handed out twice";
}

// Restores take quarantined chunks back, which leaves their entries in the quarantine's ring;
// a long run of destroy/restore cycles must not overflow the ring or lose a waiting chunk. Runs
#endif  // !defined(REHEAP_TEST_CHECKS)
// in a child process with a small zone (1024 chunks: a ring of 1024 entries, 128 waiting).
TEST(StalePointer, RestoreCyclesKeepTheQuarantineBookkeepingExact) {
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  EXPECT_EXIT(
      {
        Zone::configure(ZoneConfig{0, std::size_t{64} << 30, 4096});  // waiting: at most 128
        CacheOff quarantine_only;
        {
          std::vector<HeapPtr> early;  // their chunks wait at the ring's head
          for (int i = 0; i < 50; ++i) early.push_back(Heap::create());
        }
        std::vector<unsigned char> file;
        HeapPtr heap = Heap::create();
        std::memset(heap->allocate(100), 7, 100);
        {
          VectorSink sink(file);
          Snapshotter(*heap, WriteTracking::kOff).write(sink);
        }
        for (int cycle = 0; cycle < 3000; ++cycle) {
          heap.reset();  // its chunk enters the quarantine
          MemorySource source(file.data(), file.size());
          heap = restore(source, RestoreOptions{LayoutCheck::kNone});  // and leaves it
        }
        heap.reset();
        if (Zone::stats().quarantined_chunks != 51) std::exit(2);
        {
          std::vector<HeapPtr> late;  // pushes the early ones out of the quarantine
          for (int i = 0; i < 200; ++i) late.push_back(Heap::create());
        }
        if (Zone::stats().quarantined_chunks > 128) std::exit(3);  // an early entry was lost
        std::vector<HeapPtr> heaps;  // and every chunk can serve a new heap
        for (int i = 0; i < 500; ++i) heaps.push_back(Heap::create());
        std::exit(0);
      },
      testing::ExitedWithCode(0), "");
}

// Checked builds only: release builds ignore these (the tests above).
#if defined(REHEAP_TEST_CHECKS)
class StalePointerDeathTest : public testsupport::CheckedDeathTest {};

TEST_F(StalePointerDeathTest, ADeleteThroughAStalePointerNamesTheDestroyedHeap) {
  HeapPtr old = Heap::create();
  void* stale = old->allocate(64);
  old.reset();
  HeapPtr next = Heap::create();
  EXPECT_DEATH(
      {
        HeapScope scope(*next);
        ::operator delete(launder(stale));
      },
      "no live heap: heap [0-9]+ \\(first chunk [0-9]+, generation [0-9]+\\) gave it back");
}

TEST_F(StalePointerDeathTest, AReadThroughAStalePointerIsReportedNamingTheDestroyedHeap) {
  HeapPtr old = Heap::create();
  auto* stale = static_cast<volatile unsigned char*>(old->allocate(64));
  old.reset();
  EXPECT_DEATH({ [[maybe_unused]] unsigned char c = stale[3]; }, "through a stale pointer: the address belongs to heap");
}

TEST_F(StalePointerDeathTest, AWriteThroughAStalePointerIsReportedNamingTheDestroyedHeap) {
  HeapPtr old = Heap::create();
  auto* stale = static_cast<volatile unsigned char*>(old->allocate(100000));
  old.reset();
  EXPECT_DEATH({ stale[5] = 1; }, "through a stale pointer: the address belongs to heap");
}

#endif  // defined(REHEAP_TEST_CHECKS)
}  // namespace
}  // namespace reheap
