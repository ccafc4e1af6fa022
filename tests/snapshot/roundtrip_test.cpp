// Round trips: a heap saved to a file and restored - in another process running the same binary,
// or in this one after the heap was destroyed - comes back at the same addresses with its root,
// every pointer, vtable and std::function target valid, the same statistics, and an allocator
// that goes on allocating and freeing normally. A restored heap can be saved again and travel
// back (ping-pong between processes).
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

constexpr std::size_t KiB = 1024;
constexpr std::size_t MiB = 1024 * KiB;

// Builds case `name` here and saves it; a helper restores and checks it, mutates it and saves it
// back; this process restores and checks that, mutates it again and saves it; a helper checks it
// once more.
void ping_pong(const std::string& name, std::uint64_t seed) {
  const Case& c = find_case(name);
  TempDir dir;
  const auto first = dir / "first.snap", second = dir / "second.snap", third = dir / "third.snap";
  std::uint64_t d0 = 0, d1 = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, seed);
    d0 = digest_of(*heap, c);
    SnapshotInfo info;
    {
      Snapshotter snapshotter(*heap);
      info = snapshotter.save(first);
    }
    EXPECT_EQ(info.kind, SnapshotKind::kFull);
    EXPECT_EQ(info.bytes_written, std::filesystem::file_size(first));
    EXPECT_GT(info.pages_written, 0u);
    mutate_in(*heap, c, 1);  // what the helper will do to its copy
    d1 = digest_of(*heap, c);
    ASSERT_NE(d0, d1) << "mutate(1) must change case " << name;
  }  // destroyed: this process restores the same chunks below

  const ChildResult there = run_self({"--restore-helper", name, first.string(), hex(d0), "1",
                                      second.string()});
  ASSERT_TRUE(there.succeeded()) << there.describe();

  const ZoneUse before = zone_use();
  std::uint64_t d2 = 0;
  {
    HeapPtr back = restore(second);
    ASSERT_NE(back, nullptr);
    EXPECT_EQ(digest_of(*back, c), d1) << "the state the helper saved differs from ours";
    mutate_in(*back, c, 2);
    d2 = digest_of(*back, c);
    Snapshotter snapshotter(*back);
    snapshotter.save(third);
  }
  EXPECT_EQ(zone_use(), before) << to_string(zone_use()) << " vs " << to_string(before);

  const ChildResult again = run_self({"--restore-helper", name, third.string(), hex(d2)});
  EXPECT_TRUE(again.succeeded()) << again.describe();
}

TEST(SnapshotRoundTrip, MapOfStringToVectorCrossesProcesses) {
  REQUIRE_LAYOUT_STABLE();
  ping_pong("map", 1);
}

TEST(SnapshotRoundTrip, UnorderedMapOf12kStringsCrossesProcesses) {
  REQUIRE_LAYOUT_STABLE();
  ping_pong("unordered", 2);
}

TEST(SnapshotRoundTrip, PolymorphicObjectsKeepTheirVirtualFunctions) {
  REQUIRE_LAYOUT_STABLE();
  ping_pong("poly", 3);
}

TEST(SnapshotRoundTrip, StdFunctionsWithCapturesStayCallable) {
  REQUIRE_LAYOUT_STABLE();
  ping_pong("function", 4);
}

TEST(SnapshotRoundTrip, CyclicGraphKeepsItsPointers) {
  REQUIRE_LAYOUT_STABLE();
  ping_pong("graph", 5);
}

TEST(SnapshotRoundTrip, LargeHugeAndSparseBlocksCrossProcesses) {
  REQUIRE_LAYOUT_STABLE();
  ping_pong("huge", 6);
}

void expect_same_stats(const HeapStats& a, const HeapStats& b) {
  EXPECT_EQ(a.live_blocks, b.live_blocks);
  EXPECT_EQ(a.live_bytes, b.live_bytes);
  EXPECT_EQ(a.committed_bytes, b.committed_bytes);
  EXPECT_EQ(a.reserved_bytes, b.reserved_bytes);
  EXPECT_EQ(a.class_chunks, b.class_chunks);
  EXPECT_EQ(a.large_chunks, b.large_chunks);
  EXPECT_EQ(a.large_live_blocks, b.large_live_blocks);
  EXPECT_EQ(a.large_live_bytes, b.large_live_bytes);
  EXPECT_EQ(a.large_free_bytes, b.large_free_bytes);
  EXPECT_EQ(a.huge_live_blocks, b.huge_live_blocks);
  EXPECT_EQ(a.huge_live_bytes, b.huge_live_bytes);
  EXPECT_EQ(a.limit_bytes, b.limit_bytes);
  for (std::size_t i = 0; i < a.classes.size(); ++i) {
    EXPECT_EQ(a.classes[i].live_blocks, b.classes[i].live_blocks) << "class " << i;
    EXPECT_EQ(a.classes[i].free_blocks, b.classes[i].free_blocks) << "class " << i;
  }
}

TEST(SnapshotRoundTrip, SameProcessAfterDestroyGivesTheSameHeapBack) {
  const Case& c = find_case("poly");
  TempDir dir;
  const ZoneUse empty = zone_use();
  HeapPtr heap = Heap::create();
  build_in(*heap, c, 11);
  heap->set_limit(512 * MiB);
  const std::uint64_t digest = digest_of(*heap, c);
  const HeapStats stats = heap->stats();
  const std::uint64_t id = heap->id();
  void* const root = heap->root();
  const SnapshotInfo info = Snapshotter(*heap).save(dir / "h.snap");
  EXPECT_EQ(info.generation, 1u);
  heap.reset();
  EXPECT_EQ(zone_use(), empty);

  HeapPtr back = restore(dir / "h.snap");
  EXPECT_EQ(back->id(), id);
  EXPECT_EQ(back->root(), root);
  EXPECT_EQ(Heap::owner_of(root), back.get());
  EXPECT_EQ(back->limit(), 512 * MiB) << "the restored heap keeps the limit it was saved with";
  EXPECT_EQ(digest_of(*back, c), digest);
  expect_same_stats(back->stats(), stats);
  mutate_in(*back, c, 5);  // allocates, frees and calls virtual functions
  EXPECT_NE(digest_of(*back, c), digest);
  back.reset();
  EXPECT_EQ(zone_use(), empty);
}

TEST(SnapshotRoundTrip, ThroughAByteStream) {
  const Case& c = find_case("graph");
  std::vector<unsigned char> bytes;
  std::uint64_t digest = 0;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 12);
    digest = digest_of(*heap, c);
    VectorSink sink(bytes);
    const SnapshotInfo info = Snapshotter(*heap).write(sink);
    EXPECT_EQ(info.bytes_written, bytes.size());
    EXPECT_EQ(info.kind, SnapshotKind::kFull);
  }
  {
    MemorySource source(bytes.data(), bytes.size());
    SnapshotReader reader(source, "in-memory");
    EXPECT_EQ(reader.header().kind, SnapshotKind::kFull);
    PageRun run;
    std::uint64_t pages = 0;
    while (reader.next(run)) {
      reader.skip_data();
      pages += run.pages;
    }
    EXPECT_GT(pages, 0u);
  }
  MemorySource source(bytes.data(), bytes.size());
  HeapPtr back = restore(source);
  EXPECT_EQ(digest_of(*back, c), digest);
}

TEST(SnapshotRoundTrip, EmptyHeapWithoutRoot) {
  TempDir dir;
  std::uint64_t id = 0;
  {
    HeapPtr heap = Heap::create();
    id = heap->id();
    Snapshotter(*heap).save(dir / "empty.snap");
  }
  HeapPtr back = restore(dir / "empty.snap");
  EXPECT_EQ(back->id(), id);
  EXPECT_EQ(back->root(), nullptr);
  EXPECT_EQ(back->stats().live_blocks, 0u);
  void* p = back->allocate(100);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(back->owns(p));
  back->deallocate(p);
}

TEST(SnapshotRoundTrip, SavingAgainReplacesTheFileWithTheNewState) {
  const Case& c = find_case("map");
  TempDir dir;
  HeapPtr heap = Heap::create();
  build_in(*heap, c, 13);
  Snapshotter snapshotter(*heap);
  const SnapshotInfo one = snapshotter.save(dir / "s.snap");
  mutate_in(*heap, c, 1);
  const std::uint64_t digest = digest_of(*heap, c);
  const SnapshotInfo two = snapshotter.save(dir / "s.snap");
  EXPECT_NE(one.id, two.id);
  EXPECT_EQ(two.generation, one.generation + 1);
  EXPECT_EQ(read_snapshot_header(dir / "s.snap").id, two.id);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"s.snap"}) << "no temporary file is left";
  heap.reset();
  HeapPtr back = restore(dir / "s.snap");
  EXPECT_EQ(digest_of(*back, c), digest);
}

TEST(SnapshotRoundTrip, TwoHeapsRestoreIndependentlyInAnyOrder) {
  const Case& a = find_case("map");
  const Case& b = find_case("function");
  TempDir dir;
  std::uint64_t da = 0, db = 0;
  {
    HeapPtr ha = Heap::create();
    HeapPtr hb = Heap::create();
    build_in(*ha, a, 21);
    build_in(*hb, b, 22);
    da = digest_of(*ha, a);
    db = digest_of(*hb, b);
    Snapshotter(*ha).save(dir / "a.snap");
    Snapshotter(*hb).save(dir / "b.snap");
  }
  HeapPtr rb = restore(dir / "b.snap");
  EXPECT_EQ(digest_of(*rb, b), db);
  HeapPtr ra = restore(dir / "a.snap");
  EXPECT_EQ(digest_of(*ra, a), da);
  EXPECT_EQ(digest_of(*rb, b), db);
}

TEST(SnapshotRoundTrip, HeapOfSeveralClassChunks) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  std::vector<void*>* blocks = nullptr;
  {
    HeapScope scope(*heap);
    blocks = new std::vector<void*>;
    while (heap->stats().class_chunks < 2 && blocks->size() < 200000) {
      for (int i = 0; i < 1000; ++i) {
        blocks->push_back(::operator new(1024));
        fill_words(blocks->back(), 16, blocks->size());
      }
    }
    heap->set_root(blocks);
  }
  ASSERT_GE(heap->stats().class_chunks, 2u);
  const HeapStats stats = heap->stats();
  Snapshotter(*heap).save(dir / "big.snap");
  heap.reset();
  HeapPtr back = restore(dir / "big.snap");
  const auto* restored = static_cast<const std::vector<void*>*>(back->root());
  ASSERT_EQ(restored, blocks);
  std::size_t bad = 0;
  for (std::size_t i = 0; i < restored->size(); ++i) {
    bad += words_intact((*restored)[i], 16, i + 1) ? 0 : 1;
  }
  EXPECT_EQ(bad, 0u);
  expect_same_stats(back->stats(), stats);
}

// The snapshot code allocates nothing in the heap it saves or in the current heap, even when the
// saved heap is current.
std::vector<std::uint64_t> block_counts(const HeapStats& s) {
  std::vector<std::uint64_t> counts = {s.live_blocks, s.committed_bytes, s.large_live_blocks,
                                       s.large_free_bytes, s.huge_live_blocks};
  for (const ClassStats& c : s.classes) {
    counts.push_back(c.live_blocks);
    counts.push_back(c.free_blocks);
  }
  return counts;
}

TEST(SnapshotRoundTrip, SavingAndRestoringAllocateNothingInTheCurrentHeap) {
  TempDir dir;
  const std::filesystem::path full = dir / "full.snap", inc = dir / "inc.snap", other = dir / "o.snap";
  HeapPtr heap = Heap::create();
  build_in(*heap, find_case("map"), 14);
  {
    HeapPtr saved = Heap::create();
    build_in(*saved, find_case("graph"), 15);
    Snapshotter(*saved).save(other);
  }
  Snapshotter snapshotter(*heap);
  const std::vector<std::uint64_t> before = block_counts(heap->stats());
  {
    HeapScope scope(*heap);
    snapshotter.save(full);
    snapshotter.save_increment(inc);
    snapshotter.tracking();
    verify_snapshot(inc);
    HeapPtr restored = restore(other);
    EXPECT_EQ(current_heap(), heap.get());
  }
  EXPECT_EQ(block_counts(heap->stats()), before);
}

TEST(SnapshotRoundTrip, SecondSnapshotterForTheSameHeapIsMisuse) {
  HeapPtr heap = Heap::create();
  Snapshotter first(*heap);
  const Outcome o = attempt([&] { Snapshotter second(*heap); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kMisuse)) << o.describe();
}

}  // namespace
}  // namespace reheap::snaptest
