// Exact restart: a recorded reactor under kRestart comes back with the state it had just before
// its failing event - every acknowledged input since its last snapshot kept, none applied twice,
// the failing event's half-done work undone - with its timers as they were, in file and in ring
// mode, under a multi-worker runtime with concurrent senders. When the replay cannot be exact, the
// restart falls back to the last snapshot and says so.
#include <gtest/gtest.h>

#include <atomic>
#include <map>
#include <optional>
#include <utility>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap::exact_restart_test {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::Probe;
using rttest::TempDir;

struct Add {
  int n;
};
struct Boom {
  int unused;
};
struct Query {
  int token;  // names the answer: a replay calls the hooks again, which answer again (outside the heap)
};

// Answers to queries, by token.
class Answers {
 public:
  void add(int token, std::uint64_t value) { log_.add({token, value}); }
  std::optional<std::uint64_t> wait(int token) {
    std::optional<std::uint64_t> found;
    rttest::wait_until([&] {
      for (const auto& [t, v] : log_.items()) {
        if (t == token) found = v;
      }
      return found.has_value();
    });
    return found;
  }

 private:
  Log<std::pair<int, std::uint64_t>> log_;
};

// A counter and its history; Boom adds 1000 and then throws, so a restart that kept the failing
// event's effects would show it.
class Counter : public Reactor {
 public:
  Counter(Answers* answers, Log<std::string>* hooks) : answers_(answers), hooks_(hooks) {
    handle<&Counter::on_add>();
    handle<&Counter::on_boom>();
    handle<&Counter::on_query>();
  }
  void on_add(const Add& a) {
    counter_ += a.n;
    history_.push_back("+" + std::to_string(a.n));
  }
  void on_boom(const Boom&) {
    counter_ += 1000;
    history_.push_back("boom");
    throw std::runtime_error("boom: a handler failed on purpose");
  }
  void on_query(const Query& q) {
    answers_->add(q.token, static_cast<std::uint64_t>(counter_) * 1000 + history_.size());
  }
  void on_restored() override { hooks_->add("restored"); }

 private:
  Answers* answers_;
  Log<std::string>* hooks_;
  int counter_ = 0;
  std::vector<std::string> history_;
};

struct Fixture {
  Log<ReactorFailed> reported;
  Log<std::string> hooks;
  Answers answers;
  int next_token = 0;
  Runtime rt;
  explicit Fixture(int workers = 2)
      : rt(RuntimeConfig{.workers = workers, .on_failure = [this](const ReactorFailed& f) { reported.add(f); }}) {}

  std::uint64_t query(ActorRef r) {
    const int token = ++next_token;
    EXPECT_EQ(rt.send(r, Query{token}), SendResult::kOk);
    const std::optional<std::uint64_t> answer = answers.wait(token);
    EXPECT_TRUE(answer.has_value());
    return answer.value_or(~std::uint64_t{0});
  }
};

SpawnOptions recorded(const TempDir& dir, RecordingMode mode, std::uint32_t state_hash_every = 1) {
  SpawnOptions o;
  o.name = "counter";
  o.policy = SupervisionPolicy::kRestart;
  o.max_restarts = 1000;
  o.recording.mode = mode;
  o.recording.directory = dir.path();
  o.recording.state_hash_every = state_hash_every;
  return o;
}

std::string all(const std::vector<ReactorFailed>& reports) {
  std::string out;
  for (const ReactorFailed& f : reports) out += to_string(f) + "\n";
  return out;
}

void expect_exact(const std::vector<ReactorFailed>& reports, std::size_t failures) {
  ASSERT_EQ(reports.size(), failures) << all(reports);
  for (const ReactorFailed& f : reports) {
    EXPECT_EQ(f.failure_action(), FailureAction::kRestarted) << to_string(f);
    EXPECT_EQ(f.failure_kind(), FailureKind::kException) << to_string(f);
    EXPECT_EQ(f.restart.rfind("exact", 0), 0u) << to_string(f);
  }
}

// The case that lost work before: a recorded counter took 60 additions after its last snapshot,
// then failed; it comes back with all 60, and without the failing event's own addition.
TEST(ExactRestart, ARecordedCounterKeepsEveryAdditionSinceItsLastSnapshot) {
  for (const RecordingMode mode : {RecordingMode::kFile, RecordingMode::kRing}) {
    SCOPED_TRACE(mode == RecordingMode::kFile ? "file" : "ring");
    TempDir dir;
    Fixture f;
    const ActorRef c = f.rt.spawn<Counter>(recorded(dir, mode), &f.answers, &f.hooks);
    for (int i = 1; i <= 10; ++i) f.rt.send(c, Add{i});
    ASSERT_TRUE(f.rt.wait_idle());
    f.rt.snapshot(c, dir / "counter.snap");
    int sum = 55;
    for (int i = 1; i <= 60; ++i) {
      f.rt.send(c, Add{i});
      sum += i;
    }
    f.rt.send(c, Boom{});
    EXPECT_EQ(f.query(c), static_cast<std::uint64_t>(sum) * 1000 + 70);
    ASSERT_TRUE(f.rt.wait_idle());
    expect_exact(f.reported.items(), 1);
    EXPECT_EQ(f.reported.items()[0].reactor_type, "reheap::exact_restart_test::(anonymous namespace)::Counter");
    EXPECT_EQ(f.reported.items()[0].exception_type, "std::runtime_error");
    EXPECT_EQ(f.hooks.size(), 0u);  // nothing was lost: no on_restored
    // It goes on: more additions, another failure, the same again.
    f.rt.send(c, Add{5});
    f.rt.send(c, Boom{});
    EXPECT_EQ(f.query(c), static_cast<std::uint64_t>(sum + 5) * 1000 + 71) << all(f.reported.items());
    ASSERT_TRUE(f.rt.wait_idle());
    expect_exact(f.reported.items(), 2);
  }
}

// A reactor whose timers the failing event changed: the one it cancelled comes back and keeps
// ticking, the one it started never fires.
struct Retime {
  int unused;
};
class Ticker : public Reactor {
 public:
  explicit Ticker(Log<TimerId>* fired) : fired_(fired) {
    handle<&Ticker::on_retime>();
  }
  void on_start() override { periodic_ = start_timer(2ms, 2ms); }
  void on_retime(const Retime&) {
    cancel_timer(periodic_);
    start_timer(1ms);
    throw std::runtime_error("retime failed after changing the timers");
  }
  void on_timer(TimerId id) override { fired_->add(id); }

 private:
  Log<TimerId>* fired_;
  TimerId periodic_ = 0;
};

TEST(ExactRestart, TimersRunOnAsTheyWereBeforeTheFailingEvent) {
  TempDir dir;
  Fixture f;
  Log<TimerId> fired;
  const ActorRef t = f.rt.spawn<Ticker>(recorded(dir, RecordingMode::kFile), &fired);
  ASSERT_TRUE(fired.wait_size(3));
  f.rt.send(t, Retime{});
  ASSERT_TRUE(f.reported.wait_size(1));
  const std::size_t before = fired.size();
  ASSERT_TRUE(fired.wait_size(before + 10));
  for (const TimerId id : fired.items()) EXPECT_EQ(id, 1u) << "only the periodic timer (id 1) fires";
  expect_exact(f.reported.items(), 1);
}

// A reactor with maps, strings, children and a timer, on worker 0 of two, fails 100 times at
// random events while three threads send to it; every input that did not fail is in its state
// exactly once at the end, as in a model fed the same inputs.
struct Put {
  std::uint32_t sender = 0;
  std::uint32_t seq = 0;
  std::string value;
  bool poison = false;
  MSGPACK_DEFINE(sender, seq, value, poison)
};
struct Dump {
  int unused;
};
class Child : public Reactor {};
class Store : public Reactor {
 public:
  explicit Store(Log<std::map<std::string, std::string>>* dumps) : dumps_(dumps) {
    handle<&Store::on_put>();
    handle<&Store::on_dump>();
  }
  void on_start() override { start_timer(1ms, 1ms); }
  void on_put(const Put& p) {
    const std::string key = std::to_string(p.sender) + "/" + std::to_string(p.seq);
    entries_[key] = p.value + "@" + std::to_string(random() % 1000);  // a seed, answered by the runtime
    lengths_[p.sender] += p.value.size();
    if (p.seq % 10 == 0) {
      SpawnOptions o;
      o.name = "child-" + key;
      children_.push_back(spawn<Child>(o));
    }
    if (p.poison) throw std::runtime_error("poisoned put " + key);
  }
  void on_timer(TimerId) override { ++ticks_; }
  void on_dump(const Dump&) {
    // Built, handed over and freed in the system heap: the test owns it.
    HeapScope system(nullptr);
    std::map<std::string, std::string> out;
    for (const auto& [k, v] : entries_) out[k] = v.substr(0, v.find('@'));
    out["#children"] = std::to_string(children_.size());
    std::uint64_t total = 0;
    for (const auto& [s, n] : lengths_) total += n;
    out["#length"] = std::to_string(total);
    dumps_->add(out);
  }

 private:
  Log<std::map<std::string, std::string>>* dumps_;
  std::map<std::string, std::string> entries_;
  std::map<std::uint32_t, std::uint64_t> lengths_;
  std::vector<ActorRef> children_;
  std::uint64_t ticks_ = 0;
};

TEST(ExactRestart, AHundredFailuresUnderConcurrentSendersLoseAndRepeatNothing) {
  for (const RecordingMode mode : {RecordingMode::kFile, RecordingMode::kRing}) {
    SCOPED_TRACE(mode == RecordingMode::kFile ? "file" : "ring");
    TempDir dir;
    Fixture f;
    Log<std::map<std::string, std::string>> dumps;
    SpawnOptions options = recorded(dir, mode, 0);
    options.worker = 0;
    const ActorRef store = f.rt.spawn<Store>(options, &dumps);
    constexpr std::uint32_t kSenders = 3;
    constexpr std::uint32_t kPuts = 400;
    constexpr std::uint32_t kFailuresEach = 34;  // 102 in all
    std::vector<std::thread> senders;
    std::map<std::string, std::string> model;
    std::mutex model_mutex;
    std::uint64_t model_length = 0;
    std::uint64_t model_children = 0;
    for (std::uint32_t s = 0; s < kSenders; ++s) {
      senders.emplace_back([&, s] {
        std::mt19937 random(s + 1);
        std::uint32_t poisons = 0;
        for (std::uint32_t seq = 1; seq <= kPuts; ++seq) {
          Put p{s, seq, std::string(1 + random() % 40, static_cast<char>('a' + s)), false};
          // Spread the failures over the run, at random events.
          p.poison = poisons < kFailuresEach && random() % (kPuts / kFailuresEach) == 0;
          if (p.poison) ++poisons;
          while (f.rt.send(store, p) != SendResult::kOk) std::this_thread::yield();
          if (!p.poison) {
            std::lock_guard lock(model_mutex);
            model[std::to_string(s) + "/" + std::to_string(seq)] = p.value;
            model_length += p.value.size();
            if (seq % 10 == 0) ++model_children;
          }
        }
      });
    }
    for (std::thread& t : senders) t.join();
    ASSERT_TRUE(f.rt.wait_idle(60s));
    f.rt.send(store, Dump{});
    ASSERT_TRUE(dumps.wait_size(1));
    std::map<std::string, std::string> state = dumps.items()[0];
    EXPECT_EQ(state["#children"], std::to_string(model_children));
    EXPECT_EQ(state["#length"], std::to_string(model_length));
    state.erase("#children");
    state.erase("#length");
    EXPECT_EQ(state.size(), model.size());
    EXPECT_TRUE(state == model);
    const std::vector<ReactorFailed> reports = f.reported.items();
    EXPECT_GE(reports.size(), 60u);
    for (const ReactorFailed& r : reports) {
      EXPECT_EQ(r.restart.rfind("exact", 0), 0u) << to_string(r);
    }
  }
}

// A reactor whose state depends on something the runtime does not answer (a global counter here)
// cannot be replayed exactly: the state digests tell, and the restart falls back to the snapshot
// taken after on_start, saying so.
std::atomic<int> g_outside{0};
class Nondeterministic : public Reactor {
 public:
  explicit Nondeterministic(Answers* answers) : answers_(answers) {
    handle<&Nondeterministic::on_add>();
    handle<&Nondeterministic::on_boom>();
    handle<&Nondeterministic::on_query>();
  }
  void on_add(const Add&) { seen_.push_back(g_outside.fetch_add(1)); }
  void on_boom(const Boom&) { throw std::runtime_error("boom"); }
  void on_query(const Query& q) { answers_->add(q.token, seen_.size()); }

 private:
  Answers* answers_;
  std::vector<int> seen_;
};

TEST(ExactRestart, AReactorThatIsNotDeterministicFallsBackToItsSnapshotAndSaysSo) {
  TempDir dir;
  Fixture f;
  const ActorRef r = f.rt.spawn<Nondeterministic>(recorded(dir, RecordingMode::kFile, 1), &f.answers);
  for (int i = 0; i < 5; ++i) f.rt.send(r, Add{i});
  f.rt.send(r, Boom{});
  EXPECT_EQ(f.query(r), 0u);  // back at the checkpoint after on_start
  ASSERT_TRUE(f.rt.wait_idle());
  const std::vector<ReactorFailed> reports = f.reported.items();
  ASSERT_EQ(reports.size(), 2u);
  EXPECT_EQ(reports[0].restart.rfind("exact", 0), 0u) << to_string(reports[0]);
  EXPECT_EQ(reports[1].failure_kind(), FailureKind::kRestoreFailed) << to_string(reports[1]);
  EXPECT_EQ(reports[1].failure_action(), FailureAction::kRestarted) << to_string(reports[1]);
  EXPECT_NE(reports[1].what.find("state digest"), std::string::npos) << to_string(reports[1]);
  EXPECT_NE(reports[1].restart.find("losing the events"), std::string::npos) << to_string(reports[1]);
}

// An unrecorded reactor restarts from its snapshot, and the report says why.
TEST(ExactRestart, AnUnrecordedReactorRestartsFromItsSnapshotAndTheReportSaysWhy) {
  Fixture f;
  SpawnOptions o;
  o.policy = SupervisionPolicy::kRestart;
  const ActorRef c = f.rt.spawn<Counter>(o, &f.answers, &f.hooks);
  f.rt.send(c, Add{3});
  f.rt.send(c, Boom{});
  EXPECT_EQ(f.query(c), 0u);
  ASSERT_TRUE(f.reported.wait_size(1));
  const ReactorFailed r = f.reported.items()[0];
  EXPECT_NE(r.restart.find("it is not recorded"), std::string::npos) << to_string(r);
  EXPECT_TRUE(f.hooks.wait_size(1));
  EXPECT_EQ(f.hooks.items()[0], "restored");
}

// A slow reactor: each addition takes 100 us, and counts itself in a global (outside its heap, so
// that the replay's additions count too).
std::atomic<std::uint64_t> g_slow_adds{0};
class Slow : public Reactor {
 public:
  explicit Slow(Answers* answers) : answers_(answers) {
    handle<&Slow::on_add>();
    handle<&Slow::on_boom>();
    handle<&Slow::on_query>();
  }
  void on_add(const Add& a) {
    const auto until = std::chrono::steady_clock::now() + 100us;
    while (std::chrono::steady_clock::now() < until) {
    }
    total_ += a.n;
    g_slow_adds.fetch_add(1);
  }
  void on_boom(const Boom&) { throw std::runtime_error("boom"); }
  void on_query(const Query& q) { answers_->add(q.token, total_); }

 private:
  Answers* answers_;
  std::uint64_t total_ = 0;
};

// Reports how many additions the slow reactors have made when it is asked.
class Watcher : public Reactor {
 public:
  explicit Watcher(Probe* probe) : probe_(probe) { handle<&Watcher::on_query>(); }
  void on_query(const Query&) { probe_->done(g_slow_adds.load()); }

 private:
  Probe* probe_;
};

// While a long log is replayed (a second's worth), the worker's other reactors keep their turns:
// one asked right after the failure answers while the replay is still under way.
TEST(ExactRestart, TheWorkersOtherReactorsRunWhileALongLogIsReplayed) {
  constexpr std::uint64_t kAdds = 10'000;
  TempDir dir;
  Fixture f(1);
  const ActorRef slow = f.rt.spawn<Slow>(recorded(dir, RecordingMode::kFile, 0), &f.answers);
  Probe watcher_probe;
  const ActorRef watcher = f.rt.spawn<Watcher>(&watcher_probe);
  for (std::uint64_t i = 0; i < kAdds; ++i) f.rt.send(slow, Add{1});
  ASSERT_TRUE(f.rt.wait_idle(120s));
  ASSERT_EQ(g_slow_adds.load(), kAdds);
  f.rt.send(slow, Boom{});
  ASSERT_TRUE(f.reported.wait_size(1));  // reported when the restart begins
  f.rt.send(watcher, Query{0});
  ASSERT_TRUE(watcher_probe.wait_for(1));
  EXPECT_LT(watcher_probe.value(), 2 * kAdds) << "the watcher waited for the whole replay";
  EXPECT_EQ(f.query(slow), kAdds);  // after the restart, with every addition
  EXPECT_EQ(g_slow_adds.load(), 2 * kAdds);
  expect_exact(f.reported.items(), 1);
}

}  // namespace
}  // namespace reheap::exact_restart_test
