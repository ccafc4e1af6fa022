// Saving over an ancestor: an increment depends on every file of the chain it closes, so
// save_increment() refuses (kMisuse) to write it over any of them - its parent (the last save, or
// the attached file), or any earlier file of that chain - however the target is spelled ("./",
// "dir/..", a symlinked directory, a symlink to the file). The refusal changes no file and loses no
// write: the chain still restores to each of its states, and the next save to a new name holds
// everything written since the parent. A full save depends on nothing, so it may replace a file of
// the chain: it starts a new chain, and the increments that hung on the replaced file are then
// refused by restore (kBrokenChain), never misapplied.
#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "cases.h"
#include "reheap/snapshot.h"
#include "support.h"
#include "write_tracking_support.h"

namespace reheap::snaptest {
namespace {

namespace fs = std::filesystem;

const Case& gens() { return find_case("gens"); }

class SaveOverAncestor : public ::testing::Test {
 protected:
  // gen0.snap (full), gen1.snap and gen2.snap (increments), saved by a Snapshotter kept alive;
  // "link" is the directory again under another name.
  void SetUp() override {
    heap_ = Heap::create();
    build_in(*heap_, gens(), 17);
    snapshotter_ = std::make_unique<Snapshotter>(*heap_);
    REQUIRE_TRACKING_BY(*snapshotter_);
    fs::create_symlink(dir_.path(), dir_ / "link");
    for (std::size_t g = 0; g < 3; ++g) save_generation(g);
  }
  void TearDown() override { drop_heap(); }

  fs::path file(std::size_t g) const { return dir_ / ("gen" + std::to_string(g) + ".snap"); }

  void drop_heap() {
    snapshotter_.reset();  // before its heap
    heap_.reset();
  }

  // Changes the heap (but for generation 0) and saves generation `g`: full for 0, else an
  // increment on the previous save.
  void save_generation(std::size_t g) {
    if (g > 0) mutate_in(*heap_, gens(), g);
    ASSERT_EQ(digests_.size(), g);
    digests_.push_back(digest_of(*heap_, gens()));
    const SnapshotInfo info = g == 0 ? snapshotter_->save(file(g)) : snapshotter_->save_increment(file(g));
    ASSERT_EQ(info.kind, g == 0 ? SnapshotKind::kFull : SnapshotKind::kIncremental) << info.fallback_reason;
  }

  // save_increment(target) is refused, naming the target and why, and changes nothing on disk.
  void expect_increment_refused(const fs::path& target) {
    SCOPED_TRACE("save_increment(" + target.string() + ")");
    const std::vector<std::string> entries = dir_.entries();
    std::vector<std::uint64_t> ids;
    for (std::size_t g = 0; g < digests_.size(); ++g) ids.push_back(read_snapshot_header(file(g)).id);
    const Outcome o = attempt([&] { snapshotter_->save_increment(target); });
    EXPECT_TRUE(o.failed_with(SnapshotErrc::kMisuse)) << o.describe();
    EXPECT_NE(o.what.find(target.string()), std::string::npos) << "name the target: " << o.what;
    EXPECT_NE(o.what.find("ancestor"), std::string::npos) << "say why: " << o.what;
    EXPECT_EQ(dir_.entries(), entries) << "no file replaced, no temporary left";
    for (std::size_t g = 0; g < ids.size(); ++g) {
      EXPECT_EQ(read_snapshot_header(file(g)).id, ids[g]) << file(g) << " was replaced";
    }
  }

  // Destroys the heap, then restores every generation saved and compares it with its state.
  void expect_every_generation_restores() {
    drop_heap();
    for (std::size_t g = 0; g < digests_.size(); ++g) {
      SCOPED_TRACE("restore " + file(g).string());
      HeapPtr heap = restore(file(g));
      EXPECT_EQ(digest_of(*heap, gens()), digests_[g]);
    }
  }

  TempDir dir_;
  HeapPtr heap_;
  std::unique_ptr<Snapshotter> snapshotter_;
  std::vector<std::uint64_t> digests_;  // the state each gen<g>.snap holds
};

TEST_F(SaveOverAncestor, AnIncrementOverItsParentIsRefused) {
  mutate_in(*heap_, gens(), 100);  // written before the refusals; gen3 must still hold it
  expect_increment_refused(file(2));
  expect_increment_refused(dir_ / "." / "gen2.snap");
  expect_increment_refused(dir_ / "link" / "gen2.snap");
  save_generation(3);
  EXPECT_EQ(snapshot_chain(file(3)).size(), 4u);
  expect_every_generation_restores();
}

TEST_F(SaveOverAncestor, AnIncrementOverAnEarlierFileOfTheChainIsRefusedHoweverItIsSpelled) {
  fs::create_directory(dir_ / "sub");
  fs::create_symlink(file(0), dir_ / "alias.snap");
  mutate_in(*heap_, gens(), 100);
  expect_increment_refused(file(0));
  expect_increment_refused(dir_ / "." / "gen0.snap");
  expect_increment_refused(dir_ / "sub" / ".." / "gen1.snap");
  expect_increment_refused(dir_ / "link" / "gen1.snap");
  expect_increment_refused(dir_ / "link" / "." / "gen0.snap");
  expect_increment_refused(dir_ / "alias.snap");
  save_generation(3);
  expect_every_generation_restores();
}

TEST_F(SaveOverAncestor, AnIncrementOverTheAttachedFileOrItsParentsIsRefused) {
  drop_heap();
  heap_ = restore(file(2));
  snapshotter_ = std::make_unique<Snapshotter>(*heap_);
  snapshotter_->attach(dir_ / "link" / "gen2.snap");
  mutate_in(*heap_, gens(), 100);
  expect_increment_refused(file(2));
  expect_increment_refused(file(1));
  expect_increment_refused(dir_ / "link" / "gen0.snap");
  save_generation(3);
  const SnapshotHeader gen3 = read_snapshot_header(file(3));
  EXPECT_EQ(gen3.parent_id, read_snapshot_header(file(2)).id);
  expect_every_generation_restores();
}

// The rule's other side: a full snapshot depends on nothing, so it may replace a file of the chain
// and starts a new one. Increments on the new chain may then go over files of the old one.
TEST_F(SaveOverAncestor, AFullSaveOverAnAncestorStartsANewChain) {
  mutate_in(*heap_, gens(), 100);
  const std::uint64_t full_state = digest_of(*heap_, gens());
  EXPECT_EQ(snapshotter_->save(file(0)).kind, SnapshotKind::kFull);
  mutate_in(*heap_, gens(), 101);
  const std::uint64_t increment_state = digest_of(*heap_, gens());
  const SnapshotInfo info = snapshotter_->save_increment(file(1));
  EXPECT_EQ(info.kind, SnapshotKind::kIncremental) << info.fallback_reason;
  drop_heap();
  {
    HeapPtr heap = restore(file(0));
    EXPECT_EQ(digest_of(*heap, gens()), full_state);
  }
  {
    HeapPtr heap = restore(file(1));
    EXPECT_EQ(digest_of(*heap, gens()), increment_state);
  }
  const Outcome o = attempt([&] { HeapPtr heap = restore(file(2)); });
  EXPECT_TRUE(o.failed_with(SnapshotErrc::kBrokenChain)) << "gen2's parent was replaced: " << o.describe();
}

}  // namespace
}  // namespace reheap::snaptest
