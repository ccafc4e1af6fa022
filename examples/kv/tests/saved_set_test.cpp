// The point in time of a saved set (saver.h): each shard's file holds exactly a prefix of the
// writes that shard executed - its own instant - and at least every write that reached it before
// the saver asked for its snapshot. And the saved sets that follow: the second save is an
// increment on the first, every kMaxIncrements increments a full save starts a new chain, the
// manifest names only files that exist, and the files of older sets not in the chain are deleted.
//
// Four shards, the saver and a proxy (playing a gateway) run in one reheap::Runtime; the saved set
// is restored in a second Runtime of the same process, once the first is gone (its heaps' addresses
// are then free), and read back with GET.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "kv_runtime_test_support.h"
#include "manifest.h"
#include "reheap/node_identity.h"
#include "saved_set_check.h"
#include "saver.h"
#include "shard.h"

namespace kv::testing {
namespace {

constexpr std::uint32_t kShards = 4;
constexpr std::uint64_t kOtherIds = 1'000'000'000;  // ids of calls that are not stream writes
constexpr std::uint64_t kSetId = 0x5e7;              // the data set's id, in the shards and the manifest

reheap::RuntimeConfig two_workers() {
  reheap::RuntimeConfig config;
  config.workers = 2;
  return config;
}

// A running server without its network side: shards spawned as main.cpp spawns them, the saver
// with no rules, and a proxy to send them commands. The sink outlives the runtime.
struct Server {
  ReplySink sink;
  reheap::Runtime rt{two_workers()};
  std::vector<reheap::ActorRef> shards;
  reheap::ActorRef saver;
  reheap::ActorRef proxy;
  std::uint64_t next_id = kOtherIds;

  explicit Server(const std::filesystem::path& dir) {
    for (std::uint32_t i = 0; i < kShards; ++i) {
      reheap::SpawnOptions options;
      options.worker = static_cast<int>(i % 2);
      options.name = "shard " + std::to_string(i);
      shards.push_back(rt.spawn<Shard>(options, i, kShards, kSetId));
    }
    SaverConfig config;
    config.dir = dir;
    config.shards = shards;
    config.loaded.set_id = kSetId;
    config.loaded.node = reheap::NodeIdentity::current().node;
    reheap::SpawnOptions saver_options;
    saver_options.name = "saver";
    saver_options.worker = 0;
    saver = rt.spawn<Saver>(saver_options, config);
    reheap::SpawnOptions proxy_options;
    proxy_options.name = "proxy";
    proxy_options.worker = 1;
    proxy = rt.spawn<Proxy>(proxy_options, &sink);
  }

  reheap::ActorRef shard_for(const std::string& key) const { return shards[shard_of(key, kShards)]; }

  std::uint64_t call(reheap::ActorRef target, std::vector<std::string> args, std::uint64_t id = 0) {
    if (id == 0) id = ++next_id;
    EXPECT_EQ(rt.send(proxy, Call{.id = id, .target = target, .args = std::move(args)}), reheap::SendResult::kOk);
    return id;
  }
  // Sends and waits for the reply.
  std::string ask(reheap::ActorRef target, std::vector<std::string> args) {
    const std::uint64_t id = call(target, std::move(args));
    if (!sink.wait_id(id)) return "<no reply to call " + std::to_string(id) + ">";
    return sink.reply(id);
  }
  // Stream writes w = from..to, each with the id w.
  void write_stream(std::uint64_t from, std::uint64_t to) {
    for (std::uint64_t w = from; w <= to; ++w) {
      call(shard_for(stream_key(w)), {"set", stream_key(w), stream_value(w)}, w);
    }
  }
  // Stream writes w = from..to, and waits for every one's reply.
  bool write_and_wait(std::uint64_t from, std::uint64_t to) {
    write_stream(from, to);
    for (std::uint64_t w = from; w <= to; ++w) {
      if (!sink.wait_id(w)) return false;
    }
    return true;
  }
};

// The value of every stream key, read with GET from the set saved in `dir`, in a new runtime.
std::map<std::string, std::string> restored_values(const std::filesystem::path& dir) {
  std::map<std::string, std::string> values;
  ReplySink sink;
  reheap::Runtime rt(two_workers());
  const std::vector<reheap::ActorRef> shards = restore_saved_set(rt, dir, kShards);
  EXPECT_EQ(shards.size(), kShards) << "the saved set of " << dir << " did not restore";
  if (shards.size() != kShards) return values;
  const reheap::ActorRef proxy = rt.spawn<Proxy>(&sink);
  for (std::uint32_t k = 0; k < kStreamKeys; ++k) {
    const std::string key = "k" + std::to_string(k);
    rt.send(proxy, Call{.id = k + 1, .target = shards[shard_of(key, kShards)], .args = {"get", key}});
  }
  EXPECT_TRUE(sink.wait_count(kStreamKeys));
  for (std::uint32_t k = 0; k < kStreamKeys; ++k) values["k" + std::to_string(k)] = bulk_value(sink.reply(k + 1));
  return values;
}

// The value of every stream key after writes 1..n.
std::map<std::string, std::string> values_after(std::uint64_t n) {
  std::map<std::string, std::string> values;
  for (std::uint32_t k = 0; k < kStreamKeys; ++k) values["k" + std::to_string(k)] = std::string(kMissing);
  for (std::uint64_t w = 1; w <= n; ++w) values[stream_key(w)] = stream_value(w);
  return values;
}

std::string info_field(const std::string& info, const std::string& name) {
  const std::size_t at = info.find("\r\n" + name + ":");
  if (at == std::string::npos) return "<no " + name + ">";
  const std::size_t begin = at + 2 + name.size() + 1;
  return info.substr(begin, info.find("\r\n", begin) - begin);
}

TEST(SavedSet, EachShardHoldsAPrefixOfItsOwnWritesWithEveryWriteSentBeforeTheSave) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  constexpr std::uint64_t kWrites = 20'000;
  constexpr std::uint64_t kBeforeSave = kWrites / 2;
  {
    Server server(dir.path());
    // The proxy forwards in this order, so every write to a shard numbered up to kBeforeSave
    // enters that shard's mailbox before the saver's snapshot request can (the saver gets SAVE
    // after them); the later writes race with the snapshots.
    server.write_stream(1, kBeforeSave);
    const std::uint64_t save = server.call(server.saver, {"save"});
    server.write_stream(kBeforeSave + 1, kWrites);
    ASSERT_TRUE(server.sink.wait_count(kWrites + 1)) << "not every write and the SAVE were answered";
    EXPECT_EQ(server.sink.reply(save), "+OK\r\n");
    std::uint64_t not_ok = 0;
    for (const auto& [id, reply] : server.sink.replies()) not_ok += id != save && reply != "+OK\r\n" ? 1 : 0;
    EXPECT_EQ(not_ok, 0u);
  }

  const std::map<std::string, std::string> restored = restored_values(dir.path());
  ASSERT_EQ(restored.size(), kStreamKeys);
  for (std::uint32_t s = 0; s < kShards; ++s) {
    std::vector<std::string> keys;
    for (std::uint32_t k = 0; k < kStreamKeys; ++k) {
      if (shard_of("k" + std::to_string(k), kShards) == s) keys.push_back("k" + std::to_string(k));
    }
    ASSERT_FALSE(keys.empty()) << "shard " << s << " owns no stream key";
    // The shard's state after each of its own writes (and before any): each write sets a value no
    // other write sets, so at most one of these states is the restored one.
    std::map<std::string, std::string> state = values_after(0);
    const auto matches = [&] {
      for (const std::string& key : keys) {
        if (state.at(key) != restored.at(key)) return false;
      }
      return true;
    };
    std::int64_t cut = matches() ? 0 : -1;
    std::uint64_t cut_end = kWrites;  // the last write before the next write to this shard
    for (std::uint64_t w = 1; w <= kWrites; ++w) {
      if (shard_of(stream_key(w), kShards) != s) continue;
      if (cut >= 0 && cut_end == kWrites && static_cast<std::uint64_t>(cut) < w) cut_end = w - 1;
      state[stream_key(w)] = stream_value(w);
      if (matches()) {
        cut = static_cast<std::int64_t>(w);
        cut_end = kWrites;
      }
    }
    ASSERT_GE(cut, 0) << "shard " << s << "'s saved keys are no prefix of its writes";
    EXPECT_GE(cut_end, kBeforeSave) << "shard " << s << " lost a write sent before the SAVE";
    std::printf("shard %u saved its writes up to %lld (of %llu; the SAVE was sent after %llu)\n", s,
                static_cast<long long>(cut), static_cast<unsigned long long>(kWrites),
                static_cast<unsigned long long>(kBeforeSave));
  }
}

TEST(SavedSet, TheSecondSaveIsAnIncrementAndRestoresTheNewerData) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  {
    Server server(dir.path());
    ASSERT_TRUE(server.write_and_wait(1, 1000));
    ASSERT_EQ(server.ask(server.saver, {"save"}), "+OK\r\n");
    const std::string first = server.ask(server.saver, {"info"});
    EXPECT_EQ(info_field(first, "reheap_last_save_kind"), "full");
    EXPECT_EQ(info_field(first, "reheap_saved_generation"), "1");
    const std::optional<Manifest> m1 = read_manifest(dir.path());
    ASSERT_TRUE(m1);
    EXPECT_EQ(m1->generation, 1u);

    ASSERT_TRUE(server.write_and_wait(1001, 2000));  // every key again
    ASSERT_EQ(server.ask(server.saver, {"save"}), "+OK\r\n");
    const std::string second = server.ask(server.saver, {"info"});
    EXPECT_EQ(info_field(second, "reheap_last_save_kind"), "incremental");
    EXPECT_EQ(info_field(second, "reheap_saved_generation"), "2");
    EXPECT_EQ(info_field(second, "rdb_saves"), "2");
  }
  const std::optional<Manifest> m = read_manifest(dir.path());
  ASSERT_TRUE(m);
  EXPECT_EQ(m->generation, 2u);
  ASSERT_EQ(m->shards, kShards);
  std::set<std::string> named;
  for (std::uint32_t i = 0; i < kShards; ++i) {
    // The increment, restored, follows its parent: the chain is the full save, then the increment.
    EXPECT_EQ(m->chains[i], (std::vector<std::string>{shard_file_name(i, 1), shard_file_name(i, 2)}))
        << "shard " << i;
    named.insert(m->chains[i].begin(), m->chains[i].end());
  }
  EXPECT_EQ(shard_files_in(dir.path()), named);
  // Each file says which set, shard and save it holds (the increment too), as its line does.
  for (std::uint32_t i = 0; i < kShards; ++i) {
    EXPECT_EQ(check_shard_line(dir.path(), *m, i), std::vector<std::string>{}) << "shard " << i;
  }
  EXPECT_EQ(restored_values(dir.path()), values_after(2000));
}

TEST(SavedSet, AfterMaxIncrementsAFullSaveStartsANewChainAndTheOlderFilesAreDeleted) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  constexpr std::uint64_t kPerSave = 100;
  constexpr std::uint64_t kSaves = Saver::kMaxIncrements + 3;  // full, 8 increments, full, increment
  {
    Server server(dir.path());
    std::uint64_t chain_start = 1;
    for (std::uint64_t g = 1; g <= kSaves; ++g) {
      SCOPED_TRACE("save " + std::to_string(g));
      ASSERT_TRUE(server.write_and_wait((g - 1) * kPerSave + 1, g * kPerSave));
      ASSERT_EQ(server.ask(server.saver, {"save"}), "+OK\r\n");
      const std::string info = server.ask(server.saver, {"info"});
      const bool full = g == 1 || g == Saver::kMaxIncrements + 2;
      if (full) chain_start = g;
      EXPECT_EQ(info_field(info, "reheap_last_save_kind"), full ? "full" : "incremental");

      const std::optional<Manifest> m = read_manifest(dir.path());
      ASSERT_TRUE(m);
      EXPECT_EQ(m->generation, g);
      ASSERT_EQ(m->chains.size(), kShards);
      std::set<std::string> named;
      for (std::uint32_t i = 0; i < kShards; ++i) {
        std::vector<std::string> expected;
        for (std::uint64_t c = chain_start; c <= g; ++c) expected.push_back(shard_file_name(i, c));
        EXPECT_EQ(m->chains[i], expected) << "shard " << i;
        for (const std::string& name : m->chains[i]) {
          EXPECT_TRUE(std::filesystem::is_regular_file(dir.path() / name)) << name << " is named but missing";
          named.insert(name);
        }
      }
      // Exactly the named files: the previous chain's went once the full save's manifest was written.
      EXPECT_EQ(shard_files_in(dir.path()), named);
    }
  }
  EXPECT_EQ(restored_values(dir.path()), values_after(kSaves * kPerSave));
}

}  // namespace
}  // namespace kv::testing
