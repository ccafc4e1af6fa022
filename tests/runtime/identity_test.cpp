// ActorRefs that never collide: the reference layout (slot, generation, origin), references of
// another origin that name nothing here, restarts of a node counted in a state directory, and three
// processes of three nodes each restoring the others' reactors after spawning their own, where a
// reference kept inside a restored heap reaches the same reactor if it was restored too and is a
// dead letter otherwise — never one of the local reactors that happen to hold the same slot.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

// A namespace of its own: message type ids come from type names, and other test files have
// their own Ping, Pong and Echo in anonymous namespaces, which share the printed name.
namespace reheap::identity_test {
namespace {

using rttest::Log;
using rttest::TempDir;

// ---- reactors that hold nothing outside their heaps, so that they travel --------------------

struct Pong {
  std::uint32_t node;         // of the Echo's creator
  std::uint64_t echo;         // the Echo's own reference
};
struct Ping {
  ActorRef reply_to;
};
// Replies to every Ping with its node and reference.
class Echo : public Reactor {
 public:
  explicit Echo(std::uint32_t node) : node_(node) { handle<&Echo::on_ping>(); }
  void on_ping(const Ping& p) { send(p.reply_to, Pong{node_, self().value()}); }

 private:
  std::uint32_t node_;
};

struct Forward {
  ActorRef reply_to;
};
struct Forwarded {
  std::uint64_t relay;
  std::int32_t result;  // the SendResult of the relay's send to the reference it kept
};
// Keeps a reference in its heap and, asked to, pings it on behalf of `reply_to`.
class Relay : public Reactor {
 public:
  explicit Relay(ActorRef target) : target_(target) { handle<&Relay::on_forward>(); }
  void on_forward(const Forward& f) {
    const SendResult r = send(target_, Ping{f.reply_to});
    send(f.reply_to, Forwarded{self().value(), static_cast<std::int32_t>(r)});
  }

 private:
  ActorRef target_;
};

// Passes what it receives to the test (process memory: never snapshotted).
class Collector : public Reactor {
 public:
  Collector(Log<Pong>* pongs, Log<Forwarded>* forwarded) : pongs_(pongs), forwarded_(forwarded) {
    handle<&Collector::on_pong>();
    handle<&Collector::on_forwarded>();
  }
  void on_pong(const Pong& p) { pongs_->add(p); }
  void on_forwarded(const Forwarded& f) { forwarded_->add(f); }

 private:
  Log<Pong>* pongs_;
  Log<Forwarded>* forwarded_;
};

// ---- the reference layout -------------------------------------------------------------------

static_assert(std::is_trivially_copyable_v<ActorRef>);
static_assert(sizeof(ActorRef) == 8);

TEST(ActorRefLayout, SlotGenerationAndOriginRoundTripAndTruncateToTheirWidths) {
  constexpr ActorRef r = ActorRef::make((5u << 18) | 0x2abcdu, 0x00fedcbau, 0xbeefu);
  static_assert(r.slot() == 0xfedcbau && r.generation() == 0xbeefu);
  static_assert(r.origin() == ((5u << 18) | 0x2abcdu) && r.node() == 5u && r.incarnation() == 0x2abcdu);
  EXPECT_EQ(r.value(), (std::uint64_t{(5u << 18) | 0x2abcdu} << 40) | (std::uint64_t{0xbeef} << 24) | 0xfedcba);
  // Each part is cut to its width, never spilling into its neighbour.
  const ActorRef wide = ActorRef::make(0xffffffffu, 0xffffffffu, 0xffffffffu);
  EXPECT_EQ(wide.value(), ~std::uint64_t{0});
  const ActorRef slot_only = ActorRef::make(0, 0x1000001u, 0);
  EXPECT_EQ(slot_only.value(), 1u);
  EXPECT_EQ(ActorRef::make(0, 0, 0x10001u).generation(), 1u);
  EXPECT_FALSE(ActorRef{});
  EXPECT_TRUE(ActorRef::make(0, 1, 1));
}

TEST(ActorRefLayout, PacksAsAnUnsignedInteger) {
  const ActorRef r = ActorRef::make(0x123456u, 77, 3);
  msgpack::sbuffer buffer;
  msgpack::pack(buffer, r);
  const msgpack::object_handle h = msgpack::unpack(buffer.data(), buffer.size());
  // MSGPACK_DEFINE of one member packs an array of one unsigned integer.
  ASSERT_EQ(h.get().type, msgpack::type::ARRAY);
  ASSERT_EQ(h.get().via.array.size, 1u);
  ASSERT_EQ(h.get().via.array.ptr[0].type, msgpack::type::POSITIVE_INTEGER);
  EXPECT_EQ(h.get().via.array.ptr[0].via.u64, r.value());
  EXPECT_EQ(h.get().as<ActorRef>(), r);
}

TEST(ActorRefLayout, ARuntimesReferencesCarryItsNodeAndIncarnation) {
  Runtime rt(RuntimeConfig{.workers = 1});
  const NodeIdentity id = rt.identity();
  EXPECT_EQ(id.origin(), NodeIdentity::current().origin());
  const ActorRef a = rt.spawn<Echo>(id.node);
  const ActorRef b = rt.spawn<Echo>(id.node);
  for (ActorRef r : {a, b}) {
    EXPECT_EQ(r.origin(), id.origin());
    EXPECT_EQ(r.node(), id.node);
    EXPECT_EQ(r.incarnation(), id.incarnation);
    EXPECT_NE(r.slot(), 0u);
    EXPECT_NE(r.generation(), 0u);
  }
  EXPECT_NE(a, b);
}

TEST(ActorRefLayout, AReferenceOfAnotherOriginNamesNoLocalReactorEvenWithTheSameSlot) {
  Runtime rt(RuntimeConfig{.workers = 1});
  Log<Pong> pongs;
  Log<Forwarded> forwarded;
  const ActorRef collector = rt.spawn<Collector>(&pongs, &forwarded);
  const ActorRef echo = rt.spawn<Echo>(0u);
  // Same slot and generation as a live reactor; another node, or another incarnation.
  const NodeIdentity id = rt.identity();
  const std::uint32_t other_node = ((id.node + 1) % NodeIdentity::kMaxNodes) << NodeIdentity::kIncarnationBits |
                                   id.incarnation;
  const std::uint32_t other_incarnation =
      id.node << NodeIdentity::kIncarnationBits | ((id.incarnation + 1) % NodeIdentity::kIncarnations);
  for (std::uint32_t origin : {other_node, other_incarnation}) {
    const ActorRef stranger = ActorRef::make(origin, echo.slot(), echo.generation());
    EXPECT_FALSE(rt.alive(stranger));
    EXPECT_EQ(rt.send(stranger, Ping{collector}), SendResult::kNoSuchReactor);
    EXPECT_FALSE(rt.stop(stranger));
    EXPECT_THROW(rt.stats(stranger), std::runtime_error);
  }
  ASSERT_TRUE(rt.wait_idle());
  EXPECT_EQ(pongs.size(), 0u) << "a stranger's message reached the local reactor in its slot";
  EXPECT_TRUE(rt.alive(echo));
}

TEST(ActorRefLayout, ARestoreAfterSpawningBringsTheReactorBackUnderItsRef) {
  TempDir dir;
  Runtime rt(RuntimeConfig{.workers = 2});
  Log<Pong> pongs;
  Log<Forwarded> forwarded;
  const ActorRef collector = rt.spawn<Collector>(&pongs, &forwarded);
  std::vector<ActorRef> before;
  for (int i = 0; i < 3; ++i) before.push_back(rt.spawn<Echo>(1u));
  const ActorRef saved = rt.spawn<Echo>(42u);
  rt.snapshot(saved, dir / "echo.snap");
  ASSERT_TRUE(rt.stop(saved));
  ASSERT_TRUE(rt.wait_stopped(saved));
  std::vector<ActorRef> after;
  for (int i = 0; i < 3; ++i) after.push_back(rt.spawn<Echo>(2u));
  // The saved reactor's slot went to a later reactor: it comes back relocated, under its ref.
  const bool slot_taken = std::any_of(after.begin(), after.end(), [&](ActorRef r) { return r.slot() == saved.slot(); });
  EXPECT_TRUE(slot_taken) << "the test expects the freed slot to be reused";
  EXPECT_EQ(rt.restore(dir / "echo.snap"), saved);
  EXPECT_TRUE(rt.alive(saved));
  EXPECT_THROW(rt.restore(dir / "echo.snap"), std::runtime_error) << "a second copy under the same ref";
  for (ActorRef r : after) EXPECT_TRUE(rt.alive(r));
  ASSERT_EQ(rt.send(saved, Ping{collector}), SendResult::kOk);
  ASSERT_TRUE(pongs.wait_size(1));
  EXPECT_EQ(pongs.items()[0].node, 42u);
  EXPECT_EQ(pongs.items()[0].echo, saved.value());
  // Once it stops, its reference names nothing, and the slot's occupant is untouched.
  ASSERT_TRUE(rt.stop(saved));
  ASSERT_TRUE(rt.wait_stopped(saved));
  EXPECT_EQ(rt.send(saved, Ping{collector}), SendResult::kNoSuchReactor);
  for (ActorRef r : after) EXPECT_TRUE(rt.alive(r));
}

// Runtimes of one process share its identity, so their references differ only if their slot
// tables never issue the same generation of a slot (slot_generations.h).
TEST(ActorRefLayout, TwoRuntimesOfOneProcessNeverMintTheSameReference) {
  std::set<std::uint64_t> minted;
  {
    Runtime a(RuntimeConfig{.workers = 1});
    Runtime b(RuntimeConfig{.workers = 1});
    for (int i = 0; i < 50; ++i) {
      EXPECT_TRUE(minted.insert(a.spawn<Echo>(1u).value()).second) << "runtime a, spawn " << i;
      EXPECT_TRUE(minted.insert(b.spawn<Echo>(2u).value()).second) << "runtime b, spawn " << i;
    }
  }
  Runtime later(RuntimeConfig{.workers = 1});
  for (int i = 0; i < 50; ++i) {
    EXPECT_TRUE(minted.insert(later.spawn<Echo>(3u).value()).second) << "a later runtime, spawn " << i;
  }
}

TEST(ActorRefLayout, AReactorOfOneRuntimeRestoresIntoAnotherOfTheProcessNextToItsReactors) {
  TempDir dir;
  Runtime a(RuntimeConfig{.workers = 1});
  Runtime b(RuntimeConfig{.workers = 2});
  const ActorRef saved = a.spawn<Echo>(42u);
  a.snapshot(saved, dir / "echo.snap");
  Log<Pong> pongs;
  Log<Forwarded> forwarded;
  const ActorRef collector = b.spawn<Collector>(&pongs, &forwarded);
  std::vector<ActorRef> locals;
  for (int i = 0; i < 3; ++i) locals.push_back(b.spawn<Echo>(7u));
  // Its heap's addresses must be free to restore it in this process.
  ASSERT_TRUE(a.stop(saved));
  ASSERT_TRUE(a.wait_stopped(saved));
  ASSERT_EQ(b.restore(dir / "echo.snap"), saved);
  ASSERT_EQ(b.send(saved, Ping{collector}), SendResult::kOk);
  ASSERT_TRUE(pongs.wait_size(1));
  EXPECT_EQ(pongs.items()[0].node, 42u);
  EXPECT_EQ(pongs.items()[0].echo, saved.value());
  for (ActorRef r : locals) {
    ASSERT_NE(r, saved);
    ASSERT_EQ(b.send(r, Ping{collector}), SendResult::kOk);
  }
  ASSERT_TRUE(pongs.wait_size(4));
  for (std::size_t i = 1; i < 4; ++i) EXPECT_EQ(pongs.items()[i].node, 7u);
  EXPECT_FALSE(a.alive(saved));
}

// Not in sanitizer builds: 65,535 spawns take minutes there.
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
TEST(ActorRefLayout, ASlotWhoseGenerationsAreSpentRetiresInsteadOfRepeatingOne) {
  Runtime rt(RuntimeConfig{.workers = 1});
  // With one free slot, that slot churns. It may start past generation 1: generations are
  // claimed process-wide, and other tests of this process may have used it.
  ActorRef first = rt.spawn<Echo>(0u);
  const std::uint32_t slot = first.slot();
  ActorRef last = first;
  for (std::uint32_t g = first.generation() + 1; g <= ActorRef::kMaxGeneration; ++g) {
    ASSERT_TRUE(rt.stop(last));
    ASSERT_TRUE(rt.wait_stopped(last));
    last = rt.spawn<Echo>(0u);
    ASSERT_EQ(last.slot(), slot) << "at generation " << g;
    ASSERT_EQ(last.generation(), g);
  }
  ASSERT_TRUE(rt.stop(last));
  ASSERT_TRUE(rt.wait_stopped(last));
  const ActorRef next = rt.spawn<Echo>(0u);
  EXPECT_NE(next.slot(), slot) << "the spent slot was reused, with generation " << next.generation();
  EXPECT_NE(next, first);
  EXPECT_FALSE(rt.alive(first));
  // Spent for the process, not just for this runtime: another one's first spawn, which would
  // take the same first slot, skips it.
  ASSERT_EQ(slot, 1u) << "a fresh runtime's first reactor takes slot 1";
  Runtime other(RuntimeConfig{.workers = 1});
  const ActorRef elsewhere = other.spawn<Echo>(0u);
  EXPECT_NE(elsewhere.slot(), slot) << "generation " << elsewhere.generation();
}
#endif  // !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)

// ---- other processes -------------------------------------------------------------------------

RuntimeConfig node_config(const std::string& node, const std::string& state_dir) {
  RuntimeConfig config;
  config.workers = 2;
  config.node = std::stoi(node);
  config.state_dir = state_dir;
  return config;
}

// --helper identity-spawn <node> <state dir> <count>
// Spawns <count> reactors; prints "incarnation <n> counted <0|1>" and "ref <value>" for each.
int identity_spawn(const std::vector<std::string>& args) {
  if (args.size() != 3) return 2;
  Runtime rt(node_config(args[0], args[1]));
  const NodeIdentity id = rt.identity();
  std::printf("incarnation %u counted %d\n", id.incarnation, id.counted ? 1 : 0);
  for (int i = 0; i < std::stoi(args[2]); ++i) {
    std::printf("ref %llu\n", static_cast<unsigned long long>(rt.spawn<Echo>(id.node).value()));
  }
  return 0;
}
const rttest::RegisterHelper kIdentitySpawn("identity-spawn", &identity_spawn);

// The values printed after `word` on lines "word <value>".
std::vector<std::uint64_t> values_of(const std::string& output, const std::string& word) {
  std::vector<std::uint64_t> values;
  std::istringstream lines(output);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.rfind(word + " ", 0) == 0) values.push_back(std::stoull(line.substr(word.size() + 1)));
  }
  return values;
}

TEST(NodeIdentityAcrossProcesses, RestartsOfANodeWithAStateDirectoryNeverRepeatARef) {
  TempDir dir;
  const std::string state = (dir / "state").string();
  std::set<std::uint64_t> refs;
  std::vector<std::set<std::uint32_t>> slots(3);
  for (std::uint32_t start = 0; start < 3; ++start) {
    const rttest::ChildResult child = rttest::run_helper("identity-spawn", {"9", state, "5"});
    ASSERT_TRUE(child.succeeded()) << child.describe();
    ASSERT_NE(child.output.find("incarnation " + std::to_string(start) + " counted 1"), std::string::npos)
        << child.output;
    const std::vector<std::uint64_t> mine = values_of(child.output, "ref");
    ASSERT_EQ(mine.size(), 5u) << child.output;
    for (std::uint64_t v : mine) {
      EXPECT_EQ(ActorRef(v).node(), 9u);
      EXPECT_EQ(ActorRef(v).incarnation(), start);
      EXPECT_TRUE(refs.insert(v).second) << "ref " << v << " handed out twice";
      slots[start].insert(ActorRef(v).slot());
    }
  }
  // Every start spawns into the same slots, so only the origin keeps the references apart.
  EXPECT_EQ(slots[0], slots[1]);
  EXPECT_EQ(slots[0], slots[2]);
}

TEST(NodeIdentityAcrossProcesses, AnUnusableStateDirectoryStopsTheRuntimeWithAClearError) {
  TempDir dir;
  const std::string file = (dir / "not-a-directory").string();
  { std::FILE* f = std::fopen(file.c_str(), "w"); ASSERT_NE(f, nullptr); std::fclose(f); }
  const rttest::ChildResult child = rttest::run_helper("identity-spawn", {"1", file, "1"});
  EXPECT_FALSE(child.succeeded());
  EXPECT_NE(child.output.find("cannot keep the node's incarnation counter"), std::string::npos) << child.output;
  EXPECT_NE(child.output.find(file), std::string::npos) << child.output;
}

// --helper node-save <node> <state dir> <dir>
// Spawns an Echo and a Relay keeping the Echo's reference, checks that the relay reaches it,
// snapshots both to <dir>/echo-<node>.snap and relay-<node>.snap, prints "echo <v>", "relay <v>".
int node_save(const std::vector<std::string>& args) {
  if (args.size() != 3) return 2;
  const std::filesystem::path dir = args[2];
  Runtime rt(node_config(args[0], args[1]));
  Log<Pong> pongs;
  Log<Forwarded> forwarded;
  const ActorRef collector = rt.spawn<Collector>(&pongs, &forwarded);
  const ActorRef echo = rt.spawn<Echo>(rt.identity().node);
  const ActorRef relay = rt.spawn<Relay>(echo);
  if (rt.send(relay, Forward{collector}) != SendResult::kOk || !pongs.wait_size(1) ||
      pongs.items()[0].echo != echo.value()) {
    std::fprintf(stderr, "the relay does not reach its echo before the snapshot\n");
    return 1;
  }
  rt.snapshot(echo, dir / ("echo-" + args[0] + ".snap"));
  rt.snapshot(relay, dir / ("relay-" + args[0] + ".snap"));
  std::printf("echo %llu\nrelay %llu\n", static_cast<unsigned long long>(echo.value()),
              static_cast<unsigned long long>(relay.value()));
  return 0;
}
const rttest::RegisterHelper kNodeSave("node-save", &node_save);

// --helper node-restore <node> <state dir> <dir> <node a> <echo a> <relay a> <node b> <echo b> <relay b>
// Spawns reactors of its own first (taking the slots the other nodes' references name), then
// restores both relays and the echo of node a only. Relay a must reach echo a; relay b's echo is
// not here, so its send is kNoSuchReactor and nothing answers.
int node_restore(const std::vector<std::string>& args) {
  if (args.size() != 9) return 2;
  const std::filesystem::path dir = args[2];
  Runtime rt(node_config(args[0], args[1]));
  Log<Pong> pongs;
  Log<Forwarded> forwarded;
  const ActorRef collector = rt.spawn<Collector>(&pongs, &forwarded);
  std::vector<ActorRef> locals;
  for (int i = 0; i < 4; ++i) locals.push_back(rt.spawn<Echo>(1000u + static_cast<std::uint32_t>(i)));
  int status = 0;
  const auto fail = [&status](const std::string& what) {
    std::fprintf(stderr, "%s\n", what.c_str());
    status = 1;
  };
  const ActorRef echo_a(std::stoull(args[4]));
  const ActorRef relay_a(std::stoull(args[5]));
  const ActorRef echo_b(std::stoull(args[7]));
  const ActorRef relay_b(std::stoull(args[8]));
  for (ActorRef local : locals) {
    if (local.slot() == echo_a.slot() || local.slot() == relay_a.slot()) std::printf("slot shared with a\n");
  }
  try {
    if (rt.restore(dir / ("echo-" + args[3] + ".snap")) != echo_a) fail("echo a came back under another ref");
    if (rt.restore(dir / ("relay-" + args[3] + ".snap")) != relay_a) fail("relay a came back under another ref");
    if (rt.restore(dir / ("relay-" + args[6] + ".snap")) != relay_b) fail("relay b came back under another ref");
  } catch (const std::exception& e) {
    fail(std::string("restore after spawning failed: ") + e.what());
    return 1;
  }
  if (!rt.alive(echo_a) || !rt.alive(relay_a) || !rt.alive(relay_b)) fail("a restored reactor is not alive");
  if (rt.alive(echo_b)) fail("echo b is alive without being restored");

  // Relay a reaches echo a, which it names by the reference it kept in its heap.
  if (rt.send(relay_a, Forward{collector}) != SendResult::kOk) fail("cannot send to relay a");
  if (!forwarded.wait_size(1) || !pongs.wait_size(1)) fail("relay a or echo a did not answer");
  // Relay b's echo was not restored: a dead letter, not a local reactor in the same slot.
  if (rt.send(relay_b, Forward{collector}) != SendResult::kOk) fail("cannot send to relay b");
  if (!forwarded.wait_size(2)) fail("relay b did not answer");
  // From outside too, and through the operations that look references up.
  if (rt.send(echo_b, Ping{collector}) != SendResult::kNoSuchReactor) fail("a send to echo b was accepted");
  if (rt.stats(echo_a).messages_in == 0) fail("echo a's statistics show no message");
  rt.move(echo_a, 1);
  if (rt.send(echo_a, Ping{collector}) != SendResult::kOk || !pongs.wait_size(2)) fail("echo a lost after a move");
  if (!rt.wait_idle()) fail("not idle");

  std::map<std::uint64_t, std::int32_t> results;
  for (const Forwarded& f : forwarded.items()) results[f.relay] = f.result;
  if (results[relay_a.value()] != static_cast<std::int32_t>(SendResult::kOk)) fail("relay a's send failed");
  if (results[relay_b.value()] != static_cast<std::int32_t>(SendResult::kNoSuchReactor)) {
    fail("relay b's send to an absent reactor was not kNoSuchReactor: " + std::to_string(results[relay_b.value()]));
  }
  const std::vector<Pong> got = pongs.items();
  if (got.size() != 2) fail("expected 2 pongs, got " + std::to_string(got.size()));
  for (const Pong& p : got) {
    if (p.echo != echo_a.value() || p.node != static_cast<std::uint32_t>(std::stoul(args[3]))) {
      fail("a pong came from reactor " + std::to_string(p.echo) + " of node " + std::to_string(p.node));
    }
  }
  // A foreign reactor that stops leaves its reference free to come back.
  if (!rt.stop(echo_a) || !rt.wait_stopped(echo_a)) fail("echo a did not stop");
  if (rt.send(echo_a, Ping{collector}) != SendResult::kNoSuchReactor) fail("a stopped foreign reactor took a message");
  if (rt.restore(dir / ("echo-" + args[3] + ".snap")) != echo_a || !rt.alive(echo_a)) fail("echo a did not come back");
  std::printf("child done, status %d\n", status);
  return status;
}
const rttest::RegisterHelper kNodeRestore("node-restore", &node_restore);

TEST(NodeIdentityAcrossProcesses, ThreeNodesRestoreEachOthersReactorsAfterSpawningTheirOwn) {
  REQUIRE_ASLR_OFF(rttest::aslr_state().off, rttest::aslr_state().why);
  TempDir dir;
  const std::string state = (dir / "state").string();
  const std::vector<std::string> nodes = {"1", "2", "3"};
  std::map<std::string, std::pair<std::uint64_t, std::uint64_t>> saved;  // node: echo, relay
  std::set<std::uint64_t> all;
  for (const std::string& node : nodes) {
    const rttest::ChildResult child = rttest::run_helper("node-save", {node, state, dir.path().string()});
    ASSERT_TRUE(child.succeeded()) << child.describe();
    const std::vector<std::uint64_t> echo = values_of(child.output, "echo");
    const std::vector<std::uint64_t> relay = values_of(child.output, "relay");
    ASSERT_EQ(echo.size(), 1u) << child.output;
    ASSERT_EQ(relay.size(), 1u) << child.output;
    EXPECT_EQ(ActorRef(echo[0]).node(), static_cast<std::uint32_t>(std::stoul(node)));
    saved[node] = {echo[0], relay[0]};
    EXPECT_TRUE(all.insert(echo[0]).second && all.insert(relay[0]).second) << "references repeat across nodes";
  }
  // The three processes spawned into the same slots: only the origin tells their references apart.
  EXPECT_EQ(ActorRef(saved["1"].first).slot(), ActorRef(saved["2"].first).slot());
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const std::string& a = nodes[(i + 1) % nodes.size()];  // its echo is restored too
    const std::string& b = nodes[(i + 2) % nodes.size()];  // its echo is not
    const rttest::ChildResult child = rttest::run_helper(
        "node-restore", {nodes[i], state, dir.path().string(), a, std::to_string(saved[a].first),
                         std::to_string(saved[a].second), b, std::to_string(saved[b].first),
                         std::to_string(saved[b].second)});
    EXPECT_TRUE(child.succeeded()) << "node " << nodes[i] << ": " << child.describe();
    EXPECT_NE(child.output.find("child done, status 0"), std::string::npos) << child.describe();
    EXPECT_NE(child.output.find("slot shared with a"), std::string::npos)
        << "the local reactors should hold the slots the restored references name: " << child.output;
  }
}

}  // namespace
}  // namespace reheap::identity_test
