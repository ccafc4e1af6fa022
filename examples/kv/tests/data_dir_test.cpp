// A data directory whose files and manifest disagree, with the real reheap-kv binary
// (KV_SERVER_BINARY): the start refuses, naming the files and the way to go on, and loses
// nothing. Shard files without a manifest; a manifest with two shard lines swapped or a forged
// shard count, each with a checksum that matches; a shard file of another server's directory;
// a process of another node; an increment whose parent is another shard's file. And the saves:
// a save never overwrites or deletes a file it did not write (an operator's shard-7.99.snap
// survives), the files of an unfinished save of this set go with the next save, a stop during a
// save lets it finish, and a save that fails on a full disk, SAVE or the one on the way out,
// removes what it wrote and leaves the previous set restorable. And a directory of a reheap-kv
// whose files carry no label is refused.
//
// Each server runs on a free port with its own temporary directory, --save "" unless a test
// says otherwise; a guard kills it if a test fails before it stops (server_process_test_support.h).
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "kv_runtime_test_support.h"
#include "manifest.h"
#include "server_process_test_support.h"
#include "small_disk_test_support.h"

namespace kv::testing {
namespace {

constexpr std::uint32_t kShards = 8;  // a server's default: one worker, eight shards

// `text` holds `needle`, said with the text around it when it does not.
::testing::AssertionResult says(const std::string& text, const std::string& needle) {
  if (text.find(needle) != std::string::npos) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "does not say '" << needle << "':\n" << text;
}

TEST(DataDir, ShardFilesWithoutAManifestStopTheStartNamingThem) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  std::filesystem::remove(d.data.path() / kManifestName);
  const std::map<std::string, std::string> before = files_of(d.data.path());
  ASSERT_EQ(before.size(), kShards);
  const std::string err = refused_start(d.data.path(), d.logs.path());
  for (const auto& [name, bytes] : before) EXPECT_TRUE(says(err, name));
  EXPECT_TRUE(says(err, "no manifest"));
  EXPECT_TRUE(says(err, "--ignore-bad-snapshot"));
  EXPECT_EQ(files_of(d.data.path()), before) << "a refused start changed the directory";
}

// The way on from there: --ignore-bad-snapshot starts empty with the files moved aside, byte for
// byte; saves touch none of them; and the set restores again once its manifest is put back.
TEST(DataDir, WithIgnoreBadSnapshotShardFilesWithoutAManifestAreKeptAsideAndRestoreWithIt) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path manifest_copy = d.logs.path() / "manifest-a";
  std::filesystem::rename(d.data.path() / kManifestName, manifest_copy);
  const std::map<std::string, std::string> before = files_of(d.data.path());
  const std::filesystem::path kept = d.data.path() / "unrestorable-1";
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--ignore-bad-snapshot", "--save", "3600 1"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    EXPECT_TRUE(says(server.err(), kept.string()));
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    EXPECT_EQ(client.command({"DBSIZE"}), ":0\r\n");
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "b")}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    EXPECT_EQ(server.terminate(), 0) << server.err();  // and a save on the way out
  }
  EXPECT_EQ(files_of(kept), before) << "the files were not kept whole and unchanged";
  std::filesystem::copy_file(manifest_copy, kept / kManifestName);
  {
    ServerProcess server(kept, d.logs.path());
    ASSERT_TRUE(server.wait_ready()) << server.err();
    expect_values(server.port(), "a");
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "b");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

TEST(DataDir, TwoShardLinesSwappedWithAMatchingChecksumStopTheStartNamingBoth) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  std::swap(m->chains[1], m->chains[2]);
  write_manifest(d.data.path(), *m);  // a checksum that matches the lie
  const std::map<std::string, std::string> before = files_of(d.data.path());
  const std::string err = refused_start(d.data.path(), d.logs.path());
  EXPECT_TRUE(says(err, (d.data.path() / shard_file_name(1, 1)).string()));
  EXPECT_TRUE(says(err, (d.data.path() / shard_file_name(2, 1)).string()));
  EXPECT_TRUE(says(err, "holds shard 1, not shard 2"));
  EXPECT_TRUE(says(err, "holds shard 2, not shard 1"));
  EXPECT_TRUE(says(err, "--ignore-bad-snapshot"));
  EXPECT_EQ(files_of(d.data.path()), before);
}

TEST(DataDir, AForgedShardCountWithAMatchingChecksumStopsTheStart) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  ASSERT_EQ(m->shards, kShards);
  m->shards = 4;
  m->chains.resize(4);
  write_manifest(d.data.path(), *m);
  const std::string err = refused_start(d.data.path(), d.logs.path());
  EXPECT_TRUE(says(err, (d.data.path() / shard_file_name(0, 1)).string()));
  EXPECT_TRUE(says(err, "of a set of 8 shards, the manifest says 4"));
}

// A file of another directory, under the name of this set's file: same program, same node, same
// shard index and generation; only the set it belongs to differs.
TEST(DataDir, AShardFileOfAnotherServersDirectoryStopsTheStart) {
  Dirs d;
  TempDir other;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  ASSERT_NO_FATAL_FAILURE(save_a_set(other.path(), d.logs.path(), "other"));
  const std::filesystem::path file = d.data.path() / shard_file_name(3, 1);
  std::filesystem::copy_file(other.path() / shard_file_name(3, 1), file,
                             std::filesystem::copy_options::overwrite_existing);
  const std::string err = refused_start(d.data.path(), d.logs.path());
  EXPECT_TRUE(says(err, file.string()));
  EXPECT_TRUE(says(err, "belongs to another data set"));
}

// The set was saved by node 0 (REHEAP_NODE unset); a process of node 1 refuses it and says how to
// start it, and a process that is node 0 again restores it.
TEST(DataDir, AProcessOfAnotherNodeRefusesTheSetAndSaysWhichNodeSavedIt) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a", {}, {"REHEAP_NODE=0"}));
  const std::string err = refused_start(d.data.path(), d.logs.path(), {"REHEAP_NODE=1"});
  EXPECT_TRUE(says(err, (d.data.path() / kManifestName).string()));
  EXPECT_TRUE(says(err, "saved by node 0"));
  EXPECT_TRUE(says(err, "REHEAP_NODE=0"));
  ServerProcess server(d.data.path(), d.logs.path(), {}, {"REHEAP_NODE=0"});
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "a");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// Two saves make each shard's chain a full file and an increment on it; the full files of shards
// 1 and 2 swapped make shard 1's increment rest on shard 2's file.
TEST(DataDir, AnIncrementOnAnotherShardsFileStopsTheStart) {
  Dirs d;
  {
    ServerProcess server(d.data.path(), d.logs.path());
    ASSERT_TRUE(server.wait_ready()) << server.err();
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "a")}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    ASSERT_EQ(client.command({"SET", "more", "x"}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  const std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  ASSERT_EQ(m->chains[1], (std::vector<std::string>{shard_file_name(1, 1), shard_file_name(1, 2)}));
  const std::filesystem::path one = d.data.path() / shard_file_name(1, 1);
  const std::filesystem::path two = d.data.path() / shard_file_name(2, 1);
  const std::filesystem::path aside = d.logs.path() / "aside";
  std::filesystem::rename(one, aside);
  std::filesystem::rename(two, one);
  std::filesystem::rename(aside, two);
  const std::string err = refused_start(d.data.path(), d.logs.path());
  EXPECT_TRUE(says(err, one.string()));
  EXPECT_TRUE(says(err, two.string()));
}

// A directory of a reheap-kv whose shards kept no label: its manifest is version 1, and nothing
// in its files could be checked (nor restored by this build's Shard, whose layout differs).
TEST(DataDir, AManifestOfAReheapKvWhoseFilesCarryNoLabelStopsTheStart) {
  Dirs d;
  const std::filesystem::path manifest = d.data.path() / kManifestName;
  std::string text = "reheap-kv manifest 1\ngeneration 1\nshards 1\nsaved_ms 0\nshard 0 shard-0.1.snap\n";
  std::uint64_t sum = 0xcbf29ce484222325ull;  // FNV-1a 64, as the manifest's checksum line
  for (const char c : text) sum = (sum ^ static_cast<unsigned char>(c)) * 0x100000001b3ull;
  char line[40];
  std::snprintf(line, sizeof line, "checksum %016llx\n", static_cast<unsigned long long>(sum));
  std::ofstream(manifest, std::ios::binary) << text << line;
  std::ofstream(d.data.path() / shard_file_name(0, 1), std::ios::binary) << "an older reheap-kv's shard";
  expect_refused(d.data.path(), d.logs.path(), manifest, "written by an older reheap-kv (manifest 1)");
}

// A file an operator put in the directory, under a shard file's name that is not the set's, is
// not the server's to delete or to overwrite: the start names it and leaves it, and so do the
// saves, whether they increment, or are full on the way out; one is even under the name the
// next save would have taken.
TEST(DataDir, ASaveNeverDeletesOrOverwritesAFileItDidNotWrite) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::map<std::string, std::string> placed = {
      {"shard-7.99.snap", "an operator's notes, not a snapshot\n"},
      {shard_file_name(3, 2), "in the way of the next save\n"},
  };
  for (const auto& [name, bytes] : placed) std::ofstream(d.data.path() / name, std::ios::binary) << bytes;
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--save", "3600 1"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    for (const auto& [name, bytes] : placed) {
      EXPECT_TRUE(says(server.err(), (d.data.path() / name).string()));
    }
    EXPECT_TRUE(says(server.err(), "left alone"));
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "b")}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  const std::map<std::string, std::string> after = files_of(d.data.path());
  for (const auto& [name, bytes] : placed) {
    const auto it = after.find(name);
    ASSERT_NE(it, after.end()) << name << " was deleted";
    EXPECT_EQ(it->second, bytes) << name << " was overwritten";
  }
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "b");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// The files a save wrote before the process died, before its manifest: the start says they are
// this set's and unfinished, the next save skips their names and deletes them.
TEST(DataDir, FilesOfAnUnfinishedSaveOfThisSetGoWithTheNextSave) {
  Dirs d;
  const std::filesystem::path second_manifest = d.logs.path() / "manifest-2";
  {
    ServerProcess server(d.data.path(), d.logs.path());
    ASSERT_TRUE(server.wait_ready()) << server.err();
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    for (int round = 1; round <= 3; ++round) {
      for (int i = 0; i < kKeys; ++i) {
        ASSERT_EQ(client.command({"SET", key(i), value(i, std::to_string(round))}), "+OK\r\n");
      }
      ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
      if (round == 2) std::filesystem::copy_file(d.data.path() / kManifestName, second_manifest);
    }
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  // Generation 3's files without its manifest: what a crash between the two leaves.
  std::filesystem::copy_file(second_manifest, d.data.path() / kManifestName,
                             std::filesystem::copy_options::overwrite_existing);
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  for (std::uint32_t i = 0; i < kShards; ++i) {
    EXPECT_TRUE(says(server.err(), (d.data.path() / shard_file_name(i, 3)).string()));
  }
  EXPECT_TRUE(says(server.err(), "unfinished save"));
  expect_values(server.port(), "2");
  Client client(server.port());
  ASSERT_TRUE(client.connected());
  ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
  EXPECT_EQ(server.terminate(), 0) << server.err();
  const std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->generation, 4u);
  std::set<std::string> named;
  for (const auto& chain : m->chains) named.insert(chain.begin(), chain.end());
  EXPECT_EQ(shard_files_in(d.data.path()), named);
}

// A stop during a BGSAVE: the save under way finishes before the process ends, so every shard
// file in the directory is one the manifest names (none of an abandoned save is left unnamed).
TEST(DataDir, AStopDuringABackgroundSaveLeavesNoFileTheManifestDoesNotName) {
  Dirs d;
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  Client client(server.port());
  ASSERT_TRUE(client.connected());
  ASSERT_EQ(client.command({"DEBUG", "POPULATE", "200000", "key", "100"}), "+OK\r\n");
  ASSERT_EQ(client.command({"BGSAVE"}), "+Background saving started\r\n");
  EXPECT_EQ(server.terminate(), 0) << server.err();
  const std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  std::set<std::string> named;
  for (const auto& chain : m->chains) named.insert(chain.begin(), chain.end());
  EXPECT_EQ(shard_files_in(d.data.path()), named);
  EXPECT_EQ(m->generation, 1u) << "the background save did not finish";
}

// A full disk: SAVE fails and says so, the save on the way out fails and the exit status says so,
// and after each the directory holds exactly what it held before (the filler aside): no file of
// the failed saves, no temporary. With the space back, the previous set restores whole.
TEST(DataDir, SavesThatFailOnAFullDiskLeaveNothingBehindAndThePreviousSetRestores) {
  SmallDisk disk(16 << 20);
  if (!disk.mounted()) GTEST_SKIP() << "this machine lacks " << disk.why_not();
  TempDir logs;
  const std::filesystem::path dir = disk.path();
  ASSERT_NO_FATAL_FAILURE(save_a_set(dir, logs.path(), "a"));
  const std::map<std::string, std::string> saved = files_of(dir);
  const std::uint64_t shard_bytes = std::filesystem::file_size(dir / shard_file_name(0, 1));
  const auto without_filler = [&] {
    std::map<std::string, std::string> files = files_of(dir);
    EXPECT_EQ(files.erase("filler"), 1u);
    return files;
  };
  {
    ServerProcess server(dir, logs.path(), {"--save", "3600 1"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "b")}), "+OK\r\n");
    // No room at all: the first shard's file fails (and the next save is full).
    ASSERT_TRUE(disk.fill(0));
    std::string reply = client.command({"SAVE"});
    EXPECT_TRUE(says(reply, "-ERR save failed"));
    EXPECT_TRUE(says(reply, "No space left on device"));
    EXPECT_EQ(without_filler(), saved) << "a failed SAVE left something behind";
    // Room for two or three full files of the eight: a full save fails part way.
    ASSERT_TRUE(disk.fill(shard_bytes * 5 / 2));
    reply = client.command({"SAVE"});
    EXPECT_TRUE(says(reply, "-ERR save failed"));
    EXPECT_EQ(without_filler(), saved) << "a SAVE that failed part way left something behind";
    EXPECT_EQ(server.terminate(), 1);
    EXPECT_TRUE(says(server.err(), "the save on the way out failed"));
    EXPECT_EQ(without_filler(), saved) << "the save on the way out failed part way and left something behind";
  }
  disk.unfill();
  ServerProcess server(dir, logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "a");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

}  // namespace
}  // namespace kv::testing
