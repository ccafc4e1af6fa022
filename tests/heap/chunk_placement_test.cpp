// Chunk placement (reheap/chunk_placement.h): a placement attached to a heap hears of every chunk
// run the heap takes, and a run it names is taken exactly - unless a live heap holds it or it
// leaves its half of the zone, when the allocation fails and nothing of another heap is touched.
#include <gtest/gtest.h>

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "reheap/chunk_placement.h"
#include "reheap/heap.h"
#include "reheap/zone.h"

namespace reheap::chunk_placement_test {
namespace {

constexpr std::size_t kPageRun = 64 * 1024;        // a page run: a large chunk
constexpr std::size_t kHuge = 3 * 1024 * 1024;     // a huge block: a run of its own
constexpr std::size_t kClassBlock = 4096;          // 512 fill a class chunk's 2 MiB of the class

std::uint64_t chunk_index(const void* p) {
  const ZoneStats zone = Zone::stats();
  return (reinterpret_cast<std::uintptr_t>(p) - zone.base) / zone.chunk_size;
}

// Writes down what the heap tells it; names `next` for the next take, if set.
class Steer final : public ChunkPlacement {
 public:
  Steer() {
    asked.reserve(16);
    taken_runs.reserve(16);
    refusals.reserve(16);
  }
  std::optional<std::uint64_t> place(ChunkHalf half, std::uint64_t count) noexcept override {
    asked.push_back(ChunkRun{half, 0, count});
    return std::exchange(next, std::nullopt);
  }
  void taken(const ChunkRun& run) noexcept override { taken_runs.push_back(run); }
  void refused(const ChunkRun& run, const ChunkRefusal& why) noexcept override {
    refusals.emplace_back(run, why);
  }

  std::optional<std::uint64_t> next;
  std::vector<ChunkRun> asked;
  std::vector<ChunkRun> taken_runs;
  std::vector<std::pair<ChunkRun, ChunkRefusal>> refusals;
};

// A large chunk no live heap holds: one a destroyed heap's page run had (it waits in quarantine).
std::uint64_t free_large_chunk() {
  HeapPtr gone = Heap::create();
  void* run = gone->allocate(kPageRun);
  EXPECT_NE(run, nullptr);
  return chunk_index(run);
}

TEST(ChunkPlacement, HearsOfEveryRunTheHeapTakesAndOnlyOfThose) {
  HeapPtr heap = Heap::create();
  Steer steer;
  set_chunk_placement(*heap, &steer);
  EXPECT_EQ(chunk_placement(*heap), &steer);
  void* run = heap->allocate(kPageRun);
  void* second_run = heap->allocate(kPageRun);  // the same large chunk
  void* huge = heap->allocate(kHuge);
  std::vector<void*> blocks;
  for (int i = 0; i < 600; ++i) blocks.push_back(heap->allocate(kClassBlock));
  ASSERT_NE(run, nullptr);
  ASSERT_NE(second_run, nullptr);
  ASSERT_NE(huge, nullptr);
  ASSERT_NE(blocks.back(), nullptr);
  const std::vector<ChunkRun> expected = {
      {ChunkHalf::kLarge, chunk_index(run), 1},
      {ChunkHalf::kLarge, chunk_index(huge), 1},
      {ChunkHalf::kClass, chunk_index(blocks.back()), 1},
  };
  EXPECT_EQ(steer.taken_runs, expected);
  ASSERT_EQ(steer.asked.size(), 3u);
  EXPECT_TRUE(steer.refusals.empty());
  set_chunk_placement(*heap, nullptr);
  EXPECT_EQ(chunk_placement(*heap), nullptr);
}

TEST(ChunkPlacement, ANamedRunIsTakenExactly) {
  const std::uint64_t for_run = free_large_chunk();
  const std::uint64_t for_huge = free_large_chunk();
  HeapPtr heap = Heap::create();
  Steer steer;
  set_chunk_placement(*heap, &steer);
  steer.next = for_run;
  void* run = heap->allocate(kPageRun);
  ASSERT_NE(run, nullptr);
  EXPECT_EQ(chunk_index(run), for_run);
  steer.next = for_huge;
  void* huge = heap->allocate(kHuge);
  ASSERT_NE(huge, nullptr);
  EXPECT_EQ(chunk_index(huge), for_huge);
  std::memset(huge, 1, kHuge);
  const std::vector<ChunkRun> expected = {{ChunkHalf::kLarge, for_run, 1}, {ChunkHalf::kLarge, for_huge, 1}};
  EXPECT_EQ(steer.taken_runs, expected);
  EXPECT_TRUE(steer.refusals.empty());
  EXPECT_EQ(Heap::owner_of(run), heap.get());
  set_chunk_placement(*heap, nullptr);
}

TEST(ChunkPlacement, ARunALiveHeapHoldsIsRefusedAndThatHeapIsLeftAlone) {
  HeapPtr other = Heap::create();
  auto* theirs = static_cast<char*>(other->allocate(kPageRun));
  ASSERT_NE(theirs, nullptr);
  std::memset(theirs, 0x5a, kPageRun);
  HeapPtr heap = Heap::create();
  Steer steer;
  set_chunk_placement(*heap, &steer);
  steer.next = chunk_index(theirs);
  EXPECT_EQ(heap->allocate(kPageRun), nullptr);
  ASSERT_EQ(steer.refusals.size(), 1u);
  EXPECT_EQ(steer.refusals[0].first, (ChunkRun{ChunkHalf::kLarge, chunk_index(theirs), 1}));
  EXPECT_FALSE(steer.refusals[0].second.outside_half);
  EXPECT_EQ(steer.refusals[0].second.holder, other->id());
  EXPECT_TRUE(steer.taken_runs.empty());
  EXPECT_EQ(heap->stats().failed_allocations, 1u);
  EXPECT_EQ(Heap::owner_of(theirs), other.get());
  for (std::size_t i = 0; i < kPageRun; ++i) ASSERT_EQ(theirs[i], 0x5a) << i;

  // Its own chunks are no more available to it: a huge block named into its page run's chunk.
  void* run = heap->allocate(kPageRun);  // placed by the zone
  ASSERT_NE(run, nullptr);
  steer.next = chunk_index(run);
  EXPECT_EQ(heap->allocate(kHuge), nullptr);
  ASSERT_EQ(steer.refusals.size(), 2u);
  EXPECT_EQ(steer.refusals[1].second.holder, heap->id());
  set_chunk_placement(*heap, nullptr);
}

TEST(ChunkPlacement, ARunOutsideItsHalfOfTheZoneIsRefused) {
  HeapPtr heap = Heap::create();
  Steer steer;
  set_chunk_placement(*heap, &steer);
  const ZoneStats zone = Zone::stats();
  const std::uint64_t chunks = zone.size / zone.chunk_size;
  const std::uint64_t large = free_large_chunk();
  // A page run named in the class half, at the zone's end, far past it; a class chunk named in
  // the large half.
  for (const std::uint64_t first : {std::uint64_t{0}, chunks, std::uint64_t{1} << 62}) {
    steer.next = first;
    EXPECT_EQ(heap->allocate(kPageRun), nullptr) << first;
  }
  steer.next = large;
  std::vector<void*> blocks;
  void* last = nullptr;
  for (int i = 0; i < 600; ++i) {
    last = heap->allocate(kClassBlock);
    if (last == nullptr) break;
    blocks.push_back(last);
  }
  EXPECT_EQ(last, nullptr);
  EXPECT_EQ(blocks.size(), 512u);  // the class's 2 MiB in the heap's first chunk
  ASSERT_EQ(steer.refusals.size(), 4u);
  for (const auto& [run, why] : steer.refusals) {
    EXPECT_TRUE(why.outside_half) << run.first;
    EXPECT_EQ(why.holder, 0u);
  }
  EXPECT_EQ(steer.refusals[3].first.half, ChunkHalf::kClass);
  EXPECT_TRUE(steer.taken_runs.empty());
  set_chunk_placement(*heap, nullptr);
}

TEST(ChunkPlacement, AnAttachmentSpeaksForItsHeapOnly) {
  Steer steer;
  std::uint64_t id = 0;
  {
    HeapPtr heap = Heap::create();
    set_chunk_placement(*heap, &steer);
    id = heap->id();
  }
  // A heap created in the destroyed one's chunk (the heap cache hands it on) starts without it.
  HeapPtr next = Heap::create();
  EXPECT_EQ(chunk_placement(*next), nullptr);
  ASSERT_NE(next->allocate(kPageRun), nullptr);
  EXPECT_TRUE(steer.asked.empty());
  detach_chunk_placement(id, &steer);  // the heap is gone: nothing happens
  EXPECT_EQ(chunk_placement(*next), nullptr);
}

}  // namespace
}  // namespace reheap::chunk_placement_test
