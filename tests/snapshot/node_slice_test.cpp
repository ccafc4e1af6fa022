// Snapshots that travel between processes with node ids: heaps a process creates lie in its node's
// slice of the zone, so a snapshot saved by a process of another node restores after this one
// created heaps of its own; when a restore still collides, the error names both heaps and how to
// avoid it; the header records who saved it; and the incarnation counter of a state directory.
#include <gtest/gtest.h>

#include <fstream>
#include <stdexcept>
#include <string>
#include <system_error>
#include <vector>

#include "cases.h"
#include "reheap/node_identity.h"
#include "reheap/snapshot.h"
#include "reheap/zone.h"
#include "support.h"

namespace reheap::snaptest {
namespace {

// A heap's first chunk: its id's low 32 bits less one (SNAPSHOT_FORMAT.md, `heap_id`).
std::size_t class_chunk_of(const Heap& heap) { return static_cast<std::size_t>((heap.id() & 0xffffffffu) - 1); }

// The node's slice of the class half, as zone.h documents it.
struct Slice {
  std::size_t begin = 0;
  std::size_t end = 0;
  std::size_t window_start = 0;
};
Slice slice_of(const NodeIdentity& id) {
  const ZoneStats z = Zone::stats();
  const std::size_t class_chunks = z.size / z.chunk_size / 2;
  const std::size_t slice = class_chunks / NodeIdentity::kMaxNodes;
  Slice s;
  s.begin = id.node * slice;
  s.end = s.begin + slice;
  s.window_start = s.begin + (id.incarnation % 8) * (slice / 8);
  return s;
}

TEST(NodeSlice, NewHeapsStartInTheNodesSliceAtTheIncarnationsWindow) {
  HeapPtr first = Heap::create();
  const NodeIdentity id = NodeIdentity::current();
  const Slice s = slice_of(id);
  const ZoneStats z = Zone::stats();
  EXPECT_EQ(z.class_start_chunk, s.window_start);
  const std::size_t class_chunks = z.size / z.chunk_size / 2;
  EXPECT_EQ(z.large_start_chunk, class_chunks + s.window_start);
  // The first heap lands from the window on. Later ones fill the slice from the window to its
  // end, then the slice before the window: in a small zone (TSan's, 48 chunks a slice) window 7
  // holds only 6 heaps, and the 7th comes from the slice's beginning, still the node's own.
  const std::size_t first_chunk = class_chunk_of(*first);
  EXPECT_GE(first_chunk, s.window_start) << "node " << id.node << " incarnation " << id.incarnation;
  EXPECT_LT(first_chunk, s.end) << "node " << id.node << " incarnation " << id.incarnation;
  std::vector<HeapPtr> heaps;
  for (int i = 0; i < 16; ++i) heaps.push_back(Heap::create());
  ASSERT_GE(s.end - s.begin, heaps.size() + 1) << "the zone is too small for this test";
  for (const HeapPtr& h : heaps) {
    const std::size_t chunk = class_chunk_of(*h);
    EXPECT_GE(chunk, s.begin) << "node " << id.node << " incarnation " << id.incarnation;
    EXPECT_LT(chunk, s.end) << "node " << id.node << " incarnation " << id.incarnation;
  }
  // A large block of a created heap comes from the node's slice of the large half too.
  void* big = heaps[0]->allocate(std::size_t{1} << 20);
  ASSERT_NE(big, nullptr);
  const std::size_t large_chunk = (reinterpret_cast<std::uintptr_t>(big) - z.base) / z.chunk_size;
  EXPECT_GE(large_chunk, class_chunks + s.window_start);
  EXPECT_LT(large_chunk, class_chunks + s.end);
  heaps[0]->deallocate(big);
}

TEST(NodeSlice, ASnapshotOfAnotherNodeRestoresAfterThisProcessCreatedHeaps) {
  REQUIRE_LAYOUT_STABLE();
  const Case& c = find_case("huge");
  // This process first creates heaps of its own (the situation that used to fail: every process
  // began at chunk 0)...
  std::vector<HeapPtr> mine;
  for (int i = 0; i < 4; ++i) {
    mine.push_back(Heap::create());
    build_in(*mine.back(), c, 100 + static_cast<std::uint64_t>(i));
  }
  const std::uint32_t other_node = (NodeIdentity::current().node + 5) % NodeIdentity::kMaxNodes;
  TempDir dir;
  const auto file = dir / "other-node.snap";
  // ...then restores a heap saved by a fresh process of another node.
  SpawnOptions options;
  options.extra_env = {"REHEAP_NODE=" + std::to_string(other_node)};
  const ChildResult saved = run_self({"--save-helper", "huge", file.string(), "77"}, options);
  ASSERT_TRUE(saved.succeeded()) << saved.describe();
  const SnapshotHeader header = read_snapshot_header(file);
  EXPECT_EQ(header.saved_by_node, static_cast<std::int64_t>(other_node));
  EXPECT_GE(header.saved_by_incarnation, 0);
  const Outcome o = attempt([&] {
    HeapPtr back = restore(file);
    EXPECT_NE(saved.output.find("digest " + hex(digest_of(*back, c))), std::string::npos) << saved.output;
  });
  EXPECT_EQ(o.kind, Outcome::Kind::kReturned) << o.describe();
}

TEST(NodeSlice, ARestoreAfterCreatingHeapsInTheSameProcessTakesBackItsChunks) {
  const Case& c = find_case("map");
  TempDir dir;
  std::vector<HeapPtr> before;
  for (int i = 0; i < 3; ++i) before.push_back(Heap::create());
  std::uint64_t digest = 0;
  std::uint64_t id = 0;
  {
    HeapPtr saved = Heap::create();
    build_in(*saved, c, 5);
    digest = digest_of(*saved, c);
    id = saved->id();
    Snapshotter(*saved).save(dir / "saved.snap");
  }
  std::vector<HeapPtr> after;
  for (int i = 0; i < 3; ++i) after.push_back(Heap::create());
  HeapPtr back = restore(dir / "saved.snap");
  EXPECT_EQ(back->id(), id);
  EXPECT_EQ(digest_of(*back, c), digest);
}

TEST(NodeSlice, ACollisionNamesBothHeapsAndHowToAvoidIt) {
  const Case& c = find_case("map");
  TempDir dir;
  const auto file = dir / "collides.snap";
  HeapPtr placeholder = Heap::create();  // reserves the zone before the quarantine changes
  const QuarantineLength no_quarantine(0);
  const NoHeapCache no_cache;  // nor a heap cache: the destroyed heap's chunk is free at once
  std::uint64_t saved_id = 0;
  std::size_t saved_chunk = 0;
  {
    HeapPtr saved = Heap::create();
    build_in(*saved, c, 9);
    saved_id = saved->id();
    saved_chunk = class_chunk_of(*saved);
    Snapshotter(*saved).save(file);
  }
  // Without a quarantine the chunk is free at once, and the next heap of this node takes it.
  HeapPtr squatter = Heap::create();
  ASSERT_EQ(class_chunk_of(*squatter), saved_chunk) << "the test expects the freed chunk to be reused";
  ASSERT_NE(squatter->id(), saved_id);
  const ZoneUse use = zone_use();
  const Outcome o = attempt([&] { HeapPtr h = restore(file); });
  ASSERT_TRUE(o.failed_with(SnapshotErrc::kRangeInUse)) << o.describe();
  const NodeIdentity here = NodeIdentity::current();
  EXPECT_NE(o.what.find("collides.snap"), std::string::npos) << o.what;
  EXPECT_NE(o.what.find("live heap " + std::to_string(squatter->id()) + " (created in this process"),
            std::string::npos)
      << o.what;
  EXPECT_NE(o.what.find("the snapshot holds heap " + std::to_string(saved_id)), std::string::npos) << o.what;
  EXPECT_NE(o.what.find("saved by node " + std::to_string(here.node) + " incarnation " +
                        std::to_string(here.incarnation)),
            std::string::npos)
      << o.what;
  // This process has no state directory: the message says what one would change.
  EXPECT_NE(o.what.find("REHEAP_STATE_DIR"), std::string::npos) << o.what;
  EXPECT_NE(o.what.find("restore before creating heaps"), std::string::npos) << o.what;
  EXPECT_EQ(zone_use(), use) << "the refused restore kept chunks";
  // Once the squatter goes, the snapshot restores.
  squatter.reset();
  HeapPtr back = restore(file);
  EXPECT_EQ(back->id(), saved_id);
}

TEST(NodeSlice, TheStateDirectoryCountsIncarnationsPerNode) {
  TempDir dir;
  const auto state = dir / "state";
  EXPECT_EQ(NodeIdentity::next_incarnation(state, 3), 0u);
  EXPECT_EQ(NodeIdentity::next_incarnation(state, 3), 1u);
  EXPECT_EQ(NodeIdentity::next_incarnation(state, 4), 0u) << "each node has its own counter";
  EXPECT_EQ(NodeIdentity::next_incarnation(state, 3), 2u);
  std::ifstream counter(state / "node-3.incarnation");
  std::uint64_t stored = 0;
  counter >> stored;
  EXPECT_EQ(stored, 3u) << "the file holds the next value";
}

TEST(NodeSlice, AnUnusableStateDirectoryIsAClearError) {
  TempDir dir;
  const auto not_a_directory = dir / "file";
  std::ofstream(not_a_directory) << "x";
  try {
    NodeIdentity::next_incarnation(not_a_directory, 1);
    ADD_FAILURE() << "a file as the state directory was accepted";
  } catch (const std::system_error& e) {
    EXPECT_NE(std::string(e.what()).find(not_a_directory.string()), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("incarnation counter"), std::string::npos) << e.what();
  }
  // A corrupt counter is refused, not reset (that could repeat an incarnation).
  const auto state = dir / "state";
  std::filesystem::create_directories(state);
  std::ofstream(state / "node-2.incarnation") << "garbage";
  EXPECT_THROW(NodeIdentity::next_incarnation(state, 2), std::system_error);
}

TEST(NodeSlice, AProcessSettlesOneIdentityAndRefusesAnother) {
  const NodeIdentity id = NodeIdentity::current();
  EXPECT_TRUE(NodeIdentity::settled());
  EXPECT_LT(id.node, NodeIdentity::kMaxNodes);
  EXPECT_LT(id.incarnation, NodeIdentity::kIncarnations);
  EXPECT_NO_THROW(NodeIdentity::configure(NodeIdentityConfig{static_cast<int>(id.node), {}}));
  EXPECT_THROW(NodeIdentity::configure(NodeIdentityConfig{static_cast<int>((id.node + 1) % 64), {}}),
               std::logic_error);
  EXPECT_THROW(NodeIdentity::configure(NodeIdentityConfig{64, {}}), std::invalid_argument);
  EXPECT_EQ(NodeIdentity::current().origin(), id.origin());
}

}  // namespace
}  // namespace reheap::snaptest
