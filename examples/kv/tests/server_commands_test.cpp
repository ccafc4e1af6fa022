// The commands the gateway answers itself (PING, CLIENT, HELLO), against the real reheap-kv
// binary (KV_SERVER_BINARY), byte for byte as redis-server 7.0 answers them: clients and their
// tests compare these replies, errors included, so a near miss is a difference. And the two
// multi-key commands the gateway cannot split over shards (examples/kv/README.md,
// "Multi-key commands across shards"): MSETNX and RENAME refuse keys of different shards and change nothing.
#include <gtest/gtest.h>

#include <string>

#include "key_hash.h"
#include "kv_runtime_test_support.h"
#include "server_process_test_support.h"

namespace kv::testing {
namespace {

constexpr const char* kBadClientName =
    "-ERR Client names cannot contain spaces, newlines or special characters.\r\n";

// What redis-server 7.0.15 answers to HELLO 2 and to HELLO without a version (the id aside).
std::string hello_reply(std::int64_t id) {
  return "*14\r\n$6\r\nserver\r\n$5\r\nredis\r\n$7\r\nversion\r\n$6\r\n7.0.15\r\n$5\r\nproto\r\n:2\r\n"
         "$2\r\nid\r\n:" + std::to_string(id) + "\r\n$4\r\nmode\r\n$10\r\nstandalone\r\n"
         "$4\r\nrole\r\n$6\r\nmaster\r\n$7\r\nmodules\r\n*0\r\n";
}

class ServerCommands : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(server_.started());
    ASSERT_TRUE(server_.wait_ready()) << server_.err();
  }
  void TearDown() override { EXPECT_EQ(server_.terminate(), 0) << server_.err(); }

  TempDir data_;
  TempDir logs_;
  ServerProcess server_{data_.path(), logs_.path()};
};

TEST_F(ServerCommands, PingTakesAtMostOneArgument) {
  Client client(server_.port());
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.command({"PING"}), "+PONG\r\n");
  EXPECT_EQ(client.command({"PING", "hi there"}), "$8\r\nhi there\r\n");
  EXPECT_EQ(client.command({"PING", "a", "b"}), "-ERR wrong number of arguments for 'ping' command\r\n");
}

TEST_F(ServerCommands, ClientSetnameRefusesSpacesNewlinesAndSpecialCharacters) {
  Client client(server_.port());
  ASSERT_TRUE(client.connected());
  const std::string names[] = {"a b", "a\nb", "a\r\nb", std::string("a\0b", 3), "\x01", "caf\xc3\xa9", "a\x7f"};
  for (const std::string& name : names) {
    SCOPED_TRACE("name '" + name + "'");
    EXPECT_EQ(client.command({"CLIENT", "SETNAME", name}), kBadClientName);
  }
  EXPECT_EQ(client.command({"CLIENT", "GETNAME"}), "$-1\r\n") << "a refused name was kept";
  EXPECT_EQ(client.command({"CLIENT", "SETNAME", "worker-1:{x}~!"}), "+OK\r\n");
  EXPECT_EQ(client.command({"CLIENT", "GETNAME"}), "$14\r\nworker-1:{x}~!\r\n");
  // An empty name clears it, as in Redis.
  EXPECT_EQ(client.command({"CLIENT", "SETNAME", ""}), "+OK\r\n");
  EXPECT_EQ(client.command({"CLIENT", "GETNAME"}), "$-1\r\n");
  EXPECT_EQ(client.command({"CLIENT", "SETNAME", "a", "b"}),
            "-ERR wrong number of arguments for 'client|setname' command\r\n");
  EXPECT_EQ(client.command({"CLIENT", "SETNAME"}), "-ERR wrong number of arguments for 'client|setname' command\r\n");
}

TEST_F(ServerCommands, ClientNamesAreEachConnectionsOwn) {
  Client named(server_.port());
  Client other(server_.port());
  ASSERT_TRUE(named.connected() && other.connected());
  EXPECT_EQ(named.command({"CLIENT", "SETNAME", "mine"}), "+OK\r\n");
  EXPECT_EQ(other.command({"CLIENT", "GETNAME"}), "$-1\r\n");
  EXPECT_EQ(named.command({"CLIENT", "GETNAME"}), "$4\r\nmine\r\n");
}

TEST_F(ServerCommands, HelloTwoAnswersTheServersPropertiesInResp2) {
  Client client(server_.port());
  ASSERT_TRUE(client.connected());
  const std::string id = client.command({"CLIENT", "ID"});
  ASSERT_EQ(id.front(), ':') << id;
  const std::int64_t own = std::stoll(id.substr(1));
  EXPECT_EQ(client.command({"HELLO", "2"}), hello_reply(own));
  EXPECT_EQ(client.command({"HELLO"}), hello_reply(own));
  EXPECT_EQ(client.command({"HELLO", "2", "SETNAME", "via-hello"}), hello_reply(own));
  EXPECT_EQ(client.command({"CLIENT", "GETNAME"}), "$9\r\nvia-hello\r\n");
}

TEST_F(ServerCommands, HelloRefusesWhatRedisRefuses) {
  Client client(server_.port());
  ASSERT_TRUE(client.connected());
  EXPECT_EQ(client.command({"HELLO", "3"}).substr(0, 9), "-NOPROTO ");
  EXPECT_EQ(client.command({"HELLO", "1"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(client.command({"HELLO", "4"}), "-NOPROTO unsupported protocol version\r\n");
  EXPECT_EQ(client.command({"HELLO", "two"}), "-ERR Protocol version is not an integer or out of range\r\n");
  EXPECT_EQ(client.command({"HELLO", "2", "foo"}), "-ERR Syntax error in HELLO option 'foo'\r\n");
  EXPECT_EQ(client.command({"HELLO", "2", "SETNAME"}), "-ERR Syntax error in HELLO option 'SETNAME'\r\n");
  EXPECT_EQ(client.command({"HELLO", "2", "SETNAME", "a b"}), kBadClientName);
  EXPECT_EQ(client.command({"CLIENT", "GETNAME"}), "$-1\r\n") << "a refused HELLO set the name";
  EXPECT_EQ(client.command({"HELLO", "2", "AUTH", "default"}), "-ERR Syntax error in HELLO option 'AUTH'\r\n");
  EXPECT_EQ(client.command({"PING"}), "+PONG\r\n");
}

// reheap-kv has no users and no passwords, which is Redis's own default: the user "default"
// without a password, with which AUTH default <anything> passes and any other user does not.
TEST_F(ServerCommands, HelloAuthPassesAsForRedisDefaultUserWithoutPassword) {
  Client client(server_.port());
  ASSERT_TRUE(client.connected());
  const std::string id = client.command({"CLIENT", "ID"});
  ASSERT_EQ(id.front(), ':') << id;
  EXPECT_EQ(client.command({"HELLO", "2", "AUTH", "default", "anything"}), hello_reply(std::stoll(id.substr(1))));
  EXPECT_EQ(client.command({"HELLO", "2", "AUTH", "alice", "secret", "SETNAME", "a"}),
            "-WRONGPASS invalid username-password pair or user is disabled.\r\n");
  EXPECT_EQ(client.command({"CLIENT", "GETNAME"}), "$-1\r\n") << "a refused HELLO set the name";
}

TEST_F(ServerCommands, MsetnxAndRenameAcrossShardsAnswerCrossslotAndChangeNothing) {
  // The server's 8 shards (one worker, 8 per worker): a key of shard 0 and one of another shard.
  constexpr std::uint32_t kShards = 8;
  std::string mine = "a";
  std::string theirs = "b";
  for (int i = 0; shard_of(mine, kShards) != 0; ++i) mine = "a" + std::to_string(i);
  for (int i = 0; shard_of(theirs, kShards) == 0; ++i) theirs = "b" + std::to_string(i);
  Client client(server_.port());
  ASSERT_TRUE(client.connected());
  const std::string crossslot = "-CROSSSLOT Keys in request don't hash to the same shard (use a {hash tag})\r\n";
  EXPECT_EQ(client.command({"MSETNX", mine, "1", theirs, "2"}), crossslot);
  EXPECT_EQ(client.command({"EXISTS", mine, theirs}), ":0\r\n");
  ASSERT_EQ(client.command({"SET", mine, "v"}), "+OK\r\n");
  EXPECT_EQ(client.command({"RENAME", mine, theirs}), crossslot);
  EXPECT_EQ(client.command({"MGET", mine, theirs}), "*2\r\n$1\r\nv\r\n$-1\r\n");
  // One hash tag, one shard: both work.
  EXPECT_EQ(client.command({"MSETNX", "{u1}.name", "a", "{u1}.mail", "b"}), ":1\r\n");
  EXPECT_EQ(client.command({"MSETNX", "{u1}.name", "x", "{u1}.new", "y"}), ":0\r\n");
  EXPECT_EQ(client.command({"RENAME", "{u1}.mail", "{u1}.email"}), "+OK\r\n");
  EXPECT_EQ(client.command({"MGET", "{u1}.name", "{u1}.email", "{u1}.new"}), "*3\r\n$1\r\na\r\n$1\r\nb\r\n$-1\r\n");
}

}  // namespace
}  // namespace kv::testing
