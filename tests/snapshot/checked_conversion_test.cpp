// Snapshots crossing build flavours: a checked build (REHEAP_CHECKS: the debug, asan and tsan
// presets) restores a release build's snapshot, rebuilding the free-block shadow the release heap
// never had, and a release build restores a checked one, dropping the shadow. Each test binary is
// one flavour, so it restores the committed fixture of the other (fixtures/README.md): the
// contents come back, the heap allocates and frees on (in a checked build, a block that was free
// in the release snapshot is a double free if freed again), it saves as a snapshot of this build,
// and the first increment after the conversion is full. Forged files in converted restores are
// the adversarial suite's (checked_conversion_forgery_test.cpp).
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "conversion_fixture.h"
#include "misuse_support.h"
#include "reheap/size_class.h"
#include "reheap/snapshot.h"
#include "reheap/snapshot_file.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

using testsupport::kChecked;

RestoreOptions any_layout() { return RestoreOptions{.layout = LayoutCheck::kNone}; }

class CheckedConversion : public testing::Test {
 protected:
  void SetUp() override {
#if defined(__SANITIZE_THREAD__)
    GTEST_SKIP() << "ThreadSanitizer builds place the zone elsewhere (Zone::default_config) than the "
                    "fixtures, which the release and asan builds saved";
#endif
  }
};

FixtureRoot& root_of(Heap& heap) { return *static_cast<FixtureRoot*>(heap.root()); }

// Changes the fixture as a program would: frees a live class block and allocates a class block
// and a page run, all recorded in the root.
void mutate(Heap& heap, std::uint64_t seed) {
  FixtureRoot& r = root_of(heap);
  ASSERT_LT(r.freed_count, kFixtureFreed);
  ASSERT_LT(r.live_count + 1, kFixtureLive);
  const FixtureBlock gone = r.live[0];
  heap.deallocate(gone.p);
  r.freed[r.freed_count++] = gone;
  r.live[0] = r.live[--r.live_count];
  for (std::size_t size : {std::size_t{64}, std::size_t{50000}}) {
    void* p = heap.allocate(size);
    ASSERT_NE(p, nullptr);
    fill_fixture_pattern(p, size, seed);
    r.live[r.live_count++] = FixtureBlock{p, size, seed++};
  }
}

TEST_F(CheckedConversion, RestoresTheOtherBuildsSnapshotAndAllocatesOn) {
  const SnapshotHeader header = read_snapshot_header(other_build_fixture());
  ASSERT_NE(header.checked_build, kChecked) << "the fixture should come from the other build";
  HeapPtr heap = restore(other_build_fixture(), any_layout());
  ASSERT_EQ(check_conversion_fixture(*heap), "");
  FixtureRoot& r = root_of(*heap);
  EXPECT_EQ(r.checked_build != 0, !kChecked);

  // The free lists came through: each class hands its freed blocks out again, last freed first.
  std::vector<FixtureBlock> again;
  for (std::size_t i = r.freed_count; i-- > 0;) {
    const FixtureBlock& b = r.freed[i];
    if (b.size > kMaxClassSize) continue;  // a page run: where it lands again is the bins' choice
    void* p = heap->allocate(b.size);
    EXPECT_EQ(p, b.p) << "freed block " << i << " of " << b.size << " bytes";
    fill_fixture_pattern(p, b.size, 1000 + i);
    again.push_back({p, b.size, 1000 + i});
  }
  // Then carving goes on past the snapshot's cursors, and a page run and a huge block come too.
  for (std::size_t n = 0; n < 300; ++n) {
    const std::size_t size = n % 2 == 0 ? 8 + n * 37 % 2000 : 1000 + n * 977 % 15000;
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr);
    fill_fixture_pattern(p, size, 5000 + n);
    again.push_back({p, size, 5000 + n});
  }
  for (std::size_t size : {std::size_t{70000}, std::size_t{2} << 20}) {
    void* p = heap->allocate(size);
    ASSERT_NE(p, nullptr);
    fill_fixture_pattern(p, size, size);
    again.push_back({p, size, size});
  }
  for (const FixtureBlock& b : again) {
    EXPECT_TRUE(fixture_pattern_intact(b.p, b.size, b.seed)) << b.size << "-byte block overwritten";
  }
  EXPECT_EQ(check_conversion_fixture(*heap), "") << "allocating overwrote the restored blocks";
  for (const FixtureBlock& b : again) heap->deallocate(b.p);
  // The snapshot's live blocks free cleanly: in a checked build, the rebuilt shadow holds them
  // allocated.
  for (std::size_t i = 0; i < r.live_count; ++i) heap->deallocate(r.live[i].p);
}

// A block free in a release snapshot is free in the converted heap's shadow: freeing it again is
// the double free a checked build reports, whether it heads its free list or lies deeper.
// Checked builds only: release builds detect only a double free at a list's head.
#if defined(REHEAP_TEST_CHECKS)
TEST_F(CheckedConversion, FreeingABlockFreeInTheSnapshotAgainIsADoubleFree) {
  testing::FLAGS_gtest_death_test_style = "threadsafe";
  HeapPtr heap = restore(other_build_fixture(), any_layout());
  const FixtureRoot& r = root_of(*heap);
  // The 8-byte class: blocks 1, 3 and 5 were freed in that order, so 5 heads the list and 1 ends it.
  ASSERT_GE(r.freed_count, 3u);
  ASSERT_EQ(r.freed[0].size, 8u);
  ASSERT_EQ(r.freed[2].size, 8u);
  EXPECT_DEATH(heap->deallocate(r.freed[0].p), "double free");
  EXPECT_DEATH(heap->deallocate(r.freed[2].p), "double free");
}
#endif  // defined(REHEAP_TEST_CHECKS)

TEST_F(CheckedConversion, AConvertedHeapSavesAsASnapshotOfThisBuild) {
  TempDir dir;
  HeapPtr heap = restore(other_build_fixture(), any_layout());
  mutate(*heap, 77);
  {
    Snapshotter snapshotter(*heap);
    snapshotter.save(dir / "converted.snap");
  }
  EXPECT_EQ(read_snapshot_header(dir / "converted.snap").checked_build, kChecked);
  heap.reset();
  // In a checked build this restore checks that every free block is marked in the shadow the
  // file holds: the rebuilt shadow's pages were saved.
  heap = restore(dir / "converted.snap", any_layout());
  EXPECT_EQ(check_conversion_fixture(*heap), "");
  mutate(*heap, 88);
  EXPECT_EQ(check_conversion_fixture(*heap), "");
}

// Attached to the file it came from, a converted heap is not what that file holds (restore wrote
// the shadow behind the write tracker's back): the next increment is a full snapshot saying why,
// and increments after it build on that one.
TEST_F(CheckedConversion, TheFirstIncrementAfterAConversionIsFull) {
  TempDir dir;
  std::filesystem::copy_file(other_build_fixture(), dir / "other.snap");
  HeapPtr heap = restore(dir / "other.snap", any_layout());
  auto snapshotter = std::make_unique<Snapshotter>(*heap);
  snapshotter->attach(dir / "other.snap");
  mutate(*heap, 10);
  const SnapshotInfo first = snapshotter->save_increment(dir / "1.snap");
  EXPECT_EQ(first.kind, SnapshotKind::kFull);
  const bool tracking = snapshotter->tracking().rfind("none", 0) != 0;
  if (tracking) {
    EXPECT_NE(first.fallback_reason.find("REHEAP_CHECKS"), std::string::npos) << first.fallback_reason;
  }
  mutate(*heap, 20);
  const SnapshotInfo second = snapshotter->save_increment(dir / "2.snap");
  if (tracking) {
    EXPECT_EQ(second.kind, SnapshotKind::kIncremental) << second.fallback_reason;
  }
  snapshotter.reset();
  heap.reset();
  heap = restore(dir / "2.snap", any_layout());
  EXPECT_EQ(check_conversion_fixture(*heap), "");
  EXPECT_EQ(root_of(*heap).checked_build != 0, !kChecked);
}

// The fixture of this build restores as any snapshot does: the fixtures are what they claim.
TEST_F(CheckedConversion, ThisBuildsFixtureRestoresUnconverted) {
  EXPECT_EQ(read_snapshot_header(this_build_fixture()).checked_build, kChecked);
  HeapPtr heap = restore(this_build_fixture(), any_layout());
  EXPECT_EQ(check_conversion_fixture(*heap), "");
  EXPECT_EQ(root_of(*heap).checked_build != 0, kChecked);
}

}  // namespace
}  // namespace reheap::snaptest
