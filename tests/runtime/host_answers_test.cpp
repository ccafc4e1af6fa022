// What a reactor asks its runtime: the time (fixed for an event, from RuntimeConfig::time), random
// numbers (an engine in its heap, seeded once from RuntimeConfig::entropy, continuing across a
// snapshot), children spawned through Reactor::spawn, and the count of events it was given.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <stdexcept>
#include <string>
#include <vector>

#include "reheap/runtime.h"
#include "runtime_support.h"

namespace reheap {
namespace {

using namespace std::chrono_literals;
using rttest::Log;
using rttest::TempDir;

// A clock that moves by a second at every read: a reactor that read it twice in one event and saw
// two values would show it.
class SteppingTime final : public TimeSource {
 public:
  std::chrono::system_clock::time_point system_now() override {
    return std::chrono::system_clock::time_point(std::chrono::seconds(1'000'000 + reads_.fetch_add(1)));
  }
  std::chrono::steady_clock::time_point steady_now() override {
    return std::chrono::steady_clock::time_point(std::chrono::seconds(500 + reads_.fetch_add(1)));
  }
  std::uint64_t reads() const { return reads_.load(); }

 private:
  std::atomic<std::uint64_t> reads_{0};
};

struct TimeSeen {
  std::int64_t first_system_s;
  std::int64_t second_system_s;
  std::int64_t first_steady_s;
  std::int64_t second_steady_s;
};

class TimeReader : public Reactor {
 public:
  explicit TimeReader(Log<TimeSeen>* log) : log_(log) { handle<&TimeReader::on_tick>(); }
  void on_tick(const int&) {
    using std::chrono::duration_cast;
    using std::chrono::seconds;
    const auto s1 = now();
    const auto t1 = steady_now();
    const auto s2 = now();
    const auto t2 = steady_now();
    log_->add(TimeSeen{duration_cast<seconds>(s1.time_since_epoch()).count(),
                       duration_cast<seconds>(s2.time_since_epoch()).count(),
                       duration_cast<seconds>(t1.time_since_epoch()).count(),
                       duration_cast<seconds>(t2.time_since_epoch()).count()});
  }

 private:
  Log<TimeSeen>* log_;
};

TEST(HostAnswers, NowIsTheRuntimesTimeFixedForTheWholeEvent) {
  auto time = std::make_shared<SteppingTime>();
  Log<TimeSeen> log;
  {
    Runtime rt(RuntimeConfig{.workers = 1, .time = time});
    const ActorRef r = rt.spawn<TimeReader>(&log);
    rt.send(r, 1);
    rt.send(r, 2);
    ASSERT_TRUE(log.wait_size(2));
  }
  const std::vector<TimeSeen> seen = log.items();
  for (const TimeSeen& s : seen) {
    EXPECT_EQ(s.first_system_s, s.second_system_s);
    EXPECT_EQ(s.first_steady_s, s.second_steady_s);
    EXPECT_GE(s.first_system_s, 1'000'000);  // from the configured source, not the system clock
    EXPECT_GE(s.first_steady_s, 500);
  }
  // Each event read each clock once: two events, four reads, two values per clock.
  EXPECT_NE(seen[0].first_system_s, seen[1].first_system_s);
  EXPECT_EQ(time->reads(), 4u);
}

TEST(HostAnswers, ReadingTheTimeOutsideAHookIsMisuse) {
  // A reactor object no event is being delivered to has no host to answer.
  Log<TimeSeen> log;
  HeapPtr heap = Heap::create();
  HeapScope scope(heap.get());
  auto* loose = new TimeReader(&log);
  for (const char* what : {"now", "random"}) {
    try {
      if (std::string(what) == "now") {
        (void)loose->now();
      } else {
        (void)loose->random();
      }
      ADD_FAILURE() << what << "() outside a hook returned";
    } catch (const std::logic_error& e) {
      EXPECT_NE(std::string(e.what()).find(std::string("Reactor::") + what + ": called outside this reactor's hooks"),
                std::string::npos)
          << e.what();
    }
  }
  delete loose;
}

// Points a restored reactor at a log of the new test (its old one is gone with the old scope).
struct Rewire {
  Log<std::uint64_t>* log;
};

// Draws `count` numbers per message and reports them.
class Dice : public Reactor {
 public:
  explicit Dice(Log<std::uint64_t>* log) : log_(log) {
    handle<&Dice::on_roll>();
    handle<&Dice::on_rewire>();
  }
  void on_roll(const int& count) {
    for (int i = 0; i < count; ++i) log_->add(random());
  }
  void on_rewire(const Rewire& r) { log_ = r.log; }

 private:
  Log<std::uint64_t>* log_;
};

std::vector<std::uint64_t> roll(std::uint64_t seed, int count) {
  Log<std::uint64_t> log;
  Runtime rt(RuntimeConfig{.workers = 1, .entropy = EntropySource::seeded(seed)});
  const ActorRef d = rt.spawn<Dice>(&log);
  rt.send(d, count);
  EXPECT_TRUE(log.wait_size(static_cast<std::size_t>(count)));
  return log.items();
}

TEST(HostAnswers, RandomRepeatsForASeedAndDiffersForAnother) {
  const auto a = roll(42, 64);
  const auto b = roll(42, 64);
  const auto c = roll(43, 64);
  ASSERT_EQ(a.size(), 64u);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  // Not a constant or a short cycle.
  std::vector<std::uint64_t> sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(std::unique(sorted.begin(), sorted.end()), sorted.end());
}

TEST(HostAnswers, ARestoredReactorContinuesItsRandomSequence) {
  TempDir dir;
  const auto file = dir / "dice.snap";
  std::vector<std::uint64_t> after_snapshot;
  {
    Log<std::uint64_t> log;
    Runtime rt(RuntimeConfig{.workers = 1, .entropy = EntropySource::seeded(7)});
    const ActorRef d = rt.spawn<Dice>(&log);
    rt.send(d, 3);
    ASSERT_TRUE(log.wait_size(3));
    rt.snapshot(d, file);
    rt.send(d, 5);
    ASSERT_TRUE(log.wait_size(8));
    const auto all = log.items();
    after_snapshot.assign(all.begin() + 3, all.end());
  }
  // Another runtime with another entropy source: the engine is the reactor's, already seeded.
  // The Log pointer in the heap is stale after the first runtime: the restored reactor gets a
  // new one through a message before it rolls.
  Log<std::uint64_t> log2;
  Runtime rt(RuntimeConfig{.workers = 1, .entropy = EntropySource::seeded(999)});
  const ActorRef d = rt.restore(file);
  rt.send(d, Rewire{&log2});
  rt.send(d, 5);
  ASSERT_TRUE(log2.wait_size(5));
  EXPECT_EQ(log2.items(), after_snapshot);
}

}  // namespace
}  // namespace reheap

namespace reheap {
namespace {

// A parent spawning children from its hooks through Reactor::spawn, each answering its parent.
class Child : public Reactor {
 public:
  Child(ActorRef parent, int number) : parent_(parent), number_(number) {}
  void on_start() override { send(parent_, number_ * 10); }

 private:
  ActorRef parent_;
  int number_;
};

class Thrower : public Reactor {
 public:
  Thrower() { throw std::runtime_error("refusing to be built"); }
};

class Parent : public Reactor {
 public:
  explicit Parent(Log<std::string>* log) : log_(log) { handle<&Parent::on_answer>(); }
  void on_start() override {
    SpawnOptions options;
    options.name = "child";
    for (int i = 1; i <= 3; ++i) {
      const ActorRef child = spawn<Child>(options, self(), i);
      log_->add(child ? "spawned" : "null ref");
    }
    try {
      spawn<Thrower>();
      log_->add("thrower spawned");
    } catch (const std::runtime_error& e) {
      log_->add(std::string("caught: ") + e.what());
    }
    log_->add("events " + std::to_string(events_delivered()));
  }
  void on_answer(const int& value) { log_->add("answer " + std::to_string(value)); }

 private:
  Log<std::string>* log_;
};

TEST(HostAnswers, AReactorSpawnsChildrenThroughItsHostAndSeesTheirConstructorsFail) {
  Log<std::string> log;
  Runtime rt(RuntimeConfig{.workers = 2});
  rt.spawn<Parent>(&log);
  ASSERT_TRUE(log.wait_size(8));
  ASSERT_TRUE(rt.wait_idle());
  std::vector<std::string> items = log.items();
  ASSERT_EQ(items.size(), 8u);
  EXPECT_EQ(items[0], "spawned");
  EXPECT_EQ(items[2], "spawned");
  EXPECT_EQ(items[3], "caught: refusing to be built");
  EXPECT_EQ(items[4], "events 1");  // on_start is the first event
  std::vector<std::string> answers(items.begin() + 5, items.end());
  std::sort(answers.begin(), answers.end());
  EXPECT_EQ(answers, (std::vector<std::string>{"answer 10", "answer 20", "answer 30"}));
  EXPECT_EQ(rt.stats().reactors, 4u);
}

}  // namespace
}  // namespace reheap
