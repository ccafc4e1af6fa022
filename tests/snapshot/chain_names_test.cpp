// How the files of a snapshot chain are named. snapshot_chain() spells each parent from its child's
// path as the caller gave it: without a "./" the caller did not write, and without a detour
// ("e/../d/s") where the shorter path is the same file. `reheap-snap verify --chain` lists each
// file once, however often and however it was named: a file given on the command line under its
// first name there, a parent not given under its path from its child.
#include <gtest/gtest.h>

#include <cstddef>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "json_reader.h"  // the strict parser checking --json output
#include "reheap/heap.h"
#include "reheap/snapshot.h"
#include "support.h"
#include "tool_runner.h"
#include "write_tracking_support.h"

namespace reheap {
namespace {

namespace fs = std::filesystem;

using snaptest::run_tool_in;
using snaptest::TempDir;
using snaptest::ToolResult;
using Paths = std::vector<fs::path>;
using Names = std::vector<std::string>;

// Fills `bytes` at `p` with a pattern depending on `seed`, so that each save has pages to write.
void fill(void* p, std::size_t bytes, unsigned seed) {
  auto* b = static_cast<unsigned char*>(p);
  for (std::size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>((i * 31 + seed) | 1);
}

// The process's working directory, changed for the rest of a scope: snapshot_chain() resolves a
// relative path from it.
class WorkingDirectory {
 public:
  explicit WorkingDirectory(const fs::path& directory) : previous_(fs::current_path()) {
    fs::current_path(directory);
  }
  ~WorkingDirectory() {
    std::error_code ignored;
    fs::current_path(previous_, ignored);
  }
  WorkingDirectory(const WorkingDirectory&) = delete;
  WorkingDirectory& operator=(const WorkingDirectory&) = delete;

 private:
  fs::path previous_;
};

// The file each line of verify's text output names (the file names here have no ": ").
Names listed(const ToolResult& result) {
  Names files;
  std::size_t at = 0;
  while (at < result.out.size()) {
    const std::size_t end = result.out.find('\n', at);
    const std::string line = result.out.substr(at, end - at);
    files.push_back(line.substr(0, line.find(": ")));
    if (end == std::string::npos) break;
    at = end + 1;
  }
  return files;
}

// A chain s <- s.inc1 <- s.inc2 under a temporary directory: s and s.inc1 in d, s.inc2 in d or
// in another directory.
class ChainNames : public ::testing::Test {
 protected:
  void SetUp() override {
    fs::create_directory(dir_ / "d");
    heap_ = Heap::create();
    snapshotter_ = std::make_unique<Snapshotter>(*heap_);
  }

  // False when the increments fell back to full saves (no write tracking): then there is no chain.
  bool save_chain(const std::string& last_directory = "d") {
    fill(heap_->allocate(8192), 8192, 1);
    snapshotter_->save(dir_ / "d" / "s");
    fill(heap_->allocate(8192), 8192, 2);
    if (snapshotter_->save_increment(dir_ / "d" / "s.inc1").kind != SnapshotKind::kIncremental) return false;
    fill(heap_->allocate(8192), 8192, 3);
    return snapshotter_->save_increment(dir_ / last_directory / "s.inc2").kind == SnapshotKind::kIncremental;
  }

  std::string absolute(const std::string& name) const { return (dir_ / name).string(); }

  // reheap-snap verify ARGS, run in the temporary directory.
  ToolResult verify(const Names& args) const {
    Names command{"verify"};
    command.insert(command.end(), args.begin(), args.end());
    return run_tool_in(dir_.path(), command);
  }

  TempDir dir_;
  HeapPtr heap_;
  std::unique_ptr<Snapshotter> snapshotter_;  // destroyed before its heap
};

#define REQUIRE_CHAIN(...)                                                                  \
  do {                                                                                      \
    REQUIRE_WRITE_TRACKING();                                                               \
    ASSERT_TRUE(save_chain(__VA_ARGS__))                                                    \
        << "an increment was saved in full: " << snapshotter_->tracking();                  \
  } while (false)

#ifdef REHEAP_SNAP_PATH
#define REQUIRE_TOOL() \
  do {                 \
  } while (false)
#else
#define REQUIRE_TOOL() GTEST_SKIP() << "reheap-snap is not built (REHEAP_BUILD_TOOLS=OFF)"
#endif

TEST_F(ChainNames, SnapshotChainSpellsParentsAsTheChildIsSpelled) {
  REQUIRE_CHAIN();
  const WorkingDirectory here(dir_.path());
  EXPECT_EQ(snapshot_chain("d/s.inc2"), (Paths{"d/s", "d/s.inc1", "d/s.inc2"}));
  EXPECT_EQ(snapshot_chain("./d/s.inc2"), (Paths{"./d/s", "./d/s.inc1", "./d/s.inc2"}));
  EXPECT_EQ(snapshot_chain(dir_ / "d" / "s.inc2"), (Paths{dir_ / "d" / "s", dir_ / "d" / "s.inc1", dir_ / "d" / "s.inc2"}));
  const WorkingDirectory in_d(dir_ / "d");
  // Not "./s": that is a second name for the file `reheap-snap verify --chain s.inc2 s` lists.
  EXPECT_EQ(snapshot_chain("s.inc2"), (Paths{"s", "s.inc1", "s.inc2"}));
}

TEST_F(ChainNames, SnapshotChainLeavesOutADetourThroughTheIncrementsDirectory) {
  fs::create_directory(dir_ / "e");
  REQUIRE_CHAIN("e");
  ASSERT_EQ(read_snapshot_header(dir_ / "e" / "s.inc2").parent_file, "../d/s.inc1");
  const WorkingDirectory here(dir_.path());
  EXPECT_EQ(snapshot_chain("e/s.inc2"), (Paths{"d/s", "d/s.inc1", "e/s.inc2"}));
  EXPECT_EQ(snapshot_chain("./e/s.inc2"), (Paths{"./d/s", "./d/s.inc1", "./e/s.inc2"}));
  // Through a symbolic link ".." leaves the link's target, not its directory: the detour stays.
  fs::create_directory(dir_ / "far");
  fs::create_directory_symlink("../e", dir_ / "far" / "link");
  EXPECT_EQ(snapshot_chain("far/link/s.inc2"),
            (Paths{"far/link/../d/s", "far/link/../d/s.inc1", "far/link/s.inc2"}));
}

TEST_F(ChainNames, VerifyChainListsEachFileOnceHoweverItIsNamed) {
  REQUIRE_TOOL();
  REQUIRE_CHAIN();
  ToolResult result = verify({"--chain", "d/s.inc2"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(listed(result), (Names{"d/s", "d/s.inc1", "d/s.inc2"})) << result.out;

  // A file given is listed under the name given, a parent not given under its name from its child.
  result = verify({"--chain", "d/s.inc2", "./d/s.inc1", absolute("d/s"), "d/./s.inc2"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(listed(result), (Names{absolute("d/s"), "./d/s.inc1", "d/s.inc2"})) << result.out;

  result = run_tool_in(dir_ / "d", {"verify", "--chain", "s.inc2", "s"});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(listed(result), (Names{"s", "s.inc1", "s.inc2"})) << result.out;

  result = verify({"d/s.inc1", "./d/s.inc1", absolute("d/s.inc1")});
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_EQ(listed(result), (Names{"d/s.inc1"})) << result.out;
}

TEST_F(ChainNames, VerifyChainOfTheFilesInAnyOrderListsEachOnceInTheOrderMet) {
  REQUIRE_TOOL();
  REQUIRE_CHAIN();
  const Names in_order{"d/s", "d/s.inc1", "d/s.inc2"};
  for (const Names& files : {in_order, Names{"d/s.inc2", "d/s", "d/s.inc1"}, Names{"d/s.inc1", "d/s.inc2", "d/s"},
                             Names{"d/s.inc1", "d/s", "d/s.inc2"}}) {
    Names args{"--chain"};
    args.insert(args.end(), files.begin(), files.end());
    const ToolResult result = verify(args);
    EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
    EXPECT_EQ(listed(result), in_order) << result.out;
  }
  const ToolResult mixed = verify({"--chain", "--json", absolute("d/s.inc2"), "./d/s.inc1", "d/s"});
  EXPECT_EQ(mixed.exit_code, 0) << mixed.out << mixed.err;
  const std::optional<snap::Json> json = snap::JsonParser(mixed.out).document();
  ASSERT_TRUE(json.has_value()) << mixed.out;
  EXPECT_TRUE((*json)["ok"].flag);
  Names files;
  for (const snap::Json& file : (*json)["files"].items) files.push_back(file["file"].text);
  EXPECT_EQ(files, (Names{"d/s", "./d/s.inc1", absolute("d/s.inc2")})) << mixed.out;
}

TEST_F(ChainNames, VerifyChainListsABadFileOnceAndExitsOne) {
  REQUIRE_TOOL();
  REQUIRE_CHAIN();
  // The parent's trailer is cut off: its header, which the chain check reads, is intact.
  fs::copy_file(dir_ / "d" / "s.inc1", dir_ / "whole");
  fs::resize_file(dir_ / "d" / "s.inc1", fs::file_size(dir_ / "d" / "s.inc1") - 40);
  ToolResult result = verify({"--chain", "d/s.inc2", "./d/s.inc1"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_EQ(listed(result), (Names{"d/s", "./d/s.inc1", "d/s.inc2"})) << result.out;
  EXPECT_NE(result.out.find("./d/s.inc1: truncated: "), std::string::npos) << result.out;

  // Without the full snapshot there is no chain: each increment given is bad once, listed
  // oldest first as far as the links go.
  fs::rename(dir_ / "whole", dir_ / "d" / "s.inc1");
  fs::remove(dir_ / "d" / "s");
  result = verify({"--chain", "d/s.inc2", "./d/s.inc2", absolute("d/s.inc2"), "d/s.inc1"});
  EXPECT_EQ(result.exit_code, 1) << result.out << result.err;
  EXPECT_EQ(listed(result), (Names{"d/s.inc1", "d/s.inc2"})) << result.out;
  EXPECT_NE(result.out.find("d/s.inc2: broken-chain: "), std::string::npos) << result.out;
  EXPECT_NE(result.out.find("d/s.inc1: broken-chain: "), std::string::npos) << result.out;
}

}  // namespace
}  // namespace reheap
