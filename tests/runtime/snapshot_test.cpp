// Snapshots of live reactors: Runtime::snapshot while other reactors keep running, restore in a
// new process (a child running this binary) and in this one under the same ActorRef, refusal to
// restore over a live original, and chains of increments.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::snapshot_test {
namespace {

using rttest::Log;
using rttest::TempDir;

struct Put {
  std::string key;
  std::string value;
  MSGPACK_DEFINE(key, value)
};
struct Push {
  std::int64_t value;
};
struct Dump {
  ActorRef reply_to;
};

// Everything an Accumulator holds, as it reports it.
struct State {
  std::map<std::string, std::string> table;
  std::vector<std::int64_t> numbers;
  std::string journal;
  std::uint64_t messages = 0;
  std::uint64_t restored = 0;
  MSGPACK_DEFINE(table, numbers, journal, messages, restored)
  bool operator==(const State&) const = default;
};

// Accumulates what it is sent in its heap. It holds nothing outside its heap, so its snapshot can
// be restored in another process.
class Accumulator : public Reactor {
 public:
  Accumulator() {
    handle<&Accumulator::on_put>();
    handle<&Accumulator::on_push>();
    handle<&Accumulator::on_dump>();
  }
  void on_put(const Put& p) {
    state_.table[p.key] = p.value;
    state_.journal += p.key + ";";
    ++state_.messages;
  }
  void on_push(const Push& p) {
    state_.numbers.push_back(p.value);
    ++state_.messages;
  }
  void on_dump(const Dump& d) { send(d.reply_to, state_); }
  void on_restored() override { ++state_.restored; }

 private:
  State state_;
};

// Passes the States it receives to the test.
class Collector : public Reactor {
 public:
  explicit Collector(Log<State>* log) : log_(log) { handle<&Collector::on_state>(); }
  void on_state(const State& s) { log_->add(s); }

 private:
  Log<State>* log_;
};

// Operation i of the deterministic workload: a Put for even i, a Push for odd i.
std::string key_of(int i) { return "key-" + std::to_string(i % 37); }
std::string value_of(int i) {
  return std::string(static_cast<std::size_t>(i % 113), static_cast<char>('a' + i % 26));
}

void apply(State& model, int i) {
  if (i % 2 == 0) {
    model.table[key_of(i)] = value_of(i);
    model.journal += key_of(i) + ";";
  } else {
    model.numbers.push_back(std::int64_t{i} * 7919);
  }
  ++model.messages;
}

template <class Send>
bool send_ops(Send&& send, int from, int to) {
  for (int i = from; i < to; ++i) {
    SendResult r;
    if (i % 2 == 0) {
      r = send(Put{key_of(i), value_of(i)});
    } else {
      r = send(Push{std::int64_t{i} * 7919});
    }
    if (r != SendResult::kOk) return false;
  }
  return true;
}

State model_of(int from, int to, std::uint64_t restored = 0) {
  State s;
  for (int i = from; i < to; ++i) apply(s, i);
  s.restored = restored;
  return s;
}

// Sends ops [from, to) to the accumulator, then asks for its state.
State feed_and_dump(Runtime& rt, ActorRef acc, ActorRef collector, Log<State>& log, int from,
                    int to) {
  const std::size_t before = log.size();
  const bool sent = send_ops([&](const auto& m) { return rt.send(acc, m); }, from, to);
  EXPECT_TRUE(sent);
  EXPECT_EQ(rt.send(acc, Dump{collector}), SendResult::kOk);
  EXPECT_TRUE(log.wait_size(before + 1));
  const std::vector<State> states = log.items();
  return states.size() > before ? states.back() : State{};
}

std::string describe(const State& s) {
  return "table " + std::to_string(s.table.size()) + ", numbers " +
         std::to_string(s.numbers.size()) + ", journal " + std::to_string(s.journal.size()) +
         " bytes, messages " + std::to_string(s.messages) + ", restored " +
         std::to_string(s.restored);
}

// --helper restore-accumulator <file> <ref> <ops done> <ops to add>
// Restores the accumulator in a fresh runtime, checks that it comes back under <ref> with the
// state of ops [0, done), feeds it ops [done, done + add), and checks the state again.
int restore_accumulator(const std::vector<std::string>& args) {
  if (args.size() != 4) {
    std::fprintf(stderr, "usage: <file> <ref> <ops done> <ops to add>\n");
    return 2;
  }
  const ActorRef expected_ref(std::stoull(args[1]));
  const int done = std::stoi(args[2]);
  const int add = std::stoi(args[3]);
  Log<State> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  ActorRef acc;
  try {
    acc = rt.restore(args[0]);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "restore failed: %s\n", e.what());
    return 1;
  }
  if (acc != expected_ref) {
    std::fprintf(stderr, "restored under another ref: %llu\n",
                 static_cast<unsigned long long>(acc.value()));
    return 1;
  }
  const ActorRef collector = rt.spawn<Collector>(&log);
  int status = 0;
  const auto check = [&](const State& got, const State& want, const char* when) {
    if (got == want) return;
    std::fprintf(stderr, "%s: got %s, want %s\n", when, describe(got).c_str(),
                 describe(want).c_str());
    status = 1;
  };
  check(feed_and_dump(rt, acc, collector, log, 0, 0), model_of(0, done, 1), "after restore");
  check(feed_and_dump(rt, acc, collector, log, done, done + add), model_of(0, done + add, 1),
        "after more messages");
  if (testing::Test::HasFailure()) status = 1;
  std::printf("child done, status %d\n", status);
  return status;
}
const rttest::RegisterHelper kRestoreAccumulator("restore-accumulator", &restore_accumulator);

// Two reactors bouncing a counter between the workers until stopped: the "other reactors" that
// keep running while a snapshot is taken.
struct Ball {
  std::uint64_t n;
};
struct PeerIs {
  ActorRef peer;
  bool serve;
};
class Bouncer : public Reactor {
 public:
  explicit Bouncer(std::atomic<std::uint64_t>* bounces) : bounces_(bounces) {
    handle<&Bouncer::on_ball>();
    handle<&Bouncer::on_peer>();
  }
  void on_peer(const PeerIs& p) {
    peer_ = p.peer;
    if (p.serve) send(peer_, Ball{0});
  }
  void on_ball(const Ball& b) {
    bounces_->fetch_add(1, std::memory_order_relaxed);
    send(peer_, Ball{b.n + 1});
  }

 private:
  std::atomic<std::uint64_t>* bounces_;
  ActorRef peer_;
};

class SnapshotTest : public testing::Test {
 protected:
  SnapshotTest() {
    SpawnOptions on1;
    on1.worker = 1;
    acc = rt.spawn<Accumulator>(on1);
    collector = rt.spawn<Collector>(&log);
  }
  State feed(int from, int to) { return feed_and_dump(rt, acc, collector, log, from, to); }

  TempDir dir;
  Log<State> log;
  std::atomic<std::uint64_t> bounces{0};  // counted by the Bouncers of the first test
  Runtime rt{RuntimeConfig{.workers = 2}};
  ActorRef acc;
  ActorRef collector;
};

TEST_F(SnapshotTest, ALiveReactorSnapshottedHereIsRestoredInANewProcessAndKeepsWorking) {
  REQUIRE_ASLR_OFF(rttest::aslr_state().off, rttest::aslr_state().why);
  SpawnOptions on0;
  on0.worker = 0;
  SpawnOptions on1;
  on1.worker = 1;
  const ActorRef a = rt.spawn<Bouncer>(on0, &bounces);
  const ActorRef b = rt.spawn<Bouncer>(on1, &bounces);
  ASSERT_EQ(rt.send(b, PeerIs{a, false}), SendResult::kOk);
  ASSERT_EQ(rt.send(a, PeerIs{b, true}), SendResult::kOk);
  ASSERT_TRUE(rttest::wait_until([&] { return bounces.load() > 0; }));

  ASSERT_EQ(feed(0, 600), model_of(0, 600));
  const std::uint64_t before = bounces.load();
  const SnapshotInfo info = rt.snapshot(acc, dir / "acc.snap");
  EXPECT_GT(info.pages_written, 0u);
  EXPECT_EQ(info.kind, SnapshotKind::kFull);
  // The original keeps working after its snapshot, and so did everyone else.
  ASSERT_EQ(feed(600, 700), model_of(0, 700));
  ASSERT_TRUE(rttest::wait_until([&] { return bounces.load() > before + 100; }));

  const rttest::ChildResult child =
      rttest::run_helper("restore-accumulator",
                         {(dir / "acc.snap").string(), std::to_string(acc.value()), "600", "300"});
  EXPECT_TRUE(child.succeeded()) << child.describe();
  EXPECT_NE(child.output.find("child done, status 0"), std::string::npos) << child.describe();
  rt.stop(a);
  rt.stop(b);
}

TEST_F(SnapshotTest, AfterTheOriginalStopsARestoreBringsItBackHereUnderTheSameRef) {
  ASSERT_EQ(feed(0, 400), model_of(0, 400));
  rt.snapshot(acc, dir / "acc.snap");
  ASSERT_EQ(feed(400, 450), model_of(0, 450));  // lost with the original
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  const std::size_t reactors = rt.stats().reactors;
  EXPECT_EQ(rt.restore(dir / "acc.snap"), acc);
  EXPECT_EQ(rt.stats().reactors, reactors + 1);
  EXPECT_TRUE(rt.alive(acc));
  EXPECT_EQ(feed(0, 0), model_of(0, 400, 1));
  EXPECT_EQ(feed(400, 500), model_of(0, 500, 1));
}

TEST_F(SnapshotTest, RestoringWhileTheOriginalIsAliveThrowsAndChangesNothing) {
  ASSERT_EQ(feed(0, 100), model_of(0, 100));
  rt.snapshot(acc, dir / "acc.snap");
  const std::size_t reactors = rt.stats().reactors;
  try {
    rt.restore(dir / "acc.snap");
    ADD_FAILURE() << "restored over a live reactor";
  } catch (const SnapshotError& e) {
    // It says what to do about it, not only which heap is in the way.
    EXPECT_EQ(e.code(), SnapshotErrc::kRangeInUse);
    EXPECT_NE(std::string(e.what()).find("stop it (Runtime::stop, then wait_stopped)"), std::string::npos) << e.what();
  }
  EXPECT_EQ(rt.stats().reactors, reactors);
  EXPECT_EQ(feed(100, 150), model_of(0, 150)) << "the original was disturbed";
  // And the file is still good once the original is gone.
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  EXPECT_EQ(rt.restore(dir / "acc.snap"), acc);
  EXPECT_EQ(feed(0, 0), model_of(0, 100, 1));
}

TEST_F(SnapshotTest, AChainOfIncrementsRestoresTheNewestState) {
  ASSERT_EQ(feed(0, 300), model_of(0, 300));
  const SnapshotInfo full = rt.snapshot(acc, dir / "acc.full");
  ASSERT_EQ(feed(300, 340), model_of(0, 340));
  const SnapshotInfo inc1 = rt.snapshot_increment(acc, dir / "acc.inc1");
  ASSERT_EQ(feed(340, 400), model_of(0, 400));
  const SnapshotInfo inc2 = rt.snapshot_increment(acc, dir / "acc.inc2");
  if (inc1.fallback_reason.empty()) {
    EXPECT_EQ(inc1.kind, SnapshotKind::kIncremental);
    EXPECT_EQ(inc2.kind, SnapshotKind::kIncremental);
    EXPECT_EQ(inc2.parent_id, inc1.id);
    EXPECT_LT(inc1.pages_written, full.pages_written);
  } else {
    std::printf("increments fell back to full snapshots: %s\n", inc1.fallback_reason.c_str());
  }
  ASSERT_EQ(feed(400, 420), model_of(0, 420));  // lost with the original
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  EXPECT_EQ(rt.restore(dir / "acc.inc2"), acc);
  EXPECT_EQ(feed(0, 0), model_of(0, 400, 1));
  // A restored reactor snapshots on top of the file it came from.
  ASSERT_EQ(feed(400, 410), model_of(0, 410, 1));
  rt.snapshot_increment(acc, dir / "acc.inc3");
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  EXPECT_EQ(rt.restore(dir / "acc.inc3"), acc);
  EXPECT_EQ(feed(0, 0), model_of(0, 410, 2));
}

TEST_F(SnapshotTest, ARestoredReactorNeverMakesAnotherReactorsOldRefValidAgain) {
  rt.snapshot(acc, dir / "acc.snap");
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  // A later reactor takes the slot, with the next generation, and goes.
  const ActorRef later = rt.spawn<Accumulator>();
  ASSERT_EQ(later.slot(), acc.slot()) << "the test expects the freed slot to be reused";
  ASSERT_TRUE(rt.stop(later));
  ASSERT_TRUE(rt.wait_stopped(later));
  // The restore brings back the older generation; once it goes, the slot must move past every
  // generation it has issued, not back to `later`'s.
  ASSERT_EQ(rt.restore(dir / "acc.snap"), acc);
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  const ActorRef next = rt.spawn<Accumulator>();
  EXPECT_NE(next, later) << "a stale reference names a new reactor";
  EXPECT_NE(next, acc);
  EXPECT_FALSE(rt.alive(later));
  EXPECT_EQ(rt.send(later, Push{1}), SendResult::kNoSuchReactor);
}

TEST_F(SnapshotTest, ASnapshotOfAStoppedReactorThrows) {
  ASSERT_TRUE(rt.stop(acc));
  ASSERT_TRUE(rt.wait_stopped(acc));
  EXPECT_THROW(rt.snapshot(acc, dir / "gone.snap"), std::runtime_error);
  EXPECT_FALSE(std::filesystem::exists(dir / "gone.snap"));
}

TEST_F(SnapshotTest, RestoringAFileThatIsNoReactorSnapshotThrowsSnapshotError) {
  {
    std::ofstream out(dir / "junk.snap");
    out << "not a snapshot";
  }
  const std::size_t reactors = rt.stats().reactors;
  EXPECT_THROW(rt.restore(dir / "junk.snap"), SnapshotError);
  // A plain heap snapshot whose root is no reactor.
  {
    HeapPtr heap = Heap::create();
    {
      HeapScope scope(*heap);
      heap->set_root(new std::string(100, 'x'));
    }
    Snapshotter(*heap).save(dir / "plain.snap");
  }
  EXPECT_THROW(rt.restore(dir / "plain.snap"), SnapshotError);
  EXPECT_EQ(rt.stats().reactors, reactors);
}

}  // namespace
}  // namespace reheap::snapshot_test
