// Increments: a full snapshot and the increments after it (each holding only the pages written
// since its parent) restore - in another process or in this one after the heap is gone - to
// exactly the state of the chain's last file, over many generations in which blocks of every
// class are allocated, modified and freed, huge blocks given back and chunks reused. compact()
// folds a chain into one full snapshot of the same state. Without a parent, save_increment()
// writes a full snapshot and says why. A restored heap attached to its file continues the chain.
//
// Where the kernel cannot track writes, every "increment" is a full snapshot saying why; the
// tests then check that instead of the increments' shape.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"
#include "write_tracking_support.h"

namespace reheap::snaptest {
namespace {

constexpr std::size_t kGenerations = kSlowBuild ? 25 : 50;

std::string gen_name(std::size_t g) {
  char name[32];
  std::snprintf(name, sizeof name, "gen%03zu.snap", g);
  return name;
}

// A chain of the "gens" case: generation 0 saved with save_increment() (which falls back to a
// full snapshot), then one increment per generation. The heap is destroyed when it is built.
struct Chain {
  TempDir dir;
  std::vector<std::filesystem::path> files;
  std::vector<std::uint64_t> digests;  // the state each file must restore to
  std::vector<SnapshotInfo> infos;
  bool tracking = false;
  std::string tracking_text;

  // `after_save(g)` runs after generation g is saved, with the heap still alive.
  void build(std::size_t generations, const std::function<void(std::size_t)>& after_save = {}) {
    const Case& c = find_case("gens");
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 99);
    Snapshotter snapshotter(*heap);
    tracking_text = snapshotter.tracking();
    tracking = tracking_text.rfind("none", 0) != 0;
    for (std::size_t g = 0; g <= generations; ++g) {
      if (g > 0) mutate_in(*heap, c, g);
      files.push_back(dir / gen_name(g));
      digests.push_back(digest_of(*heap, c));
      infos.push_back(snapshotter.save_increment(files.back()));
      if (after_save) after_save(g);
    }
  }
};

// What each file of the chain says about itself.
void expect_chain_shape(const Chain& chain) {
  EXPECT_EQ(chain.infos[0].kind, SnapshotKind::kFull);
  EXPECT_FALSE(chain.infos[0].fallback_reason.empty()) << "the first save had no parent";
  for (std::size_t g = 1; g < chain.infos.size(); ++g) {
    const SnapshotInfo& info = chain.infos[g];
    SCOPED_TRACE("generation " + std::to_string(g));
    EXPECT_EQ(info.generation, g + 1);
    EXPECT_EQ(info.bytes_written, std::filesystem::file_size(chain.files[g]));
    const SnapshotHeader header = verify_snapshot(chain.files[g]);
    EXPECT_EQ(header.id, info.id);
    if (chain.tracking) {
      EXPECT_EQ(info.kind, SnapshotKind::kIncremental) << info.fallback_reason;
      EXPECT_TRUE(info.fallback_reason.empty()) << info.fallback_reason;
      EXPECT_EQ(info.parent_id, chain.infos[g - 1].id);
      EXPECT_EQ(header.parent_file, gen_name(g - 1));
    } else {
      EXPECT_EQ(info.kind, SnapshotKind::kFull);
      EXPECT_FALSE(info.fallback_reason.empty());
    }
  }
  const std::vector<std::filesystem::path> links = snapshot_chain(chain.files.back());
  if (chain.tracking) {
    ASSERT_EQ(links.size(), chain.files.size());
    for (std::size_t g = 0; g < links.size(); ++g) {
      EXPECT_EQ(links[g].filename(), chain.files[g].filename());
    }
  } else {
    EXPECT_EQ(links.size(), 1u);
  }
}

TEST(SnapshotIncrement, FallsBackToFullWithoutParent) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  build_in(*heap, find_case("map"), 1);
  Snapshotter snapshotter(*heap);
  const SnapshotInfo info = snapshotter.save_increment(dir / "first.snap");
  EXPECT_EQ(info.kind, SnapshotKind::kFull);
  EXPECT_FALSE(info.fallback_reason.empty());
  EXPECT_EQ(info.parent_id, 0u);
  EXPECT_EQ(info.generation, 1u);
  const SnapshotHeader header = verify_snapshot(dir / "first.snap");
  EXPECT_EQ(header.kind, SnapshotKind::kFull);
  EXPECT_EQ(header.parent_id, 0u);
  EXPECT_TRUE(header.parent_file.empty());
}

TEST(SnapshotIncrement, IncrementHoldsOnlyTheChangedPages) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  build_in(*heap, find_case("unordered"), 2);
  Snapshotter snapshotter(*heap);
  REQUIRE_TRACKING_BY(snapshotter);
  const SnapshotInfo full = snapshotter.save(dir / "full.snap");
  const SnapshotInfo idle = snapshotter.save_increment(dir / "idle.snap");
  EXPECT_EQ(idle.kind, SnapshotKind::kIncremental);
  EXPECT_LE(idle.pages_written, 4u) << "nothing was written since the parent";
  auto* block = static_cast<unsigned char*>(heap->allocate(64));
  block[0] = 1;
  const SnapshotInfo small = snapshotter.save_increment(dir / "small.snap");
  EXPECT_EQ(small.kind, SnapshotKind::kIncremental);
  EXPECT_EQ(small.parent_id, idle.id);
  EXPECT_LE(small.pages_written, 16u) << "one block changed; the full snapshot had "
                                      << full.pages_written << " pages";
  EXPECT_LT(small.bytes_written * 20, full.bytes_written);
}

TEST(SnapshotIncrement, ChainOfManyGenerationsRestoresInAnotherProcess) {
  REQUIRE_LAYOUT_STABLE();
  Chain chain;
  const std::vector<std::size_t> checks = {1, 2, 10, kGenerations / 2, kGenerations};
  chain.build(kGenerations, [&](std::size_t g) {
    if (std::find(checks.begin(), checks.end(), g) == checks.end()) return;
    const ChildResult child = run_self({"--restore-helper", "gens", chain.files[g].string(),
                                        hex(chain.digests[g])});
    EXPECT_TRUE(child.succeeded()) << "generation " << g << ": " << child.describe();
  });
  expect_chain_shape(chain);
}

TEST(SnapshotIncrement, ChainRestoresInTheSameProcessAfterDestroy) {
  Chain chain;
  chain.build(kGenerations);
  expect_chain_shape(chain);
  const ZoneUse empty = zone_use();
  for (std::size_t g : {kGenerations, std::size_t{0}, std::size_t{1}, kGenerations / 2 + 1}) {
    SCOPED_TRACE("generation " + std::to_string(g));
    HeapPtr heap = restore(chain.files[g]);
    EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests[g]);
    mutate_in(*heap, find_case("gens"), 1000 + g);  // the restored allocator works
    heap.reset();
    EXPECT_EQ(zone_use(), empty);
  }
}

TEST(SnapshotIncrement, CompactFoldsTheChainIntoOneFullSnapshot) {
  Chain chain;
  chain.build(kGenerations);
  for (std::size_t g : {kGenerations, kGenerations / 2}) {
    SCOPED_TRACE("generation " + std::to_string(g));
    const auto out = chain.dir / ("compact" + std::to_string(g) + ".snap");
    const SnapshotInfo info = compact(chain.files[g], out);
    EXPECT_EQ(info.kind, SnapshotKind::kFull);
    EXPECT_EQ(info.bytes_written, std::filesystem::file_size(out));
    const SnapshotHeader header = verify_snapshot(out);
    EXPECT_EQ(header.kind, SnapshotKind::kFull);
    EXPECT_EQ(header.parent_id, 0u);
    EXPECT_EQ(snapshot_chain(out).size(), 1u);
    HeapPtr heap = restore(out);
    EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests[g]);
  }
  // Compacting needs the chain only: with the compacted file in hand, the chain can go.
  const auto out = chain.dir / "final.snap";
  compact(chain.files.back(), out);
  for (const auto& f : chain.files) std::filesystem::remove(f);
  HeapPtr heap = restore(out);
  EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests.back());
}

// compact(latest, out) onto a file latest depends on would lose that file's state and break
// latest's chain: refused before anything is written. Onto latest itself it is allowed.
TEST(SnapshotIncrement, CompactRefusesToWriteOverAnAncestorOfTheChain) {
  Chain chain;
  chain.build(3);
  std::vector<std::uintmax_t> sizes;
  for (const auto& f : chain.files) sizes.push_back(std::filesystem::file_size(f));
  for (std::size_t g = 0; g + 1 < chain.files.size(); ++g) {
    SCOPED_TRACE("ancestor " + std::to_string(g));
    try {
      compact(chain.files.back(), chain.files[g]);
      ADD_FAILURE() << "compact wrote over an ancestor";
    } catch (const SnapshotError& e) {
      EXPECT_EQ(e.code(), SnapshotErrc::kMisuse);
      EXPECT_NE(std::string(e.what()).find("a file of the chain being compacted"), std::string::npos) << e.what();
    }
  }
  for (std::size_t g = 0; g < chain.files.size(); ++g) {
    EXPECT_EQ(std::filesystem::file_size(chain.files[g]), sizes[g]) << chain.files[g];
  }
  EXPECT_EQ(snapshot_chain(chain.files.back()).size(), chain.files.size());
  // The latest file itself becomes its full equivalent.
  compact(chain.files.back(), chain.files.back());
  EXPECT_EQ(verify_snapshot(chain.files.back()).kind, SnapshotKind::kFull);
  HeapPtr heap = restore(chain.files.back());
  EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests.back());
}

TEST(SnapshotIncrement, AnEmptyFileNameIsMisuse) {
  Chain chain;
  chain.build(1);
  HeapPtr heap = Heap::create();
  Snapshotter snapshotter(*heap);
  for (const auto& save : std::vector<std::function<void()>>{
           [&] { snapshotter.save(""); }, [&] { snapshotter.save_increment(""); },
           [&] { compact(chain.files.back(), ""); }}) {
    const Outcome outcome = attempt(save);
    EXPECT_TRUE(outcome.failed_with(SnapshotErrc::kMisuse)) << outcome.describe();
    EXPECT_NE(outcome.what.find("the file name is empty"), std::string::npos) << outcome.what;
  }
}

// Compacting a file in the middle of a chain, in place, leaves the later files restorable: the
// compacted file holds the same state under the same id, so they still apply on it.
TEST(SnapshotIncrement, CompactingAMiddleFileInPlaceKeepsTheLaterFilesRestorable) {
  Chain chain;
  chain.build(4);
  const SnapshotInfo info = compact(chain.files[2], chain.files[2]);
  EXPECT_EQ(info.id, chain.infos[2].id);
  EXPECT_EQ(info.generation, chain.infos[2].generation);
  EXPECT_EQ(verify_snapshot(chain.files[2]).kind, SnapshotKind::kFull);
  if (chain.tracking) {
    EXPECT_EQ(snapshot_chain(chain.files.back()).size(), 3u);  // gen2, gen3, gen4
  }
  for (std::size_t g = 2; g < chain.files.size(); ++g) {
    HeapPtr heap = restore(chain.files[g]);
    EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests[g]) << chain.files[g];
  }
}

TEST(SnapshotIncrement, ChainMovesWithItsDirectory) {
  Chain chain;
  chain.build(5);
  TempDir elsewhere;
  const auto moved = elsewhere / "moved";
  std::filesystem::rename(chain.dir.path(), moved);
  HeapPtr heap = restore(moved / gen_name(5));
  EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests[5]);
  heap.reset();
  std::filesystem::rename(moved, chain.dir.path());  // so that TempDir cleans up
}

TEST(SnapshotIncrement, AttachAfterRestoreContinuesTheChain) {
  const Case& c = find_case("gens");
  Chain chain;
  chain.build(8);
  const auto next = chain.dir / gen_name(9);
  const auto after = chain.dir / gen_name(10);
  std::uint64_t d9 = 0, d10 = 0;
  {
    HeapPtr heap = restore(chain.files.back());
    Snapshotter snapshotter(*heap);
    snapshotter.attach(chain.files.back());
    mutate_in(*heap, c, 9);
    d9 = digest_of(*heap, c);
    const SnapshotInfo info = snapshotter.save_increment(next);
    EXPECT_EQ(info.generation, chain.infos.back().generation + 1);
    if (chain.tracking) {
      EXPECT_EQ(info.kind, SnapshotKind::kIncremental) << info.fallback_reason;
      EXPECT_EQ(info.parent_id, chain.infos.back().id);
      EXPECT_EQ(snapshot_chain(next).size(), chain.files.size() + 1);
    }
    mutate_in(*heap, c, 10);
    d10 = digest_of(*heap, c);
    snapshotter.save_increment(after);
  }
  {
    HeapPtr back = restore(next);
    EXPECT_EQ(digest_of(*back, c), d9);
  }
  HeapPtr back = restore(after);
  EXPECT_EQ(digest_of(*back, c), d10);
}

// attach() must name the state the heap holds: an older file of the same heap (same id, chunks
// and root) would make the next increment restore a state that never existed, and a file this
// heap was never restored from or saved to says nothing about it.
TEST(SnapshotIncrement, AttachRefusesAFileWhoseStateTheHeapDoesNotHold) {
  const Case& c = find_case("gens");
  Chain chain;
  chain.build(3);
  HeapPtr heap = restore(chain.files.back());
  {
    Snapshotter snapshotter(*heap);
    const Outcome older = attempt([&] { snapshotter.attach(chain.files[2]); });
    EXPECT_TRUE(older.failed_with(SnapshotErrc::kMisuse)) << older.describe();
    EXPECT_NE(older.what.find("attach: the heap does not hold this snapshot's state"), std::string::npos)
        << older.what;
    EXPECT_NE(older.what.find("last restored from or saved as snapshot " + std::to_string(chain.infos.back().id)),
              std::string::npos)
        << older.what;
    // The right file still attaches, and after a save the new file is the one the heap holds.
    snapshotter.attach(chain.files.back());
    mutate_in(*heap, c, 4);
    snapshotter.save_increment(chain.dir / gen_name(4));
  }
  Snapshotter again(*heap);
  EXPECT_TRUE(attempt([&] { again.attach(chain.files.back()); }).failed_with(SnapshotErrc::kMisuse));
  again.attach(chain.dir / gen_name(4));
  // A heap created here and never saved holds no file's state.
  HeapPtr fresh = Heap::create();
  const Outcome never = attempt([&] { Snapshotter(*fresh).attach(chain.files.back()); });
  EXPECT_TRUE(never.failed_with(SnapshotErrc::kMisuse)) << never.describe();
}

TEST(SnapshotIncrement, ChainContinuesInAnotherProcessAndBack) {
  REQUIRE_LAYOUT_STABLE();
  const Case& c = find_case("gens");
  Chain chain;
  chain.build(3);
  REQUIRE_WRITE_TRACKING();
  ASSERT_TRUE(chain.tracking) << "no write tracking on a machine that can: " << chain.tracking_text;
  std::uint64_t d4 = 0;
  {
    HeapPtr heap = restore(chain.files[3]);
    mutate_in(*heap, c, 4);  // what the helper will do
    d4 = digest_of(*heap, c);
  }
  const auto gen4 = chain.dir / gen_name(4), gen5 = chain.dir / gen_name(5);
  const ChildResult there = run_self({"--restore-helper", "gens", chain.files[3].string(),
                                      hex(chain.digests[3]), "4", gen4.string(), "increment"});
  ASSERT_TRUE(there.succeeded()) << there.describe();
  const SnapshotHeader h4 = verify_snapshot(gen4);
  EXPECT_EQ(h4.kind, SnapshotKind::kIncremental);
  EXPECT_EQ(h4.parent_id, chain.infos[3].id);
  EXPECT_EQ(snapshot_chain(gen4).size(), 5u);
  std::uint64_t d5 = 0;
  {
    HeapPtr heap = restore(gen4);
    EXPECT_EQ(digest_of(*heap, c), d4);
    Snapshotter snapshotter(*heap);
    snapshotter.attach(gen4);
    mutate_in(*heap, c, 5);
    d5 = digest_of(*heap, c);
    EXPECT_EQ(snapshotter.save_increment(gen5).parent_id, h4.id);
  }
  const ChildResult back = run_self({"--restore-helper", "gens", gen5.string(), hex(d5)});
  EXPECT_TRUE(back.succeeded()) << back.describe();
}

TEST(SnapshotIncrement, IncrementInAnotherDirectoryFindsItsParent) {
  const Case& c = find_case("gens");
  TempDir dir;
  std::filesystem::create_directories(dir / "a");
  std::filesystem::create_directories(dir / "b");
  const auto base = dir.path() / "a" / "base.snap", inc = dir.path() / "b" / "inc.snap";
  std::uint64_t digest = 0;
  bool tracking = false;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 61);
    Snapshotter snapshotter(*heap);
    tracking = snapshotter.tracking().rfind("none", 0) != 0;
    snapshotter.save(base);
    mutate_in(*heap, c, 1);
    digest = digest_of(*heap, c);
    snapshotter.save_increment(inc);
  }
  if (tracking) {
    const SnapshotHeader header = read_snapshot_header(inc);
    EXPECT_TRUE(std::filesystem::equivalent(inc.parent_path() / header.parent_file, base))
        << "parent_file " << header.parent_file << " is not relative to the increment's directory";
  }
  HeapPtr heap = restore(inc);
  EXPECT_EQ(digest_of(*heap, c), digest);
}

TEST(SnapshotIncrement, CorruptFileInsideTheChainIsRefused) {
  Chain chain;
  chain.build(4);
  REQUIRE_WRITE_TRACKING();
  ASSERT_TRUE(chain.tracking) << "no write tracking on a machine that can: " << chain.tracking_text;
  const ZoneUse before = zone_use();
  std::vector<unsigned char> bytes = read_bytes(chain.files[2]);
  bytes[bytes.size() / 2] ^= 0x10;  // in a page's data, far from the header and trailer
  write_bytes(chain.files[2], bytes);
  Outcome o = attempt([&] { HeapPtr h = restore(chain.files[4]); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kCorrupt)) << o.describe();
  EXPECT_NE(o.what.find(gen_name(2)), std::string::npos) << "name the corrupt file: " << o.what;
  EXPECT_EQ(zone_use(), before);
  const auto out = chain.dir / "compact.snap";
  o = attempt([&] { compact(chain.files[4], out); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kCorrupt)) << o.describe();
  EXPECT_FALSE(std::filesystem::exists(out)) << "a failed compact leaves no output";
  HeapPtr heap = restore(chain.files[1]);  // the chain up to the corrupt file still works
  EXPECT_EQ(digest_of(*heap, find_case("gens")), chain.digests[1]);
}

TEST(SnapshotIncrement, IncrementFromAByteSourceIsRefused) {
  const Case& c = find_case("gens");
  std::vector<unsigned char> bytes;
  TempDir dir;
  {
    HeapPtr heap = Heap::create();
    build_in(*heap, c, 62);
    Snapshotter snapshotter(*heap);
    snapshotter.save(dir / "base.snap");
    mutate_in(*heap, c, 1);
    VectorSink sink(bytes);
    REQUIRE_WRITE_TRACKING();
    const SnapshotInfo info = snapshotter.write_increment(sink, "base.snap");
    ASSERT_EQ(info.kind, SnapshotKind::kIncremental) << info.fallback_reason;
  }
  const ZoneUse before = zone_use();
  MemorySource source(bytes.data(), bytes.size());
  const Outcome o = attempt([&] { HeapPtr h = restore(source); });
  EXPECT_EQ(o.kind, Outcome::Kind::kSnapshotError)
      << "an increment alone is not a heap: " << o.describe();
  EXPECT_EQ(zone_use(), before);
}

TEST(SnapshotIncrement, CompactNeedsNoZone) {
  REQUIRE_LAYOUT_STABLE();
  TempDir dir;
  const ChildResult child = run_self({"--save-helper", "graph", (dir / "g.snap").string(), "63"});
  ASSERT_TRUE(child.succeeded()) << child.describe();
  const bool reserved_before = Zone::reserved();
  const SnapshotInfo info = compact(dir / "g.snap", dir / "c.snap");
  if (!reserved_before) {
    EXPECT_FALSE(Zone::reserved()) << "compact() reserved the zone";
  }
  EXPECT_EQ(info.kind, SnapshotKind::kFull);
  EXPECT_EQ(verify_snapshot(dir / "c.snap").id, info.id);
  const ChildResult check = run_self({"--restore-helper", "graph", (dir / "c.snap").string(),
                                      child.output.substr(7, 16)});
  EXPECT_TRUE(check.succeeded()) << check.describe();
}

TEST(SnapshotIncrement, ASnapshotterWithTrackingOffWritesFullSnapshotsAndSaysWhy) {
  TempDir dir;
  HeapPtr heap = Heap::create();
  {
    HeapScope scope(*heap);
    heap->set_root(new std::vector<int>(1000, 7));
  }
  Snapshotter snapshotter(*heap, WriteTracking::kOff);
  EXPECT_EQ(snapshotter.tracking().rfind("none", 0), 0u) << snapshotter.tracking();
  const SnapshotInfo first = snapshotter.save_increment(dir / "a.snap");
  const SnapshotInfo second = snapshotter.save_increment(dir / "b.snap");
  EXPECT_EQ(second.kind, SnapshotKind::kFull);
  EXPECT_NE(second.fallback_reason.find("turned off"), std::string::npos) << second.fallback_reason;
  EXPECT_EQ(first.pages_written, second.pages_written);
  heap.reset();
  HeapPtr back = restore(dir / "b.snap");
  HeapScope scope(*back);
  const auto* v = static_cast<std::vector<int>*>(back->root());
  ASSERT_EQ(v->size(), 1000u);
  EXPECT_EQ((*v)[999], 7);
  delete v;
}

}  // namespace
}  // namespace reheap::snaptest
