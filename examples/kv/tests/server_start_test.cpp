// Start-up against bad data, with the real reheap-kv binary (KV_SERVER_BINARY): a set the server
// saved restores after a restart; a truncated or damaged shard file and a manifest whose checksum
// does not match each stop the start with exit status 1 and a message naming the file; with
// --ignore-bad-snapshot the server starts empty instead, having moved the set's files, byte for
// byte, into an unrestorable-<n> subdirectory, serves, and its next save replaces the set. A
// directory a live server uses refuses a second server; an option without its value says so.
//
// Each server runs with --port on a port found free just before (bound to port 0, then closed),
// --save "" (no rules, so no save on the way out), its output in files; a guard kills it if a test
// fails before it stops.
#include <signal.h>

#include <gtest/gtest.h>

#include <chrono>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "kv_runtime_test_support.h"
#include "manifest.h"
#include "server_process_test_support.h"

namespace kv::testing {
namespace {

using namespace std::chrono_literals;

TEST(ServerStart, ASetTheServerSavedIsRestoredAfterARestart) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  EXPECT_NE(server.out().find("restored 8 shards of generation 1"), std::string::npos) << server.out();
  expect_values(server.port(), "a");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

TEST(ServerStart, ATruncatedShardFileStopsTheStartNamingTheFile) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path file = d.data.path() / shard_file_name(1, 1);
  const auto size = std::filesystem::file_size(file);
  std::filesystem::resize_file(file, size / 2);
  expect_refused(d.data.path(), d.logs.path(), file, "cannot restore the saved set");
}

TEST(ServerStart, AShardFileWithAFlippedByteStopsTheStartNamingTheFile) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path file = d.data.path() / shard_file_name(2, 1);
  std::string bytes = read_text(file);
  ASSERT_GT(bytes.size(), 64u);
  // Somewhere in the middle (page data, covered by its run's checksum), and the last byte (the
  // trailer's checksum): each is a start of its own.
  for (const std::size_t at : {bytes.size() / 2, bytes.size() - 1}) {
    SCOPED_TRACE("byte " + std::to_string(at) + " of " + std::to_string(bytes.size()));
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x5a);
    std::ofstream(file, std::ios::binary | std::ios::trunc) << damaged;
    expect_refused(d.data.path(), d.logs.path(), file, "cannot restore the saved set");
  }
}

TEST(ServerStart, AManifestWithAWrongChecksumStopsTheStartNamingTheManifest) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path manifest = d.data.path() / kManifestName;
  std::string text = read_text(manifest);
  const std::size_t at = text.find("generation 1");
  ASSERT_NE(at, std::string::npos) << text;
  text[at + 11] = '7';  // "generation 7": a lie the checksum catches
  std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
  expect_refused(d.data.path(), d.logs.path(), manifest, "checksum mismatch");
}

TEST(ServerStart, WithIgnoreBadSnapshotABadShardFileStartsEmptyAndTheNextSaveReplacesTheSet) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path file = d.data.path() / shard_file_name(3, 1);
  std::filesystem::resize_file(file, std::filesystem::file_size(file) / 3);
  const std::map<std::string, std::string> saved = files_of(d.data.path());
  const std::filesystem::path kept = d.data.path() / "unrestorable-1";
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--ignore-bad-snapshot"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    EXPECT_NE(server.err().find(file.string()), std::string::npos) << server.err();
    EXPECT_NE(server.err().find(kept.string()), std::string::npos) << server.err();
    EXPECT_EQ(files_of(kept), saved) << "the set was not set aside whole and unchanged";
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    EXPECT_EQ(client.command({"DBSIZE"}), ":0\r\n");
    EXPECT_EQ(client.command({"GET", key(0)}), "$-1\r\n");
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "b")}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  const std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->generation, 2u);  // past the bad set's generation: none of its names reused
  EXPECT_FALSE(std::filesystem::exists(file)) << "the bad set's file is still among the live set's";
  EXPECT_EQ(files_of(kept), saved) << "a save touched the set-aside files";
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "b");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

TEST(ServerStart, WithIgnoreBadSnapshotABadManifestStartsEmptyAndTheNextSaveReplacesTheSet) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path manifest = d.data.path() / kManifestName;
  std::string text = read_text(manifest);
  text[text.size() - 2] = text[text.size() - 2] == '0' ? '1' : '0';  // the checksum's last digit
  std::ofstream(manifest, std::ios::binary | std::ios::trunc) << text;
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--ignore-bad-snapshot"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    EXPECT_NE(server.err().find(manifest.string()), std::string::npos) << server.err();
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    EXPECT_EQ(client.command({"DBSIZE"}), ":0\r\n");
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "c")}), "+OK\r\n");
    ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "c");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// What a plain stop after such a start saves (save rules set, so a full save on the way out)
// replaces the live set only: the set that could not be restored, good shards included, stays
// in unrestorable-<n>, and a second such start sets its own set aside next to it.
TEST(ServerStart, WithIgnoreBadSnapshotTheSaveOnTheWayOutKeepsTheSetAsideWhole) {
  Dirs d;
  ASSERT_NO_FATAL_FAILURE(save_a_set(d.data.path(), d.logs.path(), "a"));
  const std::filesystem::path file = d.data.path() / shard_file_name(5, 1);
  std::string bytes = read_text(file);
  bytes[bytes.size() / 2] = static_cast<char>(bytes[bytes.size() / 2] ^ 1);
  std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
  const std::map<std::string, std::string> saved = files_of(d.data.path());
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--ignore-bad-snapshot", "--save", "3600 1"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    EXPECT_EQ(server.terminate(), 0) << server.err();
    EXPECT_NE(server.out().find("on the way out"), std::string::npos) << server.out();
  }
  EXPECT_EQ(files_of(d.data.path() / "unrestorable-1"), saved);
  // The empty set saved on the way out restores; damaging it and ignoring it again keeps both.
  const std::optional<Manifest> m = read_manifest(d.data.path());
  ASSERT_TRUE(m);
  const std::filesystem::path second = d.data.path() / m->chains[0].back();
  std::filesystem::resize_file(second, std::filesystem::file_size(second) / 2);
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--ignore-bad-snapshot"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    EXPECT_EQ(server.terminate(), 0) << server.err();
  }
  EXPECT_EQ(files_of(d.data.path() / "unrestorable-1"), saved);
  EXPECT_TRUE(std::filesystem::exists(d.data.path() / "unrestorable-2" / second.filename()));
  EXPECT_TRUE(std::filesystem::exists(d.data.path() / "unrestorable-2" / kManifestName));
}

// The local ports of the TCP sockets process `pid` listens on, one entry per socket (from its
// descriptors' inodes and /proc/net/tcp{,6}).
std::vector<unsigned> listening_ports(pid_t pid) {
  std::set<std::string> inodes;
  for (const auto& fd : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/fd")) {
    std::error_code ec;
    const std::string target = std::filesystem::read_symlink(fd.path(), ec).string();
    if (!ec && target.rfind("socket:[", 0) == 0) inodes.insert(target.substr(8, target.size() - 9));
  }
  std::vector<unsigned> ports;
  for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
    std::istringstream lines(read_text(table));
    std::string line;
    std::getline(lines, line);  // the header
    while (std::getline(lines, line)) {
      std::istringstream fields(line);
      std::string slot, local, remote, state, queues, timer, retransmits, uid, timeout, inode;
      fields >> slot >> local >> remote >> state >> queues >> timer >> retransmits >> uid >> timeout >> inode;
      if (state == "0A" && inodes.count(inode) != 0) {
        ports.push_back(static_cast<unsigned>(std::stoul(local.substr(local.find(':') + 1), nullptr, 16)));
      }
    }
  }
  return ports;
}

// --port 0 with two workers: one port, the kernel's pick, on which both gateways listen and which
// the "ready" line and INFO name.
TEST(ServerStart, PortZeroListensOnOnePortWithEveryWorkerAndSaysWhichOne) {
  Dirs d;
  ServerProcess server(d.data.path(), d.logs.path(), {"--port", "0", "--workers", "2"});
  ASSERT_TRUE(server.wait_ready()) << server.err();
  const std::string out = server.out();
  const std::size_t at = out.find("ready on 127.0.0.1:");
  ASSERT_NE(at, std::string::npos) << out;
  const unsigned port = static_cast<unsigned>(std::stoul(out.substr(at + 19)));
  ASSERT_NE(port, 0u) << out;
  EXPECT_EQ(listening_ports(server.pid()), (std::vector<unsigned>{port, port})) << out;
  Client client(static_cast<std::uint16_t>(port));
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.command({"PING"}), "+PONG\r\n");
  EXPECT_NE(client.command({"INFO", "server"}).find("tcp_port:" + std::to_string(port) + "\r\n"), std::string::npos);
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// `--save SECONDS CHANGES`: a save happens by itself once both are reached, and it is what a
// restart after kill -9 finds; with nothing changed since, no further save happens.
TEST(ServerStart, SaveRulesSaveByThemselvesAndTheSetSurvivesKill9) {
  Dirs d;
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--save", "1 1"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "rule")}), "+OK\r\n");
    // The manifest is there from the start (the data set's); a save gives it shard lines.
    const auto saved = [&] {
      try {
        const std::optional<Manifest> m = read_manifest(d.data.path());
        return m && !m->chains.empty();
      } catch (const ManifestError&) {
        return false;
      }
    };
    const auto deadline = std::chrono::steady_clock::now() + kPatience;
    while (!saved() && std::chrono::steady_clock::now() < deadline) std::this_thread::sleep_for(20ms);
    ASSERT_TRUE(saved()) << "no save within the patience; " << server.err();
    // The rule saw every write: the save counts them all (rdb_changes_since_last_save falls to 0).
    // A save may have started before the last writes: the next one, a second later by the rule,
    // takes them; a loaded machine may take longer than that to get to it.
    std::string info;
    const auto settled = std::chrono::steady_clock::now() + kPatience;
    while (std::chrono::steady_clock::now() < settled) {
      info = client.command({"INFO", "persistence"});
      if (info.find("rdb_changes_since_last_save:0\r\n") != std::string::npos) break;
      std::this_thread::sleep_for(20ms);
    }
    EXPECT_NE(info.find("rdb_changes_since_last_save:0\r\n"), std::string::npos) << info;
    EXPECT_EQ(info.find("rdb_saves:0\r\n"), std::string::npos) << info;
    ::kill(server.pid(), SIGKILL);
    EXPECT_EQ(server.wait_exit(), -1);
  }
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "rule");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// With save rules, a stop saves what was written since the last save, as Redis does on SIGTERM;
// the gateways are gone first, so nothing acknowledged after the save can be lost.
TEST(ServerStart, WithSaveRulesAStopSavesAndTheRestartServesTheLastWrites) {
  Dirs d;
  {
    ServerProcess server(d.data.path(), d.logs.path(), {"--save", "3600 1"});
    ASSERT_TRUE(server.wait_ready()) << server.err();
    Client client(server.port());
    ASSERT_TRUE(client.connected());
    for (int i = 0; i < kKeys; ++i) ASSERT_EQ(client.command({"SET", key(i), value(i, "stop")}), "+OK\r\n");
    EXPECT_EQ(server.terminate(), 0) << server.err();
    EXPECT_NE(server.out().find("saved generation 1 on the way out"), std::string::npos) << server.out();
  }
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  expect_values(server.port(), "stop");
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// One server per data directory: a second start on a directory a live server uses would replace
// the first one's saves with its own (the same file names, the manifest overwritten), so it
// refuses, naming the directory; once the first has stopped, the directory is free again.
TEST(ServerStart, ASecondServerOnTheSameDirectoryRefusesToStart) {
  Dirs d;
  ServerProcess first(d.data.path(), d.logs.path());
  ASSERT_TRUE(first.wait_ready()) << first.err();
  {
    ServerProcess second(d.data.path(), d.logs.path());
    ASSERT_TRUE(second.started());
    EXPECT_FALSE(second.wait_ready()) << second.out();
    EXPECT_EQ(second.wait_exit(), 1);
    const std::string err = second.err();
    EXPECT_NE(err.find(d.data.path().string()), std::string::npos) << "stderr does not name the directory:\n" << err;
    EXPECT_NE(err.find("another reheap-kv"), std::string::npos) << err;
  }
  Client client(first.port());
  ASSERT_TRUE(client.connected());
  ASSERT_EQ(client.command({"SET", "k", "first"}), "+OK\r\n");
  ASSERT_EQ(client.command({"SAVE"}), "+OK\r\n");
  EXPECT_EQ(first.terminate(), 0) << first.err();
  ServerProcess after(d.data.path(), d.logs.path());
  ASSERT_TRUE(after.wait_ready()) << after.err();
  EXPECT_EQ(Client(after.port()).command({"GET", "k"}), "$5\r\nfirst\r\n");
  EXPECT_EQ(after.terminate(), 0) << after.err();
}

// A server killed with kill -9 holds no lock: the kernel drops it with the process, and the
// restart on the same directory starts at once.
TEST(ServerStart, TheDirectoryIsFreeAgainAfterKill9) {
  Dirs d;
  {
    ServerProcess server(d.data.path(), d.logs.path());
    ASSERT_TRUE(server.wait_ready()) << server.err();
    ::kill(server.pid(), SIGKILL);
    EXPECT_EQ(server.wait_exit(), -1);
  }
  ServerProcess server(d.data.path(), d.logs.path());
  ASSERT_TRUE(server.wait_ready()) << server.err();
  EXPECT_EQ(server.terminate(), 0) << server.err();
}

// Every option that takes a value says so when it is the last argument, instead of calling
// itself unknown. (ServerProcess puts the given arguments last.)
TEST(ServerStart, AnOptionWithoutItsValueSaysItNeedsOne) {
  Dirs d;
  for (const std::string option : {"--host", "--port", "--workers", "--shards-per-worker", "--dir", "--save"}) {
    SCOPED_TRACE(option);
    ServerProcess server(d.data.path(), d.logs.path(), {option});
    ASSERT_TRUE(server.started());
    EXPECT_EQ(server.wait_exit(), 2);
    const std::string err = server.err();
    EXPECT_NE(err.find("reheap-kv: " + option + " needs a value"), std::string::npos) << err;
    EXPECT_EQ(err.find("unknown argument"), std::string::npos) << err;
  }
}

}  // namespace
}  // namespace kv::testing
