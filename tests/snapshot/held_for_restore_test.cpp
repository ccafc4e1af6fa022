// Held for restore (zone.h): with a state directory, the snapshot files a node saves are listed in
// its registry (node-<n>.snapshots), and their chunks are kept out of the way of the node's new
// heaps, in the saving process and in every later one, until the files are deleted. Each case
// runs processes of one node (held_helper.h), each a new incarnation.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "support.h"

namespace reheap::snaptest {
namespace {

// A node's processes: this test binary run as `--held ...` with the node's state directory.
class Node {
 public:
  explicit Node(const std::filesystem::path& state, std::vector<std::string> env = {}) : env_(std::move(env)) {
    env_.push_back("REHEAP_NODE=3");
    env_.push_back("REHEAP_STATE_DIR=" + state.string());
    registry_ = state / "node-3.snapshots";
  }
  ChildResult run(std::vector<std::string> args) const {
    args.insert(args.begin(), "--held");
    return run_self(args, {.extra_env = env_});
  }
  Child start(std::vector<std::string> args) const {
    args.insert(args.begin(), "--held");
    return spawn_self(args, {.extra_env = env_});
  }
  // The files the registry lists, in its order ("" before the first if its first line is wrong).
  std::vector<std::string> listed() const {
    std::ifstream in(registry_);
    std::vector<std::string> files;
    std::string line;
    if (!std::getline(in, line) || line != "reheap snapshot registry 1") files.push_back("");
    while (std::getline(in, line)) files.push_back(line.size() > 17 ? line.substr(17) : "<" + line + ">");
    return files;
  }
  const std::filesystem::path& registry() const { return registry_; }

 private:
  std::vector<std::string> env_;
  std::filesystem::path registry_;
};

// The number after "key " in a child's output, or -1.
long value_of(const ChildResult& r, const std::string& key) {
  std::istringstream lines(r.output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(key + " ", 0) == 0) return std::stol(line.substr(key.size() + 1));
  }
  return -1;
}

TEST(HeldForRestore, ASavedHeapsChunkStaysOutOfNewHeapsWayInTheSavingProcessUntilItsFileIsRemoved) {
  TempDir dir;
  const Node node(dir / "state");
  const ChildResult r = node.run({"same-process", dir.path().string()});
  ASSERT_TRUE(r.succeeded()) << r.describe();
  EXPECT_GE(value_of(r, "held-after-save"), 1) << r.output;
  EXPECT_EQ(value_of(r, "held-after-remove"), 0) << r.output;
  EXPECT_EQ(value_of(r, "reused"), 1) << "the chunk of a removed snapshot stays held: " << r.output;
}

TEST(HeldForRestore, TheNextProcessHoldsWhatTheFilesNeedAndDropsFilesDeletedOrReplaced) {
  TempDir dir;
  const Node node(dir / "state");
  const auto keep = dir / "keep.snap";
  const auto deleted = dir / "deleted.snap";
  const auto replaced = dir / "replaced.snap";
  const ChildResult saved = node.run({"save", keep.string(), deleted.string(), replaced.string()});
  ASSERT_TRUE(saved.succeeded()) << saved.describe();
  ASSERT_EQ(node.listed(), (std::vector<std::string>{keep.string(), deleted.string(), replaced.string()}));
  const auto folded = dir / "folded.snap";
  const ChildResult compacted = node.run({"compact", keep.string(), folded.string()});
  ASSERT_TRUE(compacted.succeeded()) << compacted.describe();
  EXPECT_EQ(node.listed().size(), 4u) << "a compacted file is listed like any other";

  // An operator deletes one file and overwrites another with something that is not a snapshot.
  std::filesystem::remove(deleted);
  std::ofstream(replaced, std::ios::trunc) << "not a snapshot any more";
  const ChildResult next = node.run({"restore", keep.string()});
  ASSERT_TRUE(next.succeeded()) << next.describe();
  EXPECT_EQ(node.listed(), (std::vector<std::string>{keep.string(), folded.string()}));
  const ChildResult counted = node.run({"start"});
  ASSERT_TRUE(counted.succeeded()) << counted.describe();
  EXPECT_GE(value_of(counted, "held"), 1) << counted.output;
}

TEST(HeldForRestore, ACutShortLastLineIsDroppedAndACorruptRegistryIsAClearError) {
  TempDir dir;
  const Node node(dir / "state");
  const auto keep = dir / "keep.snap";
  ASSERT_TRUE(node.run({"save", keep.string()}).succeeded());
  const std::vector<unsigned char> good = read_bytes(node.registry());

  // A crash while appending leaves a last line without its newline: ignored, and rewritten away.
  std::vector<unsigned char> torn = good;
  for (char ch : std::string("0123456789abcdef /somewhere/else.snap")) torn.push_back(static_cast<unsigned char>(ch));
  write_bytes(node.registry(), torn);
  const ChildResult after_crash = node.run({"restore", keep.string()});
  EXPECT_TRUE(after_crash.succeeded()) << after_crash.describe();
  EXPECT_EQ(node.listed(), std::vector<std::string>{keep.string()});

  // A whole line that is wrong is no crash's doing: the node does not start, and says why.
  std::string text(good.begin(), good.end());
  text.insert(text.find('\n') + 1, "0000000000000000 /not/its/checksum.snap\n");
  write_bytes(node.registry(), std::vector<unsigned char>(text.begin(), text.end()));
  const ChildResult refused = node.run({"start"});
  EXPECT_FALSE(refused.succeeded()) << refused.describe();
  EXPECT_NE(refused.output.find(node.registry().string()), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("corrupt at line 2"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("Move the file aside"), std::string::npos) << refused.output;
}

TEST(HeldForRestore, ManySavesUnderNewNamesKeepTheRegistryAndTheHeldChunksBounded) {
  TempDir dir;
  const Node node(dir / "state");
  const int saves = kSlowBuild ? 100 : 150;
  // Deleted by reheap: each file's chunk is let go at once.
  const ChildResult removed = node.run({"renames", dir.path().string(), std::to_string(saves), "remove"});
  ASSERT_TRUE(removed.succeeded()) << removed.describe();
  EXPECT_GE(value_of(removed, "held"), 1) << "the last file holds its heap's chunk: " << removed.output;
  EXPECT_LE(value_of(removed, "held"), 2) << removed.output;
  EXPECT_GE(node.listed().size(), 1u);
  EXPECT_LE(node.listed().size(), 66u) << "the registry is rewritten as it grows";
  // Deleted behind reheap's back: the rewrites find the files gone.
  const ChildResult deleted = node.run({"renames", dir.path().string(), std::to_string(saves), "delete"});
  ASSERT_TRUE(deleted.succeeded()) << deleted.describe();
  EXPECT_GE(value_of(deleted, "held"), 1) << deleted.output;
  EXPECT_LE(value_of(deleted, "held"), 70) << deleted.output;
  EXPECT_LE(node.listed().size(), 70u);
}

TEST(HeldForRestore, ProcessesOfOneNodeSavingAtOnceListEveryFile) {
  TempDir dir;
  const Node node(dir / "state");
  std::vector<std::string> first{"save"};
  std::vector<std::string> second{"save"};
  for (int i = 0; i < 40; ++i) {
    first.push_back((dir / ("x-" + std::to_string(i) + ".snap")).string());
    second.push_back((dir / ("y-" + std::to_string(i) + ".snap")).string());
  }
  Child a = node.start(first);
  Child b = node.start(second);
  const ChildResult ra = finish(a);
  const ChildResult rb = finish(b);
  ASSERT_TRUE(ra.succeeded()) << ra.describe();
  ASSERT_TRUE(rb.succeeded()) << rb.describe();
  const std::vector<std::string> listed = node.listed();
  EXPECT_EQ(listed.size(), 80u);
  for (const std::string& file : listed) EXPECT_TRUE(std::filesystem::exists(file)) << "<" << file << ">";
  EXPECT_TRUE(node.run({"start"}).succeeded());
}

TEST(HeldForRestore, HeldChunksFillingTheNodesSliceAreReportedNotHandedOut) {
  // 8 GiB: 64 class chunks, one per node's slice. Node 3's only class chunk holds a snapshot.
  TempDir dir;
  const Node small(dir / "state", {"REHEAP_ZONE_SIZE=" + std::to_string(std::size_t{8} << 30)});
  const auto file = dir / "s.snap";
  ASSERT_TRUE(small.run({"save", file.string()}).succeeded());
  const ChildResult spilled = small.run({"restore", file.string()});
  EXPECT_TRUE(spilled.succeeded()) << spilled.describe();
  EXPECT_NE(spilled.output.find("node 3's slice of the zone's class half is full"), std::string::npos)
      << spilled.output;

  // 256 MiB: two class chunks, both held: a new heap is refused, with the reason on stderr.
  TempDir tiny_dir;
  const Node tiny(tiny_dir / "state", {"REHEAP_ZONE_SIZE=" + std::to_string(std::size_t{256} << 20)});
  ASSERT_TRUE(tiny.run({"save", (tiny_dir / "a.snap").string(), (tiny_dir / "b.snap").string()}).succeeded());
  const ChildResult refused = tiny.run({"start"});
  ASSERT_TRUE(refused.succeeded()) << refused.describe();
  EXPECT_NE(refused.output.find("refused"), std::string::npos) << refused.output;
  EXPECT_NE(refused.output.find("has no room for 1 more chunk(s): 2 of its chunks are held"), std::string::npos)
      << refused.output;
}

}  // namespace
}  // namespace reheap::snaptest
