// TestRuntime: ask, Probe, failures, sockets and snapshots - the parts a test leans on when it
// checks a reactor from outside.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <unistd.h>

#include "reheap/heap_scope.h"
#include "reheap/snapshot.h"
#include "reheap/testing/test_runtime.h"

namespace test_runtime_kit_test {
namespace {

using namespace std::chrono_literals;
using reheap::ActorRef;
using reheap::Reactor;
using reheap::testing::CheckResult;
using reheap::testing::FailurePolicy;
using reheap::testing::message;
using reheap::testing::Probe;
using reheap::testing::ReactorFailure;
using reheap::testing::TestRuntime;
using reheap::testing::VirtualClock;

struct Question {
  int n;
};
struct Answer {
  int n;
};

// Answers to sender(), as the ask convention says; after `delay` if it is not zero.
class Oracle : public Reactor {
 public:
  explicit Oracle(std::chrono::milliseconds delay = {}) : delay_(delay) { handle<&Oracle::on_question>(); }
  void on_question(const Question& q) {
    if (delay_.count() == 0) {
      send(sender(), Answer{q.n * 2});
      return;
    }
    asker_ = sender();
    pending_ = q.n;
    start_timer(delay_);
  }
  void on_timer(reheap::TimerId) override { send(asker_, Answer{pending_ * 2}); }

 private:
  std::chrono::milliseconds delay_;
  ActorRef asker_;
  int pending_ = 0;
};

TEST(TestRuntimeAsk, ReturnsTheReplyToTheSender) {
  TestRuntime rt;
  const ActorRef oracle = rt.spawn<Oracle>();
  const std::optional<Answer> a = rt.ask<Answer>(oracle, Question{21});
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->n, 42);
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch);  // an immediate answer takes no time
}

TEST(TestRuntimeAsk, AdvancesVirtualTimeToTheReplyButNotPastTheTimeout) {
  TestRuntime rt;
  const ActorRef slow = rt.spawn<Oracle>(200ms);
  const std::optional<Answer> a = rt.ask<Answer>(slow, Question{5}, 1s);
  ASSERT_TRUE(a.has_value());
  EXPECT_EQ(a->n, 10);
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch + 200ms);  // the timer's time, not 1s

  EXPECT_FALSE(rt.ask<Answer>(slow, Question{5}, 100ms).has_value());
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch + 300ms);  // waited the whole timeout
  // The late answer finds the probe gone: a dead letter, and nothing breaks.
  rt.advance(1s);
  EXPECT_TRUE(rt.failures().empty());
}

TEST(TestRuntimeAsk, TimesOutWhenNobodyAnswers) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();  // records, never answers
  EXPECT_FALSE(rt.ask<Answer>(probe, Question{1}, 50ms).has_value());
  EXPECT_EQ(rt.reactor<Probe>(probe).count<Question>(), 1u);
}

TEST(TestRuntimeAsk, ARefusedRequestReturnsAtOnceAndSaysWhy) {
  TestRuntime rt;
  const ActorRef oracle = rt.spawn<Oracle>();
  rt.stop(oracle);
  rt.run();
  reheap::SendResult sent = reheap::SendResult::kOk;
  EXPECT_FALSE(rt.ask<Answer>(oracle, Question{1}, 1s, &sent).has_value());
  EXPECT_EQ(sent, reheap::SendResult::kNoSuchReactor);
  EXPECT_EQ(rt.steady_now(), VirtualClock::kSteadyEpoch);  // no waiting for an answer
  const ActorRef other = rt.spawn<Oracle>();
  EXPECT_TRUE(rt.ask<Answer>(other, Question{2}, 1s, &sent).has_value());
  EXPECT_EQ(sent, reheap::SendResult::kOk);
}

// ---- Probe ----

class Reporter : public Reactor {
 public:
  explicit Reporter(ActorRef to) : to_(to) {}
  void on_start() override {
    send(to_, Answer{1});
    send(to_, std::string("two"));
    send(to_, Answer{3});
  }

 private:
  ActorRef to_;
};

TEST(Probe, RecordsEveryMessageAndDecodesOnDemand) {
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();
  const ActorRef reporter = rt.spawn<Reporter>(probe);
  rt.run();
  Probe& p = rt.reactor<Probe>(probe);
  EXPECT_EQ(p.count(), 3u);
  EXPECT_EQ(p.count<Answer>(), 2u);
  const std::vector<Answer> answers = p.received<Answer>();
  ASSERT_EQ(answers.size(), 2u);
  EXPECT_EQ(answers[0].n, 1);
  EXPECT_EQ(answers[1].n, 3);
  EXPECT_EQ(p.last<std::string>(), std::optional<std::string>("two"));
  EXPECT_FALSE(p.last<Question>().has_value());
  for (const Probe::Record& r : p.records()) EXPECT_EQ(r.sender, reporter);
  p.clear();
  EXPECT_EQ(p.count(), 0u);
}

// ---- failures ----

class Fragile : public Reactor {
 public:
  Fragile() { handle<&Fragile::on_question>(); }
  void on_question(const Question& q) {
    if (q.n < 0) throw std::runtime_error("negative question");
    ++answered;
  }
  int answered = 0;
};

TEST(TestRuntimeFailure, AThrowingHookIsRethrownFromRunByDefault) {
  TestRuntime rt;
  const ActorRef r = rt.spawn<Fragile>();
  rt.send(r, Question{1});
  rt.send(r, Question{-1});
  rt.send(r, Question{2});
  try {
    rt.run();
    FAIL() << "run() did not throw";
  } catch (const ReactorFailure& f) {
    EXPECT_EQ(f.reactor(), r);
    EXPECT_EQ(f.hook(), "on_message");
    EXPECT_EQ(f.exception(), "negative question");
  }
  // The reactor failed: no more events, sends are refused, its state stays readable.
  EXPECT_FALSE(rt.alive(r));
  EXPECT_EQ(rt.run(), 0u);
  EXPECT_EQ(rt.dead_letters(), 1u);  // the third question
  EXPECT_EQ(rt.reactor<Fragile>(r).answered, 1);
  EXPECT_EQ(rt.send(r, Question{3}), reheap::SendResult::kNoSuchReactor);
}

TEST(TestRuntimeFailure, TheCollectPolicyRecordsAndCarriesOn) {
  TestRuntime rt({.failures = FailurePolicy::kCollect});
  const ActorRef fragile = rt.spawn<Fragile>();
  const ActorRef sturdy = rt.spawn<Fragile>();
  rt.send(fragile, Question{-1});
  rt.send(sturdy, Question{1});
  EXPECT_EQ(rt.run(), 4u);
  ASSERT_EQ(rt.failures().size(), 1u);
  EXPECT_EQ(rt.failures()[0].reactor(), fragile);
  EXPECT_EQ(rt.reactor<Fragile>(sturdy).answered, 1);
}

// Looks members up with unordered_map::at, which throws std::out_of_range for one it does not
// know; a negative question throws an int, which is no std::exception.
class Roster : public Reactor {
 public:
  Roster() { handle<&Roster::on_question>(); }
  void on_question(const Question& q) {
    if (q.n < 0) throw q.n;
    seats_ += members_.at(q.n);
  }

 private:
  std::unordered_map<int, int> members_;
  int seats_ = 0;
};

constexpr const char* kRosterType = "test_runtime_kit_test::(anonymous namespace)::Roster";

TEST(TestRuntimeFailure, TheReportNamesTheReactorItsTypeTheHookAndTheExceptionsType) {
  TestRuntime rt;
  reheap::SpawnOptions options;
  options.name = "lobby";
  const ActorRef r = rt.spawn<Roster>(options);
  rt.send(r, Question{7});
  try {
    rt.run();
    FAIL() << "run() did not throw";
  } catch (const ReactorFailure& f) {
    EXPECT_EQ(f.reactor(), r);
    EXPECT_EQ(f.name(), "lobby");
    EXPECT_EQ(f.reactor_type(), kRosterType);
    EXPECT_EQ(f.hook(), "on_message");
    EXPECT_EQ(f.exception_type(), "std::out_of_range");
    EXPECT_FALSE(f.exception().empty());
    EXPECT_EQ(std::string(f.what()), "reactor " + std::to_string(r.value()) + " (" + kRosterType +
                                         " \"lobby\") failed in on_message: std::out_of_range: " + f.exception());
  }
}

TEST(TestRuntimeFailure, AnUnnamedReactorAndAnExceptionNotFromStdExceptionAreReportedByType) {
  TestRuntime rt({.failures = FailurePolicy::kCollect});
  const ActorRef r = rt.spawn<Roster>();
  rt.send(r, Question{-1});
  rt.run();
  ASSERT_EQ(rt.failures().size(), 1u);
  const ReactorFailure& f = rt.failures()[0];
  EXPECT_EQ(f.name(), "");
  EXPECT_EQ(f.reactor_type(), kRosterType);
  EXPECT_EQ(f.exception_type(), "int");
  EXPECT_EQ(f.exception(), "an exception not derived from std::exception");
  EXPECT_EQ(std::string(f.what()), "reactor " + std::to_string(r.value()) + " (" + kRosterType +
                                       ") failed in on_message: int: an exception not derived from std::exception");
}

// ---- sockets ----

class Server : public Reactor {
 public:
  void on_start() override {
    try {
      listen("127.0.0.1", 0);
    } catch (const std::logic_error& e) {
      error = e.what();
    }
  }
  void on_data(reheap::SocketId socket, std::span<const char> data) override {
    last_socket = socket;
    received.append(data.data(), data.size());
  }
  std::string error;
  std::string received;
  reheap::SocketId last_socket = 0;
};

class Dialer : public Reactor {
 public:
  void on_start() override { connect("127.0.0.1", 80); }
};

TEST(TestRuntimeSockets, TcpOperationsThrowAndSocketEventsAreFedByTheTest) {
  TestRuntime rt;
  const ActorRef server = rt.spawn<Server>();
  rt.run();
  EXPECT_NE(rt.reactor<Server>(server).error.find("TestRuntime has no sockets"), std::string::npos);

  const char bytes[] = {'h', 'i'};
  EXPECT_TRUE(rt.deliver(server, reheap::Event{.kind = reheap::EventKind::kData, .socket = 7, .data = bytes}));
  EXPECT_EQ(rt.reactor<Server>(server).received, "hi");
  EXPECT_EQ(rt.reactor<Server>(server).last_socket, 7u);

  rt.spawn<Dialer>();
  try {
    rt.run();
    FAIL() << "connect did not throw";
  } catch (const ReactorFailure& f) {
    EXPECT_EQ(f.hook(), "on_start");
    EXPECT_NE(f.exception().find("TestRuntime has no sockets"), std::string::npos);
  }
}

// ---- stop ----

class Stopper : public Reactor {
 public:
  explicit Stopper(int* stops) : stops_(stops) { handle<&Stopper::on_question>(); }
  void on_question(const Question&) { stop(); }
  void on_stop() override { ++*stops_; }

 private:
  int* stops_;  // outside the heap: a test-only shortcut, never snapshotted
};

TEST(TestRuntimeStop, StopDeliversOnStopAndDestructionStopsTheRest) {
  int stops = 0;
  {
    TestRuntime rt;
    const ActorRef a = rt.spawn<Stopper>(&stops);
    const ActorRef b = rt.spawn<Stopper>(&stops);
    rt.send(a, Question{0});
    rt.run();
    EXPECT_FALSE(rt.alive(a));
    EXPECT_TRUE(rt.alive(b));
    EXPECT_EQ(stops, 1);
    EXPECT_THROW(rt.reactor<Stopper>(a), std::out_of_range);  // stopped reactors are gone
  }
  EXPECT_EQ(stops, 2);
}

class Heir : public Reactor {
 public:
  explicit Heir(int* stops) : stops_(stops) {}
  void on_stop() override {
    ++*stops_;
    spawn<Stopper>(stops_);  // a child born during the shutdown is destroyed, never started
  }

 private:
  int* stops_;
};

TEST(TestRuntimeStop, DestructionCopesWithASpawnInOnStop) {
  int stops = 0;
  {
    TestRuntime rt;
    for (int i = 0; i < 8; ++i) rt.spawn<Heir>(&stops);
    rt.run();
  }
  EXPECT_EQ(stops, 8);
}

TEST(TestRuntimeStop, TheTestStopsAReactorAndItsLaterMessagesAreDeadLetters) {
  int stops = 0;
  TestRuntime rt;
  const ActorRef never_started = rt.spawn<Stopper>(&stops);
  EXPECT_TRUE(rt.stop(never_started));  // gone at once, without on_stop: it never started
  const ActorRef r = rt.spawn<Stopper>(&stops);
  rt.run();
  rt.send(r, Question{1});  // a question stops it too: the first stop wins
  EXPECT_TRUE(rt.stop(r));
  rt.send(r, Answer{1});
  EXPECT_TRUE(rt.alive(r));  // until its stop is delivered
  EXPECT_TRUE(rt.expect(message<Question>().to(r)));  // it stops itself: on_stop is next
  // A check runs pending stops first; and the test's stop request, which travels with the test's
  // messages, stands before the answer.
  const CheckResult<Answer> answer = rt.expect(message<Answer>().to(r));
  EXPECT_FALSE(answer);
  EXPECT_NE(answer.text().find("the test's stop request comes first"), std::string::npos) << answer.text();
  EXPECT_EQ(stops, 1);
  EXPECT_EQ(rt.run(), 0u);  // the stop request finds it gone; the answer is a dead letter
  EXPECT_EQ(rt.dead_letters(), 1u);
  EXPECT_FALSE(rt.alive(r));
  EXPECT_FALSE(rt.stop(r));
  EXPECT_EQ(rt.send(r, Answer{2}), reheap::SendResult::kNoSuchReactor);
}

// ---- snapshots ----

struct Add {
  std::string item;
  MSGPACK_DEFINE(item)
};
struct Save {
  std::string file;
  ActorRef target;  // null: itself
  MSGPACK_DEFINE(file, target)
};

class Ledger : public Reactor {
 public:
  Ledger() {
    handle<&Ledger::on_add>();
    handle<&Ledger::on_save>();
    handle<&Ledger::on_done>();
  }
  void on_start() override { start_timer(1s, 1s); }
  void on_restored() override { restored = true; }
  void on_timer(reheap::TimerId) override { ++ticks; }
  void on_add(const Add& a) { items.push_back(a.item); }
  void on_save(const Save& s) { request_snapshot(s.target ? s.target : self(), s.file); }
  void on_done(const reheap::SnapshotDone& d) {
    status = d.snapshot_status();
    saved = d.ok();
    answered_by_target = sender() == d.target;
  }
  std::vector<std::string> items;
  reheap::SnapshotStatus status = reheap::SnapshotStatus::kFailed;
  bool saved = false;
  bool answered_by_target = false;
  bool restored = false;
  int ticks = 0;
};

TEST(TestRuntimeSnapshot, ARequestForNoReactorIsAnsweredSo) {
  TestRuntime rt;
  const ActorRef ledger = rt.spawn<Ledger>();
  rt.send(ledger, Save{"unused.snap", ActorRef::make(1, 99, 1)});
  EXPECT_TRUE(rt.expect(message<Save>().to(ledger)));
  EXPECT_TRUE(rt.expect(message<reheap::SnapshotDone>().to(ledger).with(
      [](const reheap::SnapshotDone& d) { return d.snapshot_status() == reheap::SnapshotStatus::kNoSuchReactor; },
      "status kNoSuchReactor")));
  EXPECT_EQ(rt.reactor<Ledger>(ledger).status, reheap::SnapshotStatus::kNoSuchReactor);
  EXPECT_FALSE(std::filesystem::exists("unused.snap"));
}

TEST(TestRuntimeSnapshot, RequestSnapshotWritesAFileThatRestoresTheSameState) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("reheap_testing_" + std::to_string(getpid()) + ".snap");
  std::vector<std::string> items;
  std::uint64_t events_at_save = 0;
  {
    TestRuntime rt;
    const ActorRef ledger = rt.spawn<Ledger>();
    rt.send(ledger, Add{"apples"});
    rt.send(ledger, Add{std::string(300, 'p')});  // beyond the small-string buffer: in the heap
    rt.send(ledger, Save{file.string(), ActorRef()});
    rt.send(ledger, Add{"after the snapshot"});
    EXPECT_EQ(rt.run(), 6u);  // start, 3 adds, the save, SnapshotDone
    const Ledger& l = rt.reactor<Ledger>(ledger);
    EXPECT_EQ(l.status, reheap::SnapshotStatus::kSaved);
    EXPECT_TRUE(l.saved);
    EXPECT_TRUE(l.answered_by_target);
    ASSERT_EQ(l.items.size(), 3u);
    items.assign(l.items.begin(), l.items.begin() + 2);
    events_at_save = 4;  // on_start, two adds, the save: the snapshot follows the requesting hook
  }
  // The TestRuntime and its heaps are gone; the file brings the ledger back at the same addresses.
  reheap::HeapPtr heap = reheap::restore(file);
  std::filesystem::remove(file);
  const auto* restored = static_cast<const Ledger*>(heap->root());
  ASSERT_NE(restored, nullptr);
  EXPECT_EQ(restored->items, items);
  EXPECT_EQ(restored->events_delivered(), events_at_save);
  EXPECT_FALSE(restored->saved);  // the answer came after the snapshot
}

TEST(TestRuntimeSnapshot, ARestoredReactorKeepsItsReferenceStateAndTimers) {
  const std::filesystem::path file =
      std::filesystem::temp_directory_path() / ("reheap_testing_restore_" + std::to_string(getpid()) + ".snap");
  // Spawned while the saved reactor lives, so that its heap cannot take the saved heap's chunk
  // (a restore at a live heap's addresses is refused before the reference is looked at).
  TestRuntime rt;
  const ActorRef probe = rt.spawn<Probe>();  // takes slot 1: the restored reactor must not
  ActorRef original;
  {
    TestRuntime first;
    original = first.spawn<Ledger>();
    first.send(original, Add{"kept"});
    first.advance(2500ms);  // two ticks; the next is due at 3s
    first.send(original, Save{file.string(), ActorRef()});
    first.run();
    ASSERT_TRUE(first.reactor<Ledger>(original).saved);
  }
  EXPECT_THROW(rt.restore(file), std::logic_error);
  TestRuntime fresh;
  const ActorRef ref = fresh.restore(file);
  std::filesystem::remove(file);
  EXPECT_EQ(ref, original);
  EXPECT_EQ(fresh.run(), 1u);  // on_restored
  const Ledger& l = fresh.reactor<Ledger>(ref);
  EXPECT_TRUE(l.restored);
  EXPECT_EQ(l.items, (std::vector<std::string>{"kept"}));
  EXPECT_EQ(l.ticks, 2);
  fresh.advance(499ms);
  EXPECT_EQ(l.ticks, 2);
  fresh.advance(1ms);  // the 500ms it had left
  EXPECT_EQ(l.ticks, 3);
  fresh.advance(1s);
  EXPECT_EQ(l.ticks, 4);
  // A spawn after it gets the next slot, not its reference.
  EXPECT_NE(fresh.spawn<Probe>(), ref);
  static_cast<void>(probe);
}

}  // namespace
}  // namespace test_runtime_kit_test
